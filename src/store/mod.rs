//! Vector stores: embeddings in, nearest chunks out.

#[cfg(feature = "chroma")]
mod chroma;
mod memory;

// Re-exports of the built-in stores go here.
#[cfg(feature = "chroma")]
pub use chroma::ChromaStore;
pub use memory::InMemoryStore;

use crate::chunk::{PositionAwareChunk, RetrievedChunk};
use crate::error::Result;
use crate::spec::Value;

/// Stores chunk embeddings and finds the nearest ones to a query embedding.
///
/// Stores keep each chunk's document, start and end, so search results are
/// position-aware chunks whatever the backend.
#[async_trait::async_trait]
pub trait VectorStore: Send + Sync {
    /// Backend and configuration, for reports.
    fn name(&self) -> String;
    /// The [spec](crate::spec) that builds this store again, e.g. `memory`. Stores that no
    /// spec builds keep the default, their name as text.
    fn spec(&self) -> Value {
        Value::Text(self.name())
    }
    /// Adds chunks with their embeddings (same length and order).
    async fn add(&self, chunks: &[PositionAwareChunk], embeddings: &[Vec<f32>]) -> Result<()>;
    /// The `k` chunks most similar to `embedding`, best first, scores as cosine similarity;
    /// ties break by chunk id.
    async fn search(&self, embedding: &[f32], k: usize) -> Result<Vec<RetrievedChunk>>;
    /// The `k` chunks most similar to each embedding: `result[i]` is what
    /// [`VectorStore::search`] returns for `embeddings[i]`. The default searches one embedding
    /// after the other; stores that answer many at once override it.
    async fn search_many(
        &self,
        embeddings: &[Vec<f32>],
        k: usize,
    ) -> Result<Vec<Vec<RetrievedChunk>>> {
        let mut hits = Vec::with_capacity(embeddings.len());
        for e in embeddings {
            hits.push(self.search(e, k).await?);
        }
        Ok(hits)
    }
    /// Removes everything.
    async fn clear(&self) -> Result<()>;
    /// Number of chunks stored.
    async fn len(&self) -> Result<usize>;
    /// Whether the store holds no chunk.
    async fn is_empty(&self) -> Result<bool> {
        Ok(self.len().await? == 0)
    }
}

// A shared store is a store, so one built from a spec (`Arc<dyn VectorStore>`) plugs into a
// pipeline.
#[async_trait::async_trait]
impl<S: VectorStore + ?Sized> VectorStore for std::sync::Arc<S> {
    fn name(&self) -> String {
        (**self).name()
    }
    fn spec(&self) -> Value {
        (**self).spec()
    }
    async fn add(&self, chunks: &[PositionAwareChunk], embeddings: &[Vec<f32>]) -> Result<()> {
        (**self).add(chunks, embeddings).await
    }
    async fn search(&self, embedding: &[f32], k: usize) -> Result<Vec<RetrievedChunk>> {
        (**self).search(embedding, k).await
    }
    async fn search_many(
        &self,
        embeddings: &[Vec<f32>],
        k: usize,
    ) -> Result<Vec<Vec<RetrievedChunk>>> {
        (**self).search_many(embeddings, k).await
    }
    async fn clear(&self) -> Result<()> {
        (**self).clear().await
    }
    async fn len(&self) -> Result<usize> {
        (**self).len().await
    }
    async fn is_empty(&self) -> Result<bool> {
        (**self).is_empty().await
    }
}

/// The problem with a batch given to [`VectorStore::add`] whose lengths differ, if they do.
pub(crate) fn check_lengths(
    chunks: &[PositionAwareChunk],
    embeddings: &[Vec<f32>],
) -> std::result::Result<(), String> {
    if chunks.len() == embeddings.len() {
        Ok(())
    } else {
        Err(format!(
            "{} chunks but {} embeddings",
            chunks.len(),
            embeddings.len()
        ))
    }
}

