use super::Retriever;
use crate::chunk::RetrievedChunk;
use crate::chunker::PositionAwareChunker;
use crate::corpus::Corpus;
use crate::embed::{BatchingEmbedder, Embedder};
use crate::error::{Error, Result};
use crate::level::{ChunkLevel, TokenLevel};
use crate::rerank::Reranker;
use crate::span::CharSpan;
use crate::store::{InMemoryStore, VectorStore};
use futures_util::lock::Mutex;
use std::fmt;
use std::sync::Arc;

/// Dense retrieval: chunker → embedder → vector store → optional reranker.
///
/// Indexing chunks the whole corpus, embeds every distinct chunk text once (in batches) and
/// adds the vectors to the store; a query is embedded, the store's nearest chunks are taken
/// (more of them when a reranker narrows them down) and the best `k` returned.
///
/// ```
/// use rag_eval::chunker::RecursiveCharacterChunker;
/// use rag_eval::corpus::{Corpus, Document};
/// use rag_eval::embed::HashingEmbedder;
/// use rag_eval::level::TokenLevel;
/// use rag_eval::retrieve::{Pipeline, Retriever};
/// use std::sync::Arc;
///
/// let corpus = Arc::new(Corpus::new([Document::new("a.md", "Cats purr.\n\nDogs bark loudly.")])?);
/// let pipeline = Pipeline::new(RecursiveCharacterChunker::new(12, 0), HashingEmbedder::default());
/// pollster::block_on(Retriever::<TokenLevel>::index(&pipeline, &corpus))?;
/// let hits = pollster::block_on(Retriever::<TokenLevel>::retrieve(&pipeline, "dogs bark", 1))?;
/// assert_eq!(hits[0].chunk.content, "Dogs bark");
/// # Ok::<(), rag_eval::Error>(())
/// ```
pub struct Pipeline {
    chunker: Arc<dyn PositionAwareChunker>,
    embedder: Arc<BatchingEmbedder<Arc<dyn Embedder>>>,
    store: Arc<dyn VectorStore>,
    reranker: Option<Arc<dyn Reranker>>,
    candidates: usize,
    indexed: Mutex<Option<Arc<Corpus>>>,
    /// Positions of the chunks indexed from the current corpus (PrecisionΩ reads them).
    spans: std::sync::Mutex<Option<Vec<CharSpan>>>,
}

impl fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipeline")
            .field("name", &Retriever::<TokenLevel>::name(self))
            .finish()
    }
}

impl Pipeline {
    /// A pipeline with an [`InMemoryStore`] and no reranker.
    pub fn new(
        chunker: impl PositionAwareChunker + 'static,
        embedder: impl Embedder + 'static,
    ) -> Self {
        Pipeline::from_arc(Arc::new(chunker), Arc::new(embedder))
    }

    /// [`Pipeline::new`] from shared chunker and embedder.
    pub fn from_arc(chunker: Arc<dyn PositionAwareChunker>, embedder: Arc<dyn Embedder>) -> Self {
        Pipeline {
            chunker,
            embedder: Arc::new(BatchingEmbedder::new(embedder)),
            store: Arc::new(InMemoryStore::new()),
            reranker: None,
            candidates: 20,
            indexed: Mutex::new(None),
            spans: std::sync::Mutex::new(None),
        }
    }

