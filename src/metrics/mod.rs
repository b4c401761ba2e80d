//! Retrieval metrics: the numbers rag-eval reports.
//!
//! Definitions follow `DESIGN.md` §6 exactly. Every metric is a [`Metric<L>`] for the level(s)
//! it makes sense at, reported as `name@k` for the cut-off it was computed at, or as `name` for
//! measures over the whole ranking (`mrr`, `map`).
//!
//! # How to add a built-in metric
//!
//! 1. Write the metric in its family's file (or a new file declared below): a type
//!    implementing [`Metric<L>`] for each level it makes sense at, with a hand-worked doctest.
//! 2. Add its line to [`REGISTRY`] in `src/metrics/registry.rs`, at the place in report order
//!    it should appear:
//!
//!    ```text
//!    both("hit", true, RANK, "1 when any of the first k items is relevant, else 0", unit::<TokenLevel, Hit>, unit::<ChunkLevel, Hit>),
//!    ```
//!
//!    (`token(…)` or `chunk(…)` for one level; name, whether it is `@k`, what it [`Need`]s,
//!    the definition line, and how to build it from a [`MetricContext`].)
//!
//! Evaluations, `rag-eval eval` and `score`, and the harness (which thresholds are allowed)
//! read the registry, so nothing else lists the metric. Two copies remain, each checked by
//! `tests/lib/vocabulary.rs`: the name in `METRICS` of `macros/src/args.rs` (the attribute crate
//! cannot depend on this one) and a row of the metric table of `docs/reference/metrics.md`, whose
//! definition must be the registry's line.
//!
//! # Metrics of your own
//!
//! Users add their own metrics by implementing [`Metric`]:
//!
//! ```
//! use rag_eval::level::ChunkLevel;
//! use rag_eval::metrics::{Metric, MetricInput};
//!
//! /// 1 when the first retrieved chunk is relevant.
//! struct TopOneCorrect;
//! impl Metric<ChunkLevel> for TopOneCorrect {
//!     fn name(&self) -> &str { "top1" }
//!     fn at_k(&self) -> bool { false }
//!     fn compute(&self, input: &MetricInput<'_, ChunkLevel>) -> f64 {
//!         let hit = input.retrieved.first().is_some_and(|id| input.truth.contains(id));
//!         if hit { 1.0 } else { 0.0 }
//!     }
//! }
//! ```

#[cfg(feature = "answers")]
pub mod answer;
mod bar;
mod chunking_evaluation;
pub mod claims;
mod detail;
mod judgement;
mod mode;
mod name;
mod rank;
pub mod registry;
mod result;
mod scorecard;
mod set;
mod similarity;
mod span;
pub mod tool_calls;
mod transcript;

// Re-exports of the built-in metrics go here, one line each.
pub use bar::{Bar, Bound};
pub use chunking_evaluation::{
    chunking_evaluation_scores, precision_omega, ChunkIndex, ChunkingEvaluationScores,
    PrecisionOmega,
};
pub use detail::{Passage, Truth};
pub use judgement::{
    add_tokens, failure_kind, Attribution, ClaimCheck, ContextVerdict, GeneratedQuestion,
    JudgeDetails, JudgeSample, JudgeStatus, JudgeUsage, QueryJudgement, Spread, Statement, Support,
    MAX_TOKENS,
};
pub use mode::SpanMode;
pub use name::ReportedName;
pub use rank::{
    average_precision, dcg_at_k, f1_at_k, hit_at_k, ideal_grades, is_relevant, ndcg_at_k,
    precision_at_k, recall_at_k, reciprocal_rank, Grade, Hit, Map, Mrr, Ndcg, Precision, Recall,
    F1, RELEVANCE_LEVEL,
};
#[cfg(feature = "answers")]
pub use registry::answer_metrics;
pub use registry::{reported_metrics, MetricContext, MetricInfo, Need, REGISTRY};
pub use result::{DifficultyScores, Figures, QueryResult, ResultLevel, RunConfig, RunResult};
pub use scorecard::{scorecard, QueryScores, Scorecard, Scored};
pub use set::{ChunkF1, ChunkPrecision, ChunkRecall};
pub use similarity::{
    f1_at_k_similarity, precision_at_k_similarity, recall_at_k_similarity, HybridLogRank,
    DEFAULT_THRESHOLD,
};
pub use span::{SpanIou, SpanPrecision, SpanRecall};
pub use transcript::{Role, TurnResult};

