//! An embedder wrapper that batches requests and embeds each distinct text once.

use super::Embedder;
use crate::error::{EmbedError, Error, Result};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// Wraps an [`Embedder`] so that each distinct text is embedded once for the wrapper's lifetime
/// (one evaluation run), whoever asks and however often, and large inputs go to the inner
/// embedder in batches of a fixed size.
///
/// Vectors come back in input order. Document texts ([`Embedder::embed`]) and queries
/// ([`Embedder::embed_query`]) are remembered separately, since a model may encode a query
/// differently from a document with the same text. Concurrent calls share the work: a text
/// that one call is already embedding is awaited by the others, not embedded again; if that
/// call fails or is dropped, a waiting call embeds the text itself. [`BatchingEmbedder::stats`]
/// counts what reached the inner embedder.
///
/// Every vector is kept for the wrapper's lifetime (that is the memo), so one wrapper per run
/// bounds the memory to the run's distinct texts. The wrapper's [`Embedder::name`] is the inner
/// embedder's: the vectors are the same.
///
/// ```
/// use rag_eval::embed::{BatchingEmbedder, Embedder, HashingEmbedder};
///
/// let e = BatchingEmbedder::new(HashingEmbedder::default()).with_batch_size(2);
/// let texts: Vec<String> = ["a b", "c d", "a b", "e f"].map(String::from).into();
/// let v = pollster::block_on(e.embed(&texts))?;
/// assert_eq!(v[0], v[2]);
/// pollster::block_on(e.embed(&["c d".to_owned()]))?;
/// let stats = e.stats();
/// assert_eq!((stats.texts_requested, stats.texts_embedded, stats.calls), (5, 3, 2));
/// # Ok::<(), rag_eval::Error>(())
/// ```
pub struct BatchingEmbedder<E> {
    inner: E,
    batch_size: usize,
    state: Mutex<State>,
}

/// What a [`BatchingEmbedder`] has passed on to its inner embedder.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchStats {
    /// Texts asked of the wrapper (documents and queries, repeats included).
    pub texts_requested: usize,
    /// Texts the inner embedder was asked to embed.
    pub texts_embedded: usize,
    /// Calls made to the inner embedder (batches of documents, batches of queries).
    pub calls: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Document,
    Query,
}

#[derive(Default)]
struct State {
    documents: HashMap<String, Slot>,
    queries: HashMap<String, Slot>,
    stats: BatchStats,
    next_claim: u64,
}

impl State {
    fn memo(&mut self, kind: Kind) -> &mut HashMap<String, Slot> {
        match kind {
            Kind::Document => &mut self.documents,
            Kind::Query => &mut self.queries,
        }
    }
}

enum Slot {
    Ready(Vec<f32>),
    /// Being embedded by the call holding this claim; `waiters` are woken when it settles.
    Pending {
        claim: u64,
        waiters: Vec<Waker>,
    },
}

impl<E: Embedder> BatchingEmbedder<E> {
    /// Wraps `inner`, sending at most [`Embedder::preferred_batch_size`] texts per call, or 64
    /// when `inner` has no preference.
    pub fn new(inner: E) -> Self {
        let batch_size = inner.preferred_batch_size().unwrap_or(64).max(1);
        BatchingEmbedder {
            inner,
            batch_size,
            state: Mutex::new(State::default()),
        }
    }

