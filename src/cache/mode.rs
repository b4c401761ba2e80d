//! Whether the cache is read, written, or both: [`CacheMode`] and `RAG_EVAL_CACHE`.

use crate::error::{Error, Result};
use std::ffi::OsString;
use std::fmt;
use std::str::FromStr;

/// Environment variable holding the [`CacheMode`]: `rw`, `off` or `replay`.
pub const MODE_ENV: &str = "RAG_EVAL_CACHE";
/// Whether and how a [`Cache`](super::Cache) is used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CacheMode {
    /// Read hits, record misses (`rw`).
    #[default]
    ReadWrite,
    /// No cache at all (`off`): nothing is read or written.
    Off,
    /// Read only, and a miss is an error (`replay`).
    Replay,
}

impl CacheMode {
    /// The mode named by `RAG_EVAL_CACHE`, [`CacheMode::ReadWrite`] when it is unset or empty.
    pub fn from_env() -> Result<Self> {
        Self::from_var(std::env::var_os(MODE_ENV))
    }

    pub(super) fn from_var(value: Option<OsString>) -> Result<Self> {
        match value {
            None => Ok(CacheMode::default()),
            Some(v) => match v.to_str() {
                Some(s) => s
                    .parse()
                    .map_err(|e: Error| Error::Config(format!("{MODE_ENV}: {e}"))),
                None => Err(Error::Config(format!(
                    "{MODE_ENV} is not valid UTF-8: {v:?}"
                ))),
            },
        }
    }

    /// The name `RAG_EVAL_CACHE` uses for this mode.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheMode::ReadWrite => "rw",
            CacheMode::Off => "off",
            CacheMode::Replay => "replay",
        }
    }
}

impl FromStr for CacheMode {
    type Err = Error;

    /// `rw`, `off` or `replay` (any case, surrounding blanks ignored); empty means `rw`.
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "rw" => Ok(CacheMode::ReadWrite),
            "off" => Ok(CacheMode::Off),
            "replay" => Ok(CacheMode::Replay),
            other => Err(Error::Config(format!(
                "unknown cache mode `{other}` (expected `rw`, `off` or `replay`)"
            ))),
        }
    }
}

impl fmt::Display for CacheMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
