//! The local record of an experiment upload: which experiment id it uses and which objects the
//! server acknowledged, so an interrupted upload continues without sending anything twice.
//!
//! JSON Lines: a header `{"experiment": NAME, "session_id": UUID, "dataset_hash": …,
//! "result_hash": …}`, then
//! one `{"acked": [ids…]}` line per acknowledged request, appended and flushed as answers
//! arrive. A last line cut short by a crash is ignored (its request is sent again, and the
//! server recognises the ids); damage anywhere else is an error.

use crate::error::{Error, Result};
use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::io::Write;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Header {
    experiment: String,
    session_id: String,
    #[serde(default)]
    dataset_hash: Option<String>,
    /// Identifies the result uploaded (figures and retrieved chunks): continuing an upload
    /// with another result would mix two runs in one experiment.
    #[serde(default)]
    result_hash: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Acked {
    acked: Vec<String>,
}

/// An open journal.
#[derive(Debug)]
pub(crate) struct Journal {
    path: Utf8PathBuf,
    header: Header,
    acked: HashSet<String>,
    file: std::fs::File,
}

impl Journal {
    /// Opens the journal at `path`, or starts one with a fresh experiment id. An existing
    /// journal must be of the same experiment and dataset.
    pub(crate) fn open(
        path: &Utf8Path,
        experiment: &str,
        dataset_hash: Option<&str>,
        result_hash: Option<&str>,
        new_session_id: impl FnOnce() -> String,
    ) -> Result<Journal> {
        let existing = match std::fs::read_to_string(path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Error::io("read", path, e)),
        };
        let (header, acked) = match existing.as_deref().filter(|t| !t.trim().is_empty()) {
            Some(text) => {
                let parsed = parse(path, text)?;
                if !text.ends_with('\n') {
                    // Drop the torn line, or the next append would continue it.
                    let keep = text.rfind('\n').map_or(0, |i| i + 1);
                    crate::fs::write_atomic(path, &text.as_bytes()[..keep])?;
                }
                parsed
            }
            None => {
                let header = Header {
                    experiment: experiment.to_owned(),
                    session_id: new_session_id(),
                    dataset_hash: dataset_hash.map(str::to_owned),
                    result_hash: result_hash.map(str::to_owned),
                };
                if let Some(parent) = path.parent().filter(|p| !p.as_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
                }
                let line = format!("{}\n", serde_json::to_string(&header).expect("serialises"));
                crate::fs::write_atomic(path, line.as_bytes())?;
                (header, HashSet::new())
            }
        };
        if header.experiment != experiment {
            return Err(Error::File { path: path.to_owned(), message: format!(
                "journal `{path}` records an upload of experiment `{}`, not `{experiment}`; give another journal or delete it",
                header.experiment
            ) });
        }
        if let (Some(was), Some(now)) = (&header.dataset_hash, dataset_hash) {
            if was != now {
                return Err(Error::File { path: path.to_owned(), message: format!(
                    "journal `{path}` records an upload of experiment `{experiment}` over another dataset (hash {was}, now {now}); name a new experiment, or delete the journal to upload it again"
                ) });
            }
        }
        if let (Some(was), Some(now)) = (&header.result_hash, result_hash) {
            if was != now {
                return Err(Error::File { path: path.to_owned(), message: format!(
                    "journal `{path}` records an upload of experiment `{experiment}` with other figures or retrieved chunks (result {was}, now {now}); name a new experiment for this run, or delete the journal to upload it under this name"
                ) });
            }
        }
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::io("open", path, e))?;
        Ok(Journal {
            path: path.to_owned(),
            header,
            acked,
            file,
        })
    }

    /// The experiment's id.
    pub(crate) fn session_id(&self) -> &str {
        &self.header.session_id
    }

    /// Whether the server acknowledged `id`.
    pub(crate) fn is_acked(&self, id: &str) -> bool {
        self.acked.contains(id)
    }

    /// Records that the server acknowledged `ids`.
    pub(crate) fn ack<'a>(&mut self, ids: impl IntoIterator<Item = &'a str>) -> Result<()> {
        let ids: Vec<String> = ids
            .into_iter()
            .filter(|id| !self.acked.contains(*id))
            .map(str::to_owned)
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        let line = format!(
            "{}\n",
            serde_json::to_string(&Acked { acked: ids.clone() }).expect("serialises")
        );
        // One write per line: a crash leaves at most the last line cut short.
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|e| Error::io("append to", self.path.as_path(), e))?;
        self.acked.extend(ids);
        Ok(())
    }
}

fn parse(path: &Utf8Path, text: &str) -> Result<(Header, HashSet<String>)> {
    let lines: Vec<&str> = text.lines().collect();
    let bad = |n: usize, m: String| Error::Parse {
        path: path.to_owned(),
        line: n,
        message: m,
    };
    let header: Header = serde_json::from_str(lines[0])
        .map_err(|e| bad(1, format!("not an upload journal header: {e}")))?;
    let mut acked = HashSet::new();
    let complete = text.ends_with('\n');
    for (i, line) in lines.iter().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Acked>(line) {
            Ok(a) => acked.extend(a.acked),
            // The line being written when the process stopped.
            Err(_) if i + 1 == lines.len() && !complete => {}
            Err(e) => return Err(bad(i + 1, e.to_string())),
        }
    }
    Ok((header, acked))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acknowledgements_survive_reopening_and_a_torn_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = Utf8PathBuf::from_path_buf(dir.path().join("j/x.jsonl")).unwrap();
        let mut j = Journal::open(&path, "exp", Some("h1"), Some("r1"), || "s-1".into()).unwrap();
        j.ack(["a", "b"]).unwrap();
        j.ack(["b", "c"]).unwrap();
        drop(j);
        // A crash in the middle of the next line.
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"acked\":[\"d\"");
        std::fs::write(&path, &text).unwrap();
        let mut j = Journal::open(&path, "exp", Some("h1"), Some("r1"), || unreachable!()).unwrap();
        assert_eq!(j.session_id(), "s-1");
        assert!(j.is_acked("a") && j.is_acked("b") && j.is_acked("c"));
        assert!(!j.is_acked("d"));
        j.ack(["d"]).unwrap();
        drop(j);
        let j = Journal::open(&path, "exp", Some("h1"), Some("r1"), || unreachable!()).unwrap();
        assert!(j.is_acked("d"));
        drop(j);

        let err =
            Journal::open(&path, "other", Some("h1"), Some("r1"), || "s-2".into()).unwrap_err();
        assert!(err.to_string().contains("not `other`"), "{err}");
        let err = Journal::open(&path, "exp", Some("h2"), Some("r1"), || "s-2".into()).unwrap_err();
        assert!(err.to_string().contains("another dataset"), "{err}");
        let err = Journal::open(&path, "exp", Some("h1"), Some("r2"), || "s-2".into()).unwrap_err();
        assert!(err.to_string().contains("other figures"), "{err}");

        std::fs::write(
            &path,
            "{\"experiment\":\"exp\",\"session_id\":\"s\"}\nnot json\n{\"acked\":[]}\n",
        )
        .unwrap();
        let err = Journal::open(&path, "exp", None, None, || "s".into()).unwrap_err();
        assert!(err.to_string().contains(":2:"), "{err}");
    }
}
