//! The registry of built-in metrics: one line per metric says its name, the levels it is
//! reported at, whether it is cut at `k`, what it needs and its definition, and builds it.
//!
//! Everything that lists metrics reads [`REGISTRY`]: the metrics an evaluation reports
//! ([`reported_metrics`], [`token_level_metrics`](super::token_level_metrics),
//! [`chunk_level_metrics`](super::chunk_level_metrics)), the names a harness threshold may use,
//! `rag-eval score` and `eval`, and the metric table of `docs/reference/metrics.md` (a test checks
//! it, and checks that `#[rag_eval(min_…)]` accepts every name here).

#[cfg(feature = "answers")]
use super::answer::{AnswerMetric, AnswerSimilarity, Lexical};
use super::{
    ChunkF1, ChunkIndex, ChunkPrecision, ChunkRecall, Hit, Map, Metric, Mrr, Ndcg, Precision,
    PrecisionOmega, Recall, SpanIou, SpanMode, SpanPrecision, SpanRecall, F1,
};
use crate::level::{ChunkLevel, Level, LevelKind, TokenLevel};

/// What a metric needs to be computed, besides the query's ground truth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Need {
    /// The retriever's ranked output.
    Ranking,
    /// Character positions of truth and retrieved chunks (token-level datasets).
    Spans,
    /// Every chunk the chunker produced over the corpus, not only the retrieved ones.
    ChunkerOutput,
    /// A generated answer (an answers file, a case that answers): retrieval runs never
    /// report these metrics.
    Answer,
    /// The row's reference answer; queries without one are left out of the metric (and
    /// counted).
    Reference,
    /// Embeddings of the answer and the references, from an
    /// [`Embedder`](crate::embed::Embedder) the caller supplies.
    Embedder,
    /// An LLM judge (a case's `judge`, `--judge-model`).
    Judge,
}

/// What building a metric may use: the evaluation's span mode and, when available, the
/// chunker's whole output.
#[derive(Debug, Clone, Default)]
pub struct MetricContext {
    /// How span metrics count characters.
    pub mode: SpanMode,
    /// The chunker's output over the corpus; metrics that [`Need::ChunkerOutput`] are left
    /// out without it.
    pub chunker_output: Option<std::sync::Arc<ChunkIndex>>,
}

impl MetricContext {
    /// A context in `mode` without chunker output.
    pub fn new(mode: SpanMode) -> Self {
        MetricContext {
            mode,
            chunker_output: None,
        }
    }

    /// The same context with the chunker's output.
    pub fn with_chunker_output(mut self, index: impl Into<std::sync::Arc<ChunkIndex>>) -> Self {
        self.chunker_output = Some(index.into());
        self
    }
}

type Build<L> = fn(&MetricContext) -> Option<Box<dyn Metric<L>>>;
#[cfg(feature = "answers")]
type BuildAnswer = fn() -> Box<dyn AnswerMetric>;
/// Without the `answers` feature an answer metric's entry names it and builds nothing.
#[cfg(not(feature = "answers"))]
type BuildAnswer = ();

/// One built-in metric: its entry in [`REGISTRY`].
#[derive(Clone, Copy)]
pub struct MetricInfo {
    /// The name without cut-off, as thresholds (`min_<name>`) and reports use it.
    pub name: &'static str,
    /// Whether it is reported as `name@k` (true) or over the whole ranking as `name`.
    pub at_k: bool,
    /// What it needs.
    pub needs: &'static [Need],
    /// One line for the documentation (the metric table of `docs/reference/metrics.md`).
    pub definition: &'static str,
    token: Option<Build<TokenLevel>>,
    chunk: Option<Build<ChunkLevel>>,
    #[cfg_attr(not(feature = "answers"), allow(dead_code))]
    answer: Option<BuildAnswer>,
    /// LLM judges are no `Metric<L>`: the harness and the CLI run them over the answers.
    judge: bool,
    /// For a figure of a judge that reports several (the claims judge's), that judge's name.
    pub judged_by: Option<&'static str>,
}

