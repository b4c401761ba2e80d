//! Finding a passage a language model quoted in the document it quoted from.
//!
//! Models copy imperfectly: they re-wrap lines, change case, straighten quotes, drop a
//! Markdown backtick or two. [`Locator::locate`] tries three steps, each only when the one
//! before found nothing:
//!
//! 1. **exact**: the excerpt (without leading and trailing whitespace) occurs verbatim; its
//!    first occurrence is taken.
//! 2. **normalized**: both texts are compared after decomposing every character (Unicode
//!    compatibility decomposition, so a composed `é` and `e` followed by a combining accent
//!    agree, as do `ﬁ` and `fi`), folding case (Unicode lower-case of the upper-case, so `ß`
//!    and `SS` agree), turning every run of whitespace into one space, and mapping typographic
//!    quotes, dashes and the ellipsis to their ASCII forms. The match is mapped back to the
//!    document's own characters.
//! 3. **fuzzy**: the normalized excerpt is aligned with the normalized document allowing edits;
//!    the score is `1 − edits / excerpt length`, and a match counts only at or above the
//!    threshold. Of the possible alignments the one with the most matches net of edits is
//!    taken, so that a quote that left out a few words spans the whole passage instead of
//!    stopping short before the gap. Only promising places are aligned: the excerpt is cut into
//!    `p` pieces, a match with at most `k` edits keeps at least `p − k` of them intact near
//!    their offsets, so places where fewer pieces occur are skipped without aligning. Pieces
//!    that occur very often are not searched, and the alignment work has a fixed budget
//!    ([`Locator::with_budget`]), so a long document costs a few scans, not a quadratic search.
//!
//! A paraphrase shares words but not character sequences and scores far below any useful
//! threshold: it is not located, which is the point.
//!
//! ```
//! use rag_eval::locate::{locate, MatchKind};
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
pub const DEFAULT_BUDGET: usize = 8_000_000;

/// A piece occurring more often than this is left out (it would point everywhere).
const MAX_PIECE_HITS: usize = 2048;

/// At most this many pieces of an excerpt are searched for.
const MAX_PIECES: usize = 64;

/// Length, in normalized chars, of the windows the fuzzy step indexes; pieces are at least
/// this long.
const GRAM: usize = 4;

