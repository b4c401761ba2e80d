//! Exact cosine search in memory.

use super::{check_embeddings, check_lengths, check_vector, normalised, VectorStore};
use crate::chunk::{PositionAwareChunk, PositionAwareChunkId, RetrievedChunk};
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Queries per matrix product. With the vector block below, a score tile is 2 MiB: large
/// enough that packing the operands costs little next to the product, small enough to stay
/// in cache while the top-k selection reads it back (tuned with `benches/vector_search.rs`).
const QUERY_BLOCK: usize = 512;
/// Stored vectors per matrix product.
const VECTOR_BLOCK: usize = 1024;
/// Below this many queries per thread, threads split the stored vectors instead of the
/// queries, so that a single query still uses every core.
const MIN_QUERIES_PER_THREAD: usize = 8;
/// Multiply-adds below which a search stays on the calling thread: starting a thread costs
/// about as much as a few million of them.
const MIN_PARALLEL_WORK: usize = 1 << 23;

/// Exact nearest-neighbour search by cosine similarity, in memory.
///
/// Vectors are normalised once when added, so a search is a matrix product of normalised
/// queries with the stored vectors followed by a bounded top-k selection per query; a zero
/// vector (stored or queried) scores 0 against everything. Results are best first, ties broken
/// by [`PositionAwareChunkId`] ascending (the rule of [`crate::chunk::rank`]), and a `k` larger than the
/// store returns every chunk.
///
/// Adding a chunk whose id is already stored replaces its vector: the id covers document,
/// position and text, so the chunk itself is the same. The first vector added fixes the
/// dimension (unless [`InMemoryStore::with_dimension`] fixed it before); vectors or queries of
/// another length, or with a NaN or infinite component, are rejected with an error that names
/// them. [`InMemoryStore::search_many`] answers many queries at once on all cores, which is
/// what evaluations should use; [`VectorStore::search`] runs the same product for one query, so
/// both give the same scores to the last bit.
///
/// ```
/// use rag_eval::chunk::PositionAwareChunk;
/// use rag_eval::store::InMemoryStore;
///
/// let store = InMemoryStore::new();
/// let chunks = [
///     PositionAwareChunk::new("a.md", 0, 4, "cats"),
///     PositionAwareChunk::new("a.md", 5, 9, "dogs"),
/// ];
/// store.insert(&chunks, &[vec![1.0, 0.0], vec![0.6, 0.8]])?;
/// let hits = store.search_many(&[vec![0.0, 2.0], vec![3.0, 0.0]], 1)?;
/// assert_eq!(hits[0][0].chunk.content, "dogs");
/// assert!((hits[0][0].score - 0.8).abs() < 1e-6);
/// assert_eq!(hits[1][0].chunk.content, "cats");
/// # Ok::<(), rag_eval::Error>(())
/// ```
pub struct InMemoryStore {
    inner: RwLock<Inner>,
    fixed_dimension: Option<usize>,
    threads: usize,
    blocks: (usize, usize),
    min_parallel_work: usize,
}

#[derive(Default)]
struct Inner {
    dimension: Option<usize>,
    chunks: Vec<PositionAwareChunk>,
    /// The normalised vectors, in the order of `chunks`, stored as blocks of `vector_block`
    /// rows, each block transposed (component-major: component `c` of row `r` of a block at
    /// `c * vector_block + r`) and zero-padded to full width. That is the layout the matrix
    /// product reads contiguously, so it packs its operands by plain copies: with rows stored
    /// as rows, gathering them cost a third as much as the arithmetic.
    matrix: Vec<f32>,
    rows: HashMap<PositionAwareChunkId, usize>,
}

impl std::fmt::Debug for InMemoryStore {
    /// Size and settings; the vectors themselves would be megabytes of digits.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryStore")
            .field("chunks", &self.count())
            .field("dimension", &self.dimension())
            .field("threads", &self.threads)
            .finish()
    }
}

impl Default for InMemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl InMemoryStore {
    /// An empty store; the first vectors added fix the dimension. Searches use every core.
    pub fn new() -> Self {
        InMemoryStore {
            inner: RwLock::new(Inner::default()),
            fixed_dimension: None,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            blocks: (QUERY_BLOCK, VECTOR_BLOCK),
            min_parallel_work: MIN_PARALLEL_WORK,
        }
    }