impl std::fmt::Debug for MetricInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricInfo")
            .field("name", &self.name)
            .field("levels", &self.levels())
            .field("at_k", &self.at_k)
            .field("needs", &self.needs)
            .finish()
    }
}

impl MetricInfo {
    /// The levels the metric is reported at, chunk first. Answer metrics read the answer,
    /// not the ground truth, so they are reported at both (when there are answers).
    pub fn levels(&self) -> Vec<LevelKind> {
        let mut v = Vec::with_capacity(2);
        if self.applies_to(LevelKind::Chunk) {
            v.push(LevelKind::Chunk);
        }
        if self.applies_to(LevelKind::Token) {
            v.push(LevelKind::Token);
        }
        v
    }

    /// Whether the metric is reported at `level` (answer metrics: when there are answers).
    pub fn applies_to(&self, level: LevelKind) -> bool {
        self.is_answer_metric()
            || match level {
                LevelKind::Chunk => self.chunk.is_some(),
                LevelKind::Token => self.token.is_some(),
            }
    }

    /// Whether an LLM judge reports it.
    pub fn is_judged(&self) -> bool {
        self.judge
    }

    /// Whether it scores answers ([`Need::Answer`]) rather than retrieval.
    pub fn is_answer_metric(&self) -> bool {
        self.needs(Need::Answer)
    }

    /// The answer metric, for entries that [`Need::Answer`].
    #[cfg(feature = "answers")]
    pub fn build_answer(&self) -> Option<Box<dyn AnswerMetric>> {
        self.answer.map(|b| b())
    }

    /// Whether it needs `need`.
    pub fn needs(&self, need: Need) -> bool {
        self.needs.contains(&need)
    }

    /// The report name at cut-off `k`: `name@k` or `name`.
    pub fn report_name(&self, k: usize) -> String {
        if self.at_k {
            super::ReportedName::at(self.name, k).to_string()
        } else {
            self.name.to_owned()
        }
    }

    /// The metric at level `L`, built for `ctx`; `None` when it is not reported at `L` or
    /// what it needs is missing from `ctx`.
    pub fn build<L: RegisteredLevel>(&self, ctx: &MetricContext) -> Option<Box<dyn Metric<L>>> {
        L::build(self, ctx)
    }
}

/// The levels the registry builds metrics for (both levels; [`Level`] is sealed).
pub trait RegisteredLevel: Level {
    /// `info`'s metric at this level.
    fn build(info: &MetricInfo, ctx: &MetricContext) -> Option<Box<dyn Metric<Self>>>;
}

impl RegisteredLevel for TokenLevel {
    fn build(info: &MetricInfo, ctx: &MetricContext) -> Option<Box<dyn Metric<Self>>> {
        info.token.and_then(|b| b(ctx))
    }
}

impl RegisteredLevel for ChunkLevel {
    fn build(info: &MetricInfo, ctx: &MetricContext) -> Option<Box<dyn Metric<Self>>> {
        info.chunk.and_then(|b| b(ctx))
    }
}

const RANK: &[Need] = &[Need::Ranking];
const REFERENCE: &[Need] = &[Need::Answer, Need::Reference];
const EMBEDDED: &[Need] = &[Need::Answer, Need::Reference, Need::Embedder];
const SPANS: &[Need] = &[Need::Ranking, Need::Spans];
const CHUNKER: &[Need] = &[Need::Spans, Need::ChunkerOutput];

fn unit<L: Level, M: Metric<L> + Default + 'static>(
    _: &MetricContext,
) -> Option<Box<dyn Metric<L>>> {
    Some(Box::new(M::default()))
}

const fn token(
    name: &'static str,
    at_k: bool,
    needs: &'static [Need],
    definition: &'static str,
    build: Build<TokenLevel>,
) -> MetricInfo {
    MetricInfo {
        name,
        at_k,
        needs,
        definition,
        token: Some(build),
        chunk: None,
        answer: None,
        judge: false,
        judged_by: None,
    }
}

