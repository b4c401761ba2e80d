//! Where a dataset may be written: never over what it is made from.
//!
//! A converted or rewritten dataset written over its own input, or into the corpus it
//! points into, destroys the data it was made from; a path such as `/dev/stdout` is not a
//! file to replace at all. [`check_output`] refuses these before anything is written, comparing
//! files by identity (device and inode on Unix), so another name or a link to the same file is
//! caught too.

use crate::error::{Error, Result};
use camino::{Utf8Path, Utf8PathBuf};
use std::path::{Path, PathBuf};

/// Checks that writing a dataset to `output` destroys nothing it was made from: `output` must
/// not be one of `inputs` (under any name or link), must not lie inside the folder
/// `corpus_root`, and, if it exists, must be a regular file (or a link to one).
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let root = camino::Utf8Path::from_path(dir.path()).unwrap();
/// use rag_eval::dataset::destination::check_output;
/// std::fs::create_dir(root.join("docs"))?;
/// std::fs::write(root.join("questions.csv"), "question,references,corpus_id\n")?;
/// let input = root.join("questions.csv");
/// assert!(check_output(&root.join("q.jsonl"), &[&input], Some(&root.join("docs"))).is_ok());
/// assert!(check_output(&input, &[&input], None).is_err());
/// assert!(check_output(&root.join("docs/q.jsonl"), &[], Some(&root.join("docs"))).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn check_output(
    output: &Utf8Path,
    inputs: &[&Utf8Path],
    corpus_root: Option<&Utf8Path>,
) -> Result<()> {
    let existing = std::fs::metadata(output).ok();
    if let Some(m) = &existing {
        if !m.is_file() {
            return Err(Error::Config(format!(
                "output `{output}` is not a regular file; a dataset is written to a file of its own"
            )));
        }
        for input in inputs {
            if same_file(output, input) {
                return Err(Error::Config(format!(
                    "output `{output}` is the input `{input}`; writing it would destroy the input"
                )));
            }
        }
    }
    if let (Some(root), Some(resolved)) = (corpus_root, resolve(output)) {
        if let Ok(root_resolved) = std::fs::canonicalize(root) {
            if resolved.starts_with(&root_resolved) {
                return Err(Error::Config(format!(
                    "output `{output}` lies inside the corpus `{root}`; write the dataset outside it"
                )));
            }
        }
    }
    Ok(())
}

/// Whether `a` and `b` name the same existing file.
fn same_file(a: &Utf8Path, b: &Utf8Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
            (Ok(x), Ok(y)) => x == y,
            _ => false,
        }
    }
}

/// The absolute path, links resolved, that writing `path` would create or replace: the path
/// itself when it exists, else its folder's resolved path with its name. `None` when the
/// folder does not exist either (the write fails on its own then).
fn resolve(path: &Utf8Path) -> Option<PathBuf> {
    if let Ok(p) = std::fs::canonicalize(path) {
        return Some(p);
    }
    let name = path.file_name()?;
    let parent = match path.parent() {
        Some(p) if !p.as_str().is_empty() => p,
        _ => Utf8Path::new("."),
    };
    std::fs::canonicalize(parent).ok().map(|p| p.join(name))
}

/// Where [`write_atomic`](crate::fs::write_atomic) puts the bytes for `path`: the file a link
/// names, so that the link stays and its target gets the new data, else `path`. Fails on a
/// target that exists and is not a regular file (a device, a pipe, a folder): renaming a file
/// over it would replace something that was never a dataset (`/dev/stdout` as root).
pub(crate) fn replace_target(path: &Utf8Path) -> Result<Utf8PathBuf> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let target = if is_link {
        let resolved: PathBuf =
            resolve_link(path.as_std_path()).map_err(|e| Error::io("resolve the link", path, e))?;
        Utf8PathBuf::from_path_buf(resolved)
            .map_err(|p| Error::NonUtf8Path(p.display().to_string()))?
    } else {
        path.to_owned()
    };
    match std::fs::metadata(&target) {
        Ok(m) if !m.is_file() => Err(Error::Config(format!(
            "`{path}` is not a regular file; refusing to replace it"
        ))),
        _ => Ok(target),
    }
}

