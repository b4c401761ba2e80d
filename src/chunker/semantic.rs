//! Semantic chunking: break where the meaning of consecutive sentences jumps.

use super::{chunks_from_byte_ranges, Chunker, PositionAwareChunker};
use crate::chunk::PositionAwareChunk;
use crate::corpus::Document;
use crate::embed::{cosine, Embedder, HashingEmbedder};
use crate::error::{EmbedError, Result, SettingError};
use crate::span::CharSpan;
use crate::spec::{Spec, Value};
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// Splits a document where the embedding distance between neighbouring sentences is unusually
/// large, after Greg Kamradt's semantic chunking (as in LangChain's `SemanticChunker`).
///
/// 1. The text is split into sentences: after `.`, `?` or `!` followed by whitespace, and at
///    blank lines. Sentences are trimmed of surrounding whitespace; empty ones are dropped.
/// 2. Each sentence is embedded together with `buffer` neighbours on each side (joined by a
///    space).
/// 3. The cosine distance `1 - cos` between each group and the next is computed, and a chunk
///    ends after every sentence whose distance to the next lies strictly above the
///    `percentile`-th percentile of all distances (linear interpolation between closest
///    ranks, numpy's default).
/// 4. With `max_chars`, a chunk longer than that many characters is cut greedily at sentence
///    boundaries; a single sentence longer than `max_chars` stays whole.
///
/// A chunk runs from the start of its first sentence to the end of its last, so it starts and
/// ends with non-whitespace, chunks never overlap, and whatever lies between sentences (the
/// whitespace after a full stop, a blank line) belongs to the chunk when both neighbours do.
///
/// The [`Embedder`] trait is async. The [`PositionAwareChunker`] and [`Chunker`]
/// implementations drive it to completion on the calling thread with `pollster`, which suits
/// local embedders such as [`HashingEmbedder`]; if the embedder fails there, the failure is
/// logged (`tracing` warning) and every sentence becomes its own chunk. Inside async code, and
/// with embedders that need an async runtime (HTTP clients), call
/// [`SemanticChunker::chunk_document`] instead: it awaits the embedder and returns its error.
///
/// ```
/// use rag_eval::chunker::{PositionAwareChunker, SemanticChunker};
/// use rag_eval::corpus::Document;
///
/// let doc = Document::new(
///     "pets.txt",
///     "Cats purr. Cats nap. Cats purr and nap. Stock markets fell sharply today.",
/// );
/// // Buffer 0: each sentence is embedded alone.
/// let chunker = SemanticChunker::default().with_buffer(0);
/// let chunks = chunker.chunk_with_positions(&doc);
/// let texts: Vec<&str> = chunks.iter().map(|c| c.content.as_str()).collect();
/// assert_eq!(texts, ["Cats purr. Cats nap. Cats purr and nap.", "Stock markets fell sharply today."]);
/// ```
#[derive(Clone)]
pub struct SemanticChunker {
    embedder: Arc<dyn Embedder>,
    percentile: f64,
    buffer: usize,
    max_chars: Option<usize>,
}

impl Default for SemanticChunker {
    /// [`HashingEmbedder::default`], percentile 95, buffer 1, no size cap.
    fn default() -> Self {
        SemanticChunker::new(Arc::new(HashingEmbedder::default()))
    }
}

impl fmt::Debug for SemanticChunker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemanticChunker")
            .field("embedder", &self.embedder.name())
            .field("percentile", &self.percentile)
            .field("buffer", &self.buffer)
            .field("max_chars", &self.max_chars)
            .finish()
    }
}

/// A sentence: its byte range and char range in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Sentence {
    bytes: Range<usize>,
    chars: Range<usize>,
}

impl SemanticChunker {
    /// Percentile 95, buffer 1, no size cap, with the given embedder.
    pub fn new(embedder: Arc<dyn Embedder>) -> Self {
        SemanticChunker {
            embedder,
            percentile: 95.0,
            buffer: 1,
            max_chars: None,
        }
    }

