//! Documents and corpora, with character offsets that slice in O(1).
//!
//! Offsets everywhere in rag-eval are Unicode scalar values (chars), end-exclusive, as Python
//! `str` indices are. A [`Document`] keeps a char→byte index so that slicing by character
//! offsets never scans the text.

pub use crate::doc_id::DocId;

use crate::error::{Error, Result};
use camino::{Utf8Path, Utf8PathBuf};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// Free-form metadata attached to documents, chunks and dataset rows.
pub type Metadata = BTreeMap<String, serde_json::Value>;

/// A source document: id, text and metadata, with a char↔byte offset index.
#[derive(Clone)]
pub struct Document {
    id: DocId,
    content: String,
    /// Byte offset of every char boundary (`char_len + 1` entries), or `None` when the text is
    /// ASCII and char offsets equal byte offsets.
    boundaries: Option<Arc<[u32]>>,
    /// Free-form metadata (author, source, …).
    pub metadata: Metadata,
}

impl fmt::Debug for Document {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Document")
            .field("id", &self.id)
            .field("chars", &self.char_len())
            .field("bytes", &self.content.len())
            .finish()
    }
}

impl Document {
    /// A document from an id and its text.
    ///
    /// # Panics
    /// Panics if the text is 4 GiB or larger (offsets are stored as `u32`).
    pub fn new(id: impl Into<DocId>, content: impl Into<String>) -> Self {
        let content = content.into();
        assert!(
            u32::try_from(content.len()).is_ok(),
            "documents of 4 GiB or more are not supported"
        );
        let boundaries = if content.is_ascii() {
            None
        } else {
            let mut b: Vec<u32> = content.char_indices().map(|(i, _)| i as u32).collect();
            b.push(content.len() as u32);
            Some(Arc::from(b))
        };
        Document {
            id: id.into(),
            content,
            boundaries,
            metadata: Metadata::new(),
        }
    }

    /// The document's id.
    pub fn id(&self) -> &DocId {
        &self.id
    }

    /// The full text.
    pub fn content(&self) -> &str {
        &self.content
    }

    /// Length in characters (Unicode scalar values).
    pub fn char_len(&self) -> usize {
        match &self.boundaries {
            None => self.content.len(),
            Some(b) => b.len() - 1,
        }
    }

    /// Byte offset of a char offset; `None` past the end.
    pub fn char_to_byte(&self, char_offset: usize) -> Option<usize> {
        match &self.boundaries {
            None => (char_offset <= self.content.len()).then_some(char_offset),
            Some(b) => b.get(char_offset).map(|&x| x as usize),
        }
    }

    /// Char offset of a byte offset; `None` when the byte offset is not on a char boundary
    /// or past the end.
    pub fn byte_to_char(&self, byte_offset: usize) -> Option<usize> {
        match &self.boundaries {
            None => (byte_offset <= self.content.len()).then_some(byte_offset),
            Some(b) => u32::try_from(byte_offset)
                .ok()
                .and_then(|x| b.binary_search(&x).ok()),
        }
    }

    /// The text between two char offsets (end-exclusive); `None` if out of range or reversed.
    pub fn slice(&self, start: usize, end: usize) -> Option<&str> {
        if start > end {
            return None;
        }
        let s = self.char_to_byte(start)?;
        let e = self.char_to_byte(end)?;
        Some(&self.content[s..e])
    }

    /// The text of a span of this document; an error names the span if it does not fit.
    pub fn slice_span(&self, span: &crate::span::CharSpan) -> Result<&str> {
        if span.doc != self.id {
            return Err(Error::UnknownDocument(span.doc.to_string()));
        }
        self.slice(span.start, span.end)
            .ok_or_else(|| Error::SpanOutOfBounds {
                doc: self.id.to_string(),
                start: span.start,
                end: span.end,
                len: self.char_len(),
            })
    }
}

/// A collection of documents, sorted by id.
#[derive(Debug, Clone, Default)]
pub struct Corpus {
    documents: Vec<Document>,
    /// Free-form corpus metadata (name, version, …).
    pub metadata: Metadata,
}

/// The glob [`Corpus::from_folder`] uses when none is given.
pub const DEFAULT_GLOB: &str = "**/*.md";

impl Corpus {
    /// A corpus from documents; they are sorted by id. Duplicate ids are an error.
    pub fn new(documents: impl IntoIterator<Item = Document>) -> Result<Self> {
        let mut documents: Vec<Document> = documents.into_iter().collect();
        documents.sort_by(|a, b| a.id.cmp(&b.id));
        if let Some(w) = documents.windows(2).find(|w| w[0].id == w[1].id) {
            return Err(duplicate_id(w[0].id.as_str()));
        }
        Ok(Corpus {
            documents,
            metadata: Metadata::new(),
        })
    }

