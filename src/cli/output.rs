//! Standard output, the one way every subcommand prints its results.
//!
//! Writing fails in two ways worth telling apart. A reader that went away (`rag-eval eval
//! --json | head -1`) is no error: the process ends quietly with exit code 0, as `head`'s
//! writer would want (a non-zero code would fail a `set -o pipefail` pipeline for a reader's
//! choice). Any other failure (a full disk, a closed descriptor) is one line naming standard
//! output, and exit code 1.
//!
//! Standard error is treated the same way: every line goes through [`note!`](crate::cli), never
//! `eprintln!`, which panics when the write fails. A failed write is remembered and the lines
//! after it are dropped; once the work is done, a broken pipe leaves the exit code as it is and
//! any other failure makes it 1 (after one line, should standard error take it after all).

use std::fmt;
use std::io::{BufWriter, Stdout, Write};
use std::sync::OnceLock;

/// A failed write to standard output. Its own type, so that only these broken pipes end a
/// command quietly, never one met elsewhere (a server that hung up).
#[derive(Debug)]
pub(super) struct WriteError(std::io::Error);

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot write to standard output: {}", self.0)
    }
}

impl std::error::Error for WriteError {}

type Result<T = ()> = std::result::Result<T, WriteError>;

/// Buffered standard output whose errors say where they happened.
pub(super) struct Output {
    inner: BufWriter<Stdout>,
}

impl Output {
    /// The process's standard output.
    pub(super) fn stdout() -> Self {
        Output {
            inner: BufWriter::new(std::io::stdout()),
        }
    }

    /// Writes `text` as it is.
    pub(super) fn text(&mut self, text: &str) -> Result {
        self.inner.write_all(text.as_bytes()).map_err(WriteError)
    }

    /// Writes `value` as one line of JSON.
    pub(super) fn json_line<T: serde::Serialize>(&mut self, value: &T) -> Result {
        serde_json::to_writer(&mut self.inner, value).map_err(|e| WriteError(e.into()))?;
        self.text("\n")
    }

    /// Writes what `write` writes.
    pub(super) fn write_with(
        &mut self,
        write: impl FnOnce(&mut BufWriter<Stdout>) -> std::io::Result<()>,
    ) -> Result {
        write(&mut self.inner).map_err(WriteError)
    }

    /// Sends what is buffered on: before writing to standard error (so the two streams keep
    /// their order on a terminal), after a result a reader may be waiting for, and at the end.
    pub(super) fn flush(&mut self) -> Result {
        self.inner.flush().map_err(WriteError)
    }
}

/// Whether `e` is a write to standard output whose reader went away.
pub(super) fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<WriteError>()
            .is_some_and(|w| w.0.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The first failed write to standard error.
static STDERR_FAILED: OnceLock<std::io::Error> = OnceLock::new();

/// Writes one line to standard error; a failure is remembered, not a panic.
pub(super) fn stderr_line(line: fmt::Arguments<'_>) {
    if STDERR_FAILED.get().is_some() {
        return;
    }
    let mut err = std::io::stderr().lock();
    if let Err(e) = writeln!(err, "{line}").and_then(|()| err.flush()) {
        let _ = STDERR_FAILED.set(e);
    }
}

/// The failed write to standard error, unless there was none or its reader went away.
pub(super) fn stderr_failure() -> Option<&'static std::io::Error> {
    STDERR_FAILED
        .get()
        .filter(|e| e.kind() != std::io::ErrorKind::BrokenPipe)
}