    /// A fully configured chunker; [`Error::Setting`](crate::Error::Setting) if `percentile` is not a number in
    /// `0..=100` or `max_chars` is `Some(0)`.
    pub fn try_new(
        embedder: Arc<dyn Embedder>,
        percentile: f64,
        buffer: usize,
        max_chars: Option<usize>,
    ) -> Result<Self> {
        SemanticChunker::new(embedder)
            .try_with_percentile(percentile)?
            .with_buffer(buffer)
            .try_with_max_chars(max_chars)
    }

    /// Breaks where the distance lies above this percentile of all distances in the document.
    /// Lower values give more, smaller chunks.
    ///
    /// # Panics
    /// Panics unless `0 <= percentile <= 100`; [`SemanticChunker::try_with_percentile`]
    /// returns an error instead.
    #[must_use]
    pub fn with_percentile(self, percentile: f64) -> Self {
        match self.try_with_percentile(percentile) {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        }
    }

    /// Like [`SemanticChunker::with_percentile`], with an [`Error::Setting`](crate::Error::Setting) for a percentile
    /// outside `0..=100` (or NaN).
    pub fn try_with_percentile(mut self, percentile: f64) -> Result<Self> {
        if !(0.0..=100.0).contains(&percentile) {
            return Err(SettingError::new(
                "semantic chunker",
                "percentile",
                percentile,
                "must be between 0 and 100",
            )
            .into());
        }
        self.percentile = percentile;
        Ok(self)
    }

    /// Embeds each sentence together with this many neighbours on each side (0: alone).
    #[must_use]
    pub fn with_buffer(mut self, buffer: usize) -> Self {
        self.buffer = buffer;
        self
    }

    /// Caps chunks at this many characters (`None`: no cap).
    ///
    /// # Panics
    /// Panics on `Some(0)`; [`SemanticChunker::try_with_max_chars`] returns an error instead.
    #[must_use]
    pub fn with_max_chars(self, max_chars: Option<usize>) -> Self {
        match self.try_with_max_chars(max_chars) {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        }
    }

    /// Like [`SemanticChunker::with_max_chars`], with an [`Error::Setting`](crate::Error::Setting) for `Some(0)`.
    pub fn try_with_max_chars(mut self, max_chars: Option<usize>) -> Result<Self> {
        if max_chars == Some(0) {
            return Err(SettingError::new(
                "semantic chunker",
                "max_chars",
                0,
                "must be at least 1",
            )
            .into());
        }
        self.max_chars = max_chars;
        Ok(self)
    }

    /// The breakpoint percentile.
    pub fn percentile(&self) -> f64 {
        self.percentile
    }

    /// Neighbours embedded with each sentence, on each side.
    pub fn buffer(&self) -> usize {
        self.buffer
    }

    /// The size cap in characters, if any.
    pub fn max_chars(&self) -> Option<usize> {
        self.max_chars
    }

    /// The embedder.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// The configuration as a spec string, e.g.
    /// `semantic:percentile=95,buffer=1,embedder=hashing(dim=384,ngrams=2)`, with
    /// `max_chars=…` before `embedder` when set. The embedder's own name comes last and runs
    /// to the end of the string, since it may contain commas.
    pub fn name(&self) -> String {
        let cap = self
            .max_chars
            .map(|m| format!("max_chars={m},"))
            .unwrap_or_default();
        format!(
            "semantic:percentile={},buffer={},{cap}embedder={}",
            self.percentile,
            self.buffer,
            self.embedder.name()
        )
    }

    /// The sentences this chunker sees in `doc`, in order, as trimmed char spans. Chunks are
    /// made of whole sentences.
    pub fn sentences(doc: &Document) -> Vec<CharSpan> {
        split_sentences(doc.content())
            .into_iter()
            .map(|s| CharSpan::new(doc.id().clone(), s.chars.start, s.chars.end))
            .collect()
    }

    /// Chunks `doc`, awaiting the embedder; an embedder failure is returned, not papered over.
    pub async fn chunk_document(&self, doc: &Document) -> Result<Vec<PositionAwareChunk>> {
        let ranges = self.byte_ranges(doc.content()).await?;
        Ok(chunks_from_byte_ranges(doc, ranges))
    }