/// The end of a chain of links: canonical when it exists, else the last link's target (a
/// dangling link is written through, creating its target).
fn resolve_link(path: &Path) -> std::io::Result<PathBuf> {
    if let Ok(p) = std::fs::canonicalize(path) {
        return Ok(p);
    }
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::read_link(&current) {
            Ok(next) => {
                current = match current.parent() {
                    Some(dir) if next.is_relative() => dir.join(next),
                    _ => next,
                }
            }
            Err(_) => return Ok(current),
        }
    }
    Err(std::io::Error::other("too many levels of links"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> (tempfile::TempDir, Utf8PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = Utf8PathBuf::from_path_buf(d.path().canonicalize().unwrap()).unwrap();
        (d, p)
    }

    #[test]
    fn an_input_is_refused_under_any_name() {
        let (_d, root) = dir();
        let input = root.join("q.csv");
        std::fs::write(&input, "x").unwrap();
        let e = check_output(&input, &[&input], None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("is the input"), "{e}");
        // Another spelling of the same path.
        let dotted = root.join(".").join("q.csv");
        assert!(check_output(&dotted, &[&input], None).is_err());
        #[cfg(unix)]
        {
            let link = root.join("link.jsonl");
            std::os::unix::fs::symlink(&input, &link).unwrap();
            assert!(check_output(&link, &[&input], None).is_err());
            let hard = root.join("hard.jsonl");
            std::fs::hard_link(&input, &hard).unwrap();
            assert!(check_output(&hard, &[&input], None).is_err());
        }
        // A different file, and one that does not exist yet, are fine.
        std::fs::write(root.join("other.jsonl"), "y").unwrap();
        assert!(check_output(&root.join("other.jsonl"), &[&input], None).is_ok());
        assert!(check_output(&root.join("new.jsonl"), &[&input], None).is_ok());
    }

    #[test]
    fn the_corpus_is_off_limits_also_through_links() {
        let (_d, root) = dir();
        let corpus = root.join("docs");
        std::fs::create_dir_all(corpus.join("sub")).unwrap();
        std::fs::write(corpus.join("a.md"), "doc").unwrap();
        for inside in [corpus.join("a.md"), corpus.join("sub/new.jsonl")] {
            let e = check_output(&inside, &[], Some(&corpus))
                .unwrap_err()
                .to_string();
            assert!(e.contains("lies inside the corpus"), "{e}");
        }
        #[cfg(unix)]
        {
            let alias = root.join("alias");
            std::os::unix::fs::symlink(&corpus, &alias).unwrap();
            assert!(check_output(&alias.join("q.jsonl"), &[], Some(&corpus)).is_err());
        }
        assert!(check_output(&root.join("docs.jsonl"), &[], Some(&corpus)).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn only_regular_files_are_replaced() {
        let e = check_output(Utf8Path::new("/dev/null"), &[], None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a regular file"), "{e}");
        let e = replace_target(Utf8Path::new("/dev/null"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("refusing to replace it"), "{e}");
        let (_d, root) = dir();
        assert!(replace_target(&root).is_err(), "a folder");
        let file = root.join("f.jsonl");
        assert_eq!(replace_target(&file).unwrap(), file, "not there yet");
        std::fs::write(&file, "x").unwrap();
        let link = root.join("l.jsonl");
        std::os::unix::fs::symlink("f.jsonl", &link).unwrap();
        assert_eq!(replace_target(&link).unwrap(), file, "written through");
        let dangling = root.join("d.jsonl");
        std::os::unix::fs::symlink("missing.jsonl", &dangling).unwrap();
        assert_eq!(
            replace_target(&dangling).unwrap(),
            root.join("missing.jsonl")
        );
    }

    #[cfg(unix)]
    #[test]
    fn atomic_writes_keep_links_and_leave_devices_alone() {
        let (_d, root) = dir();
        let file = root.join("data.jsonl");
        std::fs::write(&file, "old\n").unwrap();
        let link = root.join("link.jsonl");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        crate::fs::write_atomic(&link, b"new\n").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new\n");
        let e = crate::fs::write_atomic(Utf8Path::new("/dev/null"), b"x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a regular file"), "{e}");
        assert!(!std::fs::metadata("/dev/null").unwrap().is_file());
    }
}
