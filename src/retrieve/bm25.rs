//! Lexical retrieval with Okapi BM25 over a chunker's chunks.
//!
//! The index is ours rather than the `bm25` crate's `Scorer`, which compares every query token
//! with every token of each candidate and returns ties in hash order; an evaluation needs fast,
//! repeatable rankings. Tokens and formulas are the crate's (its English `DefaultTokenizer`,
//! rebuilt here from the same four crates so that its caching machinery is not a dependency),
//! and the tests check that tokens and scores equal the crate's to the last bit.

use crate::chunk::{rank, PositionAwareChunk, RetrievedChunk};
use crate::chunker::PositionAwareChunker;
use crate::corpus::Corpus;
use crate::error::{Error, Result, SettingError};
use crate::level::Level;
use crate::retrieve::{BatchError, Retriever};
use crate::span::CharSpan;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, PoisonError, RwLock};

/// Below this many queries per thread, [`Bm25Retriever::search_many`] stays on fewer threads:
/// a query takes tens of microseconds, about what starting a thread costs.
const QUERIES_PER_THREAD: usize = 16;

/// The `bm25` crate's English tokenization: Unicode folded to ASCII (unknown characters become
/// `[?]`), lower-cased, split into UAX #29 words, NLTK English stop words dropped, Snowball
/// English stems.
struct EnglishTokenizer {
    stop_words: std::collections::HashSet<String>,
    stemmer: rust_stemmers::Stemmer,
}

impl EnglishTokenizer {
    fn new() -> Self {
        EnglishTokenizer {
            stop_words: stop_words::get(stop_words::LANGUAGE::English)
                .iter()
                .map(|w| fold(w).into_owned())
                .collect(),
            stemmer: rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English),
        }
    }

    fn tokenize(&self, text: &str) -> Vec<String> {
        use unicode_segmentation::UnicodeSegmentation;
        let lower = fold(text).to_lowercase();
        lower
            .unicode_words()
            .filter(|w| !w.is_empty() && !self.stop_words.contains(*w))
            .map(|w| self.stemmer.stem(w).into_owned())
            .collect()
    }
}

fn fold(text: &str) -> std::borrow::Cow<'_, str> {
    deunicode::deunicode_with_tofu_cow(text, "[?]")
}

/// BM25 retrieval over the chunks of a [`PositionAwareChunker`].
///
/// Text goes through the `bm25` crate's English tokenization: Unicode-to-ASCII folding,
/// lower-casing, Unicode word splitting (UAX #29), NLTK English stop words removed, Snowball
/// English stemming. Each chunk is a document, scored as
///
/// ```text
/// score(q, c) = Σ over query tokens t:  idf(t) · tf(t,c)·(k1 + 1) / (tf(t,c) + k1·(1 − b + b·|c|/avgdl))
/// idf(t)      = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
/// ```
///
/// with `|c|` the chunk's token count after stop-word removal, `avgdl` its mean over the `N`
/// chunks of the corpus, and a token repeated in the query counted once per occurrence (the
/// `bm25` crate's formulas; its `Scorer` gives the same scores). Ties are broken by chunk id,
/// as [`rank`] orders them, so a ranking never depends on hashing or threads.
///
/// [`index`](Retriever::index) chunks the whole corpus (retrieval runs across all its
/// documents) and builds the index once; [`retrieve`](Retriever::retrieve) then scores a query
/// against it. The ranking is the same at both levels: token-level metrics read the chunks'
/// spans, chunk-level metrics their content ids. Chunks that share no term with the query are
/// not returned, so a query may get fewer than `k` chunks.
///
/// ```
/// use rag_eval::chunker::RecursiveCharacterChunker;
/// use rag_eval::corpus::{Corpus, Document};
/// use rag_eval::level::TokenLevel;
/// use rag_eval::retrieve::{Bm25Retriever, Retriever};
/// use std::sync::Arc;
///
/// let corpus = Arc::new(Corpus::new([
///     Document::new("birds.md", "Swifts sleep while flying.\n\nPenguins cannot fly."),
///     Document::new("fish.md", "Salmon swim upstream to spawn."),
/// ])?);
/// let bm25 = Bm25Retriever::new(RecursiveCharacterChunker::new(30, 0));
/// pollster::block_on(Retriever::<TokenLevel>::index(&bm25, &corpus))?;
/// let hits = pollster::block_on(Retriever::<TokenLevel>::retrieve(&bm25, "which birds fly?", 5))?;
/// assert_eq!(hits.len(), 2); // "fly" and "flying" share the stem; "birds" is in no chunk
/// assert!(hits.iter().all(|h| h.chunk.doc_id().as_str() == "birds.md"));
/// # Ok::<(), rag_eval::Error>(())
/// ```
pub struct Bm25Retriever {
    chunker: Arc<dyn PositionAwareChunker>,
    k1: f32,
    b: f32,
    tokenizer: EnglishTokenizer,
    state: RwLock<Option<Arc<Index>>>,
}

