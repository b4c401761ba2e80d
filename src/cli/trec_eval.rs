//! `rag-eval trec_eval ARGS…` (also `trec-eval`, a link to `rag-eval` by that name): trec_eval 10.0's command line,
//! parsed as trec_eval parses it rather than by clap, so that its flags (`-q`, `-mP.5`, `-v`,
//! `-h`, `-M100`) mean what they mean to trec_eval. See [`crate::trec::trec_eval`].

use std::ffi::OsString;
use std::io::Write as _;
use std::process::ExitCode;

/// Arguments of `rag-eval trec_eval`: everything after the subcommand, given to trec_eval's
/// own parser (this struct only lists the subcommand in `rag-eval --help`).
#[derive(clap::Args)]
#[command(disable_help_flag = true)]
pub(super) struct TrecEvalArgs {
    /// trec_eval's arguments: [-q] [-m measure[.params]]… [-c] [-n] [-l N] [-M N] [-N N] [-J]
    /// [-Z file] qrels_file run_file (`-` for standard input); `-h` lists them all.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub(super) args: Vec<OsString>,
}

/// Whether the process is trec_eval: called as `trec-eval`/`trec_eval`, or with `trec_eval`
/// (or `trec-eval`) as the subcommand. Gives the position of trec_eval's first argument.
pub(super) fn invoked(args: &[OsString]) -> Option<usize> {
    let program = args.first().and_then(|a| {
        std::path::Path::new(a)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
    });
    if matches!(program.as_deref(), Some("trec-eval" | "trec_eval")) {
        return Some(1);
    }
    match args.get(1).and_then(|a| a.to_str()) {
        Some("trec_eval" | "trec-eval") => Some(2),
        _ => None,
    }
}

/// Runs trec_eval with `args` and returns its exit code (trec_eval's: 0, 1 for usage errors,
/// 2 for unreadable input, 4 for a query that cannot be scored, 7 when no query can).
pub(super) fn run(args: &[OsString]) -> ExitCode {
    // A file name that is not UTF-8 would reach the reader mangled and be reported as a
    // file that does not exist: refuse it by name, with trec_eval's usage exit code.
    let mut utf8 = Vec::with_capacity(args.len());
    for a in args {
        match a.to_str() {
            Some(a) => utf8.push(a.to_owned()),
            None => {
                let _ = writeln!(
                    std::io::stderr(),
                    "trec_eval: argument `{}` is not UTF-8",
                    a.to_string_lossy()
                );
                return ExitCode::from(1);
            }
        }
    }
    let args = utf8;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut err = Vec::new();
    let code = crate::trec::trec_eval::run(&args, &mut std::io::stdin().lock(), &mut out, &mut err);
    let flushed = out.flush();
    let _ = std::io::stderr().write_all(&err);
    match flushed {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            let _ = writeln!(
                std::io::stderr(),
                "error: cannot write to standard output: {e}"
            );
            ExitCode::FAILURE
        }
        _ => ExitCode::from(u8::try_from(code).unwrap_or(u8::MAX)),
    }
}