    /// An empty store that accepts only vectors of `dimension` components, also after
    /// [`VectorStore::clear`].
    pub fn with_dimension(dimension: usize) -> Self {
        InMemoryStore {
            fixed_dimension: Some(dimension),
            ..Self::new()
        }
    }

    /// Uses at most `threads` threads per search (at least 1; the default is the number of
    /// cores).
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// Smaller blocks, and threads for any size, reach the block-boundary and threading code
    /// paths with little data.
    #[cfg(test)]
    fn with_blocks(mut self, queries: usize, vectors: usize) -> Self {
        self.blocks = (queries.max(1), vectors.max(1));
        self.min_parallel_work = 0;
        self
    }

    /// The dimension every vector must have, once fixed (by the constructor or the first add).
    pub fn dimension(&self) -> Option<usize> {
        self.fixed_dimension.or(self.read().dimension)
    }

    /// Number of chunks stored.
    pub fn count(&self) -> usize {
        self.read().chunks.len()
    }

    /// The chunk at `row`: rows number the distinct chunks in the order they were first added
    /// since the store was last cleared (a replaced chunk keeps its row).
    pub fn chunk(&self, row: usize) -> Option<PositionAwareChunk> {
        self.read().chunks.get(row).cloned()
    }

    /// [`VectorStore::add`] without `async`: stores `chunks` with their `embeddings` (same
    /// length and order). Nothing is stored when any input is rejected.
    pub fn insert(&self, chunks: &[PositionAwareChunk], embeddings: &[Vec<f32>]) -> Result<()> {
        check_lengths(chunks, embeddings).map_err(config)?;
        let mut inner = self.write();
        let expected =
            check_embeddings(chunks, embeddings, self.fixed_dimension.or(inner.dimension))
                .map_err(config)?;
        let Some(dimension) = expected else {
            return Ok(());
        };
        inner.dimension = Some(dimension);
        let width = self.blocks.1;
        for (chunk, v) in chunks.iter().zip(embeddings) {
            let row = match inner.rows.get(&chunk.id) {
                Some(&row) => row,
                None => {
                    let row = inner.chunks.len();
                    inner.rows.insert(chunk.id.clone(), row);
                    inner.chunks.push(chunk.clone());
                    let needed = (row / width + 1) * dimension * width;
                    if inner.matrix.len() < needed {
                        inner.matrix.resize(needed, 0.0);
                    }
                    row
                }
            };
            let block = &mut inner.matrix[(row / width) * dimension * width..];
            for (c, x) in normalised(v).into_iter().enumerate() {
                block[c * width + row % width] = x;
            }
        }
        Ok(())
    }

    /// The best `k` chunks for each query, best first, scores as cosine similarity (up to
    /// rounding): `result[i]` answers `queries[i]`. Queries run in blocks as matrix products,
    /// spread over the store's threads.
    pub fn search_many<Q: AsRef<[f32]>>(
        &self,
        queries: &[Q],
        k: usize,
    ) -> Result<Vec<Vec<RetrievedChunk>>> {
        let inner = self.read();
        let hits = self.search_rows(&inner, queries, k)?;
        Ok(hits
            .into_iter()
            .map(|row_hits| {
                row_hits
                    .into_iter()
                    .map(|(row, score)| RetrievedChunk::new(inner.chunks[row].clone(), score))
                    .collect()
            })
            .collect())
    }