use crate::level::Level;
use crate::span::CharSpan;

/// What a metric sees for one query.
#[derive(Debug)]
#[non_exhaustive]
pub struct MetricInput<'a, L: Level> {
    /// The retriever's ranked output, as returned (not yet cut at `k`).
    pub retrieved: &'a [L::Item],
    /// The ground truth.
    pub truth: &'a L::Truth,
    /// The cut-off.
    pub k: usize,
    /// Every chunk the chunker produced (token level; needed by PrecisionΩ only).
    pub chunker_output: Option<&'a [CharSpan]>,
}

impl<'a, L: Level> MetricInput<'a, L> {
    /// An input without chunker output.
    pub fn new(retrieved: &'a [L::Item], truth: &'a L::Truth, k: usize) -> Self {
        MetricInput {
            retrieved,
            truth,
            k,
            chunker_output: None,
        }
    }

    /// The same input with the chunker's whole output attached.
    pub fn with_chunker_output(mut self, chunks: &'a [CharSpan]) -> Self {
        self.chunker_output = Some(chunks);
        self
    }

    /// The retrieved items cut at `k`.
    pub fn top_k(&self) -> &'a [L::Item] {
        &self.retrieved[..self.k.min(self.retrieved.len())]
    }
}

/// A per-query retrieval metric at level `L`.
pub trait Metric<L: Level>: Send + Sync {
    /// The metric's name without cut-off, e.g. `span_recall`.
    fn name(&self) -> &str;
    /// Whether the metric depends on the cut-off and is reported as `name@k`.
    fn at_k(&self) -> bool {
        true
    }
    /// Whether [`MetricInput::chunker_output`] must be present.
    fn needs_chunker_output(&self) -> bool {
        false
    }
    /// The span mode the metric counts characters in, for metrics that have one; an
    /// evaluation refuses metrics whose mode differs from its own.
    fn span_mode(&self) -> Option<SpanMode> {
        None
    }
    /// The value for one query, in `[0, 1]` for every built-in metric.
    fn compute(&self, input: &MetricInput<'_, L>) -> f64;
    /// The name a report uses: `name@k` or `name`.
    fn report_name(&self, k: usize) -> String {
        if self.at_k() {
            ReportedName::at(self.name(), k).to_string()
        } else {
            self.name().to_owned()
        }
    }
}

/// Mean and population standard deviation (0 and 0 for no values), as the published
/// chunking_evaluation tables report them.
pub fn mean_std(values: &[f64]) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// The metrics rag-eval reports for a token-level run, in report order ([`REGISTRY`]'s):
/// span recall, precision in `mode`, PrecisionΩ when the chunker's output is given, span IoU,
/// then the rank metrics (the published tables' order: recall, precision, PrecisionΩ, IoU).
pub fn token_level_metrics(
    mode: SpanMode,
    chunker_output: Option<ChunkIndex>,
) -> Vec<Box<dyn Metric<crate::level::TokenLevel>>> {
    let mut ctx = MetricContext::new(mode);
    ctx.chunker_output = chunker_output.map(std::sync::Arc::new);
    reported_metrics(&ctx)
}

/// The metrics rag-eval reports for a chunk-level run, in report order: chunk recall,
/// precision and F1, then the rank metrics.
pub fn chunk_level_metrics() -> Vec<Box<dyn Metric<crate::level::ChunkLevel>>> {
    reported_metrics(&MetricContext::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_std_is_population() {
        assert_eq!(mean_std(&[]), (0.0, 0.0));
        let (m, s) = mean_std(&[1.0, 0.0, 1.0, 0.0]);
        assert_eq!((m, s), (0.5, 0.5));
    }
}
