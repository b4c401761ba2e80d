//! Finding a passage a language model quoted in the document it quoted from.
//!
//! Models copy imperfectly: they re-wrap lines, change case, straighten quotes, drop a
//! Markdown backtick or two. [`Locator::locate`] tries three steps, each only when the one
//! before found nothing:
//!
//! 1. **exact**: the excerpt (without leading and trailing whitespace) occurs verbatim; its
//!    first occurrence is taken.
//! 2. **normalized**: both texts are compared after folding case (Unicode lower-case of the
//!    upper-case, so `ß` and `SS` agree), turning every run of whitespace into one space, and
//!    mapping typographic quotes, dashes and the ellipsis to their ASCII forms. The match is
//!    mapped back to the document's own characters.
//! 3. **fuzzy**: the normalized excerpt is aligned with the normalized document allowing edits;
//!    the score is `1 − edits / excerpt length`, and a match counts only at or above the
//!    threshold. Candidate places come from pieces of the excerpt that occur verbatim (if an
//!    excerpt of `m` characters matches with at most `k` edits, one of `k + 1` disjoint pieces
//!    of it is untouched), so the work is bounded by the number of candidate places, not by the
//!    document's length; pieces that occur very often are skipped, and the alignment work has
//!    a fixed budget ([`Locator::with_budget`]).
//!
//! A paraphrase shares words but not character sequences and scores far below any useful
//! threshold: it is not located, which is the point.
//!
//! ```
//! use rag_eval::generate::locate::{locate, MatchKind};
//! let doc = "The server keeps\nevery flag in memory. Restarts take two seconds.";
//! let hit = locate(doc, "the server keeps every flag in memory.", 0.9).unwrap();
//! assert_eq!((hit.start, hit.end, hit.kind), (0, 38, MatchKind::Normalized));
//! let typo = locate(doc, "Restarts take too seconds.", 0.9).unwrap();
//! assert_eq!(typo.kind, MatchKind::Fuzzy);
//! assert!(locate(doc, "A reboot needs a couple of seconds.", 0.9).is_none());
//! ```

use serde::{Deserialize, Serialize};

/// How an excerpt was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchKind {
    /// Verbatim.
    Exact,
    /// Equal after folding case, whitespace and typographic punctuation.
    Normalized,
    /// Similar enough after normalizing (score at or above the threshold).
    Fuzzy,
}

impl MatchKind {
    /// `exact`, `normalized` or `fuzzy`.
    pub fn as_str(self) -> &'static str {
        match self {
            MatchKind::Exact => "exact",
            MatchKind::Normalized => "normalized",
            MatchKind::Fuzzy => "fuzzy",
        }
    }
}

/// Where an excerpt was found: a character span of the searched text (end-exclusive).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Located {
    /// First character.
    pub start: usize,
    /// One past the last character.
    pub end: usize,
    /// Which step found it.
    pub kind: MatchKind,
    /// 1 for exact and normalized matches; `1 − edits / excerpt length` for fuzzy ones.
    pub score: f64,
}

/// Default alignment budget: cells of the edit-distance table computed per excerpt.
pub const DEFAULT_BUDGET: usize = 20_000_000;

/// A piece occurring more often than this is no use for finding candidate places.
const MAX_PIECE_HITS: usize = 64;

/// Searches one text for excerpts; the normalized form is built once and reused.
#[derive(Debug, Clone)]
pub struct Locator<'a> {
    text: &'a str,
    /// Normalized text.
    norm: String,
    /// Byte offset in `norm` of each normalized char.
    norm_bytes: Vec<u32>,
    /// Normalized chars.
    norm_chars: Vec<char>,
    /// Char offset in `text` each normalized char came from.
    origin: Vec<usize>,
    budget: usize,
}

impl<'a> Locator<'a> {
    /// A locator over `text`.
    pub fn new(text: &'a str) -> Self {
        let (norm, origin) = normalize(text);
        let mut norm_bytes = Vec::with_capacity(origin.len());
        let mut norm_chars = Vec::with_capacity(origin.len());
        for (b, c) in norm.char_indices() {
            norm_bytes.push(b as u32);
            norm_chars.push(c);
        }
        Locator {
            text,
            norm,
            norm_bytes,
            norm_chars,
            origin,
            budget: DEFAULT_BUDGET,
        }
    }