const fn chunk(
    name: &'static str,
    at_k: bool,
    needs: &'static [Need],
    definition: &'static str,
    build: Build<ChunkLevel>,
) -> MetricInfo {
    MetricInfo {
        name,
        at_k,
        needs,
        definition,
        token: None,
        chunk: Some(build),
        answer: None,
        judge: false,
        judged_by: None,
    }
}

const fn both(
    name: &'static str,
    at_k: bool,
    needs: &'static [Need],
    definition: &'static str,
    token: Build<TokenLevel>,
    chunk: Build<ChunkLevel>,
) -> MetricInfo {
    MetricInfo {
        name,
        at_k,
        needs,
        definition,
        token: Some(token),
        chunk: Some(chunk),
        answer: None,
        judge: false,
        judged_by: None,
    }
}

const JUDGED: &[Need] = &[Need::Answer, Need::Judge];
const JUDGED_REFERENCE: &[Need] = &[Need::Answer, Need::Reference, Need::Judge];
const JUDGED_EMBEDDED: &[Need] = &[Need::Answer, Need::Judge, Need::Embedder];

/// An LLM judge's entry (see [`crate::judge`]): reported at both levels, for cases that answer.
const fn judge(name: &'static str, needs: &'static [Need], definition: &'static str) -> MetricInfo {
    MetricInfo {
        name,
        at_k: false,
        needs,
        definition,
        token: None,
        chunk: None,
        answer: None,
        judge: true,
        judged_by: None,
    }
}

/// A figure of the claims judge (see [`super::claims`]): one of the several it reports.
const fn claim(name: &'static str, definition: &'static str) -> MetricInfo {
    MetricInfo {
        judged_by: Some(super::claims::JUDGE),
        ..judge(name, JUDGED_REFERENCE, definition)
    }
}

const fn answer(
    name: &'static str,
    needs: &'static [Need],
    definition: &'static str,
    build: BuildAnswer,
) -> MetricInfo {
    MetricInfo {
        name,
        at_k: false,
        needs,
        definition,
        token: None,
        chunk: None,
        answer: Some(build),
        judge: false,
        judged_by: None,
    }
}

/// An answer metric's builder (nothing without the `answers` feature).
#[cfg(feature = "answers")]
macro_rules! built {
    ($build:expr) => {
        $build
    };
}
#[cfg(not(feature = "answers"))]
macro_rules! built {
    ($build:expr) => {
        ()
    };
}

/// A lexical metric by its registered name.
macro_rules! lexical {
    ($name:literal) => {
        built!(|| Box::new(Lexical::named($name).expect("a registered lexical metric")))
    };
}

