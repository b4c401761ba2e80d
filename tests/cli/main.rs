//! The `rag-eval` command's tests, through the real binary, in one test binary (cargo's
//! `tests/testsuite` pattern: one link instead of one per file). Run one module with a filter:
//! `cargo test --all-features --test cli judge_cli::`.

#[path = "../support/cli.rs"]
mod cli_support;
#[path = "../support/langsmith.rs"]
mod fake;
#[path = "../support/junit_schema.rs"]
mod junit_schema;
#[path = "../shared_data/mod.rs"]
mod shared_data;
#[path = "../support/mod.rs"]
mod support;

mod align_cli;
mod cli;
mod cli_errors;
mod compare_cli;
mod conversation_service;
mod conversation_views;
mod conversations_cli;
mod criteria_cli;
mod eval_specs;
mod generate_cli;
mod judge_cli;
mod langsmith;
mod progress;
mod rag_runs;
mod ragchecker;
mod report_answers;
mod reports;
mod runs_cli;
mod serve;
mod service;
mod traces_cli;
mod trec_eval_cli;