    /// Sends at most `batch_size` texts per call to the inner embedder (at least 1).
    pub fn with_batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size.max(1);
        self
    }

    /// The largest number of texts sent in one call.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// The wrapped embedder.
    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// Counts so far.
    pub fn stats(&self) -> BatchStats {
        self.lock().stats
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every critical section leaves the state consistent before anything can panic.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes every text of `texts` ready in the `kind` memo, then returns their vectors.
    async fn resolve(&self, kind: Kind, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.lock().stats.texts_requested += texts.len();
        loop {
            let (claim, mine, theirs) = {
                let mut state = self.lock();
                let claim = state.next_claim;
                state.next_claim += 1;
                let memo = state.memo(kind);
                let mut mine: Vec<String> = Vec::new();
                let mut theirs: Vec<String> = Vec::new();
                for text in texts {
                    match memo.get(text) {
                        Some(Slot::Ready(_)) => {}
                        Some(Slot::Pending { claim: c, .. }) if *c == claim => {}
                        Some(Slot::Pending { .. }) => theirs.push(text.clone()),
                        None => {
                            memo.insert(
                                text.clone(),
                                Slot::Pending {
                                    claim,
                                    waiters: Vec::new(),
                                },
                            );
                            mine.push(text.clone());
                        }
                    }
                }
                (claim, mine, theirs)
            };
            if mine.is_empty() && theirs.is_empty() {
                let mut state = self.lock();
                let memo = state.memo(kind);
                let ready: Option<Vec<Vec<f32>>> = texts
                    .iter()
                    .map(|t| match memo.get(t) {
                        Some(Slot::Ready(v)) => Some(v.clone()),
                        _ => None,
                    })
                    .collect();
                if let Some(vectors) = ready {
                    return Ok(vectors);
                }
                // Unreachable in practice (ready vectors are never removed), but looping again
                // re-claims whatever is missing instead of failing.
                continue;
            }
            let mut claims = Claims {
                owner: self,
                kind,
                claim,
                texts: mine,
            };
            self.embed_claimed(&mut claims).await?;
            if !theirs.is_empty() {
                Settled {
                    owner: self,
                    kind,
                    texts: theirs,
                }
                .await;
            }
        }
    }

    /// Embeds the claimed texts batch by batch, publishing each batch as it arrives.
    async fn embed_claimed(&self, claims: &mut Claims<'_, E>) -> Result<()> {
        // Claims not yet published stay in `claims` so that an error or a dropped future
        // releases them.
        let texts = claims.texts.clone();
        let size = self.batch_size;
        let batch_count = texts.len().div_ceil(size);
        for (b, batch) in texts.chunks(size).enumerate() {
            let vectors = match (claims.kind, batch) {
                (Kind::Document, _) => self.inner.embed(batch).await?,
                // One query goes through `embed_query`, as it did before queries were batched.
                (Kind::Query, [query]) => vec![self.inner.embed_query(query).await?],
                (Kind::Query, _) => self.inner.embed_queries(batch).await?,
            };
            let expected = self.inner.dimension();
            let what = || match claims.kind {
                Kind::Document => format!(
                    "{}: batch {} of {batch_count} ({} texts)",
                    self.inner.name(),
                    b + 1,
                    batch.len()
                ),
                Kind::Query if batch.len() == 1 => {
                    format!("{}: query {:?}", self.inner.name(), batch[0])
                }
                Kind::Query => format!(
                    "{}: batch {} of {batch_count} ({} queries)",
                    self.inner.name(),
                    b + 1,
                    batch.len()
                ),
            };
            if vectors.len() != batch.len() {
                return Err(Error::Embed(EmbedError::new(
                    self.inner.name(),
                    format!("{} returned {} vectors", what(), vectors.len()),
                )));
            }
            if let Some((i, v)) = vectors
                .iter()
                .enumerate()
                .find(|(_, v)| v.len() != expected)
            {
                return Err(Error::Embed(EmbedError::new(
                    self.inner.name(),
                    format!(
                        "{}: vector {i} has dimension {}, expected {expected}",
                        what(),
                        v.len()
                    ),
                )));
            }
            let mut state = self.lock();
            state.stats.calls += 1;
            state.stats.texts_embedded += batch.len();
            let memo = state.memo(claims.kind);
            for (text, vector) in batch.iter().zip(vectors) {
                if let Some(Slot::Pending { waiters, .. }) =
                    memo.insert(text.clone(), Slot::Ready(vector))
                {
                    waiters.into_iter().for_each(Waker::wake);
                }
            }
            claims.texts.drain(..batch.len());
        }
        Ok(())
    }
}

/// Texts a call has claimed and not yet published; dropping it gives them up, so that a failed
/// or cancelled call never leaves others waiting.
struct Claims<'a, E> {
    owner: &'a BatchingEmbedder<E>,
    kind: Kind,
    claim: u64,
    texts: Vec<String>,
}

impl<E> Drop for Claims<'_, E> {
    fn drop(&mut self) {
        if self.texts.is_empty() {
            return;
        }
        let mut state = self.owner.state.lock().unwrap_or_else(|e| e.into_inner());
        let memo = match self.kind {
            Kind::Document => &mut state.documents,
            Kind::Query => &mut state.queries,
        };
        for text in &self.texts {
            if matches!(memo.get(text), Some(Slot::Pending { claim, .. }) if *claim == self.claim) {
                if let Some(Slot::Pending { waiters, .. }) = memo.remove(text) {
                    waiters.into_iter().for_each(Waker::wake);
                }
            }
        }
    }
}