/// Every built-in metric, in report order (a level reports its metrics in this order: the
/// published tables' recall, precision, PrecisionΩ, IoU, then the rank metrics).
#[rustfmt::skip]
pub static REGISTRY: &[MetricInfo] = &[
    token("span_recall", true, SPANS, "share of the truth's characters covered by the top k chunks: |R∩G| / |G|", |c| Some(Box::new(SpanRecall::new(c.mode)))),
    token("span_precision", true, SPANS, "share of the top k chunks' characters that are truth: |R∩G| / |R|", |c| Some(Box::new(SpanPrecision::new(c.mode)))),
    token("precision_omega", false, CHUNKER, "chunking_evaluation's PrecisionΩ, the best precision the chunker allows: truth characters over every chunk of its output that meets the truth, plus the truth no chunk meets", |c| Some(Box::new(PrecisionOmega::with_index(c.chunker_output.clone()?)))),
    token("span_iou", true, SPANS, "intersection over union of the top k chunks' characters and the truth's: |R∩G| / |R∪G|", |c| Some(Box::new(SpanIou::new(c.mode)))),
    chunk("chunk_recall", true, RANK, "share of the truth chunk ids among the top k: |R∩G| / |G|", unit::<ChunkLevel, ChunkRecall>),
    chunk("chunk_precision", true, RANK, "share of the top k chunk ids that are truth: |R∩G| / |R|", unit::<ChunkLevel, ChunkPrecision>),
    chunk("chunk_f1", true, RANK, "harmonic mean of chunk_recall and chunk_precision", unit::<ChunkLevel, ChunkF1>),
    both("precision", true, RANK, "relevant items among the first k, divided by k (trec_eval's P_k)", unit::<TokenLevel, Precision>, unit::<ChunkLevel, Precision>),
    both("recall", true, RANK, "share of the relevant items found among the first k (trec_eval's recall_k)", unit::<TokenLevel, Recall>, unit::<ChunkLevel, Recall>),
    both("f1", true, RANK, "harmonic mean of precision@k and recall@k", unit::<TokenLevel, F1>, unit::<ChunkLevel, F1>),
    both("hit", true, RANK, "1 when any of the first k items is relevant, else 0", unit::<TokenLevel, Hit>, unit::<ChunkLevel, Hit>),
    both("mrr", false, RANK, "1 / the rank of the first relevant item, 0 without one (trec_eval's recip_rank)", unit::<TokenLevel, Mrr>, unit::<ChunkLevel, Mrr>),
    both("ndcg", true, RANK, "normalised discounted cumulative gain of the first k items (trec_eval's ndcg_cut_k)", unit::<TokenLevel, Ndcg>, unit::<ChunkLevel, Ndcg>),
    both("map", false, RANK, "mean of the precision at the rank of each relevant item (trec_eval's map)", unit::<TokenLevel, Map>, unit::<ChunkLevel, Map>),
    answer("bleu", REFERENCE, "sacreBLEU's sentence_bleu / 100 (13a tokenizer, exp smoothing) against every reference at once", lexical!("bleu")),
    answer("chrf", REFERENCE, "sacreBLEU's sentence_chrf / 100 (character 6-grams, β = 2) against every reference at once", lexical!("chrf")),
    answer("rouge_1", REFERENCE, "ROUGE-1 F1 (rouge-score with the Porter stemmer), the best over the references", lexical!("rouge_1")),
    answer("rouge_2", REFERENCE, "ROUGE-2 F1 (rouge-score with the Porter stemmer), the best over the references", lexical!("rouge_2")),
    answer("rouge_l", REFERENCE, "ROUGE-L F1 (longest common subsequence, rouge-score with the Porter stemmer), the best over the references", lexical!("rouge_l")),
    answer("rouge_1_precision", REFERENCE, "ROUGE-1 precision of the reference with the best ROUGE-1 F1", lexical!("rouge_1_precision")),
    answer("rouge_1_recall", REFERENCE, "ROUGE-1 recall of the reference with the best ROUGE-1 F1", lexical!("rouge_1_recall")),
    answer("rouge_2_precision", REFERENCE, "ROUGE-2 precision of the reference with the best ROUGE-2 F1", lexical!("rouge_2_precision")),
    answer("rouge_2_recall", REFERENCE, "ROUGE-2 recall of the reference with the best ROUGE-2 F1", lexical!("rouge_2_recall")),
    answer("rouge_l_precision", REFERENCE, "ROUGE-L precision of the reference with the best ROUGE-L F1", lexical!("rouge_l_precision")),
    answer("rouge_l_recall", REFERENCE, "ROUGE-L recall of the reference with the best ROUGE-L F1", lexical!("rouge_l_recall")),
    answer("exact_match", REFERENCE, "1 when the SQuAD-normalised answer equals a normalised reference, else 0", lexical!("exact_match")),
    answer("token_f1", REFERENCE, "SQuAD token F1 between the normalised answer and reference, the best over the references", lexical!("token_f1")),
    answer("answer_similarity", EMBEDDED, "cosine between the answer's and a reference's embeddings (clamped at 0), the best over the references", built!(|| Box::new(AnswerSimilarity))),
    judge("faithfulness", JUDGED, "LLM judge: share of the answer's statements its contexts support"),
    judge("answer_relevancy", JUDGED_EMBEDDED, "LLM judge: mean cosine of questions generated back from the answer to the question, 0 when noncommittal"),
    judge("llm_context_precision", JUDGED_REFERENCE, "LLM judge: average precision of the contexts useful for the reference answer"),
    judge("llm_context_recall", JUDGED_REFERENCE, "LLM judge: share of the reference answer's statements the contexts hold"),
    judge("answer_match", JUDGED_REFERENCE, "LLM judge: 1 when the answer answers the question as the reference does"),
    claim("answer_claim_precision", "claims judge: share of the answer's claims the reference answer entails (RAGChecker's precision)"),
    claim("answer_claim_recall", "claims judge: share of the reference answer's claims the answer entails (RAGChecker's recall)"),
    claim("answer_claim_f1", "claims judge: harmonic mean of answer_claim_precision and answer_claim_recall (RAGChecker's f1)"),
    claim("claim_recall", "claims judge: share of the reference answer's claims some chunk entails"),
    claim("chunk_usefulness", "claims judge: share of the chunks that entail some reference claim (RAGChecker's context_precision)"),
    claim("context_utilization", "claims judge: of the reference claims some chunk entails, the share the answer entails too"),
    claim("noise_sensitivity_in_relevant", "claims judge: share of the answer's claims that are wrong and entailed by a chunk useful for the reference"),
    claim("noise_sensitivity_in_irrelevant", "claims judge: share of the answer's claims that are wrong and entailed only by chunks useful for nothing"),
    claim("hallucination", "claims judge: share of the answer's claims that are wrong and entailed by no chunk"),
    claim("self_knowledge", "claims judge: share of the answer's claims that are right and entailed by no chunk"),
    claim("claim_faithfulness", "claims judge: share of the answer's claims some chunk entails (RAGChecker's faithfulness)"),
];

