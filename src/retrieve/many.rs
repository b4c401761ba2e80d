//! Many queries at once: what [`Retriever::retrieve_many`] returns when it fails, and its
//! default, one query at a time.

use super::Retriever;
use crate::chunk::RetrievedChunk;
use crate::error::Error;
use crate::level::Level;
use futures_util::stream::{self, StreamExt, TryStreamExt};
use std::fmt;
use std::ops::Range;

/// A failure of [`Retriever::retrieve_many`]: the error, and the positions (in the slice of
/// queries it was given) of the queries it belongs to: one query, or every query of a batch
/// that failed as a whole (an embedding request for several queries, say).
#[derive(Debug)]
pub struct BatchError {
    /// Positions of the queries the error belongs to; never empty.
    pub queries: Range<usize>,
    /// What failed.
    pub error: Error,
}

impl BatchError {
    /// `error` for the queries at `queries`.
    pub fn new(queries: Range<usize>, error: Error) -> Self {
        BatchError { queries, error }
    }
}

impl fmt::Display for BatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.queries.len() == 1 {
            write!(f, "query {}: {}", self.queries.start, self.error)
        } else {
            write!(
                f,
                "queries {}..{}: {}",
                self.queries.start, self.queries.end, self.error
            )
        }
    }
}

impl std::error::Error for BatchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// [`Retriever::retrieve`] for every query, up to `concurrency` in flight, results in query
/// order; stops at the first failure.
pub(crate) async fn one_by_one<L: Level, R: Retriever<L> + ?Sized>(
    retriever: &R,
    queries: &[&str],
    k: usize,
    concurrency: usize,
) -> Result<Vec<Vec<RetrievedChunk>>, BatchError> {
    // Positions rather than borrowed items go through the stream: closures taking borrowed
    // items do not satisfy the `Send` bound of `async_trait`'s futures.
    stream::iter(0..queries.len())
        .map(|i| {
            let q = queries[i];
            async move {
                retriever
                    .retrieve(q, k)
                    .await
                    .map_err(|error| BatchError::new(i..i + 1, error))
            }
        })
        .buffered(concurrency.max(1))
        .try_collect()
        .await
}
