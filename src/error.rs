//! The crate's error type.

use camino::Utf8PathBuf;

/// Everything that can go wrong in rag-eval. Messages are lowercase and read after
/// "failed to …"-style context; each names what failed and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or folder could not be read or written.
    #[error("{action} `{path}`: {source}")]
    Io {
        /// What was being done ("read", "write", "list", …).
        action: &'static str,
        /// The path involved.
        path: Utf8PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A document is not valid UTF-8.
    #[error("`{path}` is not valid UTF-8 (first invalid byte at offset {offset})")]
    NotUtf8 {
        /// The offending file.
        path: Utf8PathBuf,
        /// Byte offset of the first invalid sequence.
        offset: usize,
    },
    /// A path is not valid UTF-8 (rag-eval uses UTF-8 paths throughout).
    #[error("path `{0}` is not valid UTF-8")]
    NonUtf8Path(String),
    /// A folder matched no documents.
    #[error("no documents matching `{glob}` under `{path}`")]
    EmptyCorpus {
        /// The folder searched.
        path: Utf8PathBuf,
        /// The glob used.
        glob: String,
    },
    /// A glob pattern is malformed.
    #[error("invalid glob `{glob}`: {message}")]
    Glob {
        /// The pattern as given.
        glob: String,
        /// Why it was rejected.
        message: String,
    },
    /// A document id was not found in the corpus.
    #[error("unknown document `{0}`")]
    UnknownDocument(String),
    /// A character span does not fit its document.
    #[error("span {start}..{end} is outside document `{doc}` ({len} characters)")]
    SpanOutOfBounds {
        /// The document.
        doc: String,
        /// Span start (characters).
        start: usize,
        /// Span end (characters, exclusive).
        end: usize,
        /// Document length in characters.
        len: usize,
    },
    /// A chunker or metric configuration is invalid.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A line of an input file could not be parsed.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: Utf8PathBuf,
        /// One-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// A dataset is inconsistent with itself or with its corpus.
    #[error("invalid dataset: {0}")]
    Dataset(String),
    /// A cache file cannot be used: it is not a SQLite database, belongs to something else or
    /// to another schema version, or reading or writing it failed.
    #[error("cache `{path}`: {message}")]
    Cache {
        /// The cache file.
        path: Utf8PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A run store cannot be used: a file that is not a SQLite database or belongs to
    /// something else, a newer schema, a server that cannot be reached, or a failed read or
    /// write.
    #[error("run store `{location}`: {message}")]
    RunStore {
        /// The store's file or URL (without password).
        location: String,
        /// What is wrong.
        message: String,
    },
    /// A run record (JSON) cannot be read: not JSON, another format version, a field missing
    /// or of the wrong type.
    #[error("{0}")]
    RunRecord(String),
    /// A run store holds no run by that id.
    #[error("run store `{location}` has no run `{id}`")]
    NoSuchRun {
        /// The store's file or URL (without password).
        location: String,
        /// The id (or prefix) asked for.
        id: String,
    },
    /// A cache in replay mode was asked for something it does not hold.
    #[error("cache `{path}` (replay mode) has no {what} for provider `{provider}`, model `{model}`, input {input}")]
    CacheMiss {
        /// The cache file.
        path: Utf8PathBuf,
        /// What was asked for ("embedding", "query embedding", "response").
        what: &'static str,
        /// The provider asked of.
        provider: String,
        /// The model asked of.
        model: String,
        /// A preview of the (first) missing input, and how many others are missing.
        input: String,
    },
    /// A retriever failed on a query.
    #[error("retrieval failed for query `{query}`: {source}")]
    Retrieval {
        /// The query's id.
        query: String,
        /// What the retriever reported.
        source: Box<Error>,
    },
    /// A generator failed to answer a query (the retrieval before it succeeded).
    #[error("generation failed for query `{query}`: {source}")]
    Generation {
        /// The query's id (its text where the id is not known).
        query: String,
        /// What the generator reported.
        source: Box<Error>,
    },
    /// An embedder failed.
    #[error("embedding failed: {0}")]
    Embed(String),
    /// A remote service could not be reached or gave no usable answer (after any retries).
    #[error("`{endpoint}`: {message}")]
    Http {
        /// Method and URL, without credentials or secret query values.
        endpoint: String,
        /// The last HTTP status, if an answer came at all.
        status: Option<u16>,
        /// What went wrong, with an excerpt of the answer's body.
        message: String,
    },
    /// A generation run stopped because a document failed; the documents finished before it
    /// (and those in flight with it) are kept in the output.
    #[error("generation stopped with {done} of {total} documents done ({rows} rows kept in `{path}`; run the same command again to continue): document `{doc}`: {source}")]
    GenerationStopped {
        /// The document that failed.
        doc: String,
        /// Documents the output holds.
        done: usize,
        /// Documents of the corpus.
        total: usize,
        /// Rows the output holds.
        rows: usize,
        /// The output.
        path: Utf8PathBuf,
        /// Why the document failed.
        source: Box<Error>,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An I/O error with the action and path it happened on.
    pub fn io(action: &'static str, path: impl Into<Utf8PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