/// The registry entry named `name` (without cut-off).
pub fn lookup(name: &str) -> Option<&'static MetricInfo> {
    REGISTRY.iter().find(|m| m.name == name)
}

/// The LLM judges, in report order: what `--judges` accepts. A judge that reports one figure
/// is named after it; one that reports several (`claims`) by its own name, after the others.
pub fn judge_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = REGISTRY
        .iter()
        .filter(|m| m.judge && m.judged_by.is_none())
        .map(|m| m.name)
        .collect();
    for by in REGISTRY.iter().filter_map(|m| m.judged_by) {
        if !names.contains(&by) {
            names.push(by);
        }
    }
    names
}

/// The judges `--judges` runs when it names none: every one but those that report several
/// figures (`claims`, whose checks take a call per five claims and chunk).
pub fn default_judge_names() -> Vec<&'static str> {
    REGISTRY
        .iter()
        .filter(|m| m.judge && m.judged_by.is_none())
        .map(|m| m.name)
        .collect()
}

/// Whether `name` (a metric's name, not a report name with `@k`) is an LLM judge's figure.
pub fn is_judged(name: &str) -> bool {
    lookup(name).is_some_and(|m| m.judge)
}

/// The entries reported at `level`, in report order: its retrieval metrics, then the answer
/// metrics (reported when there are answers).
pub fn at_level(level: LevelKind) -> impl Iterator<Item = &'static MetricInfo> {
    REGISTRY.iter().filter(move |m| m.applies_to(level))
}

/// The answer metrics, in report order; those that [`Need::Embedder`] only when
/// `with_embeddings`.
#[cfg(feature = "answers")]
pub fn answer_metrics(with_embeddings: bool) -> Vec<Box<dyn AnswerMetric>> {
    REGISTRY
        .iter()
        .filter(|m| with_embeddings || !m.needs(Need::Embedder))
        .filter_map(MetricInfo::build_answer)
        .collect()
}

