//! Deterministic pseudo-random choices of a run.

/// Deterministic pseudo-random numbers (SplitMix64): small, seedable, the same everywhere.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix(u64);

impl SplitMix {
    #[cfg(test)]
    pub(crate) fn new(seed: u64) -> Self {
        SplitMix(seed)
    }

    /// A generator for one named purpose, so that choices for one document do not depend on
    /// the order documents are processed in.
    pub(crate) fn keyed(seed: u64, key: &str) -> Self {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in key.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        let mut s = SplitMix(seed ^ h);
        s.next_u64();
        s
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        // Multiply-shift: the bias is below 2^-32 for any n a corpus can have.
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Fisher–Yates shuffle.
    pub(crate) fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

/// How `total` questions are shared among `parts` windows: as evenly as possible, the extra
/// ones going to windows spread over the document from a seeded offset.
pub(crate) fn share_questions(total: usize, parts: usize, rng: &mut SplitMix) -> Vec<usize> {
    if parts == 0 {
        return Vec::new();
    }
    let offset = rng.below(parts);
    let mut out = vec![0; parts];
    for (i, slot) in out.iter_mut().enumerate() {
        // Window i receives floor((k+1)·total/parts) − floor(k·total/parts) with k its place
        // after rotation, which sums to total and differs by at most one between windows.
        let k = (i + parts - offset) % parts;
        *slot = (k + 1) * total / parts - k * total / parts;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_shared_evenly_among_windows() {
        for total in 0..12 {
            for parts in 1..9 {
                let v = share_questions(total, parts, &mut SplitMix::new(total as u64));
                assert_eq!(v.iter().sum::<usize>(), total);
                let (lo, hi) = (v.iter().min().unwrap(), v.iter().max().unwrap());
                assert!(hi - lo <= 1, "{v:?}");
            }
        }
    }

    #[test]
    fn keyed_generators_are_stable_and_distinct() {
        let a: Vec<u64> = (0..3)
            .map(|_| SplitMix::keyed(1, "a.md").next_u64())
            .collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(
            SplitMix::keyed(1, "a.md").next_u64(),
            SplitMix::keyed(1, "b.md").next_u64()
        );
        assert_ne!(
            SplitMix::keyed(1, "a.md").next_u64(),
            SplitMix::keyed(2, "a.md").next_u64()
        );
    }
}