    /// Limits the fuzzy step to `cells` cells of edit-distance table per excerpt (default
    /// [`DEFAULT_BUDGET`]); candidate places beyond the budget are not examined.
    pub fn with_budget(mut self, cells: usize) -> Self {
        self.budget = cells;
        self
    }

    /// The text searched.
    pub fn text(&self) -> &'a str {
        self.text
    }

    /// Finds `excerpt`: exactly, then normalized, then fuzzily with a score of at least
    /// `threshold`. `None` for a blank excerpt or when no step finds it.
    pub fn locate(&self, excerpt: &str, threshold: f64) -> Option<Located> {
        let needle = excerpt.trim();
        if needle.is_empty() {
            return None;
        }
        if let Some(b) = self.text.find(needle) {
            let start = self.text[..b].chars().count();
            return Some(Located {
                start,
                end: start + needle.chars().count(),
                kind: MatchKind::Exact,
                score: 1.0,
            });
        }
        let (n, _) = normalize(needle);
        let n = n.trim_matches(' ');
        if n.is_empty() {
            return None;
        }
        if let Some(b) = self.norm.find(n) {
            let s = self.norm_index(b);
            let e = s + n.chars().count();
            let (start, end) = self.to_original(s, e);
            return Some(Located {
                start,
                end,
                kind: MatchKind::Normalized,
                score: 1.0,
            });
        }
        let needle: Vec<char> = n.chars().collect();
        self.fuzzy(&needle, threshold)
    }

    fn norm_index(&self, byte: usize) -> usize {
        self.norm_bytes
            .binary_search(&(byte as u32))
            .expect("match offsets lie on char boundaries")
    }

    /// Char span of `text` covered by normalized chars `s..e` (`s < e`).
    fn to_original(&self, s: usize, e: usize) -> (usize, usize) {
        (self.origin[s], self.origin[e - 1] + 1)
    }

    fn fuzzy(&self, needle: &[char], threshold: f64) -> Option<Located> {
        let m = needle.len();
        let n = self.norm_chars.len();
        // A threshold of 0 (or NaN) would accept anything; nothing sensible to find.
        if threshold.is_nan() || threshold <= 0.0 || n == 0 {
            return None;
        }
        let k = ((1.0 - threshold.min(1.0)) * m as f64).floor() as usize;
        if k == 0 {
            return None;
        }
        // Pigeonhole: k + 1 disjoint pieces; a match with at most k edits keeps one intact.
        let pieces = (k + 1).min(m);
        let piece_len = m / pieces;
        let mut candidates: Vec<usize> = Vec::new();
        for p in 0..pieces {
            let offset = p * piece_len;
            let piece: String = needle[offset..offset + piece_len].iter().collect();
            if piece.trim().is_empty() {
                continue;
            }
            let hits: Vec<usize> = self
                .norm
                .match_indices(piece.as_str())
                .take(MAX_PIECE_HITS + 1)
                .map(|(b, _)| self.norm_index(b))
                .collect();
            if hits.len() > MAX_PIECE_HITS {
                continue;
            }
            candidates.extend(hits.into_iter().map(|h| h.saturating_sub(offset)));
        }
        if candidates.is_empty() {
            return None;
        }
        // Group nearby candidate starts: one alignment over their common region serves all.
        candidates.sort_unstable();
        let mut groups: Vec<(usize, usize, usize)> = Vec::new(); // (first, last, votes)
        for c in candidates {
            match groups.last_mut() {
                Some(g) if c <= g.1 + k.max(m / 2) => {
                    g.1 = c;
                    g.2 += 1;
                }
                _ => groups.push((c, c, 1)),
            }
        }
        // Most votes first, so that a spent budget leaves out the least promising places.
        groups.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
        let mut spent = 0usize;
        let mut best: Option<(usize, usize, usize)> = None; // (dist, start, end) in norm chars
        for (first, last, _) in groups {
            let lo = first.saturating_sub(k);
            let hi = (last + m + k).min(n);
            if lo >= hi {
                continue;
            }
            let cells = (hi - lo) * m;
            if spent + cells > self.budget {
                continue;
            }
            spent += cells;
            let Some((d, s, e)) = best_substring(needle, &self.norm_chars[lo..hi]) else {
                continue;
            };
            let cand = (d, lo + s, lo + e);
            if best.is_none_or(|b| (cand.0, cand.1) < (b.0, b.1)) {
                best = Some(cand);
            }
        }
        let (d, mut s, mut e) = best?;
        let score = 1.0 - d as f64 / m as f64;
        if score < threshold {
            return None;
        }
        while s < e && self.norm_chars[s] == ' ' {
            s += 1;
        }
        while e > s && self.norm_chars[e - 1] == ' ' {
            e -= 1;
        }
        if s == e {
            return None;
        }
        let (start, end) = self.to_original(s, e);
        Some(Located {
            start,
            end,
            kind: MatchKind::Fuzzy,
            score,
        })
    }
}