    /// [`InMemoryStore::search_many`] as `(row, score)` pairs, without copying chunks; see
    /// [`InMemoryStore::chunk`] for what a row is.
    pub fn search_many_rows<Q: AsRef<[f32]>>(
        &self,
        queries: &[Q],
        k: usize,
    ) -> Result<Vec<Vec<(usize, f32)>>> {
        self.search_rows(&self.read(), queries, k)
    }

    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        // A panic elsewhere cannot leave `Inner` half-updated: writes validate first.
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    fn search_rows<Q: AsRef<[f32]>>(
        &self,
        inner: &Inner,
        queries: &[Q],
        k: usize,
    ) -> Result<Vec<Vec<(usize, f32)>>> {
        let dimension = self.fixed_dimension.or(inner.dimension);
        let mut flat = Vec::with_capacity(queries.len() * dimension.unwrap_or(0));
        for (i, q) in queries.iter().enumerate() {
            let q = q.as_ref();
            check_vector(q, dimension.unwrap_or(q.len()), || format!("query {i}"))
                .map_err(config)?;
            flat.extend(normalised(q));
        }
        let n = inner.chunks.len();
        let k = k.min(n);
        let (Some(d), true) = (dimension, k > 0) else {
            return Ok(vec![Vec::new(); queries.len()]);
        };
        let m = queries.len();
        let search = Search {
            queries: &flat,
            vectors: &inner.matrix,
            ids: &inner.chunks,
            dimension: d,
            k,
            blocks: self.blocks,
        };
        let threads = if m * n * d < self.min_parallel_work {
            1
        } else {
            self.threads.min(m.max(n))
        };
        let tops = if threads == 1 {
            search.run(0..m, 0..n)
        } else if m >= threads * MIN_QUERIES_PER_THREAD {
            // Threads take query blocks one at a time rather than a fixed half each, so that
            // a thread slowed by other work on its core does not hold up the whole search.
            let unit = self.blocks.0.min(m.div_ceil(threads));
            let next = AtomicUsize::new(0);
            let mut done: Vec<(usize, Vec<TopK>)> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..threads)
                    .map(|_| {
                        let (search, next) = (&search, &next);
                        s.spawn(move || {
                            let mut done = Vec::new();
                            loop {
                                let start = next.fetch_add(unit, Ordering::Relaxed);
                                if start >= m {
                                    break done;
                                }
                                done.push((start, search.run(start..(start + unit).min(m), 0..n)));
                            }
                        })
                    })
                    .collect();
                handles.into_iter().flat_map(join).collect()
            });
            done.sort_unstable_by_key(|&(start, _)| start);
            done.into_iter().flat_map(|(_, tops)| tops).collect()
        } else {
            let per = n.div_ceil(threads);
            let parts: Vec<Vec<TopK>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..n)
                    .step_by(per)
                    .map(|start| {
                        let search = &search;
                        s.spawn(move || search.run(0..m, start..(start + per).min(n)))
                    })
                    .collect();
                handles.into_iter().map(join).collect()
            });
            let mut merged = vec![TopK::new(k); m];
            for part in parts {
                for (top, other) in merged.iter_mut().zip(part) {
                    for (score, row) in other.items {
                        top.offer(score, row, &inner.chunks);
                    }
                }
            }
            merged
        };
        Ok(tops
            .into_iter()
            .map(|top| top.into_sorted(&inner.chunks))
            .collect())
    }
}

fn join<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

fn config(message: String) -> Error {
    Error::Store {
        store: "in-memory vector store".into(),
        message,
    }
}

/// One search's inputs, shared by its threads.
struct Search<'a> {
    queries: &'a [f32],
    vectors: &'a [f32],
    ids: &'a [PositionAwareChunk],
    dimension: usize,
    k: usize,
    blocks: (usize, usize),
}

impl Search<'_> {
    /// Top-k over `rows` for each query in `range`.
    fn run(&self, range: std::ops::Range<usize>, rows: std::ops::Range<usize>) -> Vec<TopK> {
        let d = self.dimension;
        let (query_block, vector_block) = self.blocks;
        let mut tops = vec![TopK::new(self.k); range.len()];
        let mut tile = vec![0f32; query_block.min(range.len()) * vector_block.min(rows.len())];
        let mut transposed = vec![0f32; query_block.min(range.len()) * d];
        for q0 in range.clone().step_by(query_block) {
            let q1 = (q0 + query_block).min(range.end);
            let height = q1 - q0;
            // Component-major like the stored blocks, for the same reason.
            for (i, q) in self.queries[q0 * d..q1 * d].chunks_exact(d).enumerate() {
                for (c, &x) in q.iter().enumerate() {
                    transposed[c * height + i] = x;
                }
            }
            // Threads may split the rows anywhere; a product covers one stored block at most.
            let mut r0 = rows.start;
            while r0 < rows.end {
                let r1 = ((r0 / vector_block + 1) * vector_block).min(rows.end);
                let width = r1 - r0;
                let block = &self.vectors[(r0 / vector_block) * d * vector_block..];
                let cells = &mut tile[..height * width];
                product(
                    &transposed[..height * d],
                    height,
                    &block[r0 % vector_block..],
                    vector_block,
                    cells,
                );
                for (scores, top) in cells
                    .chunks_exact(width)
                    .zip(&mut tops[q0 - range.start..q1 - range.start])
                {
                    top.scan(scores, r0, self.ids);
                }
                r0 = r1;
            }
        }
        tops
    }
}

