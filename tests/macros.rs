//! The `#[rag_eval]` attribute and `main!`.
//!
//! `ui` compiles the files of `tests/ui/` with trybuild: each must fail with the messages of
//! its `.stderr` file. The files of `tests/ui/pass/`, which must compile and run, are modules
//! of this binary (so trybuild only checks, and builds nothing), run by `the_pass_files_run`.
//! The other tests read the case descriptions that the attribute expands to in this file.

#[path = "support/fixture_crate.rs"]
#[allow(dead_code)] // its flags only
mod fixture_crate;
#[path = "ui/pass/modules.rs"]
mod pass_modules;
#[path = "ui/pass/shapes.rs"]
mod pass_shapes;

use rag_eval::__private::{Bar, Bound, Build, CaseSpec, Levels, Mode, Retrievers};
#[cfg(feature = "answers")]
use rag_eval::conversation::play::AssistantTurn;
use rag_eval::prelude::*;
use rag_eval::rag_eval;
use std::path::{Path, PathBuf};

/// The UI files are built as binaries of a crate that trybuild writes to
/// `<target>/tests/trybuild/rag-eval/`, and that folder is the `CARGO_MANIFEST_DIR` the
/// attribute resolves dataset paths against. A copy of the bundled example data there lets the
/// UI files name `examples/data/…` just as a test of this crate does.
fn stage_example_data() -> PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the temporary folder is inside the target folder");
    let project = target.join("tests/trybuild/rag-eval");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data");
    copy_folder(&source, &project.join("examples/data"));
    project
}

fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_folder(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn ui() {
    let project = stage_example_data();
    assert!(project.join("examples/data/questions.jsonl").is_file());
    fixture_crate::set_trybuild_flags();
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
    // Cases that answer compile with the library's `answers` feature, and fail naming it without.
    #[cfg(feature = "answers")]
    cases.compile_fail("tests/ui/answers/*.rs");
    #[cfg(not(feature = "answers"))]
    cases.compile_fail("tests/ui/without_answers/*.rs");
    // Cases gated by traces compile with the library's `traces` feature.
    #[cfg(feature = "traces")]
    cases.compile_fail("tests/ui/traces/*.rs");
}

/// The files of `tests/ui/pass/`: every case shape as a user writes one, cases in modules and
/// from `macro_rules!`; they compiled with this binary, and their `main`s check the cases.
#[test]
fn the_pass_files_run() {
    pass_modules::main();
    pass_shapes::main();
}

const DATASET: &str = "examples/data/questions.jsonl";

/// A retriever at token level only.
struct SpanOnly;

#[async_trait::async_trait]
impl Retriever<TokenLevel> for SpanOnly {
    fn name(&self) -> String {
        "span-only".into()
    }
    async fn retrieve(&self, _: &str, _: usize) -> rag_eval::Result<Vec<RetrievedChunk>> {
        Ok(Vec::new())
    }
}

fn chunk(text: &str) -> RetrievedChunk {
    let chars = text.chars().count();
    RetrievedChunk::new(PositionAwareChunk::new("doc.md", 0, chars, text), 1.0)
}

const BM25_LINE: u32 = line!() + 9;
#[rag_eval(
    dataset = "examples/data/questions.jsonl",
    corpus = "examples/data/corpus",
    glob = "**/*.md",
    k = 3,
    min_span_recall = 0.5,
    max_chunk_precision = 1
)]
fn bm25() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
}

#[rag_eval(
    dataset = "examples/data/questions.jsonl",
    tolerance = 0.05,
    mode = "chroma"
)]
async fn span_only() -> SpanOnly {
    SpanOnly
}

#[rag_eval(dataset = "examples/data/questions.jsonl", per_query = false)]
fn opaque() -> impl Retriever<TokenLevel> {
    SpanOnly
}

#[rag_eval(dataset = "examples/data/questions.jsonl")]
async fn echo(query: &str) -> Vec<RetrievedChunk> {
    vec![chunk(query)]
}

mod cases {
    // `super::SpanOnly` names the type from this module, not from the case's hidden one.
    #[rag_eval::rag_eval(dataset = "examples/data/questions.jsonl")]
    fn private_case() -> super::SpanOnly {
        super::SpanOnly
    }
}

/// Answers with the number of chunks it was given.
#[cfg(feature = "answers")]
struct Counting;

