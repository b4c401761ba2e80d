//! Where a run came from: the time, the git commit, and the fingerprint of the corpus (the
//! dataset's is `Dataset::content_hash`), so two runs can be told to be on the same inputs.

use crate::calendar::civil_from_days;
use crate::corpus::Corpus;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

/// The commit a run was made at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitInfo {
    /// The full hash of `HEAD`.
    pub commit: String,
    /// Whether tracked files differed from `HEAD` (untracked files do not count: the run store
    /// itself is one).
    pub dirty: bool,
}

impl GitInfo {
    /// The commit of the repository holding `dir`, or `None` when there is no `git` program,
    /// `dir` is in no repository, or the repository has no commit yet. Never an error: a run
    /// made outside a repository is still a run.
    pub fn of_dir(dir: &Path) -> Option<GitInfo> {
        let git = |args: &[&str]| {
            Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(args)
                // `git status` refreshes the index when it can; parallel CI jobs must not
                // contend for its lock over a run record.
                .env("GIT_OPTIONAL_LOCKS", "0")
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        };
        let commit = git(&["rev-parse", "--verify", "--quiet", "HEAD"])?;
        if commit.is_empty() {
            return None;
        }
        let status = git(&["status", "--porcelain", "--untracked-files=no"])?;
        Some(GitInfo {
            commit,
            dirty: !status.is_empty(),
        })
    }

    /// [`GitInfo::of_dir`] of the current directory.
    pub fn current() -> Option<GitInfo> {
        GitInfo::of_dir(Path::new("."))
    }
}

/// A corpus fingerprint: the first 16 hex digits of SHA-256 over every document's id and
/// content, in id order, each length-prefixed so that no two corpora share the byte stream.
///
/// ```
/// use rag_eval::corpus::{Corpus, Document};
/// use rag_eval::runs::corpus_fingerprint;
///
/// let a = Corpus::new([Document::new("a.md", "one"), Document::new("b.md", "two")])?;
/// let b = Corpus::new([Document::new("b.md", "two"), Document::new("a.md", "one")])?;
/// let c = Corpus::new([Document::new("a.md", "one"), Document::new("b.md", "two!")])?;
/// assert_eq!(corpus_fingerprint(&a), corpus_fingerprint(&b));
/// assert_ne!(corpus_fingerprint(&a), corpus_fingerprint(&c));
/// # Ok::<(), rag_eval::Error>(())
/// ```
pub fn corpus_fingerprint(corpus: &Corpus) -> String {
    let mut h = Sha256::new();
    for d in corpus.documents() {
        for part in [d.id().as_str(), d.content()] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
    }
    crate::digest::short_hex(h)
}

/// Now as RFC 3339 in UTC with milliseconds (`2026-11-24T01:02:03.456Z`).
pub fn now_rfc3339() -> String {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    rfc3339_from_ms(ms)
}

/// Milliseconds since the Unix epoch as RFC 3339 in UTC with milliseconds.
pub fn rfc3339_from_ms(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_by_hand() {
        assert_eq!(rfc3339_from_ms(0), "1970-01-01T00:00:00.000Z");
        // 2000-02-29 (a leap day of a century leap year) 12:34:56.789.
        assert_eq!(rfc3339_from_ms(951_827_696_789), "2000-02-29T12:34:56.789Z");
        assert_eq!(
            rfc3339_from_ms(4_102_444_799_999),
            "2099-12-31T23:59:59.999Z"
        );
        assert_eq!(now_rfc3339().len(), 24);
    }

    #[test]
    fn git_outside_a_repository_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(GitInfo::of_dir(dir.path()), None);
        assert_eq!(GitInfo::of_dir(&dir.path().join("missing")), None);
    }

    #[test]
    fn git_commit_and_dirty_flag() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            Command::new("git")
                .arg("-C")
                .arg(dir.path())
                .args(args)
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@example.com")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@example.com")
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false)
        };
        if !git(&["init", "-q"]) {
            eprintln!("skipped: no `git` program");
            return;
        }
        // A repository without commits has no commit to record.
        assert_eq!(GitInfo::of_dir(dir.path()), None);
        std::fs::write(dir.path().join("f"), "1").unwrap();
        assert!(git(&["add", "f"]) && git(&["commit", "-qm", "one"]));
        let clean = GitInfo::of_dir(dir.path()).unwrap();
        assert_eq!(clean.commit.len(), 40);
        assert!(!clean.dirty);
        std::fs::write(dir.path().join("untracked"), "x").unwrap();
        assert!(!GitInfo::of_dir(dir.path()).unwrap().dirty);
        std::fs::write(dir.path().join("f"), "2").unwrap();
        let dirty = GitInfo::of_dir(dir.path()).unwrap();
        assert_eq!(dirty.commit, clean.commit);
        assert!(dirty.dirty);
    }
}
