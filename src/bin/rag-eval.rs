//! The `rag-eval` command-line tool; see `rag-eval --help`.

fn main() -> std::process::ExitCode {
    rag_eval::cli::main()
}
