//! What `#[rag_eval]` and `main!` expand to. Not a public API: names here change without notice.

use crate::chunk::RetrievedChunk;
use crate::embed::Embedder;
#[cfg(feature = "answers")]
use crate::generator::{Generator, RagAnswer};
use crate::level::{ChunkLevel, TokenLevel};
#[cfg(feature = "answers")]
use crate::llm::LlmClient;
use crate::retrieve::Retriever;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

#[cfg(feature = "answers")]
pub use super::vocabulary::conversation_bar_problem;
pub use super::vocabulary::{bar_problem, criteria_name, BarProblem, CriteriaFile};

/// A boxed future, as the expansions produce them.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// One `#[rag_eval]` case, as declared.
#[derive(Debug)]
pub struct CaseSpec {
    /// The function's name; trials are `NAME::q0001`, `NAME::summary`.
    pub name: &'static str,
    /// `CARGO_MANIFEST_DIR` of the crate declaring the case; paths are relative to it.
    pub manifest_dir: &'static str,
    /// The source file declaring the case.
    pub source: &'static str,
    /// Line of the case's function.
    pub line: u32,
    /// Dataset path.
    pub dataset: &'static str,
    /// Corpus folder.
    pub corpus: Option<&'static str>,
    /// Corpus glob.
    pub glob: Option<&'static str>,
    /// Cut-off.
    pub k: usize,
    /// Allowed drift of any figure before it counts as a change.
    pub tolerance: f64,
    /// Span scoring mode.
    pub mode: Mode,
    /// Whether each query is its own trial.
    pub per_query: bool,
    /// Whether the case's trials are ignored unless asked for.
    pub ignore: bool,
    /// `min_…` / `max_…` bars.
    pub thresholds: &'static [Bar],
    /// The levels the retriever implements, when known from its type.
    pub levels: Levels,
    /// How to obtain the retriever.
    pub build: Build,
    /// The LLM judge of a case that answers.
    pub judge: Option<JudgeSpec>,
    /// The case's criteria files (`criteria = …`), judged by its `judge`.
    pub criteria: &'static [CriteriaFile],
    /// Builds the embedder of `answer_similarity` and `answer_relevancy` (`embedder = …`);
    /// every call goes through the harness's embedding cache.
    pub embedder: Option<fn() -> Arc<dyn Embedder>>,
    /// The LangSmith experiment the case's runs and feedback go to (`langsmith_experiment`).
    pub langsmith_experiment: Option<&'static str>,
    /// The most queries retrieved, answered and judged at once (`concurrency = …`); unset, the
    /// evaluation's and the judges' defaults. Each client's requests in flight stay below its
    /// own limit too, and fewer while its server shows signs of overload.
    pub concurrency: Option<usize>,
    /// How the case's figures must agree with people's labels (`min_agreement = …`).
    pub agreement: Option<AgreementSpec>,
}

/// `min_agreement = …`, with `labels = …` and `agreement_threshold = …`: the case fails when
/// a labelled metric agrees with people's labels less than `min`, as `rag-eval align
/// --min-agreement` judges it.
#[derive(Debug, Clone, Copy)]
pub struct AgreementSpec {
    /// The labels file, relative to the crate root; `None`: the dataset's `outputs.labels`.
    pub labels: Option<&'static str>,
    /// The least agreement: Cohen's κ for binary labels, Spearman's ρ for numeric ones.
    pub min: f64,
    /// With binary labels, a figure at least this passes.
    pub threshold: f64,
}

impl CaseSpec {
    /// The folder of the case's snapshots and caches: `golden/` beside its crate's manifest.
    pub fn golden_dir(&self) -> std::path::PathBuf {
        std::path::Path::new(self.manifest_dir).join("golden")
    }
}

/// How a case's answers are judged (`judge = …`, `judge_samples = …`, `max_invalid_share = …`).
#[derive(Debug, Clone, Copy)]
pub struct JudgeSpec {
    /// Builds the judge's client; every call goes through the harness's LLM cache.
    #[cfg(feature = "answers")]
    pub client: fn() -> Arc<dyn LlmClient>,
    /// Judgings per query.
    pub samples: u32,
    /// Share of `invalid`/`error` samples above which the case fails.
    pub max_invalid_share: f64,
    /// Whether judge figures appear per query in the golden snapshot (summary only by default).
    pub per_query_snapshot: bool,
    /// Allowed drift of a judge figure before it counts as a change.
    pub tolerance: f64,
}

/// The judge client a case's `judge = f` names, whatever `LlmClient` `f` returns.
#[cfg(feature = "answers")]
pub fn judge_client<C: LlmClient + 'static>(client: C) -> Arc<dyn LlmClient> {
    Arc::new(client)
}