    /// Loads every file under `root` whose path relative to `root` matches `glob`
    /// (default [`DEFAULT_GLOB`]). Document ids are those relative paths with `/` separators.
    ///
    /// A file that is not UTF-8 or cannot be read, a malformed glob, and a folder where nothing
    /// matches are errors that name the path.
    pub fn from_folder(root: impl AsRef<Utf8Path>, glob: Option<&str>) -> Result<Self> {
        let files = list_folder(root.as_ref(), glob)?;
        let documents = files
            .into_iter()
            .map(|f| f.read())
            .collect::<Result<Vec<_>>>()?;
        Corpus::new(documents)
    }

    /// Loads one file as a single-document corpus whose id is the file name.
    pub fn from_file(path: impl AsRef<Utf8Path>) -> Result<Self> {
        Corpus::new([DocumentFile::single(path.as_ref()).read()?])
    }

    /// The documents, sorted by id.
    pub fn documents(&self) -> &[Document] {
        &self.documents
    }

    /// A document by id.
    pub fn get(&self, id: &str) -> Option<&Document> {
        self.documents
            .binary_search_by(|d| d.id.as_str().cmp(id))
            .ok()
            .map(|i| &self.documents[i])
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.documents.len()
    }

    /// Whether the corpus holds no documents.
    pub fn is_empty(&self) -> bool {
        self.documents.is_empty()
    }

    /// Total length in characters.
    pub fn char_len(&self) -> usize {
        self.documents.iter().map(Document::char_len).sum()
    }
}

/// A document not read yet: its id and the file that holds it. Listing a corpus before reading
/// it lets `rag-eval chunk` hold one document at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DocumentFile {
    pub(crate) id: String,
    pub(crate) path: Utf8PathBuf,
}

impl DocumentFile {
    /// A file read as one document, named by its file name.
    pub(crate) fn single(path: &Utf8Path) -> Self {
        DocumentFile {
            id: path.file_name().unwrap_or(path.as_str()).to_owned(),
            path: path.to_owned(),
        }
    }

    /// Reads the document; the file must be UTF-8.
    pub(crate) fn read(&self) -> Result<Document> {
        Ok(Document::new(self.id.as_str(), read_utf8(&self.path)?))
    }
}

/// Sorts files by document id, the order of a [`Corpus`]; two files with one id are an error,
/// as they are for [`Corpus::new`].
#[cfg(feature = "cli")]
pub(crate) fn sort_files(files: &mut [DocumentFile]) -> Result<()> {
    files.sort_by(|a, b| a.id.cmp(&b.id));
    match files.windows(2).find(|w| w[0].id == w[1].id) {
        Some(w) => Err(duplicate_id(&w[0].id)),
        None => Ok(()),
    }
}

fn duplicate_id(id: &str) -> Error {
    Error::DuplicateDocument(id.to_owned())
}

/// The files under `root` that [`Corpus::from_folder`] reads, in walk order, without reading
/// them. A malformed glob, a folder where nothing matches and a path that is not UTF-8 are
/// errors, as they are for [`Corpus::from_folder`].
pub(crate) fn list_folder(root: &Utf8Path, glob: Option<&str>) -> Result<Vec<DocumentFile>> {
    let glob = glob.unwrap_or(DEFAULT_GLOB);
    let matcher = globset::GlobBuilder::new(glob)
        .literal_separator(true)
        .build()
        .map_err(|e| Error::Glob {
            glob: glob.to_owned(),
            message: e.kind().to_string(),
        })?
        .compile_matcher();
    let meta = std::fs::metadata(root).map_err(|e| Error::io("read", root, e))?;
    if !meta.is_dir() {
        return Err(Error::io(
            "read",
            root,
            std::io::Error::other("not a directory"),
        ));
    }
    let mut files = Vec::new();
    // The files the glob leaves out, for the message when it leaves out every one.
    let (mut other_files, mut example) = (0, None);
    for entry in walkdir::WalkDir::new(root)
        .follow_links(true)
        .sort_by_file_name()
    {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => match walk_error(root, &matcher, e) {
                Some(err) => return Err(err),
                None => continue,
            },
        };
        if !entry.file_type().is_file() {
            continue;
        }
        let path = Utf8Path::from_path(entry.path())
            .ok_or_else(|| Error::NonUtf8Path(entry.path().to_string_lossy().into_owned()))?;
        let id = relative_id(root, path);
        if !matcher.is_match(&id) {
            other_files += 1;
            example.get_or_insert(id);
            continue;
        }
        files.push(DocumentFile {
            id,
            path: path.to_owned(),
        });
    }
    if files.is_empty() {
        return Err(Error::EmptyCorpus {
            path: root.to_owned(),
            glob: glob.to_owned(),
            other_files,
            example,
        });
    }
    Ok(files)
}