impl fmt::Debug for Bm25Retriever {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bm25Retriever")
            .field("k1", &self.k1)
            .field("b", &self.b)
            .field("chunker", &self.chunker.name())
            .field("indexed_chunks", &self.current().map(|i| i.chunks.len()))
            .finish()
    }
}

impl Bm25Retriever {
    /// The usual Okapi term-frequency saturation.
    pub const DEFAULT_K1: f32 = 1.2;
    /// The usual Okapi length normalisation.
    pub const DEFAULT_B: f32 = 0.75;

    /// BM25 over the chunks `chunker` makes, with `k1 = 1.2`, `b = 0.75`.
    pub fn new(chunker: impl PositionAwareChunker + 'static) -> Self {
        Self::from_arc(Arc::new(chunker))
    }

    /// BM25 over the chunks of a shared chunker.
    pub fn from_arc(chunker: Arc<dyn PositionAwareChunker>) -> Self {
        Bm25Retriever {
            chunker,
            k1: Self::DEFAULT_K1,
            b: Self::DEFAULT_B,
            tokenizer: EnglishTokenizer::new(),
            state: RwLock::new(None),
        }
    }

    /// Sets the term-frequency saturation `k1` (finite, ≥ 0) and the length normalisation `b`
    /// (in `[0, 1]`). Values outside those ranges make [`index`](Retriever::index) fail with
    /// [`Error::Setting`]. Drops any index built so far.
    pub fn with_params(mut self, k1: f32, b: f32) -> Self {
        self.k1 = k1;
        self.b = b;
        self.state = RwLock::new(None);
        self
    }

    /// `k1`, the term-frequency saturation.
    pub fn k1(&self) -> f32 {
        self.k1
    }

    /// `b`, the length normalisation.
    pub fn b(&self) -> f32 {
        self.b
    }

    /// The chunker whose chunks are indexed.
    pub fn position_aware_chunker(&self) -> &Arc<dyn PositionAwareChunker> {
        &self.chunker
    }

