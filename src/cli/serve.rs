//! `rag-eval serve`: the read-only HTTP API over the run store.

use crate::runs::StoreChoice;
use anyhow::Result;
use camino::Utf8PathBuf;
use clap::Args;
use std::io::Write as _;
use std::sync::Arc;

#[derive(Args)]
pub(super) struct ServeArgs {
    /// The port on 127.0.0.1 (0: any free port; the address is printed).
    #[arg(long, default_value_t = 8321)]
    port: u16,
    /// The store: a SQLite file, a `postgres://` URL (default: `RAG_EVAL_RUNS`, else
    /// `.rag-eval/runs.sqlite`).
    #[arg(long, value_name = "FILE|URL")]
    store: Option<String>,
    /// Serve the labelling page (`/runs/{id}/label`) too, saving a person's labels to this
    /// labels file (the format `align --labels` reads; created when missing, its labels kept
    /// when it exists). The store is never written.
    #[arg(long, value_name = "FILE")]
    labels: Option<Utf8PathBuf>,
}

pub(super) fn run(a: ServeArgs) -> Result<()> {
    let choice = match a.store.as_deref() {
        Some(s) => StoreChoice::parse(Some(s)),
        None => StoreChoice::from_env()?,
    };
    // Served, never written: a store the user may only read is served, and a path that
    // names no store is an error rather than a new, empty store.
    let store = super::runs::open_to_read(&choice)?;
    let location = store.location();
    let labels = a
        .labels
        .as_ref()
        .map(crate::serve::LabelFile::open)
        .transpose()?
        .map(Arc::new);
    let labelling = match &labels {
        Some(l) => format!("; labels to {}: /runs/latest/label", l.path()),
        None => String::new(),
    };
    super::runtime()?.block_on(crate::serve::serve(
        Arc::from(store),
        a.port,
        labels,
        |addr| {
            // The first line tells a script (and a person) where to connect.
            // A standard output that cannot take it does not stop the server.
            let mut stdout = std::io::stdout();
            let _ = writeln!(
                stdout,
                "listening on http://{addr} (runs from {location}{labelling})"
            );
            let _ = stdout.flush();
        },
    ))?;
    Ok(())
}
