//! TREC qrels and run files, scored the way trec_eval scores them.
//!
//! This is the engine of `rag-eval score --qrels … --run …`, for retrieval output from any
//! language. Figures agree with trec_eval 9 (as packaged by pytrec_eval) to 1e-9; the
//! conventions that decide them:
//!
//! - **Qrels** lines are `qid iter docno rel` (the iteration column is ignored). A grade of
//!   1 or more is relevant; 0 is judged non-relevant; a negative grade marks a pooled but
//!   unjudged document, which is neither relevant nor counted among the judged grades.
//!   A docno judged twice for one query is an error, as in trec_eval.
//! - **Run** lines are `qid Q0 docno rank score tag`. The rank column is ignored: each query's
//!   documents are ranked by score, highest first, and equal scores are ordered by docno in
//!   *descending* byte order (trec_eval's tie rule, so `d9` ranks above `d10` on a tie). A docno
//!   listed twice for one query is an error naming both lines (trec_eval refuses such runs).
//! - **Which queries**: those in the run that have at least one qrels line, as pytrec_eval
//!   reports them. Queries judged but absent from the run, and run queries without any
//!   judgement, are left out.
//! - **Measures** ([`Measure`]): `P_k` divides by `k` however many documents were retrieved;
//!   `recall_k` and `map` divide by the number of relevant judged documents (0 when there are
//!   none); `ndcg_cut_k` gains the grade itself at rank r discounted by `log2(r + 1)`, against
//!   the ideal ordering of every judged grade; `recip_rank` is 1 / the rank of the first
//!   relevant document. The formulas are those of [`crate::metrics`] (`precision_at_k`,
//!   `recall_at_k`, `ndcg_at_k`, `reciprocal_rank`, `average_precision`), shared with the
//!   rank metrics.
//!
//! ```
//! use rag_eval::trec::{evaluate, mean, Measure, Qrels, Run};
//!
//! let qrels = Qrels::parse("q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 1\n", "qrels.txt")?;
//! let run = Run::parse("q1 Q0 d2 1 0.9 bm25\nq1 Q0 d3 2 0.8 bm25\nq1 Q0 d1 3 0.8 bm25\n", "run.txt")?;
//! // d3 and d1 tie at 0.8: d3 ranks first (descending docno)
//! let ranked: Vec<&str> = run.ranking("q1").unwrap().map(|(doc, _)| doc).collect();
//! assert_eq!(ranked, ["d2", "d3", "d1"]);
//!
//! let measures = Measure::parse("P.2", &[])?;
//! let per_query = evaluate(&qrels, &run, &measures);
//! assert_eq!(per_query["q1"]["precision@2"], 0.5);
//! assert_eq!(mean(&per_query)["precision@2"], 0.5);
//! # Ok::<(), rag_eval::Error>(())
//! ```

mod blocks;
mod eval;
pub mod groups;
mod measure;
pub mod measures;
mod parse;
pub mod prefs;
mod scores;
mod stream;
mod table;
pub mod trec_eval;
mod trec_eval_input;

pub use eval::{evaluate, evaluate_columns, mean, score, PerQuery};
pub use measure::Measure;
pub use parse::{Qrels, Run};
pub use scores::Scores;
pub use stream::{score_run_file, ScoredRun};
pub use table::RunScores;

#[cfg(test)]
mod prefs_tests;
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod trec_eval_tests;
