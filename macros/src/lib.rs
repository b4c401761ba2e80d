//! Procedural macros of rag-eval: the `#[rag_eval(...)]` case attribute and `main!`.
//!
//! Use them through the `rag-eval` crate, which re-exports them and provides everything their
//! expansions call (`rag_eval::__private`).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod args;
mod case;
mod errors;
mod main_list;
mod signature;
mod suggest;

use proc_macro::TokenStream;

/// Declares a retrieval evaluation case.
///
/// ```text
/// #[rag_eval(dataset = "golden/questions.jsonl", corpus = "corpus", k = 5, min_span_recall = 0.8)]
/// fn bm25() -> Bm25Retriever { … }
/// ```
///
/// Keys, `key = literal`, separated by commas:
///
/// - `dataset = "path"` (required): the dataset file, relative to the crate root. A file that
///   does not exist is a compile error.
/// - `corpus = "path"`: the corpus folder, relative to the crate root; it must exist.
/// - `glob = "**/*.md"`: which files of the corpus folder are documents.
/// - `k = 5`: the cut-off, an integer ≥ 1 (default 5).
/// - `tolerance = 0.01`: how far a figure may drift from its golden snapshot, in [0, 1]
///   (default 0.01).
/// - `mode = "standard"` or `mode = "chunking_evaluation"`: span scoring rules (default
///   standard); `chunking_evaluation` reproduces chunking_evaluation's figures and is also
///   accepted under its older name `chroma`.
/// - `per_query = true`: one test per query besides the summary (default true).
/// - `ignore = true`: the case's tests are ignored unless asked for with `--ignored` or
///   `--include-ignored` (default false).
/// - `min_<metric> = 0.8`, `max_<metric> = 0.3`: bars on the case's mean, in [0, 1], for any
///   metric of the library's registry (`rag_eval::metrics::REGISTRY`, also listed in the
///   metric table of the guides). The answer metrics are computed for every answer against the
///   row's `outputs.reference_answer`, with no judge (a row without one has no figure and
///   stays out of the mean). An unknown metric, a bar on an answer metric in a case that only
///   retrieves, on a judge's figure without `judge` or on a figure comparing embeddings
///   without `embedder` is a compile error at the bar, worded by the library's registry.
/// - `judge = path::to_fn`: a `fn() -> impl LlmClient` whose model judges the case's answers
///   (`faithfulness` always; the reference-based judges when a bar names them, against the
///   rows' `outputs.reference_answer`).
/// - `judge_samples = 3` (default 1), `max_invalid_share = 0.05`, `judge_per_query = true`
///   (judge figures per query in the snapshot; default false), `judge_tolerance = 0.05`.
/// - `criteria = "judges/cites_sources.md"` or `criteria = ["judges/a.md", "judges/b.md"]`:
///   criteria files (`rag_eval::judge::Criteria`), relative to the crate root, judged by the
///   case's `judge` and reported under the `name:` of their header, on which bars may be set
///   (`min_cites_sources = 0.9`). The files are read by the compiler: a missing one is a
///   compile error at its path, and an edit rebuilds the case. Needs `judge`.
/// - `embedder = path::to_fn`: a `fn() -> impl Embedder` for `answer_similarity` and, with a
///   `judge`, `answer_relevancy`, both computed when it is given; a bar on either needs it.
/// - `langsmith_experiment = "NAME"`: uploads the case's runs and feedback as a LangSmith
///   experiment (rag-eval's `langsmith` feature, `LANGSMITH_API_KEY`), in the extra test
///   `NAME::langsmith_upload`.
/// - `concurrency = 2`: the most queries retrieved, answered and judged at once (default: the
///   evaluation's 8 and the judges' 4). Each HTTP client keeps its own cap and sends fewer
///   requests while its server answers 429 or 503, times out or slows down.
/// - `min_agreement = 0.6`: the summary fails when a labelled metric agrees with people's
///   labels less than this, as `rag-eval align --min-agreement` judges it (Cohen's κ for
///   pass/fail labels, Spearman's ρ for graded ones; an undefined one fails too). The labels
///   are the dataset's `outputs.labels`, or `labels = "golden/labels.jsonl"` (a labels file
///   relative to the crate root; a missing one is a compile error). `agreement_threshold =
///   1.0`: with pass/fail labels, a figure at least this passes (default 0.5). Needs
///   rag-eval's `compare` feature (the agreement statistics); without it the summary fails
///   and says so.
/// - `conversations = "golden/chats.jsonl"` (instead of `dataset`): a conversation case. The
///   function is the system, `async fn NAME(so_far: &[Turn]) -> AssistantTurn`
///   (`rag_eval::conversation::{Turn, play::AssistantTurn}`); the harness plays each
///   conversation of the file through it (its user turns, and the recorded results of the
///   tools it calls and does not run itself) in a test named after the conversation's id. Its
///   bars are on the conversation figures (`min_tool_call_accuracy = 1.0`); `max_steps = 4`
///   caps the assistant turns of a conversation. It takes `tolerance`, `per_query` and
///   `ignore` too, and no key of a question case.
/// - `traces = "golden/traces.jsonl"` (with `dataset`): a case gated by the traces its system
///   exports (rag-eval's `traces` feature). The function is the system's entry point,
///   `async fn NAME(question: &str)` or `async fn NAME(question: &str, id: &str)`, returning
///   anything; the harness starts an OTLP/HTTP receiver on a free loopback port, points
///   `OTEL_EXPORTER_OTLP_ENDPOINT` at it before any case runs, calls the function for every
///   row, waits for each row's trace and scores what the traces say as an answers case's
///   answers. The file records the traces (`RAG_EVAL_TRACES`, else `RAG_EVAL_CACHE`: `rw`,
///   `off`, `replay`). `join_attribute = "query.id"`: the span attribute holding the row's id
///   (default: match by the question's text); `retrievals = "last"` or `"all"`;
///   `trace_timeout_ms = 10000`: how long to wait for the traces.
///
/// The function is one of:
///
/// - a factory, `fn NAME() -> T` or `async fn NAME() -> T` with `T` a retriever at token
///   level, chunk level or both (`impl Retriever<…>` included);
/// - the retriever itself, `async fn NAME(query: &str) -> Vec<RetrievedChunk>`;
/// - a function that answers, `async fn NAME(query: &str) -> RagAnswer` (the answer and the
///   contexts it used, on which retrieval is scored);
/// - a retriever plus a generator, `fn NAME() -> Rag<R, G>` or `async fn NAME() -> Rag<R, G>`
///   (`rag_eval::harness::Rag`), with `R` a retriever and `G` a `Generator`: the harness
///   retrieves, generates from what it retrieved, scores retrieval and judges the answers.
///
/// The function is kept as written; next to it comes a hidden module of the same name that
/// `main!` reads. Every problem of one attribute is reported in the same build, at its token.
#[proc_macro_attribute]
pub fn rag_eval(attr: TokenStream, item: TokenStream) -> TokenStream {
    // Paths in the attribute are relative to the crate being compiled, which cargo names here.
    let root = std::env::var_os("CARGO_MANIFEST_DIR").map(std::path::PathBuf::from);
    case::expand(attr.into(), item.into(), root.as_deref()).into()
}

/// The test binary's `main`, running the listed cases.
///
/// ```text
/// rag_eval::main!(bm25, dense::minilm, keyword_search);
/// ```
///
/// Each entry is the path of a `#[rag_eval]` function, as seen from where `main!` is; a
/// trailing comma is allowed. The list must not be empty, nor name a case twice, nor name two
/// functions of the same name from different modules (their tests would share names).
#[proc_macro]
pub fn main(input: TokenStream) -> TokenStream {
    main_list::expand(input.into()).into()
}
