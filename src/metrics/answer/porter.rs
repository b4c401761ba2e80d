//! The Porter stemmer as NLTK runs it by default (`PorterStemmer()`, mode `NLTK_EXTENSIONS`),
//! which is the stemmer ROUGE uses when `use_stemmer=True`.
//!
//! The algorithm is Porter's (1980, "An algorithm for suffix stripping") with the departures
//! NLTK's default mode makes, all reproduced here because ROUGE figures depend on them:
//!
//! - a handful of irregular forms map straight to a stem (`skies` → `sky`, `dying` → `die`,
//!   `lying` → `lie`, `tying` → `tie`, `innings` → `inning`, `outings` → `outing`,
//!   `cannings` → `canning`; `news`, `howe`, `proceed`, `exceed`, `succeed`, `inning`, `outing`,
//!   `canning` and `sky` stay as they are);
//! - words of one or two characters are returned lowercased and otherwise untouched;
//! - step 1a: a four-letter word ending in `ies` keeps `ie` (`ties` → `tie`);
//! - step 1b: `ied` becomes `ie` in a four-letter word and `i` otherwise, before any other rule;
//! - step 1c: `y` → `i` only after a consonant that is not the word's first letter
//!   (`happy` → `happi`, `enjoy` and `by` unchanged, `fly` → `fli`);
//! - step 2: `alli` → `al` is tried first (and step 2 rerun on the result), `bli` → `ble`
//!   replaces the paper's `abli` → `able`, and `fulli` → `ful` and `logi` → `log` (measured on
//!   the word less `ogi`) are added;
//! - the `*o` condition also holds for a two-letter stem vowel-consonant.
//!
//! Letters other than `a e i o u` (and `y` after a vowel) count as consonants, so digits and
//! non-Latin letters are consonants too, as in NLTK.

/// The stem of `word`, identical to NLTK's `PorterStemmer().stem(word)`.
///
/// The word is lowercased first (as NLTK does by default).
///
/// ```
/// use rag_eval::metrics::answer::porter_stem;
///
/// assert_eq!(porter_stem("Relational"), "relat");
/// assert_eq!(porter_stem("happy"), "happi");
/// assert_eq!(porter_stem("dying"), "die");
/// assert_eq!(porter_stem("generously"), "gener");
/// ```
pub fn porter_stem(word: &str) -> String {
    let lowered = word.to_lowercase();
    if let Some(stem) = irregular(&lowered) {
        return stem.to_owned();
    }
    // NLTK measures the word as given here, not its lowercase form.
    if word.chars().count() <= 2 {
        return lowered;
    }
    let mut w: Vec<char> = lowered.chars().collect();
    w = step1a(w);
    w = step1b(w);
    w = step1c(w);
    w = step2(w);
    w = step3(w);
    w = step4(w);
    w = step5a(w);
    w = step5b(w);
    w.into_iter().collect()
}

fn irregular(word: &str) -> Option<&'static str> {
    Some(match word {
        "sky" | "skies" => "sky",
        "dying" => "die",
        "lying" => "lie",
        "tying" => "tie",
        "news" => "news",
        "innings" | "inning" => "inning",
        "outings" | "outing" => "outing",
        "cannings" | "canning" => "canning",
        "howe" => "howe",
        "proceed" => "proceed",
        "exceed" => "exceed",
        "succeed" => "succeed",
        _ => return None,
    })
}

fn is_vowel_letter(c: char) -> bool {
    matches!(c, 'a' | 'e' | 'i' | 'o' | 'u')
}

/// Consonant flags for every position: a `y` is a consonant at the start of a word or after a
/// vowel, a vowel after a consonant.
fn consonant_flags(w: &[char]) -> Vec<bool> {
    let mut flags: Vec<bool> = Vec::with_capacity(w.len());
    for (i, &c) in w.iter().enumerate() {
        let consonant = if is_vowel_letter(c) {
            false
        } else if c == 'y' {
            i == 0 || !flags[i - 1]
        } else {
            true
        };
        flags.push(consonant);
    }
    flags
}

fn is_consonant(w: &[char], i: usize) -> bool {
    consonant_flags(&w[..=i])[i]
}

/// Porter's m: the number of vowel-run → consonant-run transitions in `[C](VC){m}[V]`.
fn measure(stem: &[char]) -> usize {
    let flags = consonant_flags(stem);
    flags.windows(2).filter(|p| !p[0] && p[1]).count()
}

fn contains_vowel(stem: &[char]) -> bool {
    consonant_flags(stem).iter().any(|&c| !c)
}

/// `*d`: ends with a doubled consonant.
fn ends_double_consonant(w: &[char]) -> bool {
    let n = w.len();
    n >= 2 && w[n - 1] == w[n - 2] && is_consonant(w, n - 1)
}

