//! Where a dataset may be written: never over what it is made from.
//!
//! A converted or rewritten dataset written over its own input, or into the corpus it
//! points into, destroys the data it was made from; a path such as `/dev/stdout` is not a
//! file to replace at all. [`check_output`] refuses these before anything is written, comparing
//! files by identity (device and inode on Unix), so another name or a link to the same file is
//! caught too.

use crate::error::{Error, Result};
use camino::Utf8Path;
use std::path::PathBuf;

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
            return Err(Error::File {
 path: output.to_owned(),
 message: format!(
                "output `{output}` is not a regular file; the output is written to a file of its own"
            ),
 });
        }
        for input in inputs {
            if same_file(output, input) {
                return Err(Error::File {
                    path: output.to_owned(),
                    message: format!(
                    "output `{output}` is the input `{input}`; writing it would destroy the input"
                ),
                });
            }
        }
    }
    if let (Some(root), Some(resolved)) = (corpus_root, resolve(output)) {
        if let Ok(root_resolved) = std::fs::canonicalize(root) {
            if resolved.starts_with(&root_resolved) {
                return Err(Error::File {
                    path: output.to_owned(),
                    message: format!(
                    "output `{output}` lies inside the corpus `{root}`; write it outside the corpus"
                ),
                });
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

#[cfg(test)]
mod tests {
    use super::*;
    use camino::Utf8PathBuf;

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
    fn an_output_that_is_not_a_regular_file_is_refused() {
        let e = check_output(Utf8Path::new("/dev/null"), &[], None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a regular file"), "{e}");
    }
}