/// `cells = a · b`, row-major with `height` rows: `a` is a block of `height` queries stored
/// component-major (`a[c * height + i]`), `b` a stored block from its first row
/// (`b[c * stride + j]`). With the `matrix` feature through matrixmultiply's blocked SIMD
/// kernels, without it one pass per component.
#[cfg(feature = "matrix")]
fn product(a: &[f32], height: usize, b: &[f32], stride: usize, cells: &mut [f32]) {
    use ndarray::linalg::general_mat_mul;
    use ndarray::{ArrayView2, ArrayViewMut2, ShapeBuilder};
    let (d, width) = (a.len() / height, cells.len() / height);
    let a = ArrayView2::from_shape((height, d).strides((1, height)), a)
        .expect("query block shape matches its buffer");
    let b = ArrayView2::from_shape((d, width).strides((stride, 1)), b)
        .expect("vector block shape matches its slice");
    let mut c =
        ArrayViewMut2::from_shape((height, width), cells).expect("tile shape matches its buffer");
    general_mat_mul(1.0, &a, &b, 0.0, &mut c);
}

#[cfg(not(feature = "matrix"))]
fn product(a: &[f32], height: usize, b: &[f32], stride: usize, cells: &mut [f32]) {
    let width = cells.len() / height;
    cells.fill(0.0);
    for (c, column) in a.chunks_exact(height).enumerate() {
        let row = &b[c * stride..c * stride + width];
        for (&x, out) in column.iter().zip(cells.chunks_exact_mut(width)) {
            for (o, &y) in out.iter_mut().zip(row) {
                *o += x * y;
            }
        }
    }
}

/// The best `k` (score, row) pairs seen so far: a binary heap whose root is the worst kept.
#[derive(Debug, Clone)]
struct TopK {
    k: usize,
    items: Vec<(f32, usize)>,
}

/// Whether `a` ranks before `b`: higher score, then smaller chunk id.
fn better(a: (f32, usize), b: (f32, usize), ids: &[PositionAwareChunk]) -> bool {
    a.0 > b.0 || (a.0 == b.0 && ids[a.1].id < ids[b.1].id)
}

impl TopK {
    fn new(k: usize) -> Self {
        TopK {
            k,
            items: Vec::with_capacity(k),
        }
    }

    /// The score a candidate must reach to be considered (ties go to the id comparison).
    fn threshold(&self) -> f32 {
        if self.items.len() < self.k {
            f32::NEG_INFINITY
        } else {
            self.items[0].0
        }
    }

    /// Offers every score of `scores`, the first being row `first_row`.
    fn scan(&mut self, scores: &[f32], first_row: usize, ids: &[PositionAwareChunk]) {
        const LANES: usize = 16;
        let mut threshold = self.threshold();
        let mut chunks = scores.chunks_exact(LANES);
        let mut row = first_row;
        for chunk in &mut chunks {
            // Once the heap is full almost every block loses to its worst entry; this
            // comparison has no early exit, so it compiles to vector compares.
            if chunk.iter().fold(false, |any, &s| any | (s >= threshold)) {
                for (i, &s) in chunk.iter().enumerate() {
                    if s >= threshold {
                        self.offer(s, row + i, ids);
                        threshold = self.threshold();
                    }
                }
            }
            row += LANES;
        }
        for (i, &s) in chunks.remainder().iter().enumerate() {
            if s >= threshold {
                self.offer(s, row + i, ids);
                threshold = self.threshold();
            }
        }
    }