/// The embedder a case's `embedder = f` names, whatever `Embedder` `f` returns.
pub fn case_embedder<E: Embedder + 'static>(embedder: E) -> Arc<dyn Embedder> {
    Arc::new(embedder)
}

/// What a case's `generator` field must be: a [`Generator`]. Its own trait so that the
/// compile error of a wrong type says what a case needs.
#[cfg(feature = "answers")]
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a generator: the `generator` of a #[rag_eval] case's `Rag` implements `rag_eval::generator::Generator`",
    label = "not a `Generator`",
    note = "a function that retrieves and answers itself is a case too: `async fn(query: &str) -> RagAnswer`"
)]
pub trait CaseGenerator {
    /// The generator, shared.
    fn shared(self) -> Arc<dyn Generator>;
}

#[cfg(feature = "answers")]
impl<G: Generator + 'static> CaseGenerator for G {
    fn shared(self) -> Arc<dyn Generator> {
        Arc::new(self)
    }
}

/// Span scoring mode of a case: the library's own type, so nothing maps one to the other.
pub use crate::metrics::SpanMode as Mode;

/// A `min_<metric>` or `max_<metric>` bar on the case's mean: the library's own type, which
/// `rag-eval gate` and the reports hold runs to as well.
pub use crate::metrics::{Bar, Bound};

/// Which levels a case's retriever implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Levels {
    /// Implements `Retriever<TokenLevel>`.
    pub token: bool,
    /// Implements `Retriever<ChunkLevel>`.
    pub chunk: bool,
}

impl Levels {
    /// Not known from the type (an `impl Trait` return type): found out when built.
    pub const UNKNOWN: Levels = Levels {
        token: true,
        chunk: true,
    };
    /// Both levels (functions returning ranked chunks serve either).
    pub const BOTH: Levels = Levels {
        token: true,
        chunk: true,
    };
}

/// How a case obtains its retriever.
pub enum Build {
    /// Calls the case's function and wraps what it returns.
    Factory(fn() -> BoxFuture<Retrievers>),
    /// The case's function is the retriever.
    Function(fn(String) -> BoxFuture<Vec<RetrievedChunk>>),
    /// The case's function answers: retrieval is scored on the contexts it used.
    #[cfg(feature = "answers")]
    Answer(fn(String) -> BoxFuture<RagAnswer>),
    /// Calls the case's function for a retriever and a generator: the harness retrieves, then
    /// generates from what was retrieved.
    #[cfg(feature = "answers")]
    Rag(fn() -> BoxFuture<RagParts>),
    /// The case's function is a conversational system (`conversations = …`): the harness
    /// plays the case's conversations through it; `dataset` is the conversations file.
    #[cfg(feature = "answers")]
    Conversation(ConversationSystem),
    /// The case's function is an instrumented system (`traces = …`): the harness runs the
    /// dataset through it and scores the traces it exports, as answers.
    #[cfg(feature = "traces")]
    Traces(TracesSystem),
}

/// A traces case's system and how its traces are taken.
#[cfg(feature = "traces")]
#[derive(Debug, Clone, Copy)]
pub struct TracesSystem {
    /// Calls the case's function with a row's question and id; what it returns is dropped.
    pub call: fn(String, String) -> BoxFuture<()>,
    /// The file its traces are recorded to and replayed from (`traces = "PATH"`), relative
    /// to the crate root.
    pub file: &'static str,
    /// The attribute that carries a row's id (`join_attribute = …`); none: the question.
    pub join_attribute: Option<&'static str>,
    /// Which retriever spans give the documents (`retrievals = "last"` or `"all"`).
    pub retrievals: &'static str,
    /// How long the harness waits for the rows' traces once every call returned
    /// (`trace_timeout_ms = …`).
    pub timeout_ms: u64,
}

/// A conversation case's system: the next assistant turn from the conversation so far.
#[cfg(feature = "answers")]
#[derive(Clone, Copy)]
pub struct ConversationSystem {
    /// Calls the case's function with the turns so far.
    pub next:
        fn(Vec<crate::conversation::Turn>) -> BoxFuture<crate::conversation::play::AssistantTurn>,
    /// The most steps (assistant turns) a conversation may take (`max_steps = …`).
    pub max_steps: Option<usize>,
}

/// A case's `Rag`, its retriever seen at the levels it implements.
#[cfg(feature = "answers")]
#[derive(Clone)]
pub struct RagParts {
    /// The retriever.
    pub retrievers: Retrievers,
    /// The generator.
    pub generator: Arc<dyn Generator>,
}

