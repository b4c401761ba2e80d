//! File helpers shared by everything that reads or writes files.

use crate::error::{Error, Result};
use camino::Utf8Path;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// `text` without a leading byte order mark (editors on Windows write one; it is not part of
/// the first line).
pub(crate) fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Links followed before a path counts as a loop, as Linux's `ELOOP` limit.
const MAX_LINKS: usize = 40;

/// Writes `bytes` to `path` atomically: a temporary file beside the destination, synced, then
/// renamed over it, so a reader sees the old contents or the new, never part of either.
///
/// The destination is what `path` finally names: a symbolic link is followed (to a target
/// that need not exist yet) and stays a link to the updated file. An existing file keeps its
/// permission bits; a new one gets those `File::create` would give it (`0o666` less the
/// umask). Anything but a regular file (a directory, a FIFO, a device such as `/dev/stdout`)
/// is refused, since renaming over it would replace it rather than write to it. Errors name
/// `path` as given.
pub fn write_atomic(path: &Utf8Path, bytes: &[u8]) -> Result<()> {
    let fail = |e: io::Error| Error::io("write", path, e);
    let target = resolve_links(path.as_std_path()).map_err(fail)?;
    let existing = match std::fs::metadata(&target) {
        Ok(m) if m.is_file() => Some(m.permissions()),
        Ok(m) => {
            let through = if target == path.as_std_path() {
                String::new()
            } else {
                format!(" (the link leads to {})", target.display())
            };
            return Err(fail(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "is {}, not a regular file{through}; it is not replaced",
                    kind(&m.file_type())
                ),
            )));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(fail(e)),
    };
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".rag-eval-").suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Passed to open(2), so the umask applies as it does for File::create.
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder
        .tempfile_in(dir)
        .map_err(|e| fail(cannot_create_in(dir, e)))?;
    tmp.write_all(bytes).map_err(fail)?;
    if let Some(permissions) = existing {
        tmp.as_file().set_permissions(permissions).map_err(fail)?;
    }
    tmp.as_file().sync_all().map_err(fail)?;
    tmp.persist(&target).map_err(|e| fail(e.error))?;
    Ok(())
}

/// `tempfile`'s error, whose message ends by naming the temporary file the user never chose,
/// as a failure to create a file in `dir`.
fn cannot_create_in(dir: &Path, e: io::Error) -> io::Error {
    let text = e.to_string();
    let os = text
        .rsplit_once(" at path ")
        .map_or(text.as_str(), |(os, _)| os);
    io::Error::new(
        e.kind(),
        format!("cannot create a file in `{}`: {os}", dir.display()),
    )
}

/// `path` with every symbolic link in its last component followed; the result may not exist.
fn resolve_links(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&current) {
            Ok(m) if m.file_type().is_symlink() => {
                let next = std::fs::read_link(&current)?;
                current = match current.parent() {
                    Some(parent) if next.is_relative() => parent.join(next),
                    _ => next,
                };
            }
            Ok(_) => return Ok(current),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "more than {MAX_LINKS} symbolic links in a row (a loop?)"
    )))
}

/// What a file that is not a regular file is, for an error message.
fn kind(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use camino::Utf8PathBuf;
    use std::os::unix::fs::{symlink, FileTypeExt, PermissionsExt};

    fn utf8(p: PathBuf) -> Utf8PathBuf {
        Utf8PathBuf::from_path_buf(p).unwrap()
    }

    /// The error writing to `p` gives, as printed.
    fn error_writing(p: impl AsRef<Path>) -> String {
        write_atomic(&utf8(p.as_ref().to_path_buf()), b"x")
            .unwrap_err()
            .to_string()
    }

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn writes_a_new_file_and_replaces_an_old_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = utf8(dir.path().join("out.jsonl"));
        write_atomic(&path, b"first\n").unwrap();
        write_atomic(&path, b"second\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "second\n");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file is left behind");
    }

    #[test]
    fn a_symlink_is_kept_and_its_target_updated() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        let target = dir.path().join("data/real.jsonl");
        std::fs::write(&target, "stale\n").unwrap();
        // A relative link, resolved against the link's folder, behind a second link.
        symlink("data/real.jsonl", dir.path().join("inner")).unwrap();
        symlink(dir.path().join("inner"), dir.path().join("outer")).unwrap();
        write_atomic(&utf8(dir.path().join("outer")), b"fresh\n").unwrap();
        for link in ["inner", "outer"] {
            let m = std::fs::symlink_metadata(dir.path().join(link)).unwrap();
            assert!(m.file_type().is_symlink(), "{link} is still a link");
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "fresh\n");
        // A dangling link gets its target created.
        symlink("data/new.jsonl", dir.path().join("dangling")).unwrap();
        write_atomic(&utf8(dir.path().join("dangling")), b"x").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("data/new.jsonl")).unwrap(),
            "x"
        );
    }

    #[test]
    fn an_existing_file_keeps_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared.jsonl");
        for wanted in [0o640, 0o604, 0o755] {
            std::fs::write(&path, "old").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(wanted)).unwrap();
            write_atomic(&utf8(path.clone()), b"new").unwrap();
            assert_eq!(mode(&path), wanted);
        }
    }

    #[test]
    fn a_new_file_gets_the_mode_file_create_gives() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::File::create(&plain).unwrap();
        let ours = dir.path().join("ours");
        write_atomic(&utf8(ours.clone()), b"x").unwrap();
        assert_eq!(mode(&ours), mode(&plain), "0o666 less the umask");
    }

    #[test]
    fn what_is_not_a_regular_file_is_refused_by_the_name_given() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        let e = error_writing(&fifo);
        assert!(
            e.starts_with(&format!(
                "write `{}`: is a FIFO, not a regular file",
                fifo.display()
            )),
            "{e}"
        );
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());

        let link = dir.path().join("to-pipe");
        symlink(&fifo, &link).unwrap();
        let e = error_writing(&link);
        assert!(
            e.starts_with(&format!("write `{}`: is a FIFO", link.display())),
            "{e}"
        );
        assert!(
            e.contains(&format!("the link leads to {}", fifo.display())),
            "{e}"
        );

        let sub = dir.path().join("folder");
        std::fs::create_dir(&sub).unwrap();
        let e = error_writing(&sub);
        assert!(e.contains("is a directory, not a regular file"), "{e}");
        assert!(sub.is_dir());

        // A device is refused before anything is created beside it.
        let e = error_writing("/dev/null");
        assert!(
            e.starts_with("write `/dev/null`: is a character device, not a regular file"),
            "{e}"
        );
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
    }

    #[test]
    fn errors_name_the_path_given_not_the_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("out");
        symlink("missing/folder/out.jsonl", &link).unwrap();
        let e = error_writing(&link);
        assert!(
            e.starts_with(&format!("write `{}`: ", link.display())),
            "{e}"
        );
        assert!(!e.contains(".rag-eval-"), "{e}");
        assert!(
            e.contains("cannot create a file in `") && e.contains("missing/folder`: No such file"),
            "{e}"
        );
    }

    #[test]
    fn a_link_loop_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        symlink("b", dir.path().join("a")).unwrap();
        symlink("a", dir.path().join("b")).unwrap();
        let e = error_writing(dir.path().join("a"));
        assert!(e.contains("symbolic links in a row"), "{e}");
    }
}
