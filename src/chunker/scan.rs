//! Byte scanning for the recursive splitter: separators found and pieces measured eight or
//! thirty-two bytes at a time (SWAR: SIMD within a register), without `unsafe`.

/// The first offset in `from..to` holding `byte`.
#[inline]
pub(super) fn find_byte(hay: &[u8], from: usize, to: usize, byte: u8) -> Option<usize> {
    let s = &hay[from..to];
    let mut i = 0;
    while let Some(block) = s[i..].first_chunk::<32>() {
        if has_byte(block, byte) {
            return block.iter().position(|&b| b == byte).map(|p| from + i + p);
        }
        i += 32;
    }
    s[i..].iter().position(|&b| b == byte).map(|p| from + i + p)
}

/// The last offset in `from..to` holding `byte`.
#[inline]
pub(super) fn rfind_byte(hay: &[u8], from: usize, to: usize, byte: u8) -> Option<usize> {
    let s = &hay[from..to];
    let mut j = s.len();
    while let Some(block) = s[..j].last_chunk::<32>() {
        if has_byte(block, byte) {
            return block
                .iter()
                .rposition(|&b| b == byte)
                .map(|p| from + j - 32 + p);
        }
        j -= 32;
    }
    s[..j].iter().rposition(|&b| b == byte).map(|p| from + p)
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;
const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// The eight bytes of `hay` from `at` as a little-endian word (zero-padded past the end),
/// and a mask of the bytes that exist.
#[inline(always)]
fn load(hay: &[u8], at: usize) -> (u64, u64) {
    let rest = &hay[at..];
    match rest.first_chunk::<8>() {
        Some(w) => (u64::from_le_bytes(*w), u64::MAX),
        None => {
            let mut buf = [0u8; 8];
            buf[..rest.len()].copy_from_slice(rest);
            (u64::from_le_bytes(buf), (1u64 << (8 * rest.len())) - 1)
        }
    }
}

/// Bit 7 of each byte of `word` that equals the byte broadcast in `pattern`. Exact: no
/// carry crosses bytes because each sum is at most 0x7f + 0x7f.
#[inline(always)]
fn eq_mask(word: u64, pattern: u64) -> u64 {
    let x = word ^ pattern;
    !(((x & LOW7) + LOW7) | x | LOW7)
}

/// Bit 7 of each byte of `word` that continues a multi-byte UTF-8 char (`0b10xx_xxxx`).
#[inline(always)]
fn continuation_mask(word: u64) -> u64 {
    word & !(word << 1) & HIGH
}

/// Number of bytes flagged in a mask of bit-7 flags. A multiplication sums the eight 0/1
/// bytes into the top byte; `count_ones` would be a dozen instructions without `popcnt`,
/// which the baseline x86-64 target lacks.
#[inline(always)]
fn flagged_bytes(mask: u64) -> usize {
    ((mask >> 7).wrapping_mul(ONES) >> 56) as usize
}

/// Packs the bit-7 flags of a word's eight bytes into the low eight bits, byte `k` to bit `k`:
/// the multiplier's partial products land in the top byte without carries.
#[inline(always)]
fn pack(mask: u64) -> u64 {
    (mask >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
}

/// Whether `byte` occurs in `chunk`; compiles to a few SSE2 instructions (compare, or, move
/// mask) without `unsafe`.
#[inline(always)]
fn has_byte(chunk: &[u8; 32], byte: u8) -> bool {
    chunk.iter().fold(0u8, |acc, &b| acc | u8::from(b == byte)) != 0
}

/// Number of UTF-8 continuation bytes in `chunk`; vectorised like [`has_byte`].
#[inline(always)]
fn continuation_bytes(chunk: &[u8; 32]) -> usize {
    chunk
        .iter()
        .fold(0u8, |acc, &b| acc + u8::from((b as i8) < -0x40)) as usize
}

/// Splits `text` before each leftmost non-overlapping occurrence of the non-empty `sep` (as
/// `str::match_indices` and Python's `re.split` find them) and calls `f(start, end, chars)`
/// for each non-empty piece; the separator begins the piece after it. `chars` is the piece's
/// length in chars with `COUNT_CHARS`, its length in bytes otherwise.
///
/// The text is read 32 bytes at a time. Blocks without the separator's first byte are skipped
/// with a vectorised test (only their continuation bytes are counted); in the others, eight
/// bytes per word operation give a bit mask of candidates and the continuation bytes before
/// each, so splitting at spaces (a match every few bytes) costs a few instructions per piece.
/// A UTF-8 separator starts with a lead byte, which never occurs inside a multi-byte char, so
/// every split is on a char boundary.
#[inline(always)]
pub(super) fn scan_pieces<const COUNT_CHARS: bool>(
    text: &str,
    sep: &str,
    mut f: impl FnMut(usize, usize, usize),
) {
    let hay = text.as_bytes();
    let sep = sep.as_bytes();
    let pattern = ONES * u64::from(sep[0]);
    let (mut from, mut cont_from) = (0usize, 0usize);
    let mut next_allowed = 0usize;
    // Continuation bytes before the block at `base`.
    let mut cont_before = 0usize;
    let mut base = 0usize;
    while base < hay.len() {
        if let Some(block) = hay[base..].first_chunk::<32>() {
            if !has_byte(block, sep[0]) {
                if COUNT_CHARS {
                    cont_before += continuation_bytes(block);
                }
                base += 32;
                continue;
            }
        }
        let mut hits = 0u64;
        // Per word of the block: its continuation flags, and how many came before it.
        let mut cont_words = [0u64; 4];
        let mut cont_prefix = [0usize; 4];
        let mut in_block = 0usize;
        for j in 0..4 {
            let at = base + 8 * j;
            if at >= hay.len() {
                break;
            }
            let (word, valid) = load(hay, at);
            hits |= pack(eq_mask(word, pattern) & valid) << (8 * j);
            if COUNT_CHARS {
                let cont = continuation_mask(word) & valid;
                cont_words[j] = cont;
                cont_prefix[j] = in_block;
                in_block += flagged_bytes(cont);
            }
        }
        while hits != 0 {
            let i = hits.trailing_zeros() as usize;
            hits &= hits - 1;
            let at = base + i;
            if sep.len() > 1 && (at < next_allowed || !hay[at..].starts_with(sep)) {
                continue;
            }
            next_allowed = at + sep.len();
            let cont_at = if COUNT_CHARS {
                let (j, k) = (i / 8, i % 8);
                cont_before
                    + cont_prefix[j]
                    + flagged_bytes(cont_words[j] & ((1u64 << (8 * k)) - 1))
            } else {
                0
            };
            if at > from {
                f(from, at, (at - from) - (cont_at - cont_from));
            }
            from = at;
            cont_from = cont_at;
        }
        cont_before += in_block;
        base += 32;
    }
    if hay.len() > from {
        f(
            from,
            hay.len(),
            (hay.len() - from) - (cont_before - cont_from),
        );
    }
}

/// Offset of the first occurrence of the non-empty `sep` in `text`.
pub(super) fn find(text: &str, sep: &str) -> Option<usize> {
    let hay = text.as_bytes();
    let sep = sep.as_bytes();
    let pattern = ONES * u64::from(sep[0]);
    let mut base = 0usize;
    while base < hay.len() {
        let (word, valid) = load(hay, base);
        let mut hits = eq_mask(word, pattern) & valid;
        while hits != 0 {
            let at = base + (hits.trailing_zeros() / 8) as usize;
            hits &= hits - 1;
            if hay[at..].starts_with(sep) {
                return Some(at);
            }
        }
        base += 8;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunker::recursive::tests::text_strategy;
    use proptest::prelude::*;

    fn pieces(t: &str, sep: &str) -> Vec<(usize, usize, usize)> {
        let mut v = Vec::new();
        scan_pieces::<true>(t, sep, |s, e, n| v.push((s, e, n)));
        v
    }

    #[test]
    fn scanning_splits_before_leftmost_non_overlapping_matches() {
        assert_eq!(
            pieces("a\n\n\n\nb\n\n\nc", "\n\n"),
            [(0, 1, 1), (1, 3, 2), (3, 6, 3), (6, 10, 4)]
        );
        assert_eq!(pieces("aaaaaaa", "aaa"), [(0, 3, 3), (3, 7, 4)]);
        assert_eq!(
            pieces("0123456789abcdef g", " "),
            [(0, 16, 16), (16, 18, 2)],
            "match in the last, partial word"
        );
        // Char counts across words and multi-byte chars: "日本 語€ € " has 3-byte chars.
        assert_eq!(
            pieces("日本 語€ € x", "€ "),
            [(0, 10, 4), (10, 14, 2), (14, 19, 3)]
        );
        assert!(pieces("", " ").is_empty());
        assert_eq!(pieces("abc", "abcd"), [(0, 3, 3)]);
        assert_eq!(find("xx\nyy\n\nz", "\n\n"), Some(5));
        assert_eq!(find("0123456789abcdef\n", "\n"), Some(16));
        assert_eq!(find("abc", "c d"), None);
    }

    proptest! {
        #[test]
        fn scanning_agrees_with_match_indices(
            text in text_strategy(),
            sep in prop::sample::select(vec![" ", "\n", "\n\n", "bb", "€", "日本", "a a", "\x1c"]),
        ) {
            let mut cuts: Vec<usize> = text.match_indices(sep).map(|(i, _)| i).collect();
            cuts.insert(0, 0);
            cuts.push(text.len());
            cuts.dedup();
            let expected: Vec<(usize, usize, usize)> = cuts
                .windows(2)
                .map(|w| (w[0], w[1], text[w[0]..w[1]].chars().count()))
                .collect();
            prop_assert_eq!(pieces(&text, sep), expected);
            prop_assert_eq!(find(&text, sep), text.find(sep));
        }
    }

    #[test]
    fn byte_search_agrees_with_iterators_across_block_edges() {
        let hay: Vec<u8> = (0..100u8)
            .map(|i| if i % 37 == 5 { b'x' } else { b'.' })
            .collect();
        for from in 0..hay.len() {
            for to in from..=hay.len() {
                let want = hay[from..to]
                    .iter()
                    .position(|&b| b == b'x')
                    .map(|p| from + p);
                assert_eq!(find_byte(&hay, from, to, b'x'), want, "{from}..{to}");
                let want = hay[from..to]
                    .iter()
                    .rposition(|&b| b == b'x')
                    .map(|p| from + p);
                assert_eq!(rfind_byte(&hay, from, to, b'x'), want, "{from}..{to}");
            }
        }
    }
}
