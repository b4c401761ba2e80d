//! The process's one async runtime.
//!
//! The HTTP clients, the harness, `serve` and the command line all run their async work on
//! the same multi-threaded Tokio runtime, started on first use and kept for the life of the
//! process. User code called from the harness (a retriever that expects Tokio) runs on it too.

use std::sync::OnceLock;
use tokio::runtime::{Builder, Runtime};

/// The shared runtime, started on first use; the error (the reason it cannot start) is kept
/// too, so every caller reports the same cause.
pub(crate) fn shared() -> Result<&'static Runtime, String> {
    static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            Builder::new_multi_thread()
                .enable_all()
                .thread_name("rag-eval")
                .build()
                .map_err(|e| format!("cannot start the async runtime: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}
