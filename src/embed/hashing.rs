use super::Embedder;
use crate::error::{Fault, Result};

/// Deterministic, offline embedder: signed feature hashing of lower-cased word n-grams,
/// L2-normalised.
///
/// It knows no meaning, only shared words, which is what a baseline and the test suite need:
/// results are identical on every machine and need no model or network. An input with no word
/// embeds as the zero vector.
///
/// ```
/// use rag_eval::embed::{cosine, Embedder, HashingEmbedder};
/// let e = HashingEmbedder::default();
/// let v = pollster::block_on(e.embed(&["the cat sat".into(), "the cat sat down".into(), "quantum chromodynamics".into()])).unwrap();
/// assert!(cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashingEmbedder {
    dimension: usize,
    max_ngram: usize,
}

impl Default for HashingEmbedder {
    /// 384 dimensions, unigrams and bigrams.
    fn default() -> Self {
        HashingEmbedder {
            dimension: 384,
            max_ngram: 2,
        }
    }
}

impl HashingEmbedder {
    /// `hashing[:dim=N,ngrams=M]`.
    pub(crate) fn from_spec(spec: &crate::spec::Spec) -> std::result::Result<Self, Fault> {
        let positive = |key: &str, default: usize| -> std::result::Result<usize, Fault> {
            match spec.whole(key)? {
                None => Ok(default),
                Some(0) => Err(Fault::key(key, format!("`{key}` must be at least 1"))),
                Some(n) => Ok(n),
            }
        };
        Ok(HashingEmbedder::new(
            positive("dim", 384)?,
            positive("ngrams", 2)?,
        ))
    }

    /// An embedder with `dimension` buckets over word n-grams up to `max_ngram` words.
    /// Both are clamped to at least 1.
    pub fn new(dimension: usize, max_ngram: usize) -> Self {
        HashingEmbedder {
            dimension: dimension.max(1),
            max_ngram: max_ngram.max(1),
        }
    }

    /// Embeds one text synchronously (the work is pure computation).
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        let words: Vec<String> = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let mut v = vec![0f32; self.dimension];
        for n in 1..=self.max_ngram {
            for gram in words.windows(n) {
                let mut h = FNV_OFFSET ^ n as u64;
                for (i, w) in gram.iter().enumerate() {
                    if i > 0 {
                        h = fnv1a(h, b" ");
                    }
                    h = fnv1a(h, w.as_bytes());
                }
                let h = mix(h);
                let bucket = (h % self.dimension as u64) as usize;
                let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
                v[bucket] += sign;
            }
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A finaliser so that neighbouring FNV values spread over buckets and signs.
fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[async_trait::async_trait]
impl Embedder for HashingEmbedder {
    fn name(&self) -> String {
        format!("hashing(dim={},ngrams={})", self.dimension, self.max_ngram)
    }

    /// `hashing:dim=…,ngrams=…`.
    fn spec(&self) -> crate::spec::Value {
        crate::spec::Spec::new("hashing")
            .with("dim", self.dimension.to_string())
            .with("ngrams", self.max_ngram.to_string())
            .into()
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }

    /// A query is embedded as a document is.
    async fn embed_queries(&self, queries: &[String]) -> Result<Vec<Vec<f32>>> {
        self.embed(queries).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_normalised_deterministic_and_case_insensitive() {
        let e = HashingEmbedder::default();
        let a = e.embed_one("Retrieval Augmented Generation");
        let b = e.embed_one("retrieval augmented generation!");
        assert_eq!(a, b);
        assert_eq!(a.len(), 384);
        let norm: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
        assert!(e.embed_one("  ,.; ").iter().all(|&x| x == 0.0));
        // Pinned so a change of hashing (which would move every golden figure) is noticed.
        let nonzero: Vec<usize> = e
            .embed_one("hello world")
            .iter()
            .enumerate()
            .filter(|(_, x)| **x != 0.0)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(nonzero, [114, 176, 245]);
    }
}