    async fn byte_ranges(&self, text: &str) -> Result<Vec<Range<usize>>> {
        let sentences = split_sentences(text);
        let breaks = self.breakpoints(text, &sentences).await?;
        Ok(self.assemble(&sentences, &breaks))
    }

    /// The sync path: on an embedder failure, warn and give every sentence its own chunk.
    fn byte_ranges_blocking(&self, text: &str) -> Vec<Range<usize>> {
        let sentences = split_sentences(text);
        let breaks = match pollster::block_on(self.breakpoints(text, &sentences)) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(
                    chunker = %self.name(),
                    "embedding failed, falling back to one chunk per sentence: {e}"
                );
                (0..sentences.len()).collect()
            }
        };
        self.assemble(&sentences, &breaks)
    }

    /// Indices of the sentences after which a chunk ends (the last sentence excluded).
    async fn breakpoints(&self, text: &str, sentences: &[Sentence]) -> Result<Vec<usize>> {
        // With one distance or none, nothing can lie strictly above its own percentile.
        if sentences.len() < 3 {
            return Ok(Vec::new());
        }
        let groups: Vec<String> = (0..sentences.len())
            .map(|i| {
                let lo = i.saturating_sub(self.buffer);
                let hi = (i + self.buffer).min(sentences.len() - 1);
                sentences[lo..=hi]
                    .iter()
                    .map(|s| &text[s.bytes.clone()])
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let vectors = self.embedder.embed(&groups).await?;
        if vectors.len() != groups.len() {
            let embedder = self.embedder.name();
            return Err(EmbedError::new(
                &embedder,
                format!(
                    "{embedder} returned {} vectors for {} texts",
                    vectors.len(),
                    groups.len()
                ),
            )
            .into());
        }
        let distances: Vec<f64> = vectors
            .windows(2)
            .map(|w| 1.0 - f64::from(cosine(&w[0], &w[1])))
            .collect();
        let threshold = percentile(&distances, self.percentile);
        Ok(distances
            .iter()
            .enumerate()
            .filter(|(_, &d)| d > threshold)
            .map(|(i, _)| i)
            .collect())
    }

    /// Byte ranges of the chunks: sentences grouped between breakpoints, then cut to the cap.
    fn assemble(&self, sentences: &[Sentence], breaks: &[usize]) -> Vec<Range<usize>> {
        let Some(last) = sentences.len().checked_sub(1) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut first = 0;
        for end in breaks.iter().copied().chain(std::iter::once(last)) {
            if end < first || end > last {
                continue;
            }
            self.cap(sentences, first, end, &mut out);
            first = end + 1;
        }
        out
    }

    /// Emits sentences `first..=last` as one chunk, or greedily as several within the cap.
    fn cap(&self, sentences: &[Sentence], first: usize, last: usize, out: &mut Vec<Range<usize>>) {
        let chars = |i: usize, j: usize| sentences[j].chars.end - sentences[i].chars.start;
        let bytes = |i: usize, j: usize| sentences[i].bytes.start..sentences[j].bytes.end;
        let Some(max) = self.max_chars else {
            out.push(bytes(first, last));
            return;
        };
        let mut i = first;
        while i <= last {
            let mut j = i;
            while j < last && chars(i, j + 1) <= max {
                j += 1;
            }
            out.push(bytes(i, j));
            i = j + 1;
        }
    }
}

/// Splits after `.`, `?`, `!` followed by whitespace and at blank lines (two line feeds with
/// only whitespace between), trimming each sentence; offsets are counted in one pass.
fn split_sentences(text: &str) -> Vec<Sentence> {
    let mut out = Vec::new();
    // Start (byte, char) of the sentence being read, and the end of its last non-whitespace.
    let mut current: Option<(usize, usize)> = None;
    let mut last_end = (0, 0);
    let mut line_feeds = 0;
    let mut chars = text.char_indices().enumerate().peekable();
    while let Some((ci, (bi, c))) = chars.next() {
        if c.is_whitespace() {
            if c == '\n' {
                line_feeds += 1;
            }
            if line_feeds >= 2 {
                if let Some((sb, sc)) = current.take() {
                    out.push(Sentence {
                        bytes: sb..last_end.0,
                        chars: sc..last_end.1,
                    });
                }
            }
            continue;
        }
        line_feeds = 0;
        let (sb, sc) = *current.get_or_insert((bi, ci));
        last_end = (bi + c.len_utf8(), ci + 1);
        let next_is_space = chars.peek().is_some_and(|(_, (_, n))| n.is_whitespace());
        if matches!(c, '.' | '?' | '!') && next_is_space {
            out.push(Sentence {
                bytes: sb..last_end.0,
                chars: sc..last_end.1,
            });
            current = None;
        }
    }
    if let Some((sb, sc)) = current {
        out.push(Sentence {
            bytes: sb..last_end.0,
            chars: sc..last_end.1,
        });
    }
    out
}

/// The `p`-th percentile (0..=100) of `values` with linear interpolation between the closest
/// ranks, computed as numpy's default `percentile` does (including its way of interpolating
/// from the nearer end, which keeps results within the two neighbours). NaN for no values.
fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let index = (v.len() - 1) as f64 * (p / 100.0);
    let lo = index.floor();
    let gamma = index - lo;
    let lo = lo as usize;
    let hi = (lo + 1).min(v.len() - 1);
    let (a, b) = (v[lo], v[hi]);
    let diff = b - a;
    if gamma >= 0.5 {
        b - diff * (1.0 - gamma)
    } else {
        a + diff * gamma
    }
}