/// Checks every embedding of a batch (see [`check_vector`]) against the store's dimension
/// `known`, or the batch's first when the store has none yet, and returns the dimension the
/// batch fixes (`known` for an empty batch). The error names the embedding and its chunk.
pub(crate) fn check_embeddings(
    chunks: &[PositionAwareChunk],
    embeddings: &[Vec<f32>],
    known: Option<usize>,
) -> std::result::Result<Option<usize>, String> {
    let mut expected = known;
    for (i, (chunk, v)) in chunks.iter().zip(embeddings).enumerate() {
        let what = || {
            format!(
                "embedding {i} (chunk `{}` at `{}` {}..{})",
                chunk.id,
                chunk.doc_id(),
                chunk.start(),
                chunk.end()
            )
        };
        check_vector(v, expected.unwrap_or(v.len()), what)?;
        expected = Some(v.len());
    }
    Ok(expected)
}

/// Refuses a vector of another length than `expected`, of none, or with a NaN or infinite
/// component: cosine similarity would be meaningless. `what` names the vector.
pub(crate) fn check_vector(
    v: &[f32],
    expected: usize,
    what: impl Fn() -> String,
) -> std::result::Result<(), String> {
    if v.len() != expected {
        return Err(format!(
            "{} has dimension {}, expected {expected}",
            what(),
            v.len()
        ));
    }
    if v.is_empty() {
        return Err(format!("{} has dimension 0", what()));
    }
    if let Some(at) = v.iter().position(|x| !x.is_finite()) {
        return Err(format!(
            "{} has a non-finite component {} at index {at}",
            what(),
            v[at]
        ));
    }
    Ok(())
}

/// `v / |v|`, the norm summed in `f64` so long vectors of tiny components keep their
/// direction and squares of large ones do not overflow; the zero vector stays zero.
pub(crate) fn normalised(v: &[f32]) -> Vec<f32> {
    let norm = v
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    if norm == 0.0 {
        return vec![0.0; v.len()];
    }
    v.iter().map(|&x| (f64::from(x) / norm) as f32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_normalised_in_f64() {
        assert_eq!(normalised(&[3.0, 4.0]), vec![0.6, 0.8]);
        assert_eq!(normalised(&[0.0, 0.0]), vec![0.0, 0.0]);
        // Squares of 1e30 overflow f32; the direction survives.
        let big = normalised(&[1e30, 1e30]);
        assert!(
            (big[0] - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-7,
            "{big:?}"
        );
    }

    #[test]
    fn a_batch_takes_the_known_dimension_or_its_first() {
        let chunks: Vec<PositionAwareChunk> = (0..2)
            .map(|i| PositionAwareChunk::new("d.md", i, i + 1, "x"))
            .collect();
        let two = vec![vec![1.0, 0.0], vec![0.0, 1.0]];
        assert_eq!(check_embeddings(&chunks, &two, None), Ok(Some(2)));
        assert_eq!(check_embeddings(&chunks[..0], &[], Some(3)), Ok(Some(3)));
        let e = check_embeddings(&chunks, &two, Some(3)).unwrap_err();
        assert!(
            e.starts_with("embedding 0 (chunk `pa_chunk_")
                && e.ends_with("at `d.md` 0..1) has dimension 2, expected 3"),
            "{e}"
        );
        let mixed = vec![vec![1.0, 0.0], vec![f32::NAN, 1.0]];
        let e = check_embeddings(&chunks, &mixed, None).unwrap_err();
        assert!(
            e.ends_with("has a non-finite component NaN at index 0"),
            "{e}"
        );
        assert_eq!(
            check_lengths(&chunks, &two[..1]),
            Err("2 chunks but 1 embeddings".to_owned())
        );
        assert_eq!(
            check_vector(&[], 0, || "query".to_owned()),
            Err("query has dimension 0".to_owned())
        );
    }
}