#[cfg(feature = "answers")]
#[async_trait::async_trait]
impl rag_eval::generator::Generator for Counting {
    fn name(&self) -> String {
        "counting".into()
    }
    async fn generate(&self, _: &str, contexts: &[RetrievedChunk]) -> rag_eval::Result<RagAnswer> {
        Ok(RagAnswer {
            answer: format!("{} chunks", contexts.len()),
            contexts: contexts.to_vec(),
        })
    }
}

#[cfg(feature = "answers")]
#[rag_eval(dataset = "examples/data/questions.jsonl", k = 2)]
async fn span_only_counting() -> Rag<SpanOnly, Counting> {
    Rag {
        retriever: SpanOnly,
        generator: Counting,
    }
}

fn built(spec: &CaseSpec) -> Retrievers {
    match &spec.build {
        Build::Factory(factory) => pollster::block_on(factory()),
        Build::Function(_) => panic!("`{}` is a query function", spec.name),
        #[cfg(feature = "answers")]
        Build::Answer(_) => panic!("`{}` is a query function", spec.name),
        #[cfg(feature = "answers")]
        Build::Rag(_) => panic!("`{}` returns a retriever and a generator", spec.name),
        #[cfg(feature = "answers")]
        Build::Conversation(_) => panic!("`{}` is a conversational system", spec.name),
        #[cfg(feature = "traces")]
        Build::Traces(_) => panic!("`{}` is an instrumented system", spec.name),
    }
}

/// The questions and ids a traces case's system was called with.
#[cfg(feature = "traces")]
static TRACED_CALLS: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

#[cfg(feature = "traces")]
#[rag_eval(
    dataset = "examples/data/questions.jsonl",
    traces = "golden/traced.jsonl",
    join_attribute = "query.id",
    retrievals = "all",
    trace_timeout_ms = 1500,
    min_span_recall = 0.5
)]
async fn traced_service(question: &str, id: &str) -> Result<String, String> {
    TRACED_CALLS
        .lock()
        .unwrap()
        .push((question.to_owned(), id.to_owned()));
    Err("what the system returns is not read".into())
}

#[cfg(feature = "traces")]
#[rag_eval(
    dataset = "examples/data/questions.jsonl",
    traces = "golden/by_question.jsonl"
)]
async fn traced_by_question(_question: &str) {}

#[cfg(feature = "traces")]
#[test]
fn a_traces_case_records_its_file_join_rule_and_timeout_and_calls_its_system() {
    let spec = traced_service::__rag_eval_case();
    assert_eq!(
        spec.thresholds,
        [Bar::fixed("span_recall", Bound::Min, 0.5)]
    );
    let rag_eval::__private::Build::Traces(system) = spec.build else {
        panic!(
            "a traces case builds an instrumented system: {:?}",
            spec.build
        )
    };
    assert_eq!(
        (
            system.file,
            system.join_attribute,
            system.retrievals,
            system.timeout_ms
        ),
        ("golden/traced.jsonl", Some("query.id"), "all", 1500)
    );
    pollster::block_on((system.call)("Who?".into(), "q9".into()));
    assert_eq!(
        TRACED_CALLS.lock().unwrap().as_slice(),
        [("Who?".to_owned(), "q9".to_owned())]
    );
    let Build::Traces(system) = traced_by_question::__rag_eval_case().build else {
        panic!("a traces case builds an instrumented system")
    };
    assert_eq!(
        (system.join_attribute, system.retrievals, system.timeout_ms),
        (None, "last", 10_000)
    );
    pollster::block_on((system.call)("Who?".into(), "q9".into()));
}

/// Echoes the conversation's last turn, calling no tool.
#[cfg(feature = "answers")]
#[rag_eval(
    conversations = "tests/fixtures/conversation/conversations.jsonl",
    max_steps = 3,
    min_tool_call_accuracy = 0.5,
    per_query = false
)]
async fn echo_agent(so_far: &[rag_eval::conversation::Turn]) -> AssistantTurn {
    AssistantTurn::answer(format!("{} turns so far", so_far.len()))
}