/// A hash of `GRAM` chars (collisions only cost a comparison).
fn gram_hash(chars: &[char]) -> u64 {
    chars.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &c| {
        (h ^ u64::from(c)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

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
    /// Every [`GRAM`]-char window of the normalized text as (hash, position), sorted: built
    /// on the first fuzzy search, it finds a piece's occurrences without scanning the text.
    grams: std::sync::OnceLock<Vec<(u64, u32)>>,
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
            grams: std::sync::OnceLock::new(),
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
        let n_len = n.chars().count();
        // A match must cover whole characters: "se" is not in "straße" although its normal
        // form "strasse" contains it.
        let whole = |s: usize, e: usize| {
            (s == 0 || self.origin[s - 1] != self.origin[s])
                && (e == self.origin.len() || self.origin[e] != self.origin[e - 1])
        };
        let found = self
            .norm
            .match_indices(n)
            .map(|(b, _)| self.norm_index(b))
            .find(|&s| whole(s, s + n_len));
        if let Some(s) = found {
            let (start, end) = self.to_original(s, s + n_len);
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
        // A threshold of 0 (or NaN) would accept anything; nothing sensible to find.
        if threshold.is_nan() || threshold <= 0.0 || self.norm_chars.is_empty() {
            return None;
        }
        let k = ((1.0 - threshold.min(1.0)) * m as f64).floor() as usize;
        if k == 0 {
            return None;
        }
        // Many short pieces filter places strongly but are often too common to search for;
        // k + 1 longer pieces filter nothing (one intact piece is all a match guarantees) but
        // are rarely common. The second cut is tried when the first finds nothing.
        let mut spent = 0usize;
        let fine = (2 * k + 1).min(m / GRAM).clamp(1, MAX_PIECES);
        let coarse = (k + 1).min(m / GRAM).clamp(1, MAX_PIECES);
        if m < GRAM {
            return None;
        }
        let grams = NeedleGrams::new(needle);
        let mut best = self.align_candidates(needle, &grams, k, fine, &mut spent);
        if best.is_none() && coarse != fine {
            best = self.align_candidates(needle, &grams, k, coarse, &mut spent);
        }
        let (_, d, mut s, mut e) = best?;
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

    /// Start positions (normalized chars, ascending) of up to `limit` occurrences of `piece`
    /// (at least [`GRAM`] chars) in the normalized text.
    fn occurrences(&self, piece: &[char], limit: usize) -> Vec<usize> {
        let grams = self.grams.get_or_init(|| {
            let mut v: Vec<(u64, u32)> = self
                .norm_chars
                .windows(GRAM)
                .enumerate()
                .map(|(i, w)| (gram_hash(w), i as u32))
                .collect();
            v.sort_unstable();
            v
        });
        // Look up the piece's rarest gram and check each place it occurs.
        let postings = |j: usize| {
            let h = gram_hash(&piece[j..j + GRAM]);
            let lo = grams.partition_point(|e| e.0 < h);
            let hi = grams.partition_point(|e| e.0 <= h);
            &grams[lo..hi]
        };
        let Some((j, list)) = (0..=piece.len() - GRAM)
            .map(|j| (j, postings(j)))
            .min_by_key(|(_, l)| l.len())
        else {
            return Vec::new();
        };
        // Postings of one hash are in position order, so the first matches are the first.
        list.iter()
            .filter_map(|&(_, p)| (p as usize).checked_sub(j))
            .filter(|&s| self.norm_chars.get(s..s + piece.len()) == Some(piece))
            .take(limit)
            .collect()
    }

    /// The cheapest alignment of `needle` with at most `k` edits at the places its pieces
    /// point to, as `(cost, edits, start, end)` in normalized chars; `spent` counts table cells
    /// against the budget.
    ///
    /// The needle is cut into `pieces` disjoint pieces. An alignment with at most `k` edits
    /// leaves at least `pieces − k` of them intact, each at its offset from the alignment's
    /// start give or take `k`, so only places where that many pieces occur are considered.
    /// Pieces too common to point anywhere are not searched and lower that count. A place is
    /// aligned only if it also passes the q-gram count (see [`NeedleGrams::shared`]).
    fn align_candidates(
        &self,
        needle: &[char],
        grams: &NeedleGrams,
        k: usize,
        pieces: usize,
        spent: &mut usize,
    ) -> Option<(usize, usize, usize, usize)> {
        let m = needle.len();
        let n = self.norm_chars.len();
        let piece_len = m / pieces;
        let mut candidates: Vec<(usize, usize)> = Vec::new(); // (start, piece)
        let mut unusable = 0;
        for p in 0..pieces {
            let offset = p * piece_len;
            let piece = &needle[offset..offset + piece_len];
            if piece.iter().all(|c| *c == ' ') {
                unusable += 1;
                continue;
            }
            let hits = self.occurrences(piece, MAX_PIECE_HITS + 1);
            if hits.len() > MAX_PIECE_HITS {
                unusable += 1;
                continue;
            }
            candidates.extend(hits.into_iter().map(|h| (h.saturating_sub(offset), p)));
        }
        let required = pieces.saturating_sub(k).saturating_sub(unusable).max(1);
        candidates.sort_unstable();
        // The intact pieces of one alignment all point within ±k of its start: slide a window
        // of width 2k over the candidate starts, counting distinct pieces, and keep the
        // windows with enough of them; overlapping or adjacent ones make one group.
        let mut groups: Vec<(usize, usize, usize)> = Vec::new(); // (first, last, votes)
        let mut count = vec![0u32; pieces];
        let (mut distinct, mut r) = (0usize, 0usize);
        for i in 0..candidates.len() {
            let left = candidates[i].0;
            while r < candidates.len() && candidates[r].0 <= left + 2 * k {
                let p = candidates[r].1;
                count[p] += 1;
                distinct += usize::from(count[p] == 1);
                r += 1;
            }
            if distinct >= required {
                let right = candidates[r - 1].0;
                match groups.last_mut() {
                    Some(g) if left <= g.1 + 2 * k => {
                        g.1 = g.1.max(right);
                        g.2 = g.2.max(distinct);
                    }
                    _ => groups.push((left, right, distinct)),
                }
            }
            let p = candidates[i].1;
            count[p] -= 1;
            distinct -= usize::from(count[p] == 0);
        }
        // Most votes first, so that a spent budget leaves out the least promising places.
        groups.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
        let mut best: Option<(usize, usize, usize, usize)> = None;
        for (first, last, _) in groups {
            // An accepted alignment costs at most 2k, so any cheaper one it competes with
            // leaves out fewer than 2k text characters: a margin of 2k holds them all.
            let lo = first.saturating_sub(2 * k);
            let hi = (last + m + 2 * k).min(n);
            if lo >= hi {
                continue;
            }
            let region = &self.norm_chars[lo..hi];
            // Strings within k edits share at least m − GRAM + 1 − k·GRAM grams (each edit
            // destroys at most GRAM of them); a region sharing fewer holds no match.
            let needed = (m + 1).saturating_sub(GRAM).saturating_sub(k * GRAM);
            if grams.shared(region) < needed {
                continue;
            }
            let cells = (hi - lo) * m;
            if *spent + cells > self.budget {
                continue;
            }
            *spent += cells;
            let Some((c, d, s, e)) = best_substring(needle, region) else {
                continue;
            };
            let cand = (c, d, lo + s, lo + e);
            if d <= k && best.is_none_or(|b| (cand.0, cand.2) < (b.0, b.2)) {
                best = Some(cand);
            }
        }
        best
    }
}

/// The [`GRAM`]-char windows of a needle, as a multiset.
struct NeedleGrams {
    /// Distinct gram hashes, sorted.
    hashes: Vec<u64>,
    /// How often each occurs in the needle.
    counts: Vec<u32>,
}

impl NeedleGrams {
    fn new(needle: &[char]) -> Self {
        let mut all: Vec<u64> = needle.windows(GRAM).map(gram_hash).collect();
        all.sort_unstable();
        let mut hashes: Vec<u64> = Vec::new();
        let mut counts: Vec<u32> = Vec::new();
        for h in all {
            if hashes.last() == Some(&h) {
                *counts.last_mut().expect("pushed together") += 1;
            } else {
                hashes.push(h);
                counts.push(1);
            }
        }
        NeedleGrams { hashes, counts }
    }

    /// Grams of the needle found in `region`, with multiplicity: an upper bound on the grams
    /// the needle shares with any substring of `region`.
    fn shared(&self, region: &[char]) -> usize {
        let mut left = self.counts.clone();
        let mut shared = 0;
        for w in region.windows(GRAM) {
            if let Ok(i) = self.hashes.binary_search(&gram_hash(w)) {
                if left[i] > 0 {
                    left[i] -= 1;
                    shared += 1;
                }
            }
        }
        shared
    }
}

/// Finds `excerpt` in `text` (see [`Locator::locate`]); build a [`Locator`] to search one text
/// for many excerpts.
pub fn locate(text: &str, excerpt: &str, threshold: f64) -> Option<Located> {
    Locator::new(text).locate(excerpt, threshold)
}

/// Whether `a` and `b` read the same once normalized as the normalized step compares texts
/// (case, whitespace, typographic punctuation and Unicode form folded; leading and trailing
/// whitespace ignored): a text found that way is the same text as the document's there.
pub fn same_normalized(a: &str, b: &str) -> bool {
    normalize(a).0.trim_matches(' ') == normalize(b).0.trim_matches(' ')
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
            c => unicode_normalization::char::decompose_compatible(c, |d| {
                d.to_uppercase()
                    .flat_map(char::to_lowercase)
                    .for_each(&mut push)
            }),
        }
    }
    (out, origin)
}

/// The substring of `text` that `needle` aligns with best, the match free to start and end
/// anywhere in `text` (Sellers' algorithm): `(cost, edits, start, end)`, ties going to the
/// earliest start, then the latest end. `None` for an empty needle.
///
/// Edits are counted as usual (substitutions, insertions, deletions, one each), but the
/// alignment minimises a cost where a text character left out of the quote costs 1 and a
/// substituted or unmatched needle character costs 2, that is, it maximises matches minus
/// edits. With plain edit distance, a quote that omits a few words near its end aligns more
/// cheaply with a span that stops before the omission and leaves the quote's tail unmatched; a
/// model's quote omits far more often than it invents, and its tail is where the text is.
fn best_substring(needle: &[char], text: &[char]) -> Option<(usize, usize, usize, usize)> {
    let m = needle.len();
    if m == 0 {
        return None;
    }
    // Column j of the table, per needle prefix i: (cost, edits, start) of the best alignment of
    // needle[..i] with a text substring ending at j.
    let mut prev: Vec<(u32, u32, u32)> = (0..=m as u32).map(|i| (2 * i, i, 0)).collect();
    let mut cur = prev.clone();
    let mut best = (prev[m].0 as usize, prev[m].1 as usize, 0usize, 0usize);
    for (j, &tc) in text.iter().enumerate() {
        let j1 = (j + 1) as u32;
        cur[0] = (0, 0, j1);
        for i in 1..=m {
            let same = needle[i - 1] == tc;
            let (dc, de, ds) = prev[i - 1];
            let sub = (dc + 2 * u32::from(!same), de + u32::from(!same), ds);
            let (uc, ue, us) = cur[i - 1];
            let del = (uc + 2, ue + 1, us);
            let (lc, le, ls) = prev[i];
            let ins = (lc + 1, le + 1, ls);
            cur[i] = if sub.0 <= del.0 && sub.0 <= ins.0 {
                sub
            } else if del.0 <= ins.0 {
                del
            } else {
                ins
            };
        }
        // On equal cost the earlier match wins, and of two ends of the same match the later:
        // a needle's last character replaced (rather than dropped) still stands for the text
        // character it replaced.
        let (c, s) = (cur[m].0 as usize, cur[m].2 as usize);
        if c < best.0 || (c == best.0 && s == best.2) {
            best = (
                cur[m].0 as usize,
                cur[m].1 as usize,
                cur[m].2 as usize,
                j + 1,
            );
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    Some(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn texts_equal_once_normalized_are_the_same_text_and_others_are_not() {
        assert!(same_normalized(
            "It needs  Rust\n1.80 \u{2014} \u{201C}stable\u{201D}.",
            " it needs rust 1.80 - \"STABLE\". "
        ));
        assert!(!same_normalized("it needs rust 1.80", "it needs rust 1.81"));
        assert!(!same_normalized("needs rust", "it needs rust"));
    }

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
    fn composed_and_decomposed_forms_agree() {
        // "Café ﬁne" with a composed é and a ligature; the excerpt decomposed and spelt out.
        let doc = "Menu: Caf\u{e9} \u{fb01}ne, then tea.";
        let hit = locate(doc, "cafe\u{301} fine", 1.0).unwrap();
        assert_eq!(
            (hit.start, hit.end, hit.kind),
            (6, 14, MatchKind::Normalized)
        );
        let back = locate("Cafe\u{301} fine", "caf\u{e9}", 1.0).unwrap();
        assert_eq!((back.start, back.end), (0, 5));
        // An accent is not dropped: "cafe" alone is not "café".
        assert!(locate(doc, "cafe fine", 1.0).is_none());
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
        // Part of an expanded character is not a match; the whole one is.
        assert_eq!(locate("a…b", "a..", 0.9), None);
        let hit = locate("a…b", "A...", 0.9).unwrap();
        assert_eq!((hit.start, hit.end), (0, 2));
        let hit = locate("straße, data-set", "SE", 0.9).unwrap();
        assert_eq!((hit.start, hit.end), (13, 15));
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
    fn an_omission_near_the_end_does_not_cut_the_span_short() {
        let doc = "q: what was the total expense for repairs and maintenance incurred in 2013? 2.3";
        let quoted = "What was the total expense for repairs and maintenance in 2013?";
        // 9 characters left out of 63: below 0.9, and no shorter span is offered instead
        // (stopping before "incurred" would leave only 6 characters unmatched).
        assert_eq!(locate(doc, quoted, 0.9), None);
        let hit = locate(doc, quoted, 0.85).unwrap();
        assert_eq!(
            slice(doc, hit.start, hit.end),
            "what was the total expense for repairs and maintenance incurred in 2013?"
        );
        assert!((hit.score - (1.0 - 9.0 / 63.0)).abs() < 1e-12);
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
        // The alignment budget is under 1% of the table an alignment against the whole
        // document would fill, so finding the excerpt within it means only candidate places
        // were aligned (what keeps it fast is measured by benches, not timed here).
        assert!(DEFAULT_BUDGET < chars.len() * edited.chars().count() / 100);
        let hit = locate(&doc, &edited, 0.9).expect("found");
        assert!(hit.start.abs_diff(at) <= 2, "{} vs {at}", hit.start);
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
            if let Some(b) = doc.find(perturbed.trim()) {
                // The perturbed text happens to occur verbatim (an "E" of "ÉCOLE"): the exact
                // step takes that occurrence.
                prop_assert_eq!(hit.kind, MatchKind::Exact);
                prop_assert_eq!(hit.start, doc[..b].chars().count());
            } else {
                // The first normalized occurrence: the perturbed one, or an earlier equal text.
                prop_assert!(hit.start < expected.0 || (hit.start, hit.end) == expected,
                    "{:?} vs {:?}", (hit.start, hit.end), expected);
            }
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
            // The span, moved off whitespace at both ends (ASCII: bytes are chars).
            let mut at = at.min(4000 - len);
            let mut end = at + len;
            while doc.as_bytes()[at] == b' ' { at += 1; }
            while end > at && doc.as_bytes()[end - 1] == b' ' { end -= 1; }
            let len = end - at;
            prop_assume!(len >= 30);
            let mut sub: Vec<char> = doc[at..end].chars().collect();
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
