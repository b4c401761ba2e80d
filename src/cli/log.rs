//! `-v`: the library's `tracing` events on stderr, one line each.
//!
//! Without `-v` nothing is installed and the events cost nothing. `-v` shows warnings and
//! information (every retried request with its reason, for one), `-vv` adds debugging detail.

use std::fmt::{self, Write as _};
use std::io::Write as _;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Installs the stderr logger for `verbosity` (the number of `-v`); 0 installs nothing.
pub(super) fn init(verbosity: u8) {
    let max = match verbosity {
        0 => return,
        1 => Level::INFO,
        _ => Level::DEBUG,
    };
    // Fails only when a logger is already installed, which then stays in charge.
    let _ = tracing::subscriber::set_global_default(StderrLogger { max });
}

/// Prints events at `max` or more severe as `LEVEL target: message key=value …`. Spans are
/// not tracked: the library reports through events only.
struct StderrLogger {
    max: Level,
}

impl Subscriber for StderrLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        // `Level` orders TRACE above ERROR: "at most `max`" is "at least as severe".
        *metadata.level() <= self.max && metadata.target().starts_with("rag_eval")
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::from_level(self.max))
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let meta = event.metadata();
        let mut line = Line::default();
        event.record(&mut line);
        let text = format!(
            "{:>5} {}: {}{}\n",
            meta.level(),
            meta.target(),
            line.message,
            line.fields
        );
        // One write per line, so lines from several threads do not interleave.
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// An event's message and its other fields as ` key=value`.
#[derive(Default)]
struct Line {
    message: String,
    fields: String,
}

impl Visit for Line {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }
}