#[cfg(feature = "answers")]
#[test]
fn a_conversation_case_records_its_file_cap_and_bars_and_calls_its_system() {
    let spec = echo_agent::__rag_eval_case();
    assert_eq!(spec.name, "echo_agent");
    assert_eq!(
        spec.dataset,
        "tests/fixtures/conversation/conversations.jsonl"
    );
    assert!(!spec.per_query);
    assert_eq!(
        spec.thresholds,
        [Bar::fixed("tool_call_accuracy", Bound::Min, 0.5)]
    );
    let Build::Conversation(system) = spec.build else {
        panic!(
            "a conversation case builds a conversational system: {:?}",
            spec.build
        )
    };
    assert_eq!(system.max_steps, Some(3));
    let so_far = vec![rag_eval::conversation::Turn::new(
        rag_eval::conversation::Role::User,
        "hello",
    )];
    let turn = pollster::block_on((system.next)(so_far));
    assert_eq!(turn, AssistantTurn::answer("1 turns so far"));
}

#[test]
fn the_attribute_records_every_key() {
    let spec = bm25::__rag_eval_case();
    assert_eq!(spec.name, "bm25");
    assert_eq!(spec.manifest_dir, env!("CARGO_MANIFEST_DIR"));
    assert_eq!(spec.source, file!());
    assert_eq!(spec.line, BM25_LINE);
    assert_eq!(spec.dataset, DATASET);
    assert_eq!(spec.corpus, Some("examples/data/corpus"));
    assert_eq!(spec.glob, Some("**/*.md"));
    assert_eq!((spec.k, spec.tolerance), (3, 0.01));
    assert_eq!((spec.mode, spec.per_query), (Mode::Standard, true));
    assert_eq!(
        spec.thresholds,
        [
            Bar::fixed("span_recall", Bound::Min, 0.5),
            Bar::fixed("chunk_precision", Bound::Max, 1.0),
        ]
    );

    let spec = span_only::__rag_eval_case();
    assert_eq!((spec.corpus, spec.glob), (None, None));
    assert_eq!((spec.k, spec.tolerance), (5, 0.05));
    assert_eq!((spec.mode, spec.per_query), (Mode::Chroma, true));
    assert!(spec.thresholds.is_empty());
    assert!(!opaque::__rag_eval_case().per_query);
}

#[test]
fn factories_report_their_levels_from_the_type_and_build_both_views() {
    let spec = bm25::__rag_eval_case();
    assert_eq!(
        spec.levels,
        Levels {
            token: true,
            chunk: true
        }
    );
    let retrievers = built(&spec);
    assert!(retrievers.token.is_some() && retrievers.chunk.is_some());
    assert_eq!(
        retrievers.token.unwrap().name(),
        Retriever::<TokenLevel>::name(&bm25())
    );

    let spec = span_only::__rag_eval_case();
    assert_eq!(
        spec.levels,
        Levels {
            token: true,
            chunk: false
        }
    );
    let retrievers = built(&spec);
    assert_eq!(retrievers.token.unwrap().name(), "span-only");
    assert!(retrievers.chunk.is_none());

    let spec = cases::private_case::__rag_eval_case();
    assert_eq!(spec.name, "private_case");
    assert_eq!(spec.levels, span_only::__rag_eval_case().levels);
}

#[test]
fn impl_trait_levels_are_found_out_when_built() {
    let spec = opaque::__rag_eval_case();
    assert_eq!(spec.levels, Levels::UNKNOWN);
    let retrievers = built(&spec);
    assert!(retrievers.token.is_some() && retrievers.chunk.is_none());
}

#[cfg(feature = "answers")]
#[test]
fn a_rag_case_hands_over_its_retriever_at_its_levels_and_its_generator() {
    let spec = span_only_counting::__rag_eval_case();
    assert_eq!(spec.levels, Levels::UNKNOWN);
    let Build::Rag(make) = spec.build else {
        panic!("`span_only_counting` returns a `Rag`");
    };
    let parts = pollster::block_on(make());
    assert!(parts.retrievers.token.is_some() && parts.retrievers.chunk.is_none());
    assert_eq!(parts.generator.name(), "counting");
    let answer = pollster::block_on(parts.generator.generate("q", &[chunk("a"), chunk("b")]));
    assert_eq!(answer.unwrap().answer, "2 chunks");
}

#[test]
fn query_functions_are_the_retriever() {
    let spec = echo::__rag_eval_case();
    assert_eq!(spec.levels, Levels::BOTH);
    let Build::Function(retrieve) = spec.build else {
        panic!("`echo` takes the query");
    };
    let chunks = pollster::block_on(retrieve("which kernel?".to_owned()));
    assert_eq!(chunks, [chunk("which kernel?")]);
}