/// Resolves once none of `texts` is being embedded by another call (each is ready, or its
/// claim was given up).
struct Settled<'a, E> {
    owner: &'a BatchingEmbedder<E>,
    kind: Kind,
    texts: Vec<String>,
}

impl<E> Future for Settled<'_, E> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.owner.state.lock().unwrap_or_else(|e| e.into_inner());
        let memo = match self.kind {
            Kind::Document => &mut state.documents,
            Kind::Query => &mut state.queries,
        };
        for text in &self.texts {
            if let Some(Slot::Pending { waiters, .. }) = memo.get_mut(text) {
                if !waiters.iter().any(|w| w.will_wake(cx.waker())) {
                    waiters.push(cx.waker().clone());
                }
                return Poll::Pending;
            }
        }
        Poll::Ready(())
    }
}

impl<E: Embedder> fmt::Debug for BatchingEmbedder<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchingEmbedder")
            .field("inner", &self.inner.name())
            .field("batch_size", &self.batch_size)
            .field("stats", &self.stats())
            .finish()
    }
}

#[async_trait::async_trait]
impl<E: Embedder> Embedder for BatchingEmbedder<E> {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn spec(&self) -> crate::spec::Value {
        self.inner.spec()
    }

    fn dimension(&self) -> usize {
        self.inner.dimension()
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.resolve(Kind::Document, texts).await
    }