/// `*o`: ends consonant-vowel-consonant, the last not `w`, `x` or `y`; in NLTK's mode also a
/// two-letter vowel-consonant stem.
fn ends_cvc(w: &[char]) -> bool {
    let n = w.len();
    if n >= 3 {
        let flags = consonant_flags(w);
        if flags[n - 3] && !flags[n - 2] && flags[n - 1] && !matches!(w[n - 1], 'w' | 'x' | 'y') {
            return true;
        }
    }
    n == 2 && {
        let flags = consonant_flags(w);
        !flags[0] && flags[1]
    }
}

fn ends_with(w: &[char], suffix: &str) -> bool {
    let n = suffix.chars().count();
    w.len() >= n && w[w.len() - n..].iter().copied().eq(suffix.chars())
}

fn strip(w: &[char], suffix: &str) -> Vec<char> {
    w[..w.len() - suffix.chars().count()].to_vec()
}

fn with(mut stem: Vec<char>, replacement: &str) -> Vec<char> {
    stem.extend(replacement.chars());
    stem
}

/// What a rule requires of the stem left after removing its suffix.
#[derive(Clone, Copy)]
enum Cond {
    Always,
    /// m > 0
    Positive,
    /// m > 1
    AboveOne,
    /// m > 1 and the stem ends in `s` or `t` (step 4's `ion`).
    AboveOneST,
    /// m > 0 for the stem with its last letter kept (step 2's `logi`: measured on word less `ogi`).
    PositiveKeepingOne,
    /// `y` → `i`: the stem is longer than one letter and ends in a consonant.
    ConsonantBefore,
}

impl Cond {
    fn holds(self, stem: &[char], word: &[char]) -> bool {
        match self {
            Cond::Always => true,
            Cond::Positive => measure(stem) > 0,
            Cond::AboveOne => measure(stem) > 1,
            Cond::AboveOneST => measure(stem) > 1 && matches!(stem.last(), Some('s' | 't')),
            Cond::PositiveKeepingOne => measure(&word[..word.len() - 3]) > 0,
            Cond::ConsonantBefore => stem.len() > 1 && is_consonant(stem, stem.len() - 1),
        }
    }
}

/// The first rule whose suffix ends the word decides: applied when its condition holds, and
/// the word is returned unchanged when it does not (later rules are not tried).
fn apply_rules(w: Vec<char>, rules: &[(&str, &str, Cond)]) -> Vec<char> {
    for &(suffix, replacement, cond) in rules {
        if ends_with(&w, suffix) {
            let stem = strip(&w, suffix);
            return if cond.holds(&stem, &w) {
                with(stem, replacement)
            } else {
                w
            };
        }
    }
    w
}

fn step1a(w: Vec<char>) -> Vec<char> {
    if w.len() == 4 && ends_with(&w, "ies") {
        return with(strip(&w, "ies"), "ie");
    }
    apply_rules(
        w,
        &[
            ("sses", "ss", Cond::Always),
            ("ies", "i", Cond::Always),
            ("ss", "ss", Cond::Always),
            ("s", "", Cond::Always),
        ],
    )
}

fn step1b(w: Vec<char>) -> Vec<char> {
    if ends_with(&w, "ied") {
        let replacement = if w.len() == 4 { "ie" } else { "i" };
        return with(strip(&w, "ied"), replacement);
    }
    if ends_with(&w, "eed") {
        let stem = strip(&w, "eed");
        return if measure(&stem) > 0 {
            with(stem, "ee")
        } else {
            w
        };
    }
    let Some(stem) = ["ed", "ing"]
        .into_iter()
        .filter(|suffix| ends_with(&w, suffix))
        .map(|suffix| strip(&w, suffix))
        .find(|stem| contains_vowel(stem))
    else {
        return w;
    };
    for (suffix, replacement) in [("at", "ate"), ("bl", "ble"), ("iz", "ize")] {
        if ends_with(&stem, suffix) {
            return with(strip(&stem, suffix), replacement);
        }
    }
    if ends_double_consonant(&stem) {
        let last = stem[stem.len() - 1];
        return if matches!(last, 'l' | 's' | 'z') {
            stem
        } else {
            stem[..stem.len() - 1].to_vec()
        };
    }
    if measure(&stem) == 1 && ends_cvc(&stem) {
        return with(stem, "e");
    }
    stem
}

fn step1c(w: Vec<char>) -> Vec<char> {
    apply_rules(w, &[("y", "i", Cond::ConsonantBefore)])
}

fn step2(w: Vec<char>) -> Vec<char> {
    if ends_with(&w, "alli") {
        let stem = strip(&w, "alli");
        if measure(&stem) > 0 {
            return step2(with(stem, "al"));
        }
    }
    use Cond::Positive as P;
    apply_rules(
        w,
        &[
            ("ational", "ate", P),
            ("tional", "tion", P),
            ("enci", "ence", P),
            ("anci", "ance", P),
            ("izer", "ize", P),
            ("bli", "ble", P),
            ("alli", "al", P),
            ("entli", "ent", P),
            ("eli", "e", P),
            ("ousli", "ous", P),
            ("ization", "ize", P),
            ("ation", "ate", P),
            ("ator", "ate", P),
            ("alism", "al", P),
            ("iveness", "ive", P),
            ("fulness", "ful", P),
            ("ousness", "ous", P),
            ("aliti", "al", P),
            ("iviti", "ive", P),
            ("biliti", "ble", P),
            ("fulli", "ful", P),
            ("logi", "log", Cond::PositiveKeepingOne),
        ],
    )
}