impl PositionAwareChunker for SemanticChunker {
    fn name(&self) -> String {
        SemanticChunker::name(self)
    }

    /// `semantic:percentile=…,buffer=…,max_chars=…,embedder=…` (`max_chars` when set), the
    /// embedder's own spec nested as it is.
    fn spec(&self) -> Value {
        let mut spec = Spec::new("semantic")
            .with("percentile", self.percentile.to_string())
            .with("buffer", self.buffer.to_string());
        if let Some(m) = self.max_chars {
            spec = spec.with("max_chars", m.to_string());
        }
        spec.with("embedder", self.embedder.spec()).into()
    }

    fn chunk_with_positions(&self, doc: &Document) -> Vec<PositionAwareChunk> {
        chunks_from_byte_ranges(doc, self.byte_ranges_blocking(doc.content()))
    }
}

impl Chunker for SemanticChunker {
    fn name(&self) -> String {
        SemanticChunker::name(self)
    }

    fn spec(&self) -> Value {
        PositionAwareChunker::spec(self)
    }

    fn chunk(&self, text: &str) -> Vec<String> {
        self.byte_ranges_blocking(text)
            .into_iter()
            .map(|r| text[r].to_owned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn sentence_texts(text: &str) -> Vec<&str> {
        split_sentences(text)
            .into_iter()
            .map(|s| &text[s.bytes])
            .collect()
    }

    #[test]
    fn sentences_end_at_punctuation_before_whitespace_and_at_blank_lines() {
        assert_eq!(
            sentence_texts("  One. Two? Three!Four.\tFive\n\n \r\n Six\nseven "),
            ["One.", "Two?", "Three!Four.", "Five", "Six\nseven"]
        );
        assert_eq!(
            sentence_texts("3.14 is pi.  e.g. this"),
            ["3.14 is pi.", "e.g.", "this"]
        );
        assert!(sentence_texts(" \n\n\t").is_empty());
        assert!(sentence_texts("").is_empty());
        // A blank line with CRLF line ends.
        assert_eq!(sentence_texts("a\r\n\r\nb"), ["a", "b"]);
    }

    #[test]
    fn sentence_offsets_are_chars() {
        let text = "Ünïcödé. 😀 ok!\n\nZ";
        let doc = Document::new("d", text);
        let spans: Vec<(usize, usize)> = SemanticChunker::sentences(&doc)
            .iter()
            .map(|s| (s.start, s.end))
            .collect();
        assert_eq!(spans, [(0, 8), (9, 14), (16, 17)]);
        for s in SemanticChunker::sentences(&doc) {
            assert_eq!(
                doc.slice(s.start, s.end).unwrap().trim(),
                doc.slice(s.start, s.end).unwrap()
            );
        }
    }

    #[test]
    fn percentile_matches_numpy_linear_interpolation() {
        // np.percentile([1, 2, 3, 4], 50) == 2.5; [..., 25] == 1.75; [..., 100] == 4.
        assert_eq!(percentile(&[4.0, 1.0, 3.0, 2.0], 50.0), 2.5);
        assert_eq!(percentile(&[4.0, 1.0, 3.0, 2.0], 25.0), 1.75);
        assert_eq!(percentile(&[4.0, 1.0, 3.0, 2.0], 100.0), 4.0);
        assert_eq!(percentile(&[4.0, 1.0, 3.0, 2.0], 0.0), 1.0);
        // Eleven values 0..=10: the 95th percentile sits halfway between 9 and 10.
        let v: Vec<f64> = (0..=10).map(f64::from).collect();
        assert_eq!(percentile(&v, 95.0), 9.5);
        assert_eq!(percentile(&[7.0], 95.0), 7.0);
        assert!(percentile(&[], 95.0).is_nan());
    }

    /// Embeds a text as the one-hot vector of its first letter's topic, so distances are 0
    /// within a topic and 1 across topics.
    struct Topics;
    #[async_trait::async_trait]
    impl Embedder for Topics {
        fn name(&self) -> String {
            "topics".into()
        }
        fn dimension(&self) -> usize {
            26
        }
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
            Ok(texts
                .iter()
                .map(|t| {
                    let mut v = vec![0.0; 26];
                    let first = t.bytes().next().unwrap_or(b'a').to_ascii_lowercase();
                    v[usize::from(first.saturating_sub(b'a')).min(25)] = 1.0;
                    v
                })
                .collect())
        }
    }

    fn topics(buffer: usize) -> SemanticChunker {
        SemanticChunker::new(Arc::new(Topics)).with_buffer(buffer)
    }

    #[test]
    fn breaks_where_the_distance_is_above_the_percentile() {
        // Sentences a a a b b: distances 0 0 1 0; the 95th percentile is 0.85; one break.
        let text = "a1. a2. a3. b1. b2.";
        let got = topics(0).chunk(text);
        assert_eq!(got, ["a1. a2. a3.", "b1. b2."]);
        // Percentile 0 puts the threshold at 0: every jump breaks, equal neighbours do not.
        let got = topics(0).with_percentile(0.0).chunk("a1. b1. b2. c1.");
        assert_eq!(got, ["a1.", "b1. b2.", "c1."]);
        // At the 100th percentile nothing is strictly above the largest distance.
        let got = topics(0).with_percentile(100.0).chunk(text);
        assert_eq!(got, [text]);
    }

    #[test]
    fn the_buffer_embeds_neighbours_with_each_sentence() {
        // With buffer 1 the group of sentence i starts with sentence i-1 (the first letter is
        // what `Topics` looks at): groups a, a, a, a(a3 b1 b2), b: the jump moves one later.
        let text = "a1. a2. a3. b1. b2.";
        assert_eq!(topics(1).chunk(text), ["a1. a2. a3. b1.", "b2."]);
    }

    #[test]
    fn chunks_are_document_slices_with_char_offsets() {
        let text = "  ä1. ä2.\n\nb😀. b2.  ";
        // 'ä' is not ASCII: `Topics` maps it, like 'z', to the last slot; 'b' to slot 1.
        let doc = Document::new("d", text);
        let chunks = topics(0).chunk_with_positions(&doc);
        let spans: Vec<(usize, usize, &str)> = chunks
            .iter()
            .map(|c| (c.start(), c.end(), c.content.as_str()))
            .collect();
        assert_eq!(spans, [(2, 9, "ä1. ä2."), (11, 18, "b😀. b2.")]);
    }

    #[test]
    fn max_chars_cuts_groups_at_sentence_boundaries() {
        let text = "a1 x. a2 y. a3 z. a4.";
        let c = topics(0).with_max_chars(Some(11));
        // "a1 x. a2 y." is 11 chars; adding " a3 z." would make 17.
        assert_eq!(c.chunk(text), ["a1 x. a2 y.", "a3 z. a4."]);
        // A sentence longer than the cap stays whole.
        let c = topics(0).with_max_chars(Some(3));
        assert_eq!(c.chunk("a long one. a2."), ["a long one.", "a2."]);
    }

    /// Fails every call, counting them.
    struct Broken(Mutex<usize>);
    #[async_trait::async_trait]
    impl Embedder for Broken {
        fn name(&self) -> String {
            "broken".into()
        }
        fn dimension(&self) -> usize {
            1
        }
        async fn embed(&self, _: &[String]) -> Result<Vec<Vec<f32>>> {
            *self.0.lock().unwrap() += 1;
            Err(EmbedError::new("flaky", "service unavailable").into())
        }
    }

    #[test]
    fn an_embedder_failure_is_an_error_async_and_a_per_sentence_fallback_sync() {
        let broken = Arc::new(Broken(Mutex::new(0)));
        let c = SemanticChunker::new(broken.clone());
        let doc = Document::new("d", "One. Two. Three.");
        let err = pollster::block_on(c.chunk_document(&doc)).unwrap_err();
        assert!(err.to_string().contains("service unavailable"), "{err}");
        let texts: Vec<String> = c
            .chunk_with_positions(&doc)
            .into_iter()
            .map(|c| c.content)
            .collect();
        assert_eq!(texts, ["One.", "Two.", "Three."]);
        assert_eq!(*broken.0.lock().unwrap(), 2);
    }

    /// Returns one vector too few.
    struct Short;
    #[async_trait::async_trait]
    impl Embedder for Short {
        fn name(&self) -> String {
            "short".into()
        }
        fn dimension(&self) -> usize {
            1
        }
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
            Ok(vec![vec![1.0]; texts.len() - 1])
        }
    }

