//! Standard output, the one way every subcommand prints its results.
//!
//! Writing fails in two ways worth telling apart. A reader that went away (`rag-eval eval
//! --json | head -1`) is no error: the process ends quietly with exit code 0, as `head`'s
//! writer would want (a non-zero code would fail a `set -o pipefail` pipeline for a reader's
//! choice). Any other failure (a full disk, a closed descriptor) is one line naming standard
//! output, and exit code 1.

use std::fmt;
use std::io::{BufWriter, Stdout, Write};

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
