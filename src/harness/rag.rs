//! The case shape "a retriever plus a generator".

/// What a `#[rag_eval]` case returns to be evaluated as a whole RAG system: the harness
/// retrieves `k` chunks per query with `retriever`, has `generator` answer from them, scores
/// retrieval on the retrieved chunks and has the case's judge score the answers.
///
/// `retriever` implements [`Retriever<TokenLevel>`](crate::retrieve::Retriever),
/// `Retriever<ChunkLevel>` or both; `generator` implements
/// [`Generator`](crate::generator::Generator). The case function is `fn NAME() -> Rag<R, G>`
/// or `async fn NAME() -> Rag<R, G>`, called once per process.
///
/// ```no_run
/// use rag_eval::generator::Generator;
/// use rag_eval::llm::LlmClient;
/// use rag_eval::prelude::*;
/// use std::sync::Arc;
///
/// /// Answers with the first retrieved chunk.
/// struct FirstChunk;
///
/// #[async_trait::async_trait]
/// impl Generator for FirstChunk {
///     fn name(&self) -> String {
///         "first-chunk".into()
///     }
///     async fn generate(&self, _: &str, contexts: &[RetrievedChunk]) -> rag_eval::Result<RagAnswer> {
///         let answer = contexts.first().map(|c| c.chunk.content.clone()).unwrap_or_default();
///         Ok(RagAnswer { answer, contexts: contexts.to_vec() })
///     }
/// }
///
/// #[rag_eval(dataset = "examples/data/questions.jsonl", corpus = "examples/data/corpus",
///            k = 3, judge = judge, min_faithfulness = 0.8)]
/// fn bm25_first_chunk() -> Rag<Bm25Retriever, FirstChunk> {
///     Rag {
///         retriever: Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0)),
///         generator: FirstChunk,
///     }
/// }
///
/// fn judge() -> Arc<dyn LlmClient> {
///     unimplemented!("the judge model's client, e.g. an `OpenAiChat`")
/// }
/// # fn main() {}
/// ```
#[derive(Debug, Clone)]
pub struct Rag<R, G> {
    /// Retrieves the chunks the generator answers from.
    pub retriever: R,
    /// Answers each question from the retrieved chunks.
    pub generator: G,
}