    fn offer(&mut self, score: f32, row: usize, ids: &[PositionAwareChunk]) {
        if self.k == 0 {
            return;
        }
        let item = (score, row);
        if self.items.len() < self.k {
            self.items.push(item);
            let mut i = self.items.len() - 1;
            while i > 0 {
                let parent = (i - 1) / 2;
                if better(self.items[parent], self.items[i], ids) {
                    self.items.swap(parent, i);
                    i = parent;
                } else {
                    break;
                }
            }
        } else if better(item, self.items[0], ids) {
            self.items[0] = item;
            let len = self.items.len();
            let mut i = 0;
            loop {
                let (l, r) = (2 * i + 1, 2 * i + 2);
                let mut worst = i;
                if l < len && better(self.items[worst], self.items[l], ids) {
                    worst = l;
                }
                if r < len && better(self.items[worst], self.items[r], ids) {
                    worst = r;
                }
                if worst == i {
                    break;
                }
                self.items.swap(i, worst);
                i = worst;
            }
        }
    }

    /// Best first; `-0.0` (a zero vector's score can come out negative-signed) reads as `0.0`.
    fn into_sorted(mut self, ids: &[PositionAwareChunk]) -> Vec<(usize, f32)> {
        self.items.sort_by(|&a, &b| {
            if better(a, b, ids) {
                std::cmp::Ordering::Less
            } else if better(b, a, ids) {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        });
        self.items
            .into_iter()
            .map(|(score, row)| (row, score + 0.0))
            .collect()
    }
}

#[async_trait::async_trait]
impl VectorStore for InMemoryStore {
    fn name(&self) -> String {
        "in-memory(exact cosine)".to_owned()
    }

    fn spec(&self) -> crate::spec::Value {
        crate::spec::Spec::new("memory").into()
    }

    async fn add(&self, chunks: &[PositionAwareChunk], embeddings: &[Vec<f32>]) -> Result<()> {
        self.insert(chunks, embeddings)
    }

    async fn search(&self, embedding: &[f32], k: usize) -> Result<Vec<RetrievedChunk>> {
        Ok(self.search_many(&[embedding], k)?.pop().unwrap_or_default())
    }

    /// [`InMemoryStore::search_many`]: the embeddings in blocks of matrix products.
    async fn search_many(
        &self,
        embeddings: &[Vec<f32>],
        k: usize,
    ) -> Result<Vec<Vec<RetrievedChunk>>> {
        InMemoryStore::search_many(self, embeddings, k)
    }

    async fn clear(&self) -> Result<()> {
        *self.write() = Inner::default();
        Ok(())
    }