/// The end of the message of a folder whose files the glob all left out: how many there are,
/// one of them, and a glob that would match it; or that the folder holds no file.
pub(crate) fn other_files_hint(other_files: usize, example: Option<&str>) -> String {
    let Some(example) = example.filter(|_| other_files > 0) else {
        return " (the folder holds no file)".to_owned();
    };
    let glob = match Utf8Path::new(example).extension() {
        Some(ext) => format!("`**/*.{ext}`"),
        None => "one that matches them".to_owned(),
    };
    format!(
        " ({other_files} other file{} under it, e.g. `{example}`, which the glob leaves out; \
         the glob, `{DEFAULT_GLOB}` unless one is given, names the documents: give another, \
         e.g. {glob})",
        if other_files == 1 { "" } else { "s" }
    )
}

/// A path under `root` as a document id: relative, with `/` separators.
fn relative_id(root: &Utf8Path, path: &Utf8Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components()
        .map(|c| c.as_str())
        .collect::<Vec<_>>()
        .join("/")
}

/// What a failed step of the folder walk means: `None` when it can be passed over.
///
/// A link whose target cannot be reached (dangling, or inside a folder we may not enter) fails
/// the walk only when the glob would have read it: a stray broken link beside the documents
/// must not make the corpus unloadable. A folder that cannot be listed stays an error, since
/// documents may hide in it.
fn walk_error(root: &Utf8Path, matcher: &globset::GlobMatcher, e: walkdir::Error) -> Option<Error> {
    let Some(path) = e.path().map(std::path::Path::to_path_buf) else {
        return Some(Error::io("list", root, walk_io_error(e)));
    };
    let shown = path.to_string_lossy().into_owned();
    let link_target = std::fs::symlink_metadata(&path)
        .ok()
        .filter(|m| m.file_type().is_symlink())
        .and_then(|_| std::fs::read_link(&path).ok());
    let Some(target) = link_target else {
        return Some(Error::io("list", shown, walk_io_error(e)));
    };
    let id = match Utf8Path::from_path(&path) {
        Some(p) => relative_id(root, p),
        None => return Some(Error::NonUtf8Path(shown)),
    };
    if !matcher.is_match(&id) {
        return None;
    }
    let cause = walk_io_error(e);
    Some(Error::io(
        "read",
        shown,
        std::io::Error::new(
            cause.kind(),
            format!(
                "it is a link to `{}`, which cannot be read: {cause}",
                target.display()
            ),
        ),
    ))
}

/// The OS error under a walk error, without walkdir's own "IO error for operation on …"
/// wrapper, which would repeat the path the message already names.
fn walk_io_error(e: walkdir::Error) -> std::io::Error {
    let text = e.to_string();
    e.into_io_error()
        .unwrap_or_else(|| std::io::Error::other(text))
}