    async fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        let mut v = self.resolve(Kind::Query, &[query.to_owned()]).await?;
        Ok(v.pop().unwrap_or_default())
    }
    async fn embed_queries(&self, queries: &[String]) -> Result<Vec<Vec<f32>>> {
        self.resolve(Kind::Query, queries).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pollster::block_on;
    use proptest::prelude::*;
    use std::task::Waker;

    /// Records every call; a text's vector is `[len, first byte, 1]` (queries `[len, first
    /// byte, -1]`), so each vector says which text and kind it came from. Optionally yields once
    /// per call (to interleave concurrent calls) or fails its first `fail` calls.
    #[derive(Default)]
    struct Counting {
        calls: Mutex<Vec<Vec<String>>>,
        queries: Mutex<Vec<String>>,
        yield_once: bool,
        fail: Mutex<usize>,
        preferred: Option<usize>,
    }

    fn vector(text: &str, sign: f32) -> Vec<f32> {
        vec![
            text.len() as f32,
            f32::from(text.bytes().next().unwrap_or(0)),
            sign,
        ]
    }

    /// Pending on the first poll (waking itself at once), ready on the second.
    struct YieldOnce(bool);

    impl Future for YieldOnce {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.0 {
                Poll::Ready(())
            } else {
                self.0 = true;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }

    #[async_trait::async_trait]
    impl Embedder for Counting {
        fn name(&self) -> String {
            "counting".into()
        }
        fn dimension(&self) -> usize {
            3
        }
        fn preferred_batch_size(&self) -> Option<usize> {
            self.preferred
        }
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
            self.calls.lock().unwrap().push(texts.to_vec());
            if self.yield_once {
                YieldOnce(false).await;
            }
            {
                let mut fail = self.fail.lock().unwrap();
                if *fail > 0 {
                    *fail -= 1;
                    return Err(Error::Embed(EmbedError::new(
                        "counting",
                        "counting: service unavailable",
                    )));
                }
            }
            Ok(texts.iter().map(|t| vector(t, 1.0)).collect())
        }
        async fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
            self.queries.lock().unwrap().push(query.to_owned());
            Ok(vector(query, -1.0))
        }
    }

    fn strings(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|t| (*t).to_owned()).collect()
    }

    #[test]
    fn calls_are_as_large_as_the_inner_embedder_prefers_unless_set() {
        let texts = strings(&["a", "b", "c", "d", "e"]);
        let inner = Counting {
            preferred: Some(2),
            ..Counting::default()
        };
        let e = BatchingEmbedder::new(inner);
        assert_eq!(e.batch_size(), 2);
        block_on(e.embed(&texts)).unwrap();
        let sizes: Vec<usize> = e
            .inner()
            .calls
            .lock()
            .unwrap()
            .iter()
            .map(Vec::len)
            .collect();
        assert_eq!(sizes, [2, 2, 1]);
        let inner = Counting {
            preferred: Some(2),
            ..Counting::default()
        };
        assert_eq!(
            BatchingEmbedder::new(inner).with_batch_size(3).batch_size(),
            3
        );
        assert_eq!(BatchingEmbedder::new(Counting::default()).batch_size(), 64);
    }

    #[test]
    fn embeds_each_distinct_text_once_in_batches_and_keeps_input_order() {
        let e = BatchingEmbedder::new(Counting::default()).with_batch_size(2);
        let input = strings(&["aa", "b", "aa", "cccc", "b", "dd", "e"]);
        let got = block_on(e.embed(&input)).unwrap();
        let want: Vec<Vec<f32>> = input.iter().map(|t| vector(t, 1.0)).collect();
        assert_eq!(got, want);
        let calls = e.inner().calls.lock().unwrap().clone();
        assert_eq!(
            calls,
            [
                strings(&["aa", "b"]),
                strings(&["cccc", "dd"]),
                strings(&["e"])
            ]
        );
        // A second call embeds only what is new, and repeats come from the memo.
        let again = block_on(e.embed(&strings(&["e", "f", "aa"]))).unwrap();
        assert_eq!(
            again,
            [vector("e", 1.0), vector("f", 1.0), vector("aa", 1.0)]
        );
        assert_eq!(e.inner().calls.lock().unwrap().len(), 4);
        assert_eq!(
            e.stats(),
            BatchStats {
                texts_requested: 10,
                texts_embedded: 6,
                calls: 4
            }
        );
        // Nothing new: no call at all.
        block_on(e.embed(&strings(&["b", "dd"]))).unwrap();
        assert!(block_on(e.embed(&[])).unwrap().is_empty());
        assert_eq!(e.stats().calls, 4);
        assert_eq!(e.stats().texts_requested, 12);
    }

    #[test]
    fn queries_are_remembered_apart_from_documents_and_use_the_inner_query_encoding() {
        let e = BatchingEmbedder::new(Counting::default());
        block_on(e.embed(&strings(&["cat"]))).unwrap();
        assert_eq!(block_on(e.embed_query("cat")).unwrap(), vector("cat", -1.0));
        assert_eq!(block_on(e.embed_query("cat")).unwrap(), vector("cat", -1.0));
        assert_eq!(*e.inner().queries.lock().unwrap(), ["cat"]);
        assert_eq!(
            block_on(e.embed(&strings(&["cat"]))).unwrap()[0],
            vector("cat", 1.0)
        );
        assert_eq!(
            e.stats(),
            BatchStats {
                texts_requested: 4,
                texts_embedded: 2,
                calls: 2
            }
        );
        assert_eq!(e.name(), "counting");
        assert_eq!(e.dimension(), 3);
    }

    #[test]
    fn a_failed_batch_is_reported_and_retried_by_the_next_call() {
        let inner = Counting {
            fail: Mutex::new(1),
            ..Counting::default()
        };
        let e = BatchingEmbedder::new(inner).with_batch_size(2);
        let input = strings(&["a", "b", "c"]);
        let err = block_on(e.embed(&input)).unwrap_err().to_string();
        assert!(err.contains("service unavailable"), "{err}");
        let got = block_on(e.embed(&input)).unwrap();
        assert_eq!(got[2], vector("c", 1.0));
        assert_eq!(e.stats().texts_embedded, 3, "only successful batches count");
    }

    struct Broken {
        vectors: usize,
        dimension: usize,
    }

    #[async_trait::async_trait]
    impl Embedder for Broken {
        fn name(&self) -> String {
            "broken".into()
        }
        fn dimension(&self) -> usize {
            3
        }
        async fn embed(&self, _texts: &[String]) -> Result<Vec<Vec<f32>>> {
            Ok(vec![vec![0.0; self.dimension]; self.vectors])
        }
    }

    #[test]
    fn a_wrong_answer_from_the_inner_embedder_is_an_error_naming_the_batch() {
        let texts = strings(&["a", "b", "c"]);
        let e = BatchingEmbedder::new(Broken {
            vectors: 1,
            dimension: 3,
        })
        .with_batch_size(2);
        let err = block_on(e.embed(&texts)).unwrap_err().to_string();
        assert!(
            err.contains("broken: batch 1 of 2 (2 texts) returned 1 vectors"),
            "{err}"
        );
        let e = BatchingEmbedder::new(Broken {
            vectors: 2,
            dimension: 4,
        })
        .with_batch_size(2);
        let err = block_on(e.embed(&texts)).unwrap_err().to_string();
        assert!(
            err.contains("vector 0 has dimension 4, expected 3"),
            "{err}"
        );
        let err = block_on(e.embed_query("q")).unwrap_err().to_string();
        // The default `embed_query` keeps one of the two vectors; its length is still wrong.
        assert!(
            err.contains("broken: query \"q\": vector 0 has dimension 4"),
            "{err}"
        );
    }

    fn poll<F: Future + ?Sized>(f: Pin<&mut F>) -> Poll<F::Output> {
        f.poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn concurrent_calls_wait_for_a_text_in_flight_instead_of_embedding_it_again() {
        let inner = Counting {
            yield_once: true,
            ..Counting::default()
        };
        let e = BatchingEmbedder::new(inner);
        let first = strings(&["x"]);
        let second = strings(&["x", "y"]);
        let mut a = e.embed(&first);
        let mut b = e.embed(&second);
        assert!(poll(a.as_mut()).is_pending(), "a is embedding x");
        assert!(poll(b.as_mut()).is_pending(), "b is embedding y");
        assert!(poll(b.as_mut()).is_pending(), "b has y and waits for x");
        let Poll::Ready(Ok(va)) = poll(a.as_mut()) else {
            panic!("a should be done");
        };
        let Poll::Ready(Ok(vb)) = poll(b.as_mut()) else {
            panic!("b should be done once x is ready");
        };
        assert_eq!(va, [vector("x", 1.0)]);
        assert_eq!(vb, [vector("x", 1.0), vector("y", 1.0)]);
        drop((a, b));
        let calls = e.inner().calls.lock().unwrap().clone();
        assert_eq!(calls, [strings(&["x"]), strings(&["y"])]);
    }

    #[test]
    fn a_dropped_call_releases_its_texts() {
        let inner = Counting {
            yield_once: true,
            ..Counting::default()
        };
        let e = BatchingEmbedder::new(inner);
        let texts = strings(&["x"]);
        let mut a = e.embed(&texts);
        assert!(poll(a.as_mut()).is_pending());
        let mut b = e.embed(&texts);
        assert!(poll(b.as_mut()).is_pending(), "b waits for a");
        drop(a);
        // b was woken by the release and embeds x itself.
        assert!(poll(b.as_mut()).is_pending());
        let Poll::Ready(Ok(vb)) = poll(b.as_mut()) else {
            panic!("b should be done");
        };
        assert_eq!(vb, [vector("x", 1.0)]);
        assert_eq!(e.inner().calls.lock().unwrap().len(), 2);
        assert_eq!(
            e.stats().texts_embedded,
            1,
            "only the finished call published"
        );
    }

    #[test]
    fn shared_and_boxed_embedders_forward_everything() {
        let shared: std::sync::Arc<dyn Embedder> = std::sync::Arc::new(Counting::default());
        let e = BatchingEmbedder::new(std::sync::Arc::clone(&shared));
        assert_eq!(block_on(e.embed_query("q")).unwrap(), vector("q", -1.0));
        let boxed: Box<dyn Embedder> = Box::new(Counting::default());
        assert_eq!(boxed.name(), "counting");
        assert_eq!(block_on(boxed.embed_query("q")).unwrap(), vector("q", -1.0));
        assert_eq!(
            block_on(boxed.embed(&strings(&["ab"]))).unwrap(),
            [vector("ab", 1.0)]
        );
    }

    proptest! {
        #[test]
        fn never_embeds_a_text_twice_and_answers_like_the_inner_embedder(
            runs in proptest::collection::vec(
                proptest::collection::vec("[a-d]{0,2}", 0..12), 1..5),
            batch in 1usize..6,
        ) {
            let e = BatchingEmbedder::new(Counting::default()).with_batch_size(batch);
            for texts in &runs {
                let got = block_on(e.embed(texts)).unwrap();
                let want: Vec<Vec<f32>> = texts.iter().map(|t| vector(t, 1.0)).collect();
                prop_assert_eq!(got, want);
            }
            let calls = e.inner().calls.lock().unwrap().clone();
            let mut seen = std::collections::HashSet::new();
            for call in &calls {
                prop_assert!(!call.is_empty() && call.len() <= batch);
                for t in call {
                    prop_assert!(seen.insert(t.clone()), "{t:?} embedded twice");
                }
            }
            let distinct: std::collections::HashSet<&String> = runs.iter().flatten().collect();
            prop_assert_eq!(seen.len(), distinct.len());
            let stats = e.stats();
            prop_assert_eq!(stats.texts_embedded, distinct.len());
            prop_assert_eq!(stats.calls, calls.len());
            prop_assert_eq!(stats.texts_requested, runs.iter().map(Vec::len).sum::<usize>());
        }
    }
}