    async fn len(&self) -> Result<usize> {
        Ok(self.count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pollster::block_on;
    use proptest::prelude::*;

    fn chunk(i: usize) -> PositionAwareChunk {
        PositionAwareChunk::new("d.md", i * 10, i * 10 + 5, format!("chunk {i}"))
    }

    fn store_with(vectors: &[Vec<f32>]) -> (InMemoryStore, Vec<PositionAwareChunk>) {
        let chunks: Vec<_> = (0..vectors.len()).map(chunk).collect();
        let store = InMemoryStore::new();
        store.insert(&chunks, vectors).unwrap();
        (store, chunks)
    }

    fn contents(hits: &[RetrievedChunk]) -> Vec<&str> {
        hits.iter().map(|h| h.chunk.content.as_str()).collect()
    }

    #[test]
    fn ranks_by_cosine_worked_by_hand() {
        // Query (1, 0): cosines 1, 0.6, 0, -0.8 for (2, 0), (3, 4), (0, 5), (-4, 3).
        let (store, _) = store_with(&[
            vec![0.0, 5.0],
            vec![3.0, 4.0],
            vec![-4.0, 3.0],
            vec![2.0, 0.0],
        ]);
        let hits = block_on(store.search(&[1.0, 0.0], 4)).unwrap();
        assert_eq!(
            contents(&hits),
            ["chunk 3", "chunk 1", "chunk 0", "chunk 2"]
        );
        let scores: Vec<f32> = hits.iter().map(|h| h.score).collect();
        for (got, want) in scores.iter().zip([1.0, 0.6, 0.0, -0.8]) {
            assert!((got - want).abs() < 1e-6, "{scores:?}");
        }
        // The query's length does not matter, only its direction.
        let scaled = block_on(store.search(&[7.5, 0.0], 2)).unwrap();
        assert_eq!(contents(&scaled), ["chunk 3", "chunk 1"]);
        // Positions come back with the chunks.
        assert_eq!((hits[1].chunk.start(), hits[1].chunk.end()), (10, 15));
        assert_eq!(hits[1].chunk.doc_id().as_str(), "d.md");
    }

    #[test]
    fn ties_break_by_chunk_id_and_match_rank() {
        // Three identical directions (one scaled) tie exactly; the fourth is worse.
        let vectors = vec![
            vec![1.0, 1.0, 0.0],
            vec![0.0, 1.0, 0.0],
            vec![2.0, 2.0, 0.0],
            vec![1.0, 1.0, 0.0],
        ];
        let (store, chunks) = store_with(&vectors);
        let hits = block_on(store.search(&[1.0, 1.0, 0.0], 4)).unwrap();
        assert_eq!(hits[0].score, hits[1].score);
        assert_eq!(hits[1].score, hits[2].score);
        let mut tied: Vec<&PositionAwareChunkId> =
            [0, 2, 3].iter().map(|&i| &chunks[i].id).collect();
        tied.sort();
        let got: Vec<&PositionAwareChunkId> = hits[..3].iter().map(|h| &h.chunk.id).collect();
        assert_eq!(got, tied);
        assert_eq!(hits[3].chunk.id, chunks[1].id);
        // Same order as the crate-wide rule applied to the same hits.
        let reranked = crate::chunk::rank(hits.iter().rev().cloned().collect(), 4);
        assert_eq!(reranked, hits);
        // Cutting inside the tie keeps the smallest ids.
        let two = block_on(store.search(&[1.0, 1.0, 0.0], 2)).unwrap();
        assert_eq!(two, hits[..2]);
    }

    #[test]
    fn k_larger_than_the_store_returns_everything_and_zero_returns_nothing() {
        let (store, _) = store_with(&[vec![1.0, 0.0], vec![0.0, 1.0], vec![1.0, 1.0]]);
        let all = block_on(store.search(&[1.0, 0.0], 100)).unwrap();
        assert_eq!(contents(&all), ["chunk 0", "chunk 2", "chunk 1"]);
        assert!(block_on(store.search(&[1.0, 0.0], 0)).unwrap().is_empty());
        let many = store
            .search_many(&[vec![1.0, 0.0], vec![0.0, 1.0]], 5)
            .unwrap();
        assert_eq!(many.iter().map(Vec::len).collect::<Vec<_>>(), [3, 3]);
        assert_eq!(contents(&many[1]), ["chunk 1", "chunk 2", "chunk 0"]);
        let none: Vec<Vec<f32>> = Vec::new();
        assert!(store.search_many(&none, 3).unwrap().is_empty());
    }

    #[test]
    fn dimension_mismatch_names_both_dimensions() {
        let (store, _) = store_with(&[vec![1.0, 0.0, 0.0]]);
        let err = block_on(store.search(&[1.0, 0.0], 1)).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("query 0 has dimension 2, expected 3"), "{msg}");
        let err = store
            .search_many(&[vec![1.0, 0.0, 0.0], vec![1.0; 4]], 1)
            .unwrap_err()
            .to_string();
        assert!(err.contains("query 1 has dimension 4, expected 3"), "{err}");
        let err = block_on(store.add(&[chunk(7)], &[vec![1.0; 5]]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("embedding 0") && err.contains("dimension 5, expected 3"));
        assert!(err.contains("d.md") && err.contains("70..75"), "{err}");
        // Mixed lengths in the first add are caught against the first vector.
        let fresh = InMemoryStore::new();
        let err = fresh
            .insert(&[chunk(0), chunk(1)], &[vec![1.0, 2.0], vec![1.0]])
            .unwrap_err()
            .to_string();
        assert!(err.contains("embedding 1") && err.contains("dimension 1, expected 2"));
        assert_eq!(
            block_on(fresh.len()).unwrap(),
            0,
            "a rejected add stores nothing"
        );
        let fixed = InMemoryStore::with_dimension(4);
        assert!(fixed.insert(&[chunk(0)], &[vec![1.0; 3]]).is_err());
        assert!(fixed.search_many(&[vec![1.0; 3]], 1).is_err());
        assert_eq!(fixed.dimension(), Some(4));
    }

    #[test]
    fn rejects_bad_input_without_storing_any_of_it() {
        let store = InMemoryStore::new();
        let err = store
            .insert(&[chunk(0), chunk(1)], &[vec![1.0]])
            .unwrap_err()
            .to_string();
        assert!(err.contains("2 chunks but 1 embeddings"), "{err}");
        let err = store
            .insert(
                &[chunk(0), chunk(1)],
                &[vec![1.0, 0.0], vec![f32::NAN, 1.0]],
            )
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("embedding 1") && err.contains("NaN at index 0"),
            "{err}"
        );
        let err = store
            .insert(&[chunk(0)], &[vec![]])
            .unwrap_err()
            .to_string();
        assert!(err.contains("dimension 0"), "{err}");
        assert_eq!(store.count(), 0);
        assert_eq!(store.dimension(), None);
        store.insert(&[chunk(0)], &[vec![1.0, 0.0]]).unwrap();
        let err = store
            .search_many(&[vec![f32::INFINITY, 0.0]], 1)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("query 0") && err.contains("inf at index 0"),
            "{err}"
        );
    }

