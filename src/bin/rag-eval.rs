//! The `rag-eval` command-line tool.
fn main() {}
