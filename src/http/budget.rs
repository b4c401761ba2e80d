//! The bytes of answer bodies a process holds at once, over all its clients.
//!
//! Each answer is capped on its own ([`HttpConfig::max_response_bytes`](super::HttpConfig::max_response_bytes)),
//! but many read at once add up: 16 requests in flight with bodies that never end would hold
//! 16 × 64 MiB. Every piece of a body is counted here before it is kept, and given back when
//! the answer has been decoded, so what the process holds never passes the budget.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The environment variable that sets the process's budget: bytes, or a number with `KiB`,
/// `MiB` or `GiB` (`512MiB`).
pub const RESPONSE_MEMORY_ENV: &str = "RAG_EVAL_HTTP_MEMORY";

/// The process's budget when [`RESPONSE_MEMORY_ENV`] is unset: 256 MiB.
pub const DEFAULT_RESPONSE_MEMORY: usize = 256 << 20;

/// A budget of bytes of answer bodies held at once, shared by the clients given it.
pub struct ResponseBudget {
    limit: usize,
    held: AtomicUsize,
    peak: AtomicUsize,
    /// Where the limit was set, for messages (the variable, or empty).
    origin: &'static str,
}

impl fmt::Debug for ResponseBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseBudget")
            .field("limit", &self.limit)
            .field("held", &self.held.load(Ordering::Relaxed))
            .finish()
    }
}

impl ResponseBudget {
    /// A budget of `limit` bytes (at least 1).
    pub fn new(limit: usize) -> Self {
        ResponseBudget {
            limit: limit.max(1),
            held: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            origin: "",
        }
    }

    /// The process's budget: [`RESPONSE_MEMORY_ENV`], read once, else
    /// [`DEFAULT_RESPONSE_MEMORY`]. A value that is not a size is an error naming the
    /// variable, every time it is asked for.
    pub fn process() -> crate::Result<Arc<ResponseBudget>> {
        static PROCESS: OnceLock<std::result::Result<Arc<ResponseBudget>, String>> =
            OnceLock::new();
        PROCESS
            .get_or_init(|| {
                let limit = match std::env::var(RESPONSE_MEMORY_ENV) {
                    Ok(text) => parse_size(&text)?,
                    Err(std::env::VarError::NotPresent) => DEFAULT_RESPONSE_MEMORY,
                    Err(std::env::VarError::NotUnicode(_)) => {
                        return Err("is not valid Unicode".to_owned())
                    }
                };
                Ok(Arc::new(ResponseBudget {
                    origin: RESPONSE_MEMORY_ENV,
                    ..ResponseBudget::new(limit)
                }))
            })
            .clone()
            .map_err(|message| crate::Error::Env {
                var: RESPONSE_MEMORY_ENV.to_owned(),
                message,
            })
    }

    /// The limit, in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The bytes held now: 0 once every answer read has been given back.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// The most bytes held at once so far.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Counts `bytes` more in `held`, unless that would pass the limit.
    pub(super) fn take(&self, held: &mut Held, bytes: usize) -> bool {
        let taken = self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
                now.checked_add(bytes).filter(|&then| then <= self.limit)
            });
        match taken {
            Ok(before) => {
                self.peak.fetch_max(before + bytes, Ordering::Relaxed);
                held.bytes += bytes;
                true
            }
            Err(_) => false,
        }
    }

    /// What an answer that would pass the budget fails with.
    pub(super) fn exceeded(&self) -> String {
        let set = if self.origin.is_empty() {
            String::new()
        } else {
            format!("; {} sets it", self.origin)
        };
        format!(
            "the answers being read at once would hold more than the budget of {} bytes for \
             the whole process{set} (fewer requests in flight need less)",
            self.limit
        )
    }
}

/// Bytes of one answer counted in a budget, given back when dropped.
pub(super) struct Held {
    budget: Arc<ResponseBudget>,
    bytes: usize,
}

impl Held {
    pub(super) fn new(budget: Arc<ResponseBudget>) -> Self {
        Held { budget, bytes: 0 }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.held.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// `text` as a number of bytes: digits, optionally followed by `KiB`, `MiB` or `GiB`.
fn parse_size(text: &str) -> std::result::Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let shift = match unit.trim() {
        "" => 0,
        "KiB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        _ => {
            return Err(format!(
                "`{text}` is not a size: give bytes, or a number with KiB, MiB or GiB (`512MiB`)"
            ))
        }
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(1usize.checked_shl(shift)?))
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            format!("`{text}` is not a size of at least one byte that this machine can count")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_bytes_or_binary_units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size(" 512MiB "), Ok(512 << 20));
        assert_eq!(parse_size("2 GiB"), Ok(2 << 30));
        assert_eq!(parse_size("8KiB"), Ok(8 << 10));
        for bad in [
            "",
            "0",
            "-1",
            "1.5MiB",
            "10MB",
            "MiB",
            "99999999999999999999",
        ] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_budget_counts_what_is_held_and_gives_it_back() {
        let budget = Arc::new(ResponseBudget::new(10));
        let mut a = Held::new(Arc::clone(&budget));
        let mut b = Held::new(Arc::clone(&budget));
        assert!(budget.take(&mut a, 6));
        assert!(!budget.take(&mut b, 5), "6 + 5 would pass 10");
        assert!(budget.take(&mut b, 4));
        assert_eq!(budget.peak(), 10);
        drop(a);
        assert!(budget.take(&mut b, 6));
        drop(b);
        assert_eq!(budget.held.load(Ordering::Relaxed), 0);
        assert!(budget.exceeded().contains("budget of 10 bytes"));
    }
}
