//! The crate's error type.

use camino::Utf8PathBuf;

/// Everything that can go wrong in rag-eval. Messages are lowercase and read after
/// "failed to …"-style context; each names what failed and where.
#[derive(thiserror::Error)]
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
    #[error("no documents matching `{glob}` under `{path}`{}", crate::corpus::other_files_hint(*.other_files, .example.as_deref()))]
    EmptyCorpus {
        /// The folder searched.
        path: Utf8PathBuf,
        /// The glob used.
        glob: String,
        /// The files under the folder the glob left out.
        other_files: usize,
        /// One of them, relative to the folder.
        example: Option<String>,
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
    /// An error of a component written outside the crate (a
    /// [`Retriever`](crate::retrieve::Retriever) of your own, say), as that component made it:
    /// reach it with `downcast_ref`. The library reports its own errors through the other
    /// variants. Made with [`Error::other`].
    #[error("{0}")]
    Other(Box<dyn std::error::Error + Send + Sync>),
    /// A component spec (`recursive:size=400`) does not parse, or names a component that
    /// cannot be built as written.
    #[error("invalid configuration: {0}")]
    Spec(#[from] SpecError),
    /// A component, metric or run was given a setting it cannot work with.
    #[error("invalid configuration: {0}")]
    Setting(#[from] SettingError),
    /// A name that is none of the known ones: a cache mode, a span mode, a trec_eval
    /// measure, a difficulty.
    #[error("invalid configuration: unknown {what} `{given}` ({known})")]
    Unknown {
        /// What the name was to be ("cache mode", "measure", …).
        what: &'static str,
        /// The name as given.
        given: String,
        /// The names known, or what was expected.
        known: String,
    },
    /// An environment variable holds something unusable.
    #[error("invalid configuration: environment variable {var}: {message}")]
    Env {
        /// The variable.
        var: String,
        /// What is wrong with its value.
        message: String,
    },
    /// A file cannot be used for what it was given for as it stands: an output that is its
    /// input or lies in the corpus, a progress file or journal from another run, a damaged
    /// one. The message names the file.
    #[error("{message}")]
    File {
        /// The file.
        path: Utf8PathBuf,
        /// What is wrong, naming the file.
        message: String,
    },
    /// Two documents of a corpus have the same id.
    #[error("invalid configuration: duplicate document id `{0}`")]
    DuplicateDocument(String),
    /// A value cannot be written as JSON (a map with keys that are not strings, say).
    #[error("{what} is not representable as JSON: {source}")]
    Json {
        /// What was being written ("cache key part", "response", …).
        what: String,
        /// Why serde_json refused it.
        source: serde_json::Error,
    },
    /// A retriever was asked for chunks before it indexed a corpus.
    #[error("`{retriever}` has no index yet: call `index` with the corpus before `retrieve`")]
    NotIndexed {
        /// The retriever (its spec or name).
        retriever: String,
    },
    /// A vector store refused a batch or a collection.
    #[error("invalid configuration: {store}: {message}")]
    Store {
        /// The store ("in-memory vector store", "chroma store `c` (tenant/database)").
        store: String,
        /// What is wrong.
        message: String,
    },
    /// An evaluation's inputs do not fit together.
    #[error("invalid configuration: {0}")]
    Evaluation(#[from] EvaluationError),
    /// A report cannot be made from the runs given, or a bar does not parse.
    #[error("invalid configuration: {0}")]
    Report(#[from] ReportError),
    /// LangSmith cannot take an upload as given.
    #[error("invalid configuration: {0}")]
    LangSmith(#[from] LangSmithError),
    /// A criteria judge's definition is not usable (its name, its scale, its inputs).
    #[error("invalid configuration: criteria `{name}`: {message}")]
    Criteria {
        /// The criterion's name.
        name: String,
        /// What is wrong with it.
        message: String,
    },
    /// `rag-eval serve` cannot listen on its address.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: String,
        /// The underlying error.
        source: std::io::Error,
    },
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
    /// A message of a binary input file (OTLP protobuf) could not be read.
    #[error("{path}: message {index} at byte {offset}: {message}")]
    Decode {
        /// The file.
        path: Utf8PathBuf,
        /// One-based number of the message in the file.
        index: usize,
        /// Where the message (its length prefix, if it has one) starts in the file.
        offset: u64,
        /// What is wrong with it.
        message: String,
    },
    /// A dataset is inconsistent with itself or with its corpus.
    #[error("invalid dataset: {0}")]
    Dataset(#[from] DatasetError),
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
    /// or of the wrong type; or cannot be stored.
    #[error("{0}")]
    RunRecord(#[from] RunRecordError),
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
    Embed(#[from] EmbedError),
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

/// The message, as Display gives it: a rag-eval error that reaches an `unwrap` or `expect`
/// (a test's, an example's, a `#[rag_eval]` function's) reads as the sentence, not as the
/// variant's fields.
impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// A component spec that does not parse or build: the spec, and what is wrong where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} spec `{spec}`: {fault}")]
#[non_exhaustive]
pub struct SpecError {
    /// The kind of component the spec was read as (`chunker`, `retriever`, …).
    pub kind: &'static str,
    /// The spec as given, with any secret of a URL in it redacted.
    pub spec: String,
    /// What is wrong, and where.
    pub fault: Fault,
}

/// What is wrong in a spec and where: the nested components leading to the fault, the key at
/// fault when there is one, and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Fault {
    /// The keys and component names leading from the spec's component to the one at fault,
    /// outermost first (`["embedder", "openai"]`); empty when the spec's own component is.
    pub within: Vec<String>,
    /// The key at fault (`size`), when the fault is one key's.
    pub key: Option<String>,
    /// What is wrong, naming the key (``` `size` must be a whole number, got `ten` ```).
    pub message: String,
}

impl Fault {
    /// A fault of the component as a whole.
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Fault {
            within: Vec::new(),
            key: None,
            message: message.into(),
        }
    }

    /// A fault of one key.
    pub(crate) fn key(key: &str, message: impl Into<String>) -> Self {
        Fault {
            key: Some(key.to_owned()),
            ..Fault::new(message)
        }
    }

    /// The same fault seen from the component that holds this one under `at` (a key or a
    /// component name).
    pub(crate) fn within(mut self, at: &str) -> Self {
        self.within.insert(0, at.to_owned());
        self
    }

    /// The fault of an error a component's constructor returned: a setting's error keeps
    /// its key, any other error its message.
    pub(crate) fn of(e: Error) -> Self {
        match e {
            Error::Setting(s) => Fault::key(&s.setting.clone(), s.to_string()),
            Error::Spec(s) => s.fault,
            other => Fault::new(other.to_string()),
        }
    }

    /// The spec error this fault makes of `spec`, read as a `kind` component.
    pub(crate) fn in_spec(self, kind: &'static str, spec: &str) -> SpecError {
        SpecError {
            kind,
            spec: crate::redact::redact_url(spec),
            fault: self,
        }
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for at in &self.within {
            write!(f, "`{at}`: ")?;
        }
        f.write_str(&self.message)
    }
}

/// A setting a component, metric or run cannot work with: whose, which, the value given and
/// what it must be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{component}: {setting} {expected}, got {value}")]
#[non_exhaustive]
pub struct SettingError {
    /// The component ("recursive chunker", "bm25", "HTTP client", …).
    pub component: String,
    /// The setting (`overlap`).
    pub setting: String,
    /// The value given, as written.
    pub value: String,
    /// What it must be ("must be smaller than `size` (400)").
    pub expected: String,
}

impl SettingError {
    /// `component`'s `setting` was `value` where it `expected` (a phrase such as "must be at
    /// least 1").
    pub(crate) fn new(
        component: impl Into<String>,
        setting: impl Into<String>,
        value: impl ToString,
        expected: impl Into<String>,
    ) -> Self {
        SettingError {
            component: component.into(),
            setting: setting.into(),
            value: value.to_string(),
            expected: expected.into(),
        }
    }
}

/// An evaluation whose inputs do not fit together: what does not fit, and with what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EvaluationError {
    /// A metric counts characters in another span mode than the evaluation's.
    #[error("metric `{metric}` counts characters in mode `{metric_mode}` but the evaluation's mode is `{mode}`; build the metrics in the evaluation's mode (`Evaluation::with_mode`)")]
    SpanMode {
        /// The metric.
        metric: String,
        /// The metric's span mode.
        metric_mode: String,
        /// The evaluation's span mode.
        mode: String,
    },
    /// A retriever returned fewer result lists than it was given queries.
    #[error("retriever `{retriever}` answered {answered} of {asked} queries")]
    TooFewAnswers {
        /// The retriever's name.
        retriever: String,
        /// Result lists returned.
        answered: usize,
        /// Queries asked.
        asked: usize,
    },
    /// A chunk-level dataset was made with another chunker than the retriever's.
    #[error("{dataset} was made with chunker `{recorded}` but the retriever chunks with `{used}`; chunk ids from different chunkers never match (use a token-level dataset to compare chunkers)")]
    OtherChunker {
        /// The dataset.
        dataset: String,
        /// The chunker the dataset records.
        recorded: String,
        /// The retriever's chunker.
        used: String,
    },
    /// A retrieved chunk's text contradicts its offsets in its document.
    #[error("{0}")]
    ChunkText(#[from] ChunkTextError),
}

/// A retrieved chunk whose text contradicts its character offsets: which chunk, and how
/// ([`RetrievedChunk::check_text`](crate::chunk::RetrievedChunk::check_text)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChunkTextError {
    /// The text is not as long as its range.
    Length {
        /// The chunk's document.
        doc: String,
        /// The range's start (characters).
        start: usize,
        /// The range's end (characters, exclusive).
        end: usize,
        /// The text's length in characters.
        chars: usize,
        /// Whether the range is the text's length in bytes (byte offsets taken for characters).
        bytes: bool,
    },
    /// The text is not the document's over its range.
    Mismatch {
        /// The chunk's document.
        doc: String,
        /// The range's start (characters).
        start: usize,
        /// The range's end (characters, exclusive).
        end: usize,
        /// The chunk's text (its first 40 characters, then `…`).
        chunk: String,
        /// The document's text over the range, shortened alike; `None` past its end.
        found: Option<String>,
        /// Whether the range read as bytes holds the chunk's text.
        bytes: bool,
    },
}

const BYTES_HINT: &str = "the offsets look like bytes, not characters: build the chunk with `RetrievedChunk::from_byte_range` (or `CharSpan::from_byte_range`)";

impl std::fmt::Display for ChunkTextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChunkTextError::Length {
                doc,
                start,
                end,
                chars,
                bytes,
            } => write!(
                f,
                "retrieved chunk `{doc}` {start}..{end} holds {chars} characters, not {}: {}",
                end.saturating_sub(*start),
                if *bytes {
                    BYTES_HINT
                } else {
                    "offsets are characters (Unicode scalar values), end-exclusive"
                }
            ),
            ChunkTextError::Mismatch {
                doc,
                start,
                end,
                chunk,
                found,
                bytes,
            } => {
                write!(
                    f,
                    "retrieved chunk `{doc}` {start}..{end} does not match the document: the chunk holds {chunk:?}, the document has {:?} there",
                    found.as_deref().unwrap_or("nothing (past its end)")
                )?;
                if *bytes {
                    write!(f, "; {BYTES_HINT}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for ChunkTextError {}

/// A report that cannot be made from the runs given, or a bar that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// No run was given.
    #[error("a report needs at least one run")]
    NoRuns,
    /// Two runs have the same label.
    #[error("two runs are labelled `{0}`; give them different labels")]
    SameLabel(String),
    /// A metric asked for is in none of the runs.
    #[error("--metric `{metric}`: no run has it (they have {})", .known.join(", "))]
    UnknownMetric {
        /// The metric asked for.
        metric: String,
        /// The metrics the runs have.
        known: Vec<String>,
    },
    /// A run's mean is not a finite number (stored so, or its per-query figures add up to an
    /// infinity: 1e308 twice).
    #[error("run `{run}`: the mean of {metric} is {value}, not a finite number: its per-query figures are too large to add up")]
    NonFiniteMean {
        /// The run's label.
        run: String,
        /// The metric.
        metric: String,
        /// The mean as it prints (`inf`, `-inf` or `NaN`).
        value: String,
    },
    /// A bar (`span_recall=0.8`) does not parse.
    #[error("bar `{bar}`: {message}")]
    Bar {
        /// The bar as given.
        bar: String,
        /// What is wrong with it.
        message: &'static str,
    },
}

/// An upload LangSmith cannot take as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LangSmithError {
    /// A result's per-query figures and retrieval lists do not pair up.
    #[error("the result has {queries} queries but {lists} retrieval lists")]
    Unpaired {
        /// Queries with figures.
        queries: usize,
        /// Retrieval lists.
        lists: usize,
    },
    /// An experiment of that name exists already.
    #[error("an experiment named `{0}` already exists in LangSmith; choose another name")]
    ExperimentExists(String),
    /// A run lacks the trace fields batch ingestion needs.
    #[error("run `{0}` has no trace_id or dotted_order; batch ingestion needs both")]
    Untraced(String),
    /// An id that is not a UUID.
    #[error("`{0}` is not a LangSmith id (a UUID)")]
    NotAnId(String),
}

/// A dataset inconsistent with itself, with its corpus or with what it is used with: which
/// dataset, and what is wrong where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct DatasetError {
    /// The dataset: its file (`questions.jsonl`), the output of a generation, or a LangSmith
    /// dataset or experiment by name.
    pub dataset: String,
    /// What is wrong, naming the dataset and the rows at fault (file and line where known).
    pub message: String,
}

impl DatasetError {
    /// `dataset` is wrong as `message` says.
    pub fn new(dataset: impl ToString, message: impl Into<String>) -> Self {
        DatasetError {
            dataset: dataset.to_string(),
            message: message.into(),
        }
    }
}

/// An embedder that failed: which one, and what went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct EmbedError {
    /// The embedder: its name (`openai:model=…`), or the model file or library it could not
    /// load.
    pub embedder: String,
    /// What went wrong, naming the embedder.
    pub message: String,
}

impl EmbedError {
    /// `embedder` failed as `message` says.
    pub fn new(embedder: impl ToString, message: impl Into<String>) -> Self {
        EmbedError {
            embedder: embedder.to_string(),
            message: message.into(),
        }
    }
}

/// A run record that cannot be read from its JSON form, or cannot be stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RunRecordError {
    /// The text is not JSON.
    #[error("a run record is not valid JSON: {0}")]
    NotJson(String),
    /// The record has no numeric `format` field.
    #[error("not a run record: no numeric `format` field")]
    NoFormat,
    /// The record is of a format this rag-eval does not read.
    #[error("run record format {found} is not the one this rag-eval reads ({reads}){}", if .found > .reads { "; upgrade rag-eval" } else { "" })]
    OtherFormat {
        /// The record's format.
        found: u64,
        /// The format this rag-eval reads (and writes).
        reads: u64,
    },
    /// A field is missing or of the wrong type.
    #[error("invalid run record{}: {message}", .earlier.map(|f| format!(" (format {f})")).unwrap_or_default())]
    Invalid {
        /// The earlier format the record was read as, when it is one.
        earlier: Option<u64>,
        /// What serde_json reported, with the line and column.
        message: String,
    },
    /// The record holds a figure JSON cannot (NaN or infinite).
    #[error("run `{run}` cannot be recorded: {what}")]
    NotStorable {
        /// The run's id.
        run: String,
        /// The figure at fault.
        what: String,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The error of a component of your own ([`Error::Other`]): any error type, or a message.
    ///
    /// ```
    /// let e = rag_eval::Error::other("backend unavailable");
    /// assert_eq!(e.to_string(), "backend unavailable");
    /// ```
    pub fn other(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Error::Other(error.into())
    }

    /// An I/O error with the action and path it happened on.
    pub fn io(action: &'static str, path: impl Into<Utf8PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