fn step3(w: Vec<char>) -> Vec<char> {
    use Cond::Positive as P;
    apply_rules(
        w,
        &[
            ("icate", "ic", P),
            ("ative", "", P),
            ("alize", "al", P),
            ("iciti", "ic", P),
            ("ical", "ic", P),
            ("ful", "", P),
            ("ness", "", P),
        ],
    )
}

fn step4(w: Vec<char>) -> Vec<char> {
    use Cond::AboveOne as A;
    apply_rules(
        w,
        &[
            ("al", "", A),
            ("ance", "", A),
            ("ence", "", A),
            ("er", "", A),
            ("ic", "", A),
            ("able", "", A),
            ("ible", "", A),
            ("ant", "", A),
            ("ement", "", A),
            ("ment", "", A),
            ("ent", "", A),
            ("ion", "", Cond::AboveOneST),
            ("ou", "", A),
            ("ism", "", A),
            ("ate", "", A),
            ("iti", "", A),
            ("ous", "", A),
            ("ive", "", A),
            ("ize", "", A),
        ],
    )
}

fn step5a(w: Vec<char>) -> Vec<char> {
    if ends_with(&w, "e") {
        let stem = strip(&w, "e");
        let m = measure(&stem);
        if m > 1 || (m == 1 && !ends_cvc(&stem)) {
            return stem;
        }
    }
    w
}

fn step5b(w: Vec<char>) -> Vec<char> {
    if ends_with(&w, "ll") && measure(&w[..w.len() - 1]) > 1 {
        return w[..w.len() - 1].to_vec();
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_papers_examples() {
        // Porter (1980), the examples given with each step.
        for (word, stem) in [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("caress", "caress"),
            ("cats", "cat"),
            ("feed", "feed"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("bled", "bled"),
            ("motoring", "motor"),
            ("sing", "sing"),
            ("conflated", "conflat"),
            ("troubled", "troubl"),
            ("sized", "size"),
            ("hopping", "hop"),
            ("tanned", "tan"),
            ("falling", "fall"),
            ("hissing", "hiss"),
            ("fizzed", "fizz"),
            ("failing", "fail"),
            ("filing", "file"),
            ("relational", "relat"),
            ("conditional", "condit"),
            ("rational", "ration"),
            ("digitizer", "digit"),
            ("triplicate", "triplic"),
            ("formative", "form"),
            ("electrical", "electr"),
            ("hopeful", "hope"),
            ("goodness", "good"),
            ("revival", "reviv"),
            ("allowance", "allow"),
            ("adjustable", "adjust"),
            ("adoption", "adopt"),
            ("probate", "probat"),
            ("rate", "rate"),
            ("cease", "ceas"),
            ("controll", "control"),
            ("roll", "roll"),
        ] {
            assert_eq!(porter_stem(word), stem, "{word}");
        }
    }

    #[test]
    fn nltks_departures_from_the_paper() {
        for (word, stem) in [
            // irregular forms
            ("skies", "sky"),
            ("dying", "die"),
            ("news", "news"),
            ("innings", "inning"),
            ("proceed", "proceed"),
            // short words untouched
            ("is", "is"),
            ("AS", "as"),
            // four-letter -ies / -ied
            ("ties", "tie"),
            ("died", "die"),
            ("cried", "cri"),
            // y -> i only after a consonant that is not the first letter
            ("happy", "happi"),
            ("enjoy", "enjoy"),
            ("fly", "fli"),
            ("say", "say"),
            // step 2 extensions
            ("radically", "radic"),
            ("hopefully", "hope"),
            ("analogi", "analog"),
            ("sensibility", "sensibl"),
            // two-letter *o
            ("owed", "owe"),
        ] {
            assert_eq!(porter_stem(word), stem, "{word}");
        }
    }

    #[test]
    fn measure_counts_vc_runs() {
        let m = |s: &str| measure(&s.chars().collect::<Vec<_>>());
        for (word, expected) in [
            ("tr", 0),
            ("ee", 0),
            ("tree", 0),
            ("y", 0),
            ("by", 0),
            ("trouble", 1),
            ("oats", 1),
            ("trees", 1),
            ("ivy", 1),
            ("troubles", 2),
            ("private", 2),
            ("oaten", 2),
            ("orrery", 2),
        ] {
            assert_eq!(m(word), expected, "{word}");
        }
    }

    #[test]
    fn digits_and_other_letters_are_consonants() {
        assert_eq!(porter_stem("1990s"), "1990");
        assert_eq!(porter_stem("naïvely"), "naïv");
    }
}