impl Build {
    /// Whether the case answers: its function returns a `RagAnswer` or a `Rag`.
    pub(crate) fn answers(&self) -> bool {
        match self {
            #[cfg(feature = "answers")]
            Build::Answer(_) | Build::Rag(_) => true,
            #[cfg(feature = "traces")]
            Build::Traces(_) => true,
            #[cfg(feature = "answers")]
            Build::Conversation(_) => false,
            Build::Factory(_) | Build::Function(_) => false,
        }
    }
}

impl std::fmt::Debug for Build {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Build::Factory(_) => "Factory",
            Build::Function(_) => "Function",
            #[cfg(feature = "answers")]
            Build::Answer(_) => "Answer",
            #[cfg(feature = "answers")]
            Build::Rag(_) => "Rag",
            #[cfg(feature = "answers")]
            Build::Conversation(_) => "Conversation",
            #[cfg(feature = "traces")]
            Build::Traces(_) => "Traces",
        })
    }
}

/// A built retriever, seen at the levels it implements.
#[derive(Clone, Default)]
pub struct Retrievers {
    /// The retriever as a token-level one, if it is.
    pub token: Option<Arc<dyn Retriever<TokenLevel>>>,
    /// The retriever as a chunk-level one, if it is.
    pub chunk: Option<Arc<dyn Retriever<ChunkLevel>>>,
}

/// Holds a built retriever while the expansion asks which levels it implements.
pub struct Probe<T>(pub Arc<T>);

/// Asks a type which levels it implements, without a value.
pub struct TypeProbe<T>(PhantomData<fn() -> T>);

impl<T> TypeProbe<T> {
    /// A probe for `T`.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        TypeProbe(PhantomData)
    }
}

/// Chosen for `&Probe<T>` / `&TypeProbe<T>` when `T: Retriever<TokenLevel>`.
pub trait TokenImpl {
    /// The retriever at token level.
    fn token(&self) -> Option<Arc<dyn Retriever<TokenLevel>>> {
        None
    }
    /// Whether the type is a token-level retriever.
    fn token_level(&self) -> bool {
        true
    }
}

/// Chosen (one auto-reference later) when `T` is not a token-level retriever.
pub trait TokenFallback {
    /// Nothing.
    fn token(&self) -> Option<Arc<dyn Retriever<TokenLevel>>> {
        None
    }
    /// No.
    fn token_level(&self) -> bool {
        false
    }
}

/// Chosen for `&Probe<T>` / `&TypeProbe<T>` when `T: Retriever<ChunkLevel>`.
pub trait ChunkImpl {
    /// The retriever at chunk level.
    fn chunk(&self) -> Option<Arc<dyn Retriever<ChunkLevel>>> {
        None
    }
    /// Whether the type is a chunk-level retriever.
    fn chunk_level(&self) -> bool {
        true
    }
}

/// Chosen (one auto-reference later) when `T` is not a chunk-level retriever.
pub trait ChunkFallback {
    /// Nothing.
    fn chunk(&self) -> Option<Arc<dyn Retriever<ChunkLevel>>> {
        None
    }
    /// No.
    fn chunk_level(&self) -> bool {
        false
    }
}

impl<T: Retriever<TokenLevel> + 'static> TokenImpl for Probe<T> {
    fn token(&self) -> Option<Arc<dyn Retriever<TokenLevel>>> {
        Some(self.0.clone())
    }
}
impl<T: Retriever<TokenLevel>> TokenImpl for TypeProbe<T> {}
impl<T> TokenFallback for &Probe<T> {}
impl<T> TokenFallback for &TypeProbe<T> {}

impl<T: Retriever<ChunkLevel> + 'static> ChunkImpl for Probe<T> {
    fn chunk(&self) -> Option<Arc<dyn Retriever<ChunkLevel>>> {
        Some(self.0.clone())
    }
}
impl<T: Retriever<ChunkLevel>> ChunkImpl for TypeProbe<T> {}
impl<T> ChunkFallback for &Probe<T> {}
impl<T> ChunkFallback for &TypeProbe<T> {}

/// One golden snapshot assertion, handed to the hook that `main!` expands in the test crate
/// (insta resolves its workspace from the calling crate).
pub struct SnapshotRequest {
    /// Folder of the snapshot (`<crate>/golden`).
    pub dir: std::path::PathBuf,
    /// Snapshot name (the case's name).
    pub name: String,
    /// The test file declaring the case.
    pub input_file: std::path::PathBuf,
    /// What the snapshot records.
    pub description: String,
    /// The new contents.
    pub contents: String,
    /// Figures within this distance of the old ones count as equal.
    pub tolerance: f64,
    /// The same for LLM judges' figures.
    pub judge_tolerance: f64,
}