    #[test]
    fn clear_empties_the_store_and_forgets_a_learned_dimension() {
        let (store, _) = store_with(&[vec![1.0, 0.0], vec![0.0, 1.0]]);
        assert_eq!(block_on(store.len()).unwrap(), 2);
        assert_eq!(
            format!("{store:?}"),
            format!(
                "InMemoryStore {{ chunks: 2, dimension: Some(2), threads: {} }}",
                store.threads
            )
        );
        block_on(store.clear()).unwrap();
        assert_eq!(block_on(store.len()).unwrap(), 0);
        assert!(block_on(store.search(&[1.0, 0.0], 3)).unwrap().is_empty());
        assert_eq!(store.dimension(), None);
        // A new dimension is accepted after clearing.
        store.insert(&[chunk(5)], &[vec![0.0, 0.0, 1.0]]).unwrap();
        let hits = block_on(store.search(&[0.0, 0.0, 2.0], 3)).unwrap();
        assert_eq!(contents(&hits), ["chunk 5"]);
        assert_eq!(store.chunk(0), Some(chunk(5)));
        assert_eq!(store.chunk(1), None);
    }

    #[test]
    fn zero_vectors_score_zero() {
        let (store, chunks) = store_with(&[vec![0.0, 0.0], vec![-1.0, 0.0], vec![1.0, 1.0]]);
        let hits = block_on(store.search(&[-1.0, -1.0], 3)).unwrap();
        assert_eq!(contents(&hits), ["chunk 1", "chunk 0", "chunk 2"]);
        assert_eq!(hits[1].score.to_bits(), 0.0f32.to_bits(), "+0, not -0");
        // A zero query ties everything at 0: id order.
        let zero = block_on(store.search(&[0.0, 0.0], 3)).unwrap();
        assert!(zero.iter().all(|h| h.score.to_bits() == 0));
        let mut ids: Vec<&PositionAwareChunkId> = chunks.iter().map(|c| &c.id).collect();
        ids.sort();
        assert_eq!(zero.iter().map(|h| &h.chunk.id).collect::<Vec<_>>(), ids);
    }

    #[test]
    fn adding_a_stored_chunk_again_replaces_its_vector() {
        let (store, chunks) = store_with(&[vec![1.0, 0.0], vec![0.0, 1.0]]);
        store
            .insert(&[chunks[0].clone()], &[vec![0.0, -1.0]])
            .unwrap();
        assert_eq!(store.count(), 2);
        let hits = block_on(store.search(&[0.0, -1.0], 1)).unwrap();
        assert_eq!(hits[0].chunk, chunks[0]);
        assert!((hits[0].score - 1.0).abs() < 1e-6);
        assert_eq!(store.chunk(0), Some(chunks[0].clone()), "keeps its row");
    }