    /// Chunks `corpus` and indexes the chunks; what [`Retriever::index`] does, without `async`.
    ///
    /// Indexing the corpus already indexed (the same `Arc`, or documents with the same ids and
    /// texts) does nothing; another corpus replaces the index.
    pub fn build_index(&self, corpus: &Arc<Corpus>) -> Result<()> {
        self.check_params()?;
        if let Some(current) = self.current() {
            if same_corpus(&current.corpus, corpus) {
                return Ok(());
            }
        }
        let index = Index::build(
            Arc::clone(corpus),
            self.chunker.as_ref(),
            &self.tokenizer,
            self.k1,
            self.b,
        );
        *self.state.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(index));
        Ok(())
    }

    /// The best `k` chunks for `query`, best first; what [`Retriever::retrieve`] does, without
    /// `async`. An [`Error::NotIndexed`] before any corpus is indexed.
    pub fn search(&self, query: &str, k: usize) -> Result<Vec<RetrievedChunk>> {
        Ok(self.search_in(&*self.indexed()?, query, k))
    }

    /// [`Bm25Retriever::search`] for every query, spread over the cores: `result[i]` answers
    /// `queries[i]`, with the chunks and scores `search` gives it alone. What
    /// [`Retriever::retrieve_many`] does, without `async`.
    pub fn search_many(&self, queries: &[&str], k: usize) -> Result<Vec<Vec<RetrievedChunk>>> {
        let index = self.indexed()?;
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(queries.len().div_ceil(QUERIES_PER_THREAD));
        if threads <= 1 {
            return Ok(queries
                .iter()
                .map(|q| self.search_in(&index, q, k))
                .collect());
        }
        // Threads take the next query as they finish one, so a thread slowed by other work on
        // its core does not hold the rest up; each answer goes back to its query's place.
        let next = AtomicUsize::new(0);
        let answered: Vec<Vec<(usize, Vec<RetrievedChunk>)>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| {
                        let mut mine = Vec::new();
                        loop {
                            let i = next.fetch_add(1, AtomicOrdering::Relaxed);
                            let Some(q) = queries.get(i) else {
                                return mine;
                            };
                            mine.push((i, self.search_in(&index, q, k)));
                        }
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| {
                    w.join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect()
        });
        let mut results = vec![Vec::new(); queries.len()];
        for (i, hits) in answered.into_iter().flatten() {
            results[i] = hits;
        }
        Ok(results)
    }

    fn indexed(&self) -> Result<Arc<Index>> {
        self.current().ok_or_else(|| Error::NotIndexed {
            retriever: self.describe(),
        })
    }

    fn search_in(&self, index: &Index, query: &str, k: usize) -> Vec<RetrievedChunk> {
        if k == 0 {
            return Vec::new();
        }
        let tokens = self.tokenizer.tokenize(query);
        let mut scored = index.score(&tokens);
        if scored.len() > k {
            let by_rank = |a: &(f32, u32), b: &(f32, u32)| index.cmp_hits(*a, *b);
            scored.select_nth_unstable_by(k - 1, by_rank);
            scored.truncate(k);
        }
        let hits = scored
            .into_iter()
            .map(|(score, c)| RetrievedChunk::new(index.chunks[c as usize].clone(), score))
            .collect();
        rank(hits, k)
    }

    fn describe(&self) -> String {
        format!(
            "bm25(k1={},b={}) over {}",
            self.k1,
            self.b,
            self.chunker.name()
        )
    }

    fn check_params(&self) -> Result<()> {
        if !(self.k1.is_finite() && self.k1 >= 0.0) {
            return Err(
                SettingError::new("bm25", "k1", self.k1, "must be finite and at least 0").into(),
            );
        }
        if !(0.0..=1.0).contains(&self.b) {
            return Err(SettingError::new("bm25", "b", self.b, "must be in [0, 1]").into());
        }
        Ok(())
    }

    fn current(&self) -> Option<Arc<Index>> {
        self.state
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[async_trait::async_trait]
impl<L: Level> Retriever<L> for Bm25Retriever {
    /// `bm25(k1=1.2,b=0.75) over ` followed by the chunker's spec.
    fn name(&self) -> String {
        self.describe()
    }

    /// `bm25:chunker=…,k1=…,b=…`.
    fn spec(&self) -> crate::spec::Value {
        crate::spec::Spec::new("bm25")
            .with("chunker", self.chunker.spec())
            .with("k1", self.k1.to_string())
            .with("b", self.b.to_string())
            .into()
    }

    fn chunker(&self) -> Option<crate::spec::Value> {
        Some(self.chunker.spec())
    }

    fn chunker_object(&self) -> Option<&dyn PositionAwareChunker> {
        Some(self.chunker.as_ref())
    }

    fn indexed_spans(&self) -> Option<Vec<CharSpan>> {
        let index = self.current()?;
        Some(index.chunks.iter().map(|c| c.span.clone()).collect())
    }

    async fn index(&self, corpus: &Arc<Corpus>) -> Result<()> {
        self.build_index(corpus)
    }

    async fn retrieve(&self, query: &str, k: usize) -> Result<Vec<RetrievedChunk>> {
        self.search(query, k)
    }

    /// [`Bm25Retriever::search_many`]: the queries scored on every core.
    async fn retrieve_many(
        &self,
        queries: &[&str],
        k: usize,
        _concurrency: usize,
    ) -> std::result::Result<Vec<Vec<RetrievedChunk>>, BatchError> {
        if queries.is_empty() {
            return Ok(Vec::new());
        }
        self.search_many(queries, k)
            .map_err(|e| BatchError::new(0..queries.len(), e))
    }
}

/// Cheaper than rebuilding, and it keeps a re-loaded copy of the same folder from re-indexing.
fn same_corpus(a: &Arc<Corpus>, b: &Arc<Corpus>) -> bool {
    Arc::ptr_eq(a, b)
        || (a.len() == b.len()
            && a.documents()
                .iter()
                .zip(b.documents())
                .all(|(x, y)| x.id() == y.id() && x.content() == y.content()))
}

/// One chunk's entry in a term's postings list.
#[derive(Debug, Clone, Copy)]
struct Posting {
    chunk: u32,
    /// The term's saturated, length-normalised frequency in the chunk (everything but idf).
    weight: f32,
}

#[derive(Debug)]
struct Index {
    corpus: Arc<Corpus>,
    chunks: Vec<PositionAwareChunk>,
    /// Each chunk's position in chunk-id order, so that ties compare integers, not strings.
    id_rank: Vec<u32>,
    terms: HashMap<String, u32>,
    idf: Vec<f32>,
    /// Postings of term `t` are `postings[starts[t]..starts[t + 1]]`, in chunk order.
    starts: Vec<usize>,
    postings: Vec<Posting>,
}

impl Index {
    fn build(
        corpus: Arc<Corpus>,
        chunker: &dyn PositionAwareChunker,
        tokenizer: &EnglishTokenizer,
        k1: f32,
        b: f32,
    ) -> Index {
        let chunks = chunker.chunk_corpus(&corpus);
        let mut terms: HashMap<String, u32> = HashMap::new();
        // (term, tf) of every chunk, chunk after chunk; chunk `c`'s run ends at `run_ends[c]`.
        let mut counts: Vec<(u32, u32)> = Vec::new();
        let mut run_ends = Vec::with_capacity(chunks.len());
        let mut lens = Vec::with_capacity(chunks.len());
        let mut ids: Vec<u32> = Vec::new();
        for chunk in &chunks {
            let tokens = tokenizer.tokenize(&chunk.content);
            lens.push(tokens.len());
            ids.clear();
            for token in tokens {
                let next = terms.len() as u32;
                ids.push(*terms.entry(token).or_insert(next));
            }
            ids.sort_unstable();
            for run in ids.chunk_by(|x, y| x == y) {
                counts.push((run[0], run.len() as u32));
            }
            run_ends.push(counts.len());
        }

        let n = chunks.len();
        let total: usize = lens.iter().sum();
        // Computed as the bm25 crate does, so that scores agree to the last bit.
        let avgdl = if n == 0 || total == 0 {
            1.0
        } else {
            (total as f64 / n as f64) as f32
        };

        let mut df = vec![0usize; terms.len()];
        for &(t, _) in &counts {
            df[t as usize] += 1;
        }
        let mut starts = Vec::with_capacity(terms.len() + 1);
        starts.push(0);
        for d in &df {
            starts.push(starts.last().copied().unwrap_or(0) + d);
        }
        let mut fill = starts[..terms.len()].to_vec();
        let mut postings = vec![
            Posting {
                chunk: 0,
                weight: 0.0
            };
            counts.len()
        ];
        let mut from = 0;
        for (c, (&end, &len)) in run_ends.iter().zip(&lens).enumerate() {
            let norm = k1 * (1.0 - b + b * (len as f32 / avgdl));
            for &(t, tf) in &counts[from..end] {
                let tf = tf as f32;
                let slot = &mut fill[t as usize];
                postings[*slot] = Posting {
                    chunk: c as u32,
                    weight: tf * (k1 + 1.0) / (tf + norm),
                };
                *slot += 1;
            }
            from = end;
        }
        let idf = df
            .iter()
            .map(|&d| {
                let d = d as f32;
                (1.0 + (n as f32 - d + 0.5) / (d + 0.5)).ln()
            })
            .collect();

        let mut by_id: Vec<u32> = (0..n as u32).collect();
        by_id.sort_by(|&x, &y| chunks[x as usize].id.cmp(&chunks[y as usize].id));
        let mut id_rank = vec![0u32; n];
        for (r, &c) in by_id.iter().enumerate() {
            id_rank[c as usize] = r as u32;
        }

        Index {
            corpus,
            chunks,
            id_rank,
            terms,
            idf,
            starts,
            postings,
        }
    }

    /// `(score, chunk)` of every chunk sharing a term with the query tokens, in chunk order.
    fn score(&self, tokens: &[String]) -> Vec<(f32, u32)> {
        // Each chunk's terms are summed in query order, whatever the postings' layout, so a
        // score is the same float however the query's terms are spread over the index.
        let mut parts: Vec<(u64, f32)> = Vec::new();
        for (q, token) in tokens.iter().enumerate() {
            let Some(&t) = self.terms.get(token.as_str()) else {
                continue;
            };
            let t = t as usize;
            let idf = self.idf[t];
            parts.extend(
                self.postings[self.starts[t]..self.starts[t + 1]]
                    .iter()
                    .map(|p| ((u64::from(p.chunk) << 32) | q as u64, idf * p.weight)),
            );
        }
        parts.sort_unstable_by_key(|&(key, _)| key);
        let mut scored = Vec::new();
        for run in parts.chunk_by(|x, y| x.0 >> 32 == y.0 >> 32) {
            let score = run.iter().fold(0f32, |s, &(_, part)| s + part);
            if score > 0.0 {
                scored.push((score, (run[0].0 >> 32) as u32));
            }
        }
        scored
    }

    /// The order of [`rank`]: score descending, then chunk id.
    fn cmp_hits(&self, a: (f32, u32), b: (f32, u32)) -> Ordering {
        b.0.total_cmp(&a.0)
            .then_with(|| self.id_rank[a.1 as usize].cmp(&self.id_rank[b.1 as usize]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunker::{chunks_from_byte_ranges, RecursiveCharacterChunker};
    use crate::corpus::Document;
    use crate::dataset::{self, AnyDataset};
    use crate::level::{ChunkLevel, TokenLevel};
    use crate::shared_data;
    use crate::span::CharSpan;
    use bm25::{DefaultTokenizer, EmbedderBuilder, Language, Scorer, Tokenizer};
    use std::path::Path;
    use std::time::Instant;

    #[test]
    fn tokens_equal_the_bm25_crates_english_tokenizer() {
        let ours = EnglishTokenizer::new();
        let theirs = DefaultTokenizer::new(Language::English);
        let mut texts: Vec<String> = vec![
            String::new(),
            "The runners were running; they ran and runs!".into(),
            "Ünïcödé naïve café — Jürgen Weiß paid €1,150 (≤ 5 seats) 松本 ✔".into(),
            "It's the U.S.A.'s 3.14 e-mail co-op, isn't it?".into(),
        ];
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/corpus");
        let corpus = Corpus::from_folder(data.to_str().unwrap(), None).unwrap();
        texts.extend(corpus.documents().iter().map(|d| d.content().to_owned()));
        for t in &texts {
            assert_eq!(ours.tokenize(t), theirs.tokenize(t), "{t:?}");
        }
    }

    /// One chunk per non-empty line, so that tests know exactly what each chunk holds.
    struct Lines;

    impl PositionAwareChunker for Lines {
        fn name(&self) -> String {
            "lines".into()
        }
        fn chunk_with_positions(&self, doc: &Document) -> Vec<PositionAwareChunk> {
            let mut at = 0;
            let mut ranges = Vec::new();
            for line in doc.content().split_inclusive('\n') {
                ranges.push(at..at + line.trim_end_matches('\n').len());
                at += line.len();
            }
            chunks_from_byte_ranges(doc, ranges)
        }
    }

    fn corpus(docs: &[(&str, &str)]) -> Arc<Corpus> {
        let docs = docs.iter().map(|(id, text)| Document::new(*id, *text));
        Arc::new(Corpus::new(docs).unwrap())
    }

    /// Five chunks of exactly three tokens each after stop words and stemming
    /// (appl grow tree | banana grow bunch | tree shade garden | runner run daili |
    /// quiet even home), so `|c| = avgdl` and a term seen once weighs exactly 1.
    fn garden() -> Arc<Corpus> {
        corpus(&[
            (
                "a.md",
                "apples grow on trees\nbananas grow in bunches\ntrees shade the garden",
            ),
            ("b.md", "the runner runs daily\nquiet evenings at home"),
        ])
    }

    fn indexed(c: &Arc<Corpus>) -> Bm25Retriever {
        let r = Bm25Retriever::new(Lines);
        r.build_index(c).unwrap();
        r
    }

    fn texts(hits: &[RetrievedChunk]) -> Vec<&str> {
        hits.iter().map(|h| h.chunk.content.as_str()).collect()
    }

    fn close(a: f32, b: f32) -> bool {
        (a - b).abs() <= 1e-6 * b.abs().max(1.0)
    }

    #[test]
    fn a_term_in_one_chunk_ranks_that_chunk_alone_with_the_hand_worked_score() {
        let r = indexed(&garden());
        let hits = r.search("bananas", 5).unwrap();
        assert_eq!(texts(&hits), ["bananas grow in bunches"]);
        // N = 5, df = 1: idf = ln(1 + 4.5 / 1.5) = ln 4; tf = 1 at average length weighs 1.
        assert!(close(hits[0].score, 4f32.ln()), "{}", hits[0].score);
        assert_eq!(hits[0].chunk.span, CharSpan::new("a.md", 21, 44));
    }

    #[test]
    fn shared_terms_add_up_and_ties_go_by_chunk_id() {
        let r = indexed(&garden());
        let hits = r.search("Do trees grow?", 10).unwrap();
        // tree and grow both have df = 2: idf = ln(1 + 3.5 / 2.5) = ln 2.4 each.
        let idf = 2.4f32.ln();
        assert_eq!(hits[0].chunk.content, "apples grow on trees");
        assert!(close(hits[0].score, 2.0 * idf), "{}", hits[0].score);
        assert_eq!(hits.len(), 3);
        assert_eq!(hits[1].score, hits[2].score, "one shared term each");
        assert!(close(hits[1].score, idf));
        assert!(hits[1].chunk.id < hits[2].chunk.id, "tie broken by id");
        let mut tied = texts(&hits[1..]);
        tied.sort_unstable();
        assert_eq!(tied, ["bananas grow in bunches", "trees shade the garden"]);
    }

    #[test]
    fn stemming_matches_word_forms_and_stop_words_are_ignored() {
        let r = indexed(&garden());
        assert_eq!(
            texts(&r.search("running", 5).unwrap()),
            ["the runner runs daily"]
        );
        assert_eq!(
            texts(&r.search("an evening", 5).unwrap()),
            ["quiet evenings at home"]
        );
        assert!(r.search("the of and at in", 5).unwrap().is_empty());
        // "the" occurs in two chunks; were it a term it would change the scores.
        assert_eq!(
            r.search("the garden", 5).unwrap(),
            r.search("garden", 5).unwrap()
        );
    }

    #[test]
    fn empty_queries_and_unknown_terms_return_nothing() {
        let r = indexed(&garden());
        assert!(r.search("", 5).unwrap().is_empty());
        assert!(r.search("   ?! ", 5).unwrap().is_empty());
        assert!(r.search("zeppelin", 5).unwrap().is_empty());
        assert!(r.search("bananas", 0).unwrap().is_empty());
    }

    #[test]
    fn k_larger_than_the_hits_returns_every_hit_and_smaller_k_a_prefix() {
        let r = indexed(&garden());
        let all = r.search("trees grow home", 1000).unwrap();
        assert_eq!(all.len(), 4, "{:?}", texts(&all));
        for k in 1..=4 {
            assert_eq!(r.search("trees grow home", k).unwrap(), all[..k]);
        }
    }

    #[test]
    fn length_normalisation_follows_b_and_saturation_follows_k1() {
        let c = corpus(&[(
            "d.md",
            "alpha beta\nalpha gamma delta epsilon zeta eta theta\nalpha alpha alpha beta\nomega",
        )]);
        let r = indexed(&c);
        let hits = r.search("alpha", 5).unwrap();
        assert_eq!(
            texts(&hits),
            [
                "alpha alpha alpha beta",
                "alpha beta",
                "alpha gamma delta epsilon zeta eta theta"
            ]
        );
        // Hand-worked: N = 4, df = 3, idf = ln(1 + 1.5 / 3.5); lengths 2, 7, 4, 1, avgdl 3.5.
        let idf = (1.0f32 + 1.5 / 3.5).ln();
        let w = |tf: f32, len: f32| tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len / 3.5));
        for (hit, want) in hits.iter().zip([w(3.0, 4.0), w(1.0, 2.0), w(1.0, 7.0)]) {
            assert!(
                close(hit.score, idf * want),
                "{} vs {}",
                hit.score,
                idf * want
            );
        }

        let flat = Bm25Retriever::new(Lines).with_params(1.2, 0.0);
        flat.build_index(&c).unwrap();
        let hits = flat.search("alpha", 5).unwrap();
        assert_eq!(hits[0].chunk.content, "alpha alpha alpha beta");
        assert_eq!(hits[1].score, hits[2].score, "b = 0 ignores length");
        assert!(hits[1].chunk.id < hits[2].chunk.id);

        let binary = Bm25Retriever::new(Lines).with_params(0.0, 0.75);
        binary.build_index(&c).unwrap();
        let hits = binary.search("alpha", 5).unwrap();
        assert!(
            hits.iter().all(|h| h.score == hits[0].score),
            "k1 = 0 counts presence only"
        );
        assert!(hits.windows(2).all(|w| w[0].chunk.id < w[1].chunk.id));
    }

    #[test]
    fn two_fresh_indexes_rank_identically() {
        let queries = ["trees grow", "running home", "garden shade bananas", "grow"];
        let a = indexed(&garden());
        let b = indexed(&garden());
        for q in queries {
            let (x, y) = (a.search(q, 10).unwrap(), b.search(q, 10).unwrap());
            assert!(!x.is_empty());
            assert_eq!(x, y, "{q}");
            let bits =
                |h: &[RetrievedChunk]| h.iter().map(|h| h.score.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&x), bits(&y), "{q}");
        }
    }

    #[test]
    fn retrieving_before_indexing_is_an_error_naming_the_retriever() {
        let r = Bm25Retriever::new(Lines);
        let err = r.search("trees", 5).unwrap_err();
        assert!(
            matches!(&err, Error::NotIndexed { retriever } if retriever.starts_with("bm25")),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(msg.contains("index") && msg.contains("bm25"), "{msg}");
        let via_trait = pollster::block_on(Retriever::<TokenLevel>::retrieve(&r, "trees", 5));
        assert!(matches!(via_trait, Err(Error::NotIndexed { .. })));
    }

    #[test]
    fn invalid_parameters_are_setting_errors_at_index_time() {
        for (k1, b, wrong) in [
            (-0.1, 0.75, "k1"),
            (f32::NAN, 0.75, "k1"),
            (f32::INFINITY, 0.5, "k1"),
            (1.2, 1.5, "b"),
            (1.2, -0.1, "b"),
            (1.2, f32::NAN, "b"),
        ] {
            let r = Bm25Retriever::new(Lines).with_params(k1, b);
            match r.build_index(&garden()) {
                Err(Error::Setting(s)) => {
                    assert_eq!((s.component.as_str(), s.setting.as_str()), ("bm25", wrong));
                    assert!(
                        s.to_string().starts_with(&format!("bm25: {wrong} must be")),
                        "{s}"
                    )
                }
                other => panic!("k1={k1}, b={b}: {other:?}"),
            }
        }
    }

    #[test]
    fn both_levels_return_the_same_chunks_and_describe_the_configuration() {
        let r = Bm25Retriever::new(Lines);
        let c = garden();
        pollster::block_on(Retriever::<ChunkLevel>::index(&r, &c)).unwrap();
        for q in ["trees grow", "running", "zeppelin"] {
            let token = pollster::block_on(Retriever::<TokenLevel>::retrieve(&r, q, 3)).unwrap();
            let chunk = pollster::block_on(Retriever::<ChunkLevel>::retrieve(&r, q, 3)).unwrap();
            assert_eq!(token, chunk, "{q}");
            assert_eq!(token, r.search(q, 3).unwrap());
        }
        assert_eq!(
            Retriever::<TokenLevel>::name(&r),
            "bm25(k1=1.2,b=0.75) over lines"
        );
        assert_eq!(Retriever::<ChunkLevel>::chunker(&r), Some("lines".into()));
        let tuned =
            Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0)).with_params(2.0, 0.5);
        assert_eq!(
            Retriever::<ChunkLevel>::name(&tuned),
            format!(
                "bm25(k1=2,b=0.5) over {}",
                RecursiveCharacterChunker::new(400, 0).name()
            )
        );
    }

    #[test]
    fn the_same_corpus_is_indexed_once_and_another_replaces_it() {
        let r = Bm25Retriever::new(Lines);
        let c = garden();
        r.build_index(&c).unwrap();
        let first = r.current().unwrap();
        r.build_index(&c).unwrap();
        assert!(Arc::ptr_eq(&first, &r.current().unwrap()), "same Arc");
        r.build_index(&garden()).unwrap();
        assert!(
            Arc::ptr_eq(&first, &r.current().unwrap()),
            "equal documents"
        );

        let other = corpus(&[("z.md", "zeppelins float\nbananas ripen")]);
        r.build_index(&other).unwrap();
        assert!(!Arc::ptr_eq(&first, &r.current().unwrap()));
        assert_eq!(
            texts(&r.search("zeppelin", 5).unwrap()),
            ["zeppelins float"]
        );
        assert!(r.search("trees", 5).unwrap().is_empty(), "old corpus gone");
        let hits = r.search("bananas", 5).unwrap();
        assert_eq!(hits[0].chunk.span.doc.as_str(), "z.md");
    }

    #[test]
    fn scores_equal_the_bm25_crate_scorer_and_order_is_rank_over_all_hits() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data");
        let c = Arc::new(Corpus::from_folder(root.join("corpus").to_str().unwrap(), None).unwrap());
        let chunker = RecursiveCharacterChunker::new(200, 0);
        let chunks = chunker.chunk_corpus(&c);
        let contents: Vec<&str> = chunks.iter().map(|c| c.content.as_str()).collect();
        let embedder = EmbedderBuilder::<u64>::with_tokenizer_and_fit_to_corpus(
            DefaultTokenizer::new(Language::English),
            &contents,
        )
        .build();
        let mut scorer = Scorer::<usize, u64>::new();
        for (i, text) in contents.iter().enumerate() {
            scorer.upsert(&i, embedder.embed(text));
        }
        let r = Bm25Retriever::new(chunker);
        r.build_index(&c).unwrap();

        let AnyDataset::Token(questions) =
            dataset::load(root.join("questions.jsonl").to_str().unwrap()).unwrap()
        else {
            panic!("the bundled dataset is token-level");
        };
        let mut compared = 0usize;
        for ex in questions.examples() {
            let q = embedder.embed(&ex.query);
            let all: Vec<RetrievedChunk> = (0..chunks.len())
                .filter_map(|i| {
                    let s = scorer.score(&i, &q).unwrap();
                    (s > 0.0).then(|| RetrievedChunk::new(chunks[i].clone(), s))
                })
                .collect();
            for k in [1, 5, 20, usize::MAX] {
                let ours = r.search(&ex.query, k).unwrap();
                let theirs = rank(all.clone(), k);
                // Same formulas in the same order of operations: equal to the last bit, so
                // the rankings must be identical too, ties included.
                assert_eq!(ours, theirs, "{} (k = {k})", ex.query);
                compared += ours.len();
            }
        }
        assert!(compared > 1000, "only {compared} hits compared");
    }

    /// Recall on the chunking-eval-general set, which also times the whole run.
    #[test]
    #[ignore = "needs ../shared/data"]
    fn finds_the_first_reference_for_most_chunking_eval_questions() {
        let dir = shared_data::chunking_eval_general();
        let c = Arc::new(Corpus::from_folder(dir.join("corpora").to_str().unwrap(), None).unwrap());
        let questions =
            dataset::import::chroma_csv(dir.join("questions_df.csv").to_str().unwrap(), &c)
                .unwrap();
        let r = Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0));
        let started = Instant::now();
        r.build_index(&c).unwrap();
        let indexed = started.elapsed();
        let mut found = 0;
        let mut first_50 = 0;
        for (i, ex) in questions.examples().iter().enumerate() {
            let hits = r.search(&ex.query, 5).unwrap();
            assert!(hits.len() <= 5);
            let hit = hits.iter().any(|h| ex.truth[0].overlaps(&h.chunk.span));
            found += usize::from(hit);
            if i < 50 {
                first_50 += usize::from(hit);
            }
        }
        let total = started.elapsed();
        let chunks = r.current().unwrap().chunks.len();
        let n = questions.len();
        eprintln!(
            "bm25 over {chunks} chunks: first reference in the top 5 for {first_50}/50 of the first \
             questions, {found}/{n} of all; index {indexed:.2?}, index + {n} queries {total:.2?}"
        );
        assert!(first_50 as f64 / 50.0 > 0.5, "{first_50}/50");
    }
}
