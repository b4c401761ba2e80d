//! File helpers shared by everything that writes.

use crate::error::{Error, Result};
use camino::Utf8Path;
use std::io::Write;

/// Writes `bytes` to `path` atomically: a temporary file beside it, synced, then renamed.
/// A link is written through (the link stays, its target gets the bytes); a target that is
/// not a regular file is refused.
pub fn write_atomic(path: &Utf8Path, bytes: &[u8]) -> Result<()> {
    let target = crate::dataset::destination::replace_target(path)?;
    let dir = match target.parent() {
        Some(p) if !p.as_str().is_empty() => p,
        _ => Utf8Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io("write", path, e))?;
    tmp.write_all(bytes)
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(|e| Error::io("write", path, e))?;
    tmp.persist(&target)
        .map_err(|e| Error::io("write", path, e.error))?;
    Ok(())
}
