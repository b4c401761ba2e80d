//! Vector arithmetic shared by the embedders, the vector store, the semantic chunker and the
//! similarity metrics.

/// Cosine similarity, in [−1, 1]; 0 when either vector is all zeros.
///
/// The sums are taken in `f64`, where the squares of any finite `f32` components cannot
/// overflow (an `f32` sum of squares overflows from components near 1e19), so finite vectors
/// always give a finite figure. A vector holding NaN or an infinity gives NaN: embedders
/// refuse such vectors before they reach here.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (f64::from(x), f64::from(y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        ((dot / (na.sqrt() * nb.sqrt())) as f32).clamp(-1.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::cosine;

    #[test]
    fn hand_worked() {
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 1.0]), 0.0);
        assert_eq!(cosine(&[3.0, 4.0], &[3.0, 4.0]), 1.0);
        assert_eq!(cosine(&[1.0, 1.0], &[-1.0, -1.0]), -1.0);
        assert!((cosine(&[1.0, 0.0], &[1.0, 1.0]) - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-7);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 2.0]), 0.0);
    }

    /// Components near 1e20 overflowed the `f32` sums to infinity and gave NaN.
    #[test]
    fn huge_components_stay_finite() {
        let a = [1e20f32, 2e20, -3e20];
        let b = [2e20f32, 4e20, -6e20];
        assert_eq!(cosine(&a, &b), 1.0);
        let c = [f32::MAX, f32::MAX];
        let d = [f32::MAX, -f32::MAX];
        assert_eq!(cosine(&c, &d), 0.0);
        assert_eq!(cosine(&c, &c), 1.0);
    }

    #[test]
    fn tiny_components_do_not_vanish() {
        let a = [1e-30f32, 0.0];
        assert_eq!(cosine(&a, &a), 1.0);
    }
}