    #[test]
    fn single_and_batched_searches_agree_bit_for_bit() {
        let vectors: Vec<Vec<f32>> = (0..40)
            .map(|i| (0..7).map(|j| ((i * 7 + j) as f32 * 0.37).sin()).collect())
            .collect();
        let (store, _) = store_with(&vectors);
        let queries: Vec<Vec<f32>> = vectors.iter().step_by(3).cloned().collect();
        let batched = store.search_many(&queries, 5).unwrap();
        for (q, hits) in queries.iter().zip(&batched) {
            assert_eq!(&block_on(store.search(q, 5)).unwrap(), hits);
        }
        let rows = store.search_many_rows(&queries, 5).unwrap();
        for (rows, hits) in rows.iter().zip(&batched) {
            for (&(row, score), hit) in rows.iter().zip(hits) {
                assert_eq!(store.chunk(row).as_ref(), Some(&hit.chunk));
                assert_eq!(score, hit.score);
            }
        }
    }

    /// The model: every cosine by the crate's `cosine`, sorted by score then id, cut at k.
    fn naive(
        vectors: &[Vec<f32>],
        chunks: &[PositionAwareChunk],
        query: &[f32],
        k: usize,
    ) -> Vec<(PositionAwareChunkId, f32)> {
        let hits = vectors
            .iter()
            .zip(chunks)
            .map(|(v, c)| RetrievedChunk::new(c.clone(), crate::vector::cosine(v, query)))
            .collect();
        crate::chunk::rank(hits, k)
            .into_iter()
            .map(|h| (h.chunk.id, h.score))
            .collect()
    }

    fn small_vectors(n: usize, d: usize) -> impl Strategy<Value = Vec<Vec<f32>>> {
        // Few distinct values make exact ties and zero vectors common.
        let component = prop_oneof![Just(0.0f32), Just(1.0), Just(-1.0), -2.0f32..2.0];
        proptest::collection::vec(proptest::collection::vec(component, d), n)
    }

    fn case() -> impl Strategy<Value = (Vec<Vec<f32>>, Vec<Vec<f32>>, usize, usize, usize)> {
        (1usize..6, 0usize..40, 0usize..30).prop_flat_map(|(d, n, m)| {
            (
                small_vectors(n, d),
                small_vectors(m, d),
                0usize..50,
                1usize..7,
                1usize..4,
            )
        })
    }

    proptest! {
        #[test]
        fn search_many_matches_sorting_everything(
            (vectors, queries, k, block, threads) in case()
        ) {
            let chunks: Vec<_> = (0..vectors.len()).map(chunk).collect();
            let store = InMemoryStore::new()
                .with_threads(threads)
                .with_blocks(block, block + 1);
            store.insert(&chunks, &vectors).unwrap();
            let got = store.search_many(&queries, k).unwrap();
            prop_assert_eq!(got.len(), queries.len());
            let by_id: HashMap<&PositionAwareChunkId, usize> =
                chunks.iter().enumerate().map(|(i, c)| (&c.id, i)).collect();
            for (query, hits) in queries.iter().zip(&got) {
                let want = naive(&vectors, &chunks, query, k);
                prop_assert_eq!(hits.len(), want.len());
                // Ours is sorted by its own scores with the id rule, exactly.
                for pair in hits.windows(2) {
                    prop_assert!(
                        pair[0].score > pair[1].score
                            || (pair[0].score == pair[1].score && pair[0].chunk.id < pair[1].chunk.id)
                    );
                }
                // Scores agree with the model rank by rank, and each is that chunk's cosine.
                for (hit, (_, score)) in hits.iter().zip(&want) {
                    prop_assert!((hit.score - score).abs() <= 1e-5, "{} vs {}", hit.score, score);
                    let row = by_id[&hit.chunk.id];
                    let own = crate::vector::cosine(&vectors[row], query);
                    prop_assert!((hit.score - own).abs() <= 1e-5);
                }
                // Everything the model ranks clearly inside the cut is returned.
                if let Some(&(_, last)) = want.last() {
                    let ours: Vec<&PositionAwareChunkId> = hits.iter().map(|h| &h.chunk.id).collect();
                    for (id, score) in &want {
                        if *score > last + 1e-5 {
                            prop_assert!(ours.contains(&id));
                        }
                    }
                }
            }
        }
    }
}
