use super::{BatchError, Retriever};
use crate::chunk::RetrievedChunk;
use crate::chunker::PositionAwareChunker;
use crate::corpus::Corpus;
use crate::embed::{BatchingEmbedder, Embedder};
use crate::error::{Error, Result};
use crate::level::{ChunkLevel, TokenLevel};
use crate::rerank::Reranker;
use crate::span::CharSpan;
use crate::spec::{Spec, Value};
use crate::store::{InMemoryStore, VectorStore};
use futures_util::lock::Mutex;
use futures_util::stream::{self, StreamExt, TryStreamExt};
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
    fn spec(&self) -> Value {
        let mut spec = Spec::new("dense")
            .with("chunker", self.chunker.spec())
            .with("embedder", self.embedder.spec())
            .with("store", self.store.spec());
        if let Some(r) = &self.reranker {
            spec = spec
                .with("reranker", r.spec())
                .with("candidates", self.candidates.to_string());
        }
        spec.into()
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

    async fn check_indexed(&self) -> Result<()> {
        if self.indexed.lock().await.is_none() {
            return Err(Error::NotIndexed {
                retriever: self.describe(),
            });
        }
        Ok(())
    }

    async fn search(&self, query: &str, k: usize) -> Result<Vec<RetrievedChunk>> {
        self.check_indexed().await?;
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

impl Pipeline {
    /// Every query at once: embedded in the embedder's batches (up to `concurrency` batches in
    /// flight), searched in one call to the store, then reranked query by query. Each query
    /// gets the vector and the store's answer it gets alone, so the results are
    /// [`Pipeline::search`]'s.
    async fn search_many(
        &self,
        queries: &[&str],
        k: usize,
        concurrency: usize,
    ) -> std::result::Result<Vec<Vec<RetrievedChunk>>, BatchError> {
        let all = 0..queries.len();
        if queries.is_empty() {
            return Ok(Vec::new());
        }
        self.check_indexed()
            .await
            .map_err(|e| BatchError::new(all.clone(), e))?;
        let size = self.embedder.batch_size();
        let texts: Vec<String> = queries.iter().map(|q| (*q).to_owned()).collect();
        // Positions rather than borrowed items go through the streams: closures taking
        // borrowed items do not satisfy the `Send` bound of `async_trait`'s futures.
        let texts = &texts;
        let batches: Vec<Vec<Vec<f32>>> = stream::iter(0..texts.len().div_ceil(size))
            .map(|b| {
                let at = b * size..texts.len().min(b * size + size);
                async move {
                    self.embedder
                        .embed_queries(&texts[at.clone()])
                        .await
                        .map_err(|e| BatchError::new(at, e))
                }
            })
            .buffered(concurrency.max(1))
            .try_collect()
            .await?;
        let vectors: Vec<Vec<f32>> = batches.into_iter().flatten().collect();
        let wanted = match self.reranker {
            None => k,
            Some(_) => self.candidates.max(k),
        };
        let found = self
            .store
            .search_many(&vectors, wanted)
            .await
            .map_err(|e| BatchError::new(all, e))?;
        let Some(r) = &self.reranker else {
            return Ok(found);
        };
        stream::iter(found.into_iter().enumerate())
            .map(|(i, candidates)| {
                let q = queries[i];
                async move {
                    r.rerank(q, candidates, k)
                        .await
                        .map_err(|e| BatchError::new(i..i + 1, e))
                }
            })
            .buffered(concurrency.max(1))
            .try_collect()
            .await
    }
}

macro_rules! impl_retriever {
    ($level:ty) => {
        #[async_trait::async_trait]
        impl Retriever<$level> for Pipeline {
            fn name(&self) -> String {
                self.describe()
            }
            fn spec(&self) -> Value {
                Pipeline::spec(self)
            }
            fn chunker(&self) -> Option<Value> {
                Some(self.chunker.spec())
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
            async fn retrieve_many(
                &self,
                queries: &[&str],
                k: usize,
                concurrency: usize,
            ) -> std::result::Result<Vec<Vec<RetrievedChunk>>, BatchError> {
                self.search_many(queries, k, concurrency).await
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
            crate::chunk::PositionAwareChunkId::new(&d.into(), s, s + 23, "Dogs bark at strangers.")
        });
        assert_eq!(places, expected);
        assert_eq!(hits[0].score, hits[1].score);
    }

    /// An embedder no spec builds, whose spec value holds text the printed grammar quotes.
    struct Custom;

    #[async_trait::async_trait]
    impl Embedder for Custom {
        fn name(&self) -> String {
            "custom".into()
        }
        fn spec(&self) -> Value {
            Spec::new("custom").with("note", "a,b (c)").into()
        }
        fn dimension(&self) -> usize {
            1
        }
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
            Ok(vec![vec![1.0]; texts.len()])
        }
    }

    #[test]
    fn nests_its_parts_spec_values_as_they_are() {
        let p = Pipeline::new(RecursiveCharacterChunker::new(25, 0), Custom);
        let Value::Spec(spec) = Retriever::<TokenLevel>::spec(&p) else {
            panic!("a pipeline's spec is a spec");
        };
        // `custom` is no registered embedder: a spec printed and parsed back would have come
        // back as text, not as the value the embedder gave.
        assert_eq!(
            spec.get("embedder"),
            Some(&Spec::new("custom").with("note", "a,b (c)").into())
        );
        let chunker = RecursiveCharacterChunker::new(25, 0);
        assert_eq!(
            spec.get("chunker"),
            Some(&PositionAwareChunker::spec(&chunker))
        );
        assert_eq!(
            spec.to_string(),
            "dense:chunker=recursive(size=25,overlap=0,length=chars,separators=langchain),\
             embedder=custom(note=\"a,b (c)\"),store=memory"
        );
    }
}