    /// Uses another vector store.
    pub fn with_store(mut self, store: impl VectorStore + 'static) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// Reranks the store's candidates before keeping the best `k`.
    pub fn with_reranker(mut self, reranker: impl Reranker + 'static) -> Self {
        self.reranker = Some(Arc::new(reranker));
        self
    }

    /// How many candidates the store returns for the reranker (default 20; never fewer
    /// than `k`). Without a reranker the store returns `k`.
    pub fn with_candidates(mut self, n: usize) -> Self {
        self.candidates = n.max(1);
        self
    }

    /// The embedder, with its statistics (texts embedded, calls made).
    pub fn embedder(&self) -> &BatchingEmbedder<Arc<dyn Embedder>> {
        &self.embedder
    }

    /// `dense:chunker=…,embedder=…,store=…`, then `reranker` and `candidates` when reranking.
    fn spec(&self) -> String {
        use crate::spec::{Kind, Spec};
        let mut spec = Spec::new("dense")
            .with_nested("chunker", Kind::Chunker, &self.chunker.name())
            .with_nested("embedder", Kind::Embedder, &self.embedder.spec())
            .with_nested("store", Kind::Store, &self.store.spec());
        if let Some(r) = &self.reranker {
            spec = spec
                .with_nested("reranker", Kind::Reranker, &r.spec())
                .with("candidates", self.candidates.to_string());
        }
        spec.to_string()
    }

    fn describe(&self) -> String {
        let mut s = format!(
            "dense({} -> {} -> {})",
            self.chunker.name(),
            self.embedder.name(),
            self.store.name()
        );
        if let Some(r) = &self.reranker {
            s.push_str(&format!(
                " rerank({}, candidates={})",
                r.name(),
                self.candidates
            ));
        }
        s
    }

    async fn build(&self, corpus: &Arc<Corpus>) -> Result<()> {
        let mut indexed = self.indexed.lock().await;
        if indexed.as_ref().is_some_and(|c| Arc::ptr_eq(c, corpus)) {
            return Ok(());
        }
        self.store.clear().await?;
        // Until the new index is complete, there are no indexed spans to hand out.
        *self
            .spans
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        let chunks = self.chunker.chunk_corpus(corpus);
        let texts: Vec<String> = chunks.iter().map(|c| c.content.clone()).collect();
        let vectors = self.embedder.embed(&texts).await?;
        self.store.add(&chunks, &vectors).await?;
        *self
            .spans
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some(chunks.iter().map(|c| c.span.clone()).collect());
        *indexed = Some(Arc::clone(corpus));
        Ok(())
    }

    async fn search(&self, query: &str, k: usize) -> Result<Vec<RetrievedChunk>> {
        if self.indexed.lock().await.is_none() {
            return Err(Error::Config(
                "the pipeline has no index yet: call `index` with the corpus first".into(),
            ));
        }
        let q = self.embedder.embed_query(query).await?;
        match &self.reranker {
            None => self.store.search(&q, k).await,
            Some(r) => {
                let candidates = self.store.search(&q, self.candidates.max(k)).await?;
                r.rerank(query, candidates, k).await
            }
        }
    }
}

macro_rules! impl_retriever {
    ($level:ty) => {
        #[async_trait::async_trait]
        impl Retriever<$level> for Pipeline {
            fn name(&self) -> String {
                self.describe()
            }
            fn spec(&self) -> String {
                Pipeline::spec(self)
            }
            fn chunker(&self) -> Option<String> {
                Some(self.chunker.name())
            }
            fn chunker_object(&self) -> Option<&dyn PositionAwareChunker> {
                Some(self.chunker.as_ref())
            }
            fn indexed_spans(&self) -> Option<Vec<CharSpan>> {
                self.spans
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .clone()
            }
            async fn index(&self, corpus: &Arc<Corpus>) -> Result<()> {
                self.build(corpus).await
            }
            async fn retrieve(&self, query: &str, k: usize) -> Result<Vec<RetrievedChunk>> {
                self.search(query, k).await
            }
        }
    };
}

impl_retriever!(TokenLevel);
impl_retriever!(ChunkLevel);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunker::RecursiveCharacterChunker;
    use crate::corpus::Document;
    use crate::embed::HashingEmbedder;
    use pollster::block_on;

    fn corpus() -> Arc<Corpus> {
        Arc::new(
            Corpus::new([
                Document::new("a.md", "Cats purr when content.\n\nDogs bark at strangers."),
                Document::new("b.md", "Dogs bark at strangers.\n\nFish swim in schools."),
            ])
            .unwrap(),
        )
    }

    #[test]
    fn indexes_once_and_embeds_each_text_once() {
        let p = Pipeline::new(
            RecursiveCharacterChunker::new(25, 0),
            HashingEmbedder::default(),
        );
        let c = corpus();
        let err = block_on(Retriever::<TokenLevel>::retrieve(&p, "dogs", 2)).unwrap_err();
        assert!(err.to_string().contains("call `index`"), "{err}");
        block_on(Retriever::<TokenLevel>::index(&p, &c)).unwrap();
        block_on(Retriever::<TokenLevel>::index(&p, &c)).unwrap();
        // Four chunks, three distinct texts: "Dogs bark at strangers." appears twice.
        assert_eq!(p.embedder().stats().texts_embedded, 3);
        let hits = block_on(Retriever::<TokenLevel>::retrieve(&p, "dogs bark", 2)).unwrap();
        let places: Vec<(&str, usize)> = hits
            .iter()
            .map(|h| (h.chunk.doc_id().as_str(), h.chunk.start()))
            .collect();
        // Both copies score the same; the tie breaks by position-aware chunk id.
        let mut expected = vec![("a.md", 25), ("b.md", 0)];
        expected.sort_by_key(|&(d, s)| {
            crate::chunk::PaChunkId::new(&d.into(), s, s + 23, "Dogs bark at strangers.")
        });
        assert_eq!(places, expected);
        assert_eq!(hits[0].score, hits[1].score);
    }
}
