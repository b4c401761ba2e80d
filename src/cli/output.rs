//! Standard output, the one way every subcommand prints its results.
//!
//! Writing fails in two ways worth telling apart. A reader that went away (`rag-eval eval
//! --json | head -1`) is no error: the process ends quietly with exit code 0, as `head`'s
//! writer would want (a non-zero code would fail a `set -o pipefail` pipeline for a reader's
//! choice). Any other failure (a full disk, a closed descriptor) is one line naming standard
//! output, and exit code 1.

use anyhow::{Context, Result};
use std::io::{BufWriter, StdoutLock, Write};

/// What the error of a failed write says it was doing; `main` finds broken pipes by kind.
const WHAT: &str = "cannot write to standard output";

/// Buffered standard output whose errors say where they happened.
pub(super) struct Output {
    inner: BufWriter<StdoutLock<'static>>,
}

impl Output {
    /// The process's standard output.
    pub(super) fn stdout() -> Self {
        Output {
            inner: BufWriter::new(std::io::stdout().lock()),
        }
    }

    /// Writes `text` as it is.
    pub(super) fn text(&mut self, text: &str) -> Result<()> {
        self.inner.write_all(text.as_bytes()).context(WHAT)
    }

    /// Writes `value` as one line of JSON.
    pub(super) fn json_line<T: serde::Serialize>(&mut self, value: &T) -> Result<()> {
        serde_json::to_writer(&mut self.inner, value)
            .map_err(std::io::Error::from)
            .context(WHAT)?;
        self.text("\n")
    }

    /// Sends what is buffered on: before writing to standard error (so the two streams keep
    /// their order on a terminal), after a result a reader may be waiting for, and at the end.
    pub(super) fn flush(&mut self) -> Result<()> {
        self.inner.flush().context(WHAT)
    }
}

/// Whether `e` is a write to a reader that went away.
pub(super) fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