    #[test]
    fn a_wrong_number_of_vectors_is_an_embed_error() {
        let c = SemanticChunker::new(Arc::new(Short));
        let doc = Document::new("d", "One. Two. Three.");
        let err = pollster::block_on(c.chunk_document(&doc)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "embedding failed: short returned 2 vectors for 3 texts"
        );
    }

    #[test]
    fn short_documents_need_no_embedding() {
        let c = SemanticChunker::new(Arc::new(Broken(Mutex::new(0))));
        assert_eq!(c.chunk("One. Two."), ["One. Two."]);
        assert!(c.chunk("  ").is_empty());
    }

    #[test]
    fn invalid_configurations_are_errors() {
        let e = Arc::new(HashingEmbedder::default());
        for p in [-1.0, 100.5, f64::NAN] {
            let err = SemanticChunker::try_new(e.clone(), p, 1, None).unwrap_err();
            assert!(err
                .to_string()
                .contains("percentile must be between 0 and 100"));
        }
        let err = SemanticChunker::try_new(e.clone(), 90.0, 1, Some(0)).unwrap_err();
        assert!(err.to_string().contains("max_chars must be at least 1"));
        let ok = SemanticChunker::try_new(e, 90.0, 2, Some(500)).unwrap();
        assert_eq!(
            (ok.percentile(), ok.buffer(), ok.max_chars()),
            (90.0, 2, Some(500))
        );
    }

    #[test]
    #[should_panic(expected = "percentile must be between 0 and 100, got 101")]
    fn with_percentile_panics_out_of_range() {
        let _ = SemanticChunker::default().with_percentile(101.0);
    }

    #[test]
    fn name_is_a_spec_string_with_the_embedder_last() {
        let c = SemanticChunker::default();
        assert_eq!(
            c.name(),
            "semantic:percentile=95,buffer=1,embedder=hashing(dim=384,ngrams=2)"
        );
        let c = c
            .with_percentile(92.5)
            .with_buffer(0)
            .with_max_chars(Some(800));
        assert_eq!(
            c.name(),
            "semantic:percentile=92.5,buffer=0,max_chars=800,embedder=hashing(dim=384,ngrams=2)"
        );
        assert_eq!(PositionAwareChunker::name(&c), Chunker::name(&c));
        assert_eq!(c.embedder().name(), "hashing(dim=384,ngrams=2)");
    }
}