/// Reads a file that must be UTF-8, with errors naming the path.
pub(crate) fn read_utf8(path: &Utf8Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io("read", path, e))?;
    String::from_utf8(bytes).map_err(|e| Error::NotUtf8 {
        path: path.to_owned(),
        offset: e.utf8_error().valid_up_to(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slicing_by_chars_handles_multibyte_text() {
        let d = Document::new("a", "héllo wörld €!");
        assert_eq!(d.char_len(), 14);
        assert_eq!(d.slice(1, 5), Some("éllo"));
        assert_eq!(d.slice(12, 14), Some("€!"));
        assert_eq!(d.slice(12, 15), None);
        assert_eq!(d.slice(5, 4), None);
        assert_eq!(d.char_to_byte(2), Some(3));
        assert_eq!(d.byte_to_char(3), Some(2));
        assert_eq!(d.byte_to_char(2), None, "inside 'é'");
    }

    #[test]
    fn ascii_documents_use_identity_offsets() {
        let d = Document::new("a", "hello");
        assert_eq!(d.char_len(), 5);
        assert_eq!(d.slice(0, 5), Some("hello"));
        assert_eq!(d.char_to_byte(6), None);
    }

    #[test]
    fn from_folder_ids_are_relative_with_slashes_and_sorted() {
        let dir = tempfile::tempdir().unwrap();
        let root = Utf8Path::from_path(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("guide/deep")).unwrap();
        std::fs::write(root.join("b.md"), "b").unwrap();
        std::fs::write(root.join("guide/a.md"), "a").unwrap();
        std::fs::write(root.join("guide/deep/c.md"), "c").unwrap();
        std::fs::write(root.join("notes.txt"), "x").unwrap();
        let c = Corpus::from_folder(root, None).unwrap();
        let ids: Vec<_> = c.documents().iter().map(|d| d.id().as_str()).collect();
        assert_eq!(ids, ["b.md", "guide/a.md", "guide/deep/c.md"]);
        assert_eq!(c.get("guide/a.md").unwrap().content(), "a");
        let txt = Corpus::from_folder(root, Some("*.txt")).unwrap();
        assert_eq!(txt.len(), 1);
    }

    #[test]
    fn bad_inputs_are_errors_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = Utf8Path::from_path(dir.path()).unwrap();
        let err = Corpus::from_folder(root, None).unwrap_err().to_string();
        assert!(err.contains("no documents matching `**/*.md`"), "{err}");
        assert!(err.contains(root.as_str()), "{err}");

        std::fs::write(root.join("bad.md"), b"ok \xff\xfe").unwrap();
        let err = Corpus::from_folder(root, None).unwrap_err().to_string();
        assert!(
            err.contains("bad.md") && err.contains("not valid UTF-8"),
            "{err}"
        );
        assert!(err.contains("offset 3"), "{err}");

        let err = Corpus::from_folder(root.join("missing"), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing"), "{err}");

        let err = Corpus::from_folder(root, Some("["))
            .unwrap_err()
            .to_string();
        assert!(err.contains("invalid glob `[`"), "{err}");
    }

    #[test]
    fn a_folder_of_other_files_says_the_glob_left_them_out_in_a_sentence() {
        let dir = tempfile::tempdir().unwrap();
        let root = Utf8Path::from_path(dir.path()).unwrap();
        std::fs::create_dir(root.join("faq")).unwrap();
        std::fs::write(root.join("faq/billing.txt"), "Invoices go out monthly.").unwrap();
        std::fs::write(root.join("intro.txt"), "Welcome.").unwrap();
        let err = Corpus::from_folder(root, None).unwrap_err();
        let expected = format!(
            "no documents matching `**/*.md` under `{root}` (2 other files under it, e.g. \
             `faq/billing.txt`, which the glob leaves out; the glob, `**/*.md` unless one is \
             given, names the documents: give another, e.g. `**/*.txt`)"
        );
        assert_eq!(err.to_string(), expected);
        // What an `expect` or `unwrap` prints is the sentence too, not the variant's fields.
        let debug = format!("{err:?}");
        assert_eq!(debug, expected);
        assert!(!debug.contains("EmptyCorpus {"), "{debug}");
        assert_eq!(
            Corpus::from_folder(root, Some("**/*.txt")).unwrap().len(),
            2
        );
        let empty = tempfile::tempdir().unwrap();
        let err = Corpus::from_folder(Utf8Path::from_path(empty.path()).unwrap(), None)
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("` (the folder holds no file)"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn a_dangling_link_fails_the_walk_only_when_the_glob_would_read_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = Utf8Path::from_path(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("a.md"), "a").unwrap();
        std::os::unix::fs::symlink(root.join("gone"), root.join("junk")).unwrap();
        std::os::unix::fs::symlink(root.join("gone.txt"), root.join("sub/notes.txt")).unwrap();
        std::os::unix::fs::symlink(root.join("gone-dir"), root.join("sub/cache")).unwrap();
        let c = Corpus::from_folder(root, None).unwrap();
        let ids: Vec<_> = c.documents().iter().map(|d| d.id().as_str()).collect();
        assert_eq!(ids, ["a.md"]);

        std::os::unix::fs::symlink(root.join("moved.md"), root.join("sub/b.md")).unwrap();
        let err = Corpus::from_folder(root, None).unwrap_err();
        let text = err.to_string();
        assert_eq!(
            text,
            format!(
                "read `{root}/sub/b.md`: it is a link to `{root}/moved.md`, which cannot be read: No such file or directory (os error 2)"
            )
        );
        // The walk's own wrapper and the OS error are not repeated by the error's source.
        let source = std::error::Error::source(&err).unwrap().to_string();
        assert!(text.ends_with(&source), "{source}");
        assert!(std::error::Error::source(&err).unwrap().source().is_none());
        // A glob that never reads it passes it over.
        assert_eq!(Corpus::from_folder(root, Some("*.md")).unwrap().len(), 1);
    }
}