/// Every registered retrieval metric of level `L` that `ctx` can build, in report order.
/// Answer metrics are not among them: they need answers ([`answer_metrics`]).
pub fn reported_metrics<L: RegisteredLevel>(ctx: &MetricContext) -> Vec<Box<dyn Metric<L>>> {
    REGISTRY.iter().filter_map(|m| m.build::<L>(ctx)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_agree_with_the_metrics_they_build() {
        let index = ChunkIndex::new(&[crate::span::CharSpan::new("d", 0, 4)]);
        let ctx = MetricContext::new(SpanMode::ChunkingEvaluation).with_chunker_output(index);
        let mut seen = std::collections::HashSet::new();
        for info in REGISTRY {
            assert!(seen.insert(info.name), "`{}` registered twice", info.name);
            assert!(!info.definition.is_empty() && !info.definition.contains('\n'));
            assert!(!info.levels().is_empty(), "`{}` has no level", info.name);
            #[cfg(feature = "answers")]
            match info.build_answer() {
                Some(m) => {
                    assert_eq!(m.name(), info.name);
                    assert!(info.needs(Need::Answer) && !info.at_k);
                    assert!(info.build::<TokenLevel>(&ctx).is_none());
                    assert!(info.build::<ChunkLevel>(&ctx).is_none());
                }
                None => assert!(
                    !info.needs(Need::Answer) || (info.judge && info.needs(Need::Judge)),
                    "`{}`",
                    info.name
                ),
            }
            if let Some(m) = info.build::<TokenLevel>(&ctx) {
                assert_eq!((m.name(), m.at_k()), (info.name, info.at_k));
                assert_eq!(m.needs_chunker_output(), info.needs(Need::ChunkerOutput));
                assert_eq!(m.report_name(7), info.report_name(7));
                if info.needs(Need::Spans) && !info.needs(Need::ChunkerOutput) {
                    assert_eq!(m.span_mode(), Some(SpanMode::ChunkingEvaluation));
                }
            }
            if let Some(m) = info.build::<ChunkLevel>(&ctx) {
                assert_eq!((m.name(), m.at_k()), (info.name, info.at_k));
                assert!(
                    !info.needs(Need::Spans),
                    "`{}`: chunk level has no spans",
                    info.name
                );
            }
        }
    }

    #[cfg(feature = "answers")]
    #[test]
    fn answer_metrics_are_built_apart_and_similarity_only_with_embeddings() {
        let names = |v: Vec<Box<dyn AnswerMetric>>| -> Vec<String> {
            v.iter().map(|m| m.name().to_owned()).collect()
        };
        let with = names(answer_metrics(true));
        assert_eq!(with.len(), 14);
        assert_eq!(with[..3], ["bleu", "chrf", "rouge_1"]);
        assert_eq!(with.last().map(String::as_str), Some("answer_similarity"));
        let without = names(answer_metrics(false));
        assert_eq!(without[..], with[..13]);
        for info in REGISTRY.iter().filter(|m| m.is_answer_metric()) {
            assert_eq!(
                info.levels(),
                [LevelKind::Chunk, LevelKind::Token],
                "{}",
                info.name
            );
        }
    }

    #[test]
    fn a_metric_needing_the_chunker_output_is_left_out_without_it() {
        let without = reported_metrics::<TokenLevel>(&MetricContext::default());
        assert!(without.iter().all(|m| m.name() != "precision_omega"));
        let retrieval = at_level(LevelKind::Token).filter(|m| !m.is_answer_metric());
        assert_eq!(without.len(), retrieval.count() - 1);
        let chunk: Vec<String> = reported_metrics::<ChunkLevel>(&MetricContext::default())
            .iter()
            .map(|m| m.report_name(3))
            .collect();
        assert_eq!(
            chunk,
            [
                "chunk_recall@3",
                "chunk_precision@3",
                "chunk_f1@3",
                "precision@3",
                "recall@3",
                "f1@3",
                "hit@3",
                "mrr",
                "ndcg@3",
                "map"
            ]
        );
        assert_eq!(lookup("mrr").map(|m| m.at_k), Some(false));
        assert!(lookup("blue").is_none());
    }
}