/// Finds `excerpt` in `text` (see [`Locator::locate`]); build a [`Locator`] to search one text
/// for many excerpts.
pub fn locate(text: &str, excerpt: &str, threshold: f64) -> Option<Located> {
    Locator::new(text).locate(excerpt, threshold)
}

/// The normalized form of `s` and, for each of its chars, the char offset in `s` it came from.
pub fn normalize(s: &str) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(s.len());
    let mut origin = Vec::with_capacity(s.len());
    let mut in_space = false;
    for (i, c) in s.chars().enumerate() {
        if c.is_whitespace() {
            if !in_space {
                out.push(' ');
                origin.push(i);
            }
            in_space = true;
            continue;
        }
        in_space = false;
        let mut push = |x: char| {
            out.push(x);
            origin.push(i);
        };
        match c {
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => push('\''),
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' | '\u{00AB}'
            | '\u{00BB}' => push('"'),
            '\u{2010}'..='\u{2015}' | '\u{2212}' => push('-'),
            '\u{2026}' => "...".chars().for_each(push),
            c if c.is_ascii() => push(c.to_ascii_lowercase()),
            c => c.to_uppercase().flat_map(char::to_lowercase).for_each(push),
        }
    }
    (out, origin)
}

/// The substring of `text` nearest to `needle` in edit distance (Sellers' algorithm: the match
/// may start and end anywhere in `text`): `(distance, start, end)`, ties going to the earliest
/// end. `None` for an empty needle.
fn best_substring(needle: &[char], text: &[char]) -> Option<(usize, usize, usize)> {
    let m = needle.len();
    if m == 0 {
        return None;
    }
    // Column j of the table: best distance between needle[..i] and a text substring ending at
    // j, with the start of that substring.
    let mut prev_d: Vec<u32> = (0..=m as u32).collect();
    let mut prev_s: Vec<u32> = vec![0; m + 1];
    let mut cur_d = vec![0u32; m + 1];
    let mut cur_s = vec![0u32; m + 1];
    let mut best = (prev_d[m] as usize, 0usize, 0usize);
    for (j, &tc) in text.iter().enumerate() {
        let j1 = (j + 1) as u32;
        cur_d[0] = 0;
        cur_s[0] = j1;
        for i in 1..=m {
            let sub = prev_d[i - 1] + u32::from(needle[i - 1] != tc);
            let del = cur_d[i - 1] + 1;
            let ins = prev_d[i] + 1;
            let (d, s) = if sub <= del && sub <= ins {
                (sub, prev_s[i - 1])
            } else if del <= ins {
                (del, cur_s[i - 1])
            } else {
                (ins, prev_s[i])
            };
            cur_d[i] = d;
            cur_s[i] = s;
        }
        if (cur_d[m] as usize) < best.0 {
            best = (cur_d[m] as usize, cur_s[m] as usize, j + 1);
        }
        std::mem::swap(&mut prev_d, &mut cur_d);
        std::mem::swap(&mut prev_s, &mut cur_s);
    }
    Some(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn slice(s: &str, a: usize, b: usize) -> String {
        s.chars().skip(a).take(b - a).collect()
    }

    #[test]
    fn exact_takes_the_first_occurrence_in_chars() {
        let doc = "añb — añb — añb";
        let hit = locate(doc, "  añb ", 0.9).unwrap();
        assert_eq!((hit.start, hit.end, hit.kind), (0, 3, MatchKind::Exact));
        let hit = locate(doc, "— añb", 0.9).unwrap();
        assert_eq!((hit.start, hit.end), (4, 9));
        assert!(locate(doc, "   ", 0.9).is_none());
        assert!(locate(doc, "", 0.9).is_none());
    }

    #[test]
    fn normalized_matches_map_back_to_original_characters() {
        let doc = "Intro.\n\nThe  “Quick”\tbrown FOX — straße…  end";
        let hit = locate(doc, "the \"quick\" brown fox - STRASSE... end", 0.9).unwrap();
        assert_eq!(hit.kind, MatchKind::Normalized);
        assert_eq!(
            slice(doc, hit.start, hit.end),
            "The  “Quick”\tbrown FOX — straße…  end"
        );
        // A needle that is only part of an expanded character covers the whole character.
        let hit = locate("a…b", "a..", 0.9).unwrap();
        assert_eq!((hit.start, hit.end), (0, 2));
    }

    #[test]
    fn fuzzy_finds_small_edits_with_their_score() {
        let doc = "Larkspur keeps the complete rule set in memory and refreshes it in the \
                   background. Flag checks therefore cost microseconds.";
        let quoted =
            "Larkspur keeps the complete rule-set in memory and refreshes it in background.";
        let hit = locate(doc, quoted, 0.9).unwrap();
        assert_eq!(hit.kind, MatchKind::Fuzzy);
        assert!(hit.score >= 0.9 && hit.score < 1.0, "{}", hit.score);
        assert_eq!(
            slice(doc, hit.start, hit.end),
            "Larkspur keeps the complete rule set in memory and refreshes it in the background."
        );
        // Same excerpt, stricter threshold: not good enough.
        assert!(
            (hit.score - (1.0 - 5.0 / 78.0)).abs() < 1e-12,
            "5 edits in 78"
        );
        assert!(locate(doc, quoted, 0.95).is_none());
    }

    #[test]
    fn paraphrases_are_not_located() {
        let doc = "Applications do not ask the server about each flag. Instead, an SDK downloads \
                   the complete rule set of one environment when it starts.";
        for p in [
            "An SDK fetches every rule of an environment at startup instead of querying per flag.",
            "Applications never query the server for individual flags; the SDK loads all rules.",
        ] {
            assert!(locate(doc, p, 0.9).is_none(), "{p}");
        }
    }

    #[test]
    fn fuzzy_work_is_bounded_by_the_budget() {
        let doc = "The quick brown fox jumps over the lazy dog near the river bank.";
        let quoted = "The quick brown fax jumps over the lazy dog near the river bank.";
        assert!(Locator::new(doc).locate(quoted, 0.9).is_some());
        assert!(
            Locator::new(doc)
                .with_budget(10)
                .locate(quoted, 0.9)
                .is_none(),
            "no budget, no alignment"
        );
    }

    #[test]
    fn long_documents_stay_fast_because_only_candidates_are_aligned() {
        // 2 MB of varied text; a 600-character excerpt with edits near the end.
        let mut doc = String::new();
        let mut x: u64 = 7;
        while doc.len() < 2_000_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            doc.push_str(
                ["alpha ", "beta ", "gamma ", "delta ", "eps. ", "zeta\n"][(x >> 60) as usize % 6],
            );
            doc.push_str(&format!("{} ", x >> 40));
        }
        let chars: Vec<char> = doc.chars().collect();
        let at = chars.len() - 1000;
        let original: String = chars[at..at + 600].iter().collect();
        let mut edited: Vec<char> = original.chars().collect();
        for i in (0..600).step_by(60) {
            edited[i] = '#';
        }
        let edited: String = edited.into_iter().collect();
        let t = std::time::Instant::now();
        let hit = locate(&doc, &edited, 0.9).expect("found");
        assert!(hit.start.abs_diff(at) <= 2, "{} vs {at}", hit.start);
        assert!(
            t.elapsed() < std::time::Duration::from_secs(20),
            "{:?}",
            t.elapsed()
        );
    }

    /// Case changes the normal form treats as equal (true of nearly every letter).
    fn recase(c: char, upper: bool) -> String {
        let changed: String = if upper {
            c.to_uppercase().collect()
        } else {
            c.to_lowercase().collect()
        };
        if normalize(&changed).0 == normalize(&c.to_string()).0 {
            changed
        } else {
            c.to_string()
        }
    }

    const WORDS: &[&str] = &[
        "alpha",
        "Ünïcode",
        "σίγμα",
        "日本語",
        "🎉",
        "straße",
        "Ωmega",
        "ÉCOLE",
        "naïve",
        "x",
        "İstanbul",
        "—",
        "data-set",
        "42",
        "ǅemal",
    ];

    fn doc_strategy() -> impl Strategy<Value = String> {
        let ws = prop::sample::select(vec![" ", "  ", "\n", "\t", " \n ", "\u{a0}"]);
        prop::collection::vec((prop::sample::select(WORDS.to_vec()), ws), 1..60).prop_map(|parts| {
            parts
                .into_iter()
                .map(|(w, s)| format!("{w}{s}"))
                .collect::<String>()
        })
    }

    proptest! {
        #[test]
        fn any_substring_is_found_exactly_at_its_first_occurrence(
            doc in prop::collection::vec(any::<char>(), 1..120).prop_map(|v| v.into_iter().collect::<String>()),
            a in 0usize..120, len in 1usize..60,
        ) {
            let n = doc.chars().count();
            let a = a % n;
            let b = (a + len).min(n);
            let sub = slice(&doc, a, b);
            let t = sub.trim();
            prop_assume!(!t.is_empty());
            let hit = locate(&doc, &sub, 0.9).unwrap();
            let first = doc[..doc.find(t).unwrap()].chars().count();
            prop_assert_eq!(hit.kind, MatchKind::Exact);
            prop_assert_eq!((hit.start, hit.end), (first, first + t.chars().count()));
            prop_assert_eq!(slice(&doc, hit.start, hit.end), t);
        }

        #[test]
        fn case_and_whitespace_changes_are_located_at_the_right_span(
            doc in doc_strategy(),
            a in 0usize..400, len in 1usize..80,
            mask in prop::collection::vec(any::<bool>(), 80),
            ws in prop::sample::select(vec![" ", "\n", "  \t", "\r\n"]),
        ) {
            let n = doc.chars().count();
            let a = a % n;
            let b = (a + len).min(n);
            let sub = slice(&doc, a, b);
            let lead = sub.chars().take_while(|c| c.is_whitespace()).count();
            let trail = sub.chars().rev().take_while(|c| c.is_whitespace()).count();
            prop_assume!(lead < sub.chars().count());
            let expected = (a + lead, b - trail);
            // Perturb: change case by the mask and replace every whitespace run.
            let mut perturbed = String::new();
            let mut in_ws = false;
            for (i, c) in sub.chars().enumerate() {
                if c.is_whitespace() {
                    if !in_ws { perturbed.push_str(ws); }
                    in_ws = true;
                } else {
                    in_ws = false;
                    perturbed.push_str(&recase(c, mask[i % mask.len()]));
                }
            }
            let hit = locate(&doc, &perturbed, 0.9).unwrap();
            prop_assert!(hit.kind != MatchKind::Fuzzy);
            let found = slice(&doc, hit.start, hit.end);
            prop_assert_eq!(normalize(&found).0, normalize(perturbed.trim()).0);
            // The first normalized occurrence: the perturbed one, or an earlier equal text.
            prop_assert!(hit.start < expected.0 || (hit.start, hit.end) == expected,
                "{:?} vs {:?}", (hit.start, hit.end), expected);
        }

        #[test]
        fn a_few_edits_are_located_fuzzily_near_the_span(
            seed in any::<u64>(), at in 0usize..3000, len in 40usize..300, edits in 0usize..100,
        ) {
            let mut x = seed | 1;
            let mut next = move || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x };
            let doc: String = (0..4000).map(|_| {
                let r = next() % 32;
                if r < 5 { ' ' } else { (b'a' + (r % 26) as u8) as char }
            }).collect();
            let at = at.min(4000 - len);
            let mut sub: Vec<char> = doc[at..at + len].chars().collect();
            prop_assume!(!sub[0].is_whitespace() && !sub[len - 1].is_whitespace());
            // At most 5 % edits: substitutions by a character the text never has.
            let k = (edits % (len / 20 + 1)).min(len / 20);
            for _ in 0..k {
                let i = (next() as usize) % len;
                sub[i] = '#';
            }
            let sub: String = sub.into_iter().collect();
            let hit = locate(&doc, &sub, 0.9).unwrap();
            let overlap = hit.end.min(at + len).saturating_sub(hit.start.max(at));
            prop_assert!(overlap + 2 * k >= len, "{:?} vs {}..{}", hit, at, at + len);
        }

        #[test]
        fn unrelated_strings_are_not_located(
            doc in "[a-z ]{200,2000}", needle in "[a-z]{5,12}( [a-z]{3,12}){3,8}",
        ) {
            prop_assume!(!doc.contains(needle.as_str()));
            prop_assert_eq!(locate(&doc, &needle, 0.9), None);
        }
    }
}