impl SnapshotRequest {
    /// The comparator insta uses for this snapshot.
    pub fn comparator(&self) -> Box<dyn insta::Comparator> {
        Box::new(crate::harness::golden::ToleranceComparator::new(
            self.tolerance,
            self.judge_tolerance,
        ))
    }
}

/// The snapshot hook `main!` expands in the test crate.
pub struct InstaHook {
    /// Runs `insta::assert_snapshot!` for a request, in the test crate.
    pub assert: fn(&SnapshotRequest),
}

/// Wraps the hidden module of a case that answers (`$what`: what makes it one): the module
/// itself with the `answers` feature; without it a compile error naming the feature, and
/// `$stub` (a module `main!` can still name).
#[cfg(feature = "answers")]
#[macro_export]
#[doc(hidden)]
macro_rules! __rag_eval_answering {
    ($what:literal { $($module:tt)* } else { $($stub:tt)* }) => {
        $($module)*
    };
}

/// Without the `answers` feature: see the other definition.
#[cfg(not(feature = "answers"))]
#[macro_export]
#[doc(hidden)]
macro_rules! __rag_eval_answering {
    ($what:literal { $($module:tt)* } else { $($stub:tt)* }) => {
        ::core::compile_error!(::core::concat!(
            "this case answers (", $what, "), and rag-eval is built without its `answers` feature: \
             enable it in the dev-dependency, `rag-eval = { version = \"…\", features = [\"answers\"] }`"
        ));
        $($stub)*
    };
}

/// Wraps the hidden module of a traces case: the module itself with the `traces` feature;
/// without it a compile error naming the feature, and `$stub`.
#[cfg(feature = "traces")]
#[macro_export]
#[doc(hidden)]
macro_rules! __rag_eval_tracing {
    ({ $($module:tt)* } else { $($stub:tt)* }) => {
        $($module)*
    };
}

/// Without the `traces` feature: see the other definition.
#[cfg(not(feature = "traces"))]
#[macro_export]
#[doc(hidden)]
macro_rules! __rag_eval_tracing {
    ({ $($module:tt)* } else { $($stub:tt)* }) => {
        ::core::compile_error!(
            "this case is gated by traces (`traces = …`), and rag-eval is built without its `traces` feature: \
             enable it in the dev-dependency, `rag-eval = { version = \"…\", features = [\"traces\"] }`"
        );
        $($stub)*
    };
}

/// Expands the insta hook inside the crate that calls `main!`.
#[macro_export]
#[doc(hidden)]
macro_rules! __rag_eval_insta_hook {
    () => {
        $crate::__private::InstaHook {
            assert: |request: &$crate::__private::SnapshotRequest| {
                $crate::__private::insta::with_settings!({
                    snapshot_path => &request.dir,
                    prepend_module_to_snapshot => false,
                    omit_expression => true,
                    input_file => &request.input_file,
                    description => request.description.as_str(),
                    comparator => request.comparator(),
                }, {
                    $crate::__private::insta::assert_snapshot!(
                        request.name.as_str(),
                        request.contents.as_str()
                    );
                });
            },
        }
    };
}

pub use crate::__rag_eval_insta_hook as insta_hook;

pub use crate::harness::run;

#[cfg(test)]
// The explicit borrows are the point: expansions call the probes through `&probe`.
#[allow(clippy::needless_borrow)]
mod tests {
    use super::*;
    use crate::chunker::RecursiveCharacterChunker;
    use crate::retrieve::Bm25Retriever;

    struct TokenOnly;
    #[async_trait::async_trait]
    impl Retriever<TokenLevel> for TokenOnly {
        fn name(&self) -> String {
            "token-only".into()
        }
        async fn retrieve(&self, _: &str, _: usize) -> crate::Result<Vec<RetrievedChunk>> {
            Ok(Vec::new())
        }
    }

    #[test]
    fn probes_see_the_levels_a_concrete_type_implements() {
        #[allow(unused_imports)]
        use super::{ChunkFallback as _, ChunkImpl as _, TokenFallback as _, TokenImpl as _};
        let t = TypeProbe::<TokenOnly>::new();
        assert_eq!(((&t).token_level(), (&t).chunk_level()), (true, false));
        let b = TypeProbe::<Bm25Retriever>::new();
        assert_eq!(((&b).token_level(), (&b).chunk_level()), (true, true));
        let s = TypeProbe::<String>::new();
        assert_eq!(((&s).token_level(), (&s).chunk_level()), (false, false));

        let p = Probe(Arc::new(TokenOnly));
        assert!((&p).token().is_some() && (&p).chunk().is_none());
        let p = Probe(Arc::new(Bm25Retriever::new(
            RecursiveCharacterChunker::new(10, 0),
        )));
        assert!((&p).token().is_some() && (&p).chunk().is_some());
    }
}
