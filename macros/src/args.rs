//! The `key = value` list of `#[rag_eval(...)]`.

use crate::errors::Errors;
use crate::suggest;
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use std::path::Path;
use syn::ext::IdentExt;
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::{Expr, Lit, LitStr, Token, UnOp};

pub(crate) const DATASET: &str = "dataset";
pub(crate) const CONVERSATIONS: &str = "conversations";
pub(crate) const MAX_STEPS: &str = "max_steps";
pub(crate) const TRACES: &str = "traces";
pub(crate) const JOIN_ATTRIBUTE: &str = "join_attribute";
pub(crate) const RETRIEVALS: &str = "retrievals";
pub(crate) const TRACE_TIMEOUT_MS: &str = "trace_timeout_ms";
pub(crate) const CORPUS: &str = "corpus";
pub(crate) const GLOB: &str = "glob";
pub(crate) const K: &str = "k";
pub(crate) const TOLERANCE: &str = "tolerance";
pub(crate) const MODE: &str = "mode";
pub(crate) const PER_QUERY: &str = "per_query";
pub(crate) const IGNORE: &str = "ignore";
pub(crate) const JUDGE: &str = "judge";
pub(crate) const JUDGE_SAMPLES: &str = "judge_samples";
pub(crate) const MAX_INVALID_SHARE: &str = "max_invalid_share";
pub(crate) const JUDGE_PER_QUERY: &str = "judge_per_query";
pub(crate) const JUDGE_TOLERANCE: &str = "judge_tolerance";
pub(crate) const EMBEDDER: &str = "embedder";
pub(crate) const CRITERIA: &str = "criteria";
pub(crate) const LANGSMITH_EXPERIMENT: &str = "langsmith_experiment";
pub(crate) const CONCURRENCY: &str = "concurrency";
pub(crate) const MIN_AGREEMENT: &str = "min_agreement";
pub(crate) const LABELS: &str = "labels";
pub(crate) const AGREEMENT_THRESHOLD: &str = "agreement_threshold";
pub(crate) const MIN_PREFIX: &str = "min_";
pub(crate) const MAX_PREFIX: &str = "max_";

/// The keys other than the `min_…` / `max_…` bars, in the order the documentation lists them.
pub(crate) const KEYS: &[&str] = &[
    DATASET,
    CORPUS,
    GLOB,
    K,
    TOLERANCE,
    MODE,
    PER_QUERY,
    IGNORE,
    JUDGE,
    JUDGE_SAMPLES,
    MAX_INVALID_SHARE,
    JUDGE_PER_QUERY,
    JUDGE_TOLERANCE,
    CRITERIA,
    EMBEDDER,
    LANGSMITH_EXPERIMENT,
    CONCURRENCY,
    MIN_AGREEMENT,
    LABELS,
    AGREEMENT_THRESHOLD,
    CONVERSATIONS,
    MAX_STEPS,
    TRACES,
    JOIN_ATTRIBUTE,
    RETRIEVALS,
    TRACE_TIMEOUT_MS,
];

/// `retrievals = …`'s values: which retriever spans give a trace's documents.
pub(crate) const RETRIEVAL_RULES: &[&str] = &["last", "all"];

/// How long a traces case waits for its rows' traces by default, in milliseconds: several
/// of the SDKs' default batch delays (5 s) would be too slow a gate; the harness sets 100 ms.
pub(crate) const DEFAULT_TRACE_TIMEOUT_MS: u64 = 10_000;

pub(crate) const MODE_STANDARD: &str = "standard";
pub(crate) const MODE_CHUNKING_EVALUATION: &str = "chunking_evaluation";
/// The older name of `chunking_evaluation`, still accepted.
pub(crate) const MODE_CHROMA: &str = "chroma";
const MODES: &[&str] = &[MODE_STANDARD, MODE_CHUNKING_EVALUATION, MODE_CHROMA];

pub(crate) const DEFAULT_K: usize = 5;
pub(crate) const DEFAULT_TOLERANCE: f64 = 0.01;
/// Judges' verdicts drift more than retrieval figures between models and runs.
pub(crate) const DEFAULT_JUDGE_TOLERANCE: f64 = 0.05;
pub(crate) const DEFAULT_MAX_INVALID_SHARE: f64 = 0.05;
/// `rag-eval align --threshold`'s default.
pub(crate) const DEFAULT_AGREEMENT_THRESHOLD: f64 = 0.5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Standard,
    ChunkingEvaluation,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bound {
    Min,
    Max,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Threshold {
    /// The metric as written; the library checks it against its registry at compile time.
    pub metric: String,
    /// The key as written (`min_span_recall`), where a problem with the metric is reported.
    pub key: proc_macro2::Ident,
    pub bound: Bound,
    pub value: f64,
}

/// The path of the function returning a case's judge client.
#[derive(Clone)]
pub(crate) struct JudgePath(pub syn::Path);

// syn's `extra-traits` would bring these for every syntax type; the path's text is enough.
impl std::fmt::Debug for JudgePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0.to_token_stream())
    }
}

impl PartialEq for JudgePath {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_token_stream().to_string() == other.0.to_token_stream().to_string()
    }
}

/// A criteria file's path as written, and where it was written.
#[derive(Clone)]
pub(crate) struct CriteriaPath {
    pub path: String,
    pub span: Span,
}

impl std::fmt::Debug for CriteriaPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.path)
    }
}

impl PartialEq for CriteriaPath {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path
    }
}

/// What the attribute says, with defaults for what it leaves out.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CaseArgs {
    pub dataset: String,
    pub corpus: Option<String>,
    pub glob: Option<String>,
    pub k: usize,
    pub tolerance: f64,
    pub mode: Mode,
    pub per_query: bool,
    pub ignore: bool,
    pub thresholds: Vec<Threshold>,
    pub judge: Option<JudgePath>,
    pub judge_samples: u32,
    pub max_invalid_share: f64,
    pub judge_per_query: bool,
    pub judge_tolerance: f64,
    pub criteria: Vec<CriteriaPath>,
    pub embedder: Option<JudgePath>,
    pub langsmith_experiment: Option<String>,
    pub concurrency: Option<usize>,
    pub min_agreement: Option<f64>,
    pub labels: Option<String>,
    pub agreement_threshold: f64,
    /// `conversations = "…"`: the case plays these conversations through its function.
    pub conversations: Option<String>,
    /// `max_steps = N`: the most assistant turns a conversation may take.
    pub max_steps: Option<usize>,
    /// `traces = "…"`: the case is gated by the traces its system exports, recorded to and
    /// replayed from this file.
    pub traces: Option<String>,
    /// `join_attribute = "…"`: the span attribute holding a row's id.
    pub join_attribute: Option<String>,
    /// `retrievals = "last"` or `"all"`.
    pub retrievals: String,
    /// `trace_timeout_ms = N`: how long to wait for the rows' traces.
    pub trace_timeout_ms: u64,
}

impl Default for CaseArgs {
    fn default() -> Self {
        CaseArgs {
            dataset: String::new(),
            corpus: None,
            glob: None,
            k: DEFAULT_K,
            tolerance: DEFAULT_TOLERANCE,
            mode: Mode::Standard,
            per_query: true,
            ignore: false,
            thresholds: Vec::new(),
            judge: None,
            judge_samples: 1,
            max_invalid_share: DEFAULT_MAX_INVALID_SHARE,
            judge_per_query: false,
            judge_tolerance: DEFAULT_JUDGE_TOLERANCE,
            criteria: Vec::new(),
            embedder: None,
            langsmith_experiment: None,
            concurrency: None,
            min_agreement: None,
            labels: None,
            agreement_threshold: DEFAULT_AGREEMENT_THRESHOLD,
            conversations: None,
            max_steps: None,
            traces: None,
            join_attribute: None,
            retrievals: RETRIEVAL_RULES[0].to_owned(),
            trace_timeout_ms: DEFAULT_TRACE_TIMEOUT_MS,
        }
    }
}

/// Parses the attribute's arguments. Paths are checked against `root` (the crate root) when it
/// is known. A bar's metric is not checked here: the library does that at compile time
/// ([`bar_checks`](crate::case)). Every problem goes to `errors`; the returned arguments mean
/// something only when none was found.
pub(crate) fn parse(tokens: TokenStream, root: Option<&Path>, errors: &mut Errors) -> CaseArgs {
    let mut state = State {
        root,
        errors,
        args: CaseArgs::default(),
        seen: Vec::new(),
        dataset_given: false,
        bars: Vec::new(),
        criteria_key: None,
        agreement_keys: Vec::new(),
        question_keys: Vec::new(),
        max_steps_key: None,
        trace_keys: Vec::new(),
    };
    let parser = syn::meta::parser(|meta| state.entry(meta));
    let complete = match parser.parse2(tokens) {
        Ok(()) => true,
        Err(error) => {
            state.errors.push(error);
            false
        }
    };
    // After a syntax error the dataset may well be among the keys not read.
    if complete && !state.dataset_given && state.args.conversations.is_none() {
        state.errors.push(syn::Error::new(
            Span::call_site(),
            format!(
                "missing `{DATASET} = \"…\"`: every case needs the path of its dataset, \
                 relative to the crate root"
            ),
        ));
    }
    state.check_bars();
    state.check_conversation_keys();
    if state.args.traces.is_none() {
        for key in std::mem::take(&mut state.trace_keys) {
            let name = key.unraw().to_string();
            state.error(
                key,
                format!("`{name}` says how a traces case reads its traces: it needs `{TRACES} = \"golden/traces.jsonl\"`"),
            );
        }
    }
    if let (Some(key), None) = (state.criteria_key.take(), &state.args.judge) {
        state.error(
            key,
            format!("`{CRITERIA}` needs `{JUDGE} = my_judge_client`: a function returning the `LlmClient` that judges them"),
        );
    }
    if state.args.min_agreement.is_none() {
        for key in std::mem::take(&mut state.agreement_keys) {
            let name = key.unraw().to_string();
            state.error(
                key,
                format!("`{name}` needs `{MIN_AGREEMENT} = 0.6`: the least agreement of the case's figures with the labels"),
            );
        }
    }
    state.args
}

/// A key as the attribute spells it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    Dataset,
    Corpus,
    Glob,
    K,
    Tolerance,
    Mode,
    PerQuery,
    Ignore,
    Judge,
    JudgeSamples,
    MaxInvalidShare,
    JudgePerQuery,
    JudgeTolerance,
    Criteria,
    Embedder,
    LangsmithExperiment,
    Concurrency,
    MinAgreement,
    Labels,
    AgreementThreshold,
    Conversations,
    MaxSteps,
    Traces,
    JoinAttribute,
    Retrievals,
    TraceTimeoutMs,
    Bar(Bound, String),
}

/// Why a key was not recognised.
#[derive(Debug, PartialEq, Eq)]
enum UnknownKey {
    /// Neither a key nor a bar.
    Key,
    /// `min_` / `max_` with no metric after it.
    Metric,
}

fn key(name: &str) -> Result<Key, UnknownKey> {
    Ok(match name {
        DATASET => Key::Dataset,
        CORPUS => Key::Corpus,
        GLOB => Key::Glob,
        K => Key::K,
        TOLERANCE => Key::Tolerance,
        MODE => Key::Mode,
        PER_QUERY => Key::PerQuery,
        IGNORE => Key::Ignore,
        JUDGE => Key::Judge,
        JUDGE_SAMPLES => Key::JudgeSamples,
        MAX_INVALID_SHARE => Key::MaxInvalidShare,
        JUDGE_PER_QUERY => Key::JudgePerQuery,
        JUDGE_TOLERANCE => Key::JudgeTolerance,
        CRITERIA => Key::Criteria,
        EMBEDDER => Key::Embedder,
        LANGSMITH_EXPERIMENT => Key::LangsmithExperiment,
        CONCURRENCY => Key::Concurrency,
        MIN_AGREEMENT => Key::MinAgreement,
        LABELS => Key::Labels,
        AGREEMENT_THRESHOLD => Key::AgreementThreshold,
        CONVERSATIONS => Key::Conversations,
        // Not a bar on a figure `steps`: a count, and a cap on the play (see `Key::MaxSteps`).
        MAX_STEPS => Key::MaxSteps,
        TRACES => Key::Traces,
        JOIN_ATTRIBUTE => Key::JoinAttribute,
        RETRIEVALS => Key::Retrievals,
        TRACE_TIMEOUT_MS => Key::TraceTimeoutMs,
        _ => {
            let (bound, metric) = if let Some(metric) = name.strip_prefix(MIN_PREFIX) {
                (Bound::Min, metric)
            } else if let Some(metric) = name.strip_prefix(MAX_PREFIX) {
                (Bound::Max, metric)
            } else {
                return Err(UnknownKey::Key);
            };
            if metric.is_empty() {
                return Err(UnknownKey::Metric);
            }
            Key::Bar(bound, metric.to_owned())
        }
    })
}

/// The message for a key that is neither a key nor a bar: the closest key when one is close
/// (`tolerence`), a bar when the prefix is a slip (`mn_recall`), else the list of keys.
fn unknown_key_message(name: &str) -> String {
    if let Some(candidate) = suggest::closest(name, KEYS) {
        return format!("unknown key `{name}`, did you mean `{candidate}`?");
    }
    let bar = name.split_once('_').and_then(|(prefix, metric)| {
        let bounds = [
            MIN_PREFIX.trim_end_matches('_'),
            MAX_PREFIX.trim_end_matches('_'),
        ];
        suggest::closest(prefix, &bounds).map(|bound| format!("{bound}_{metric}"))
    });
    match bar {
        Some(candidate) => format!("unknown key `{name}`, did you mean `{candidate}`?"),
        None => format!(
            "unknown key `{name}`; keys are {}, {MIN_PREFIX}<metric> and {MAX_PREFIX}<metric>",
            KEYS.join(", ")
        ),
    }
}

fn example(key: &Key) -> String {
    match key {
        Key::Dataset => format!("{DATASET} = \"golden/questions.jsonl\""),
        Key::Corpus => format!("{CORPUS} = \"corpus\""),
        Key::Glob => format!("{GLOB} = \"**/*.md\""),
        Key::K => format!("{K} = {DEFAULT_K}"),
        Key::Tolerance => format!("{TOLERANCE} = {DEFAULT_TOLERANCE}"),
        Key::Mode => format!("{MODE} = \"{MODE_STANDARD}\""),
        Key::PerQuery => format!("{PER_QUERY} = true"),
        Key::Ignore => format!("{IGNORE} = true"),
        Key::Judge => format!("{JUDGE} = my_judge_client"),
        Key::JudgeSamples => format!("{JUDGE_SAMPLES} = 3"),
        Key::MaxInvalidShare => format!("{MAX_INVALID_SHARE} = {DEFAULT_MAX_INVALID_SHARE}"),
        Key::JudgePerQuery => format!("{JUDGE_PER_QUERY} = true"),
        Key::JudgeTolerance => format!("{JUDGE_TOLERANCE} = {DEFAULT_JUDGE_TOLERANCE}"),
        Key::Criteria => format!("{CRITERIA} = \"judges/cites_sources.md\""),
        Key::Embedder => format!("{EMBEDDER} = my_embedder"),
        Key::LangsmithExperiment => format!("{LANGSMITH_EXPERIMENT} = \"bm25-k5\""),
        Key::Concurrency => format!("{CONCURRENCY} = 2"),
        Key::MinAgreement => format!("{MIN_AGREEMENT} = 0.6"),
        Key::Labels => format!("{LABELS} = \"golden/labels.jsonl\""),
        Key::AgreementThreshold => format!("{AGREEMENT_THRESHOLD} = 1.0"),
        Key::Conversations => format!("{CONVERSATIONS} = \"golden/conversations.jsonl\""),
        Key::MaxSteps => format!("{MAX_STEPS} = 4"),
        Key::Traces => format!("{TRACES} = \"golden/traces.jsonl\""),
        Key::JoinAttribute => format!("{JOIN_ATTRIBUTE} = \"query.id\""),
        Key::Retrievals => format!("{RETRIEVALS} = \"last\""),
        Key::TraceTimeoutMs => format!("{TRACE_TIMEOUT_MS} = {DEFAULT_TRACE_TIMEOUT_MS}"),
        Key::Bar(bound, metric) => format!("{}{metric} = 0.8", prefix(*bound)),
    }
}

fn prefix(bound: Bound) -> &'static str {
    match bound {
        Bound::Min => MIN_PREFIX,
        Bound::Max => MAX_PREFIX,
    }
}

struct State<'a> {
    root: Option<&'a Path>,
    errors: &'a mut Errors,
    args: CaseArgs,
    seen: Vec<Key>,
    dataset_given: bool,
    /// Each bar with its value's tokens and text, to compare a metric's min and max.
    bars: Vec<(Threshold, TokenStream, String)>,
    /// The `criteria` key, reported when no `judge` is given: criteria need one.
    criteria_key: Option<proc_macro2::Ident>,
    /// The `labels` and `agreement_threshold` keys, reported when no `min_agreement` is given.
    agreement_keys: Vec<proc_macro2::Ident>,
    /// The keys that only a question case takes, reported when the case plays conversations.
    question_keys: Vec<proc_macro2::Ident>,
    /// The `max_steps` key, reported when the case does not play conversations.
    max_steps_key: Option<proc_macro2::Ident>,
    /// The keys that only a traces case takes, reported when the case has no `traces`.
    trace_keys: Vec<proc_macro2::Ident>,
}

impl State<'_> {
    fn error(&mut self, tokens: impl ToTokens, message: impl std::fmt::Display) {
        self.errors.push(syn::Error::new_spanned(tokens, message));
    }

    fn entry(&mut self, meta: ParseNestedMeta) -> syn::Result<()> {
        let value = take_value(&meta, self.errors)?;
        let Some(ident) = meta.path.get_ident() else {
            let path = meta.path.to_token_stream().to_string().replace(' ', "");
            self.error(
                &meta.path,
                format!("expected a key such as `{DATASET}`, found the path `{path}`"),
            );
            return Ok(());
        };
        let name = ident.unraw().to_string();
        let key = match key(&name) {
            Ok(key) => key,
            Err(UnknownKey::Key) => {
                self.error(ident, unknown_key_message(&name));
                return Ok(());
            }
            Err(UnknownKey::Metric) => {
                self.error(
                    ident,
                    format!("`{name}` needs a metric name, e.g. `{name}span_recall`"),
                );
                return Ok(());
            }
        };
        let Some(value) = value else {
            self.error(
                ident,
                format!("`{name}` needs a value, e.g. `{}`", example(&key)),
            );
            return Ok(());
        };
        if self.seen.contains(&key) {
            self.error(ident, format!("`{name}` is given twice"));
            return Ok(());
        }
        self.seen.push(key.clone());
        if !matches!(
            key,
            Key::Conversations
                | Key::MaxSteps
                | Key::Tolerance
                | Key::PerQuery
                | Key::Ignore
                | Key::Bar(..)
        ) {
            self.question_keys.push(ident.clone());
        }
        let value = unwrap_groups(&value);
        match key {
            // `dataset = "golden/questions.jsonl"`: a file, relative to the crate root.
            Key::Dataset => {
                self.dataset_given = true;
                if let Some(path) = self.path(value, DATASET, "dataset", PathKind::File) {
                    self.args.dataset = path;
                }
            }
            // `corpus = "corpus"`: a folder, relative to the crate root.
            Key::Corpus => {
                self.args.corpus = self.path(value, CORPUS, "corpus folder", PathKind::Folder);
            }
            // `glob = "**/*.md"`: which files of the corpus folder are documents.
            Key::Glob => match string(value) {
                Some(glob) if glob.value().is_empty() => {
                    self.error(glob, format!("`{GLOB}` is empty, e.g. `{}`", example(&key)));
                }
                Some(glob) => self.args.glob = Some(glob.value()),
                None => self.error(
                    value,
                    format!("`{GLOB}` must be a string literal, e.g. `{}`", example(&key)),
                ),
            },
            // `k = 5`: an integer literal ≥ 1.
            Key::K => {
                let expected = format!("`{K}` must be an integer literal ≥ 1");
                match number(value) {
                    Some(Number {
                        integer: Some(k), ..
                    }) if k >= 1 => match usize::try_from(k) {
                        Ok(k) => self.args.k = k,
                        Err(_) => self.error(value, format!("`{K}` = {k} is too large")),
                    },
                    Some(Number { text, .. }) => {
                        self.error(value, format!("{expected}, got {text}"));
                    }
                    None => self.error(value, expected),
                }
            }
            // `tolerance = 0.01`: a float or integer literal in [0, 1].
            Key::Tolerance => {
                if let Some(tolerance) = self.fraction(value, TOLERANCE) {
                    self.args.tolerance = tolerance;
                }
            }
            // `mode = "standard"`, `mode = "chunking_evaluation"` or its older spelling
            // `mode = "chroma"`.
            Key::Mode => match string(value).map(|mode| (mode, mode.value())) {
                Some((_, mode)) if mode == MODE_STANDARD => self.args.mode = Mode::Standard,
                Some((_, mode)) if mode == MODE_CHUNKING_EVALUATION || mode == MODE_CHROMA => {
                    self.args.mode = Mode::ChunkingEvaluation
                }
                Some((literal, mode)) => {
                    let hint = suggest::hint(&mode, MODES, "modes");
                    self.error(literal, format!("unknown mode `{mode}`{hint}"));
                }
                None => self.error(
                    value,
                    format!(
                        "`{MODE}` must be \"{MODE_STANDARD}\" or \"{MODE_CHUNKING_EVALUATION}\""
                    ),
                ),
            },
            // `per_query = true` or `per_query = false`.
            Key::PerQuery => match value {
                Expr::Lit(syn::ExprLit {
                    lit: Lit::Bool(flag),
                    ..
                }) => self.args.per_query = flag.value,
                _ => self.error(value, format!("`{PER_QUERY}` must be `true` or `false`")),
            },
            // `ignore = true`: the case's tests are ignored unless asked for (`--ignored`).
            Key::Ignore => match value {
                Expr::Lit(syn::ExprLit {
                    lit: Lit::Bool(flag),
                    ..
                }) => self.args.ignore = flag.value,
                _ => self.error(value, format!("`{IGNORE}` must be `true` or `false`")),
            },
            // `judge = my_judge`: a path to a `fn() -> impl LlmClient` (or an `Arc<dyn LlmClient>`)
            // whose calls judge the case's answers.
            Key::Judge => match value {
                Expr::Path(path) if path.qself.is_none() => {
                    self.args.judge = Some(JudgePath(path.path.clone()))
                }
                _ => self.error(
                    value,
                    format!(
                        "`{JUDGE}` must name a function returning the judge's `LlmClient`, e.g. `{}`",
                        example(&key)
                    ),
                ),
            },
            // `judge_samples = 3`: an integer literal ≥ 1.
            Key::JudgeSamples => {
                let expected = format!("`{JUDGE_SAMPLES}` must be an integer literal ≥ 1");
                match number(value) {
                    Some(Number {
                        integer: Some(n), ..
                    }) if n >= 1 => match u32::try_from(n) {
                        Ok(n) => self.args.judge_samples = n,
                        Err(_) => self.error(value, format!("`{JUDGE_SAMPLES}` = {n} is too large")),
                    },
                    Some(Number { text, .. }) => {
                        self.error(value, format!("{expected}, got {text}"));
                    }
                    None => self.error(value, expected),
                }
            }
            // `concurrency = 2`: an integer literal ≥ 1.
            Key::Concurrency => {
                let expected = format!("`{CONCURRENCY}` must be an integer literal ≥ 1");
                match number(value) {
                    Some(Number {
                        integer: Some(n), ..
                    }) if n >= 1 => match usize::try_from(n) {
                        Ok(n) => self.args.concurrency = Some(n),
                        Err(_) => self.error(value, format!("`{CONCURRENCY}` = {n} is too large")),
                    },
                    Some(Number { text, .. }) => {
                        self.error(value, format!("{expected}, got {text}"));
                    }
                    None => self.error(value, expected),
                }
            }
            // `max_invalid_share = 0.05`: a float or integer literal in [0, 1].
            Key::MaxInvalidShare => {
                if let Some(share) = self.fraction(value, MAX_INVALID_SHARE) {
                    self.args.max_invalid_share = share;
                }
            }
            // `judge_per_query = true`: judge figures in the snapshot per query, not only means.
            Key::JudgePerQuery => match value {
                Expr::Lit(syn::ExprLit {
                    lit: Lit::Bool(flag),
                    ..
                }) => self.args.judge_per_query = flag.value,
                _ => self.error(value, format!("`{JUDGE_PER_QUERY}` must be `true` or `false`")),
            },
            // `judge_tolerance = 0.05`: a float or integer literal in [0, 1].
            Key::JudgeTolerance => {
                if let Some(tolerance) = self.fraction(value, JUDGE_TOLERANCE) {
                    self.args.judge_tolerance = tolerance;
                }
            }
            // `criteria = "judges/x.md"` or `criteria = ["judges/x.md", "judges/y.md"]`:
            // criteria files relative to the crate root, judged by the case's `judge`.
            Key::Criteria => {
                let items: Vec<&Expr> = match value {
                    Expr::Array(array) => array.elems.iter().collect(),
                    one => vec![one],
                };
                if items.is_empty() {
                    self.error(value, format!("`{CRITERIA}` is empty, e.g. `{}`", example(&key)));
                }
                for item in items {
                    let span = string(item).map(|l| l.span());
                    if let (Some(path), Some(span)) =
                        (self.path(item, CRITERIA, "criteria file", PathKind::File), span)
                    {
                        self.args.criteria.push(CriteriaPath { path, span });
                    }
                }
                self.criteria_key = Some(ident.clone());
            }
            // `embedder = my_embedder`: a path to a `fn() -> impl Embedder` for answer
            // similarity and answer relevancy.
            Key::Embedder => match value {
                Expr::Path(path) if path.qself.is_none() => {
                    self.args.embedder = Some(JudgePath(path.path.clone()))
                }
                _ => self.error(
                    value,
                    format!(
                        "`{EMBEDDER}` must name a function returning an `Embedder`, e.g. `{}`",
                        example(&key)
                    ),
                ),
            },
            // `langsmith_experiment = "NAME"`: a non-empty string literal.
            Key::LangsmithExperiment => match string(value) {
                Some(name) if name.value().trim().is_empty() => self.error(
                    name,
                    format!("`{LANGSMITH_EXPERIMENT}` is empty, e.g. `{}`", example(&key)),
                ),
                Some(name) => self.args.langsmith_experiment = Some(name.value()),
                None => self.error(
                    value,
                    format!(
                        "`{LANGSMITH_EXPERIMENT}` must be a string literal naming the experiment, e.g. `{}`",
                        example(&key)
                    ),
                ),
            },
            // `min_agreement = 0.6`: the least Cohen's κ (binary labels) or Spearman's ρ (numeric
            // ones) of each labelled metric with people's labels, in [0, 1].
            Key::MinAgreement => {
                self.args.min_agreement = self.fraction(value, MIN_AGREEMENT);
            }
            // `labels = "golden/labels.jsonl"`: the labels file, relative to the crate root
            // (without it, the dataset's `outputs.labels`).
            Key::Labels => {
                self.args.labels = self.path(value, LABELS, "labels file", PathKind::File);
                self.agreement_keys.push(ident.clone());
            }
            // `agreement_threshold = 1.0`: with binary labels, a figure at least this passes.
            Key::AgreementThreshold => {
                if let Some(threshold) = self.fraction(value, AGREEMENT_THRESHOLD) {
                    self.args.agreement_threshold = threshold;
                }
                self.agreement_keys.push(ident.clone());
            }
            // `conversations = "golden/conversations.jsonl"`: a file, relative to the crate root.
            Key::Conversations => {
                self.args.conversations =
                    self.path(value, CONVERSATIONS, "conversations file", PathKind::File);
                // Read or not, the case is a conversation case: no `dataset` is asked for.
                self.args.conversations.get_or_insert_with(String::new);
            }
            // `max_steps = 4`: an integer literal ≥ 1.
            Key::MaxSteps => {
                let expected = format!("`{MAX_STEPS}` must be an integer literal ≥ 1");
                match number(value) {
                    Some(Number {
                        integer: Some(n), ..
                    }) if n >= 1 => match usize::try_from(n) {
                        Ok(n) => self.args.max_steps = Some(n),
                        Err(_) => self.error(value, format!("`{MAX_STEPS}` = {n} is too large")),
                    },
                    Some(Number { text, .. }) => {
                        self.error(value, format!("{expected}, got {text}"));
                    }
                    None => self.error(value, expected),
                }
                self.max_steps_key = Some(ident.clone());
            }
            // `traces = "golden/traces.jsonl"`: the file the case's traces are recorded to
            // (written by the first run, so it need not exist yet).
            Key::Traces => {
                match string(value) {
                Some(path) if path.value().trim().is_empty() => self.error(
                    path,
                    format!("`{TRACES}` is empty: give the path the traces are recorded to, relative to the crate root, e.g. `{}`", example(&key)),
                ),
                Some(path) if self.root.is_some_and(|root| root.join(path.value()).is_dir()) => {
                    self.error(
                        path,
                        format!("traces file `{}` is a folder; expected a file", path.value()),
                    )
                }
                Some(path) => self.args.traces = Some(path.value()),
                None => self.error(
                    value,
                    format!("`{TRACES}` must be a string literal: the path the traces are recorded to, relative to the crate root, e.g. `{}`", example(&key)),
                ),
                }
                // Valid or not, the case is a traces case: its signature is checked as one.
                self.args.traces.get_or_insert_with(String::new);
            }
            // `join_attribute = "query.id"`: a non-empty attribute key.
            Key::JoinAttribute => {
                match string(value) {
                    Some(attr) if attr.value().trim().is_empty() => self.error(
                        attr,
                        format!("`{JOIN_ATTRIBUTE}` is empty, e.g. `{}`", example(&key)),
                    ),
                    Some(attr) => self.args.join_attribute = Some(attr.value()),
                    None => self.error(
                        value,
                        format!("`{JOIN_ATTRIBUTE}` must be a string literal naming the span attribute that holds the row's id, e.g. `{}`", example(&key)),
                    ),
                }
                self.trace_keys.push(ident.clone());
            }
            // `retrievals = "last"` or `"all"`.
            Key::Retrievals => {
                match string(value).map(|rule| (rule, rule.value())) {
                    Some((_, rule)) if RETRIEVAL_RULES.contains(&rule.as_str()) => {
                        self.args.retrievals = rule
                    }
                    Some((literal, rule)) => {
                        let hint = suggest::hint(&rule, RETRIEVAL_RULES, "rules");
                        self.error(literal, format!("unknown retrieval rule `{rule}`{hint}"));
                    }
                    None => self.error(value, format!("`{RETRIEVALS}` must be \"last\" or \"all\"")),
                }
                self.trace_keys.push(ident.clone());
            }
            // `trace_timeout_ms = 10000`: an integer literal ≥ 1.
            Key::TraceTimeoutMs => {
                let expected = format!("`{TRACE_TIMEOUT_MS}` must be an integer literal ≥ 1 (milliseconds)");
                match number(value) {
                    Some(Number {
                        integer: Some(n), ..
                    }) if n >= 1 => match u64::try_from(n) {
                        Ok(n) => self.args.trace_timeout_ms = n,
                        Err(_) => self.error(value, format!("`{TRACE_TIMEOUT_MS}` = {n} is too large")),
                    },
                    Some(Number { text, .. }) => {
                        self.error(value, format!("{expected}, got {text}"));
                    }
                    None => self.error(value, expected),
                }
                self.trace_keys.push(ident.clone());
            }
            // `min_<metric> = 0.8` / `max_<metric> = 0.3`: float or integer literals in [0, 1].
            Key::Bar(bound, metric) => {
                if let Some(bar) = self.fraction(value, &name) {
                    let threshold = Threshold {
                        metric,
                        key: ident.clone(),
                        bound,
                        value: bar,
                    };
                    let text = number(value).map(|n| n.text).unwrap_or_default();
                    self.bars
                        .push((threshold.clone(), value.to_token_stream(), text));
                    self.args.thresholds.push(threshold);
                }
            }
        }
        Ok(())
    }

    /// A string literal naming an existing file or folder under the crate root.
    fn path(&mut self, value: &Expr, key: &str, what: &str, kind: PathKind) -> Option<String> {
        let Some(literal) = string(value) else {
            self.error(
                value,
                format!("`{key}` must be a string literal: the {what}'s path relative to the crate root"),
            );
            return None;
        };
        let path = literal.value();
        if path.trim().is_empty() {
            self.error(
                literal,
                format!("`{key}` is empty: give the {what}'s path relative to the crate root"),
            );
            return None;
        }
        if let Some(root) = self.root {
            let full = root.join(&path);
            let relative = if Path::new(&path).is_absolute() {
                ""
            } else {
                " relative to the crate root"
            };
            let problem = match kind {
                PathKind::File if full.is_dir() => {
                    Some(format!("{what} `{path}` is a folder; expected a file"))
                }
                PathKind::Folder if full.is_file() => {
                    Some(format!("{what} `{path}` is a file; expected a folder"))
                }
                _ if !full.exists() => Some(format!("{what} `{path}` does not exist{relative}")),
                _ => None,
            };
            if let Some(problem) = problem {
                self.error(literal, problem);
                return None;
            }
        }
        Some(path)
    }

    /// A float or integer literal in [0, 1].
    fn fraction(&mut self, value: &Expr, key: &str) -> Option<f64> {
        match number(value) {
            Some(Number { value: x, .. }) if (0.0..=1.0).contains(&x) => Some(x),
            Some(Number { text, .. }) => {
                self.error(
                    value,
                    format!("`{key}` must be between 0 and 1, got {text}"),
                );
                None
            }
            None => {
                self.error(value, format!("`{key}` must be a number between 0 and 1"));
                None
            }
        }
    }

    /// A conversation case takes its conversations, `max_steps`, bars, `tolerance`,
    /// `per_query` and `ignore`; a question case takes no `max_steps`.
    fn check_conversation_keys(&mut self) {
        if self.args.conversations.is_none() {
            if let Some(key) = self.max_steps_key.take() {
                self.error(
                    key,
                    format!("`{MAX_STEPS}` bounds the steps of a conversation case: it needs `{CONVERSATIONS} = \"…\"`"),
                );
            }
            return;
        }
        for key in std::mem::take(&mut self.question_keys) {
            let name = key.unraw().to_string();
            let message = if name == DATASET {
                format!("a case plays `{CONVERSATIONS} = \"…\"` or scores the questions of `{DATASET} = \"…\"`, not both: split it into two cases")
            } else {
                format!("`{name}` is a key of a question case; a conversation case (`{CONVERSATIONS} = …`) takes `{MAX_STEPS}`, `{TOLERANCE}`, `{PER_QUERY}`, `{IGNORE}` and bars on its figures")
            };
            self.error(key, message);
        }
    }

    /// A metric's min above its max leaves no figure that passes: reported at the later bar.
    fn check_bars(&mut self) {
        let mut problems = Vec::new();
        for (i, (later, tokens, text)) in self.bars.iter().enumerate() {
            for (earlier, _, earlier_text) in &self.bars[..i] {
                if earlier.metric != later.metric || earlier.bound == later.bound {
                    continue;
                }
                let (min, max) = match later.bound {
                    Bound::Min => (later.value, earlier.value),
                    Bound::Max => (earlier.value, later.value),
                };
                if min > max {
                    let metric = &later.metric;
                    problems.push(syn::Error::new_spanned(
                        tokens,
                        format!(
                            "`{}{metric} = {text}` contradicts `{}{metric} = {earlier_text}`: \
                             no figure is at least {min} and at most {max}",
                            prefix(later.bound),
                            prefix(earlier.bound),
                        ),
                    ));
                }
            }
        }
        for problem in problems {
            self.errors.push(problem);
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum PathKind {
    File,
    Folder,
}

/// The value after `=`, if there is one. A `:` in place of the `=` is reported and read as
/// one; a parenthesised `key(...)` is skipped. Either way the parse carries on to the next key,
/// whose errors are then reported too.
fn take_value(meta: &ParseNestedMeta, errors: &mut Errors) -> syn::Result<Option<Expr>> {
    if meta.input.peek(Token![=]) {
        return Ok(Some(meta.value()?.parse()?));
    }
    if meta.input.peek(Token![:]) && !meta.input.peek(Token![::]) {
        let colon: Token![:] = meta.input.parse()?;
        errors.push(syn::Error::new_spanned(colon, "expected `=`, found `:`"));
        return Ok(Some(meta.input.parse()?));
    }
    if meta.input.peek(syn::token::Paren) {
        meta.input.parse::<TokenTree>()?;
    }
    Ok(None)
}

/// Literals passed through `macro_rules!` fragments arrive wrapped in invisible groups.
fn unwrap_groups(expr: &Expr) -> &Expr {
    match expr {
        Expr::Group(group) => unwrap_groups(&group.expr),
        _ => expr,
    }
}

fn string(expr: &Expr) -> Option<&LitStr> {
    match expr {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(literal),
            ..
        }) => Some(literal),
        _ => None,
    }
}

/// A numeric literal, possibly negated.
#[derive(Debug, PartialEq)]
struct Number {
    value: f64,
    /// Set for integer literals.
    integer: Option<i128>,
    /// As written, without suffix, for messages.
    text: String,
}

fn number(expr: &Expr) -> Option<Number> {
    match unwrap_groups(expr) {
        Expr::Lit(syn::ExprLit { lit, .. }) => match lit {
            Lit::Int(int) => Some(Number {
                value: int.base10_parse().ok()?,
                integer: int.base10_parse().ok(),
                text: int.base10_digits().to_owned(),
            }),
            Lit::Float(float) => Some(Number {
                value: float.base10_parse().ok()?,
                integer: None,
                text: float.base10_digits().to_owned(),
            }),
            _ => None,
        },
        Expr::Unary(syn::ExprUnary {
            op: UnOp::Neg(_),
            expr,
            ..
        }) => {
            let inner = number(expr)?;
            (!inner.text.starts_with('-')).then(|| Number {
                value: -inner.value,
                integer: inner.integer.map(|i| -i),
                text: format!("-{}", inner.text),
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn parse_ok(tokens: TokenStream) -> CaseArgs {
        let mut errors = Errors::default();
        let args = parse(tokens, None, &mut errors);
        assert_eq!(errors.messages(), Vec::<String>::new());
        args
    }

    fn messages(tokens: TokenStream) -> Vec<String> {
        let mut errors = Errors::default();
        parse(tokens, None, &mut errors);
        errors.messages()
    }

    #[test]
    fn defaults_fill_what_is_left_out() {
        let args = parse_ok(quote!(dataset = "golden/q.jsonl"));
        assert_eq!(
            args,
            CaseArgs {
                dataset: "golden/q.jsonl".into(),
                ..CaseArgs::default()
            }
        );
        assert_eq!((args.k, args.tolerance, args.per_query), (5, 0.01, true));
    }

    #[test]
    fn every_key_is_read() {
        let args = parse_ok(quote!(
            dataset = "d.jsonl",
            corpus = "docs",
            glob = "**/*.txt",
            k = 10,
            tolerance = 0,
            mode = "chroma",
            per_query = false,
            ignore = true,
            min_span_recall = 0.8,
            max_mrr = 1,
            r#min_ndcg = 0.25f32,
            judge = judges::local,
            judge_samples = 3,
            max_invalid_share = 0.1,
            judge_per_query = true,
            judge_tolerance = 0.2,
            criteria = ["judges/a.md", "judges/b.md"],
            embedder = embedders::hashing,
            langsmith_experiment = "bm25 k=10",
            concurrency = 2,
            min_agreement = 0.6,
            labels = "golden/labels.jsonl",
            agreement_threshold = 1,
        ));
        assert_eq!(
            args,
            CaseArgs {
                dataset: "d.jsonl".into(),
                corpus: Some("docs".into()),
                glob: Some("**/*.txt".into()),
                k: 10,
                tolerance: 0.0,
                mode: Mode::ChunkingEvaluation,
                per_query: false,
                ignore: true,
                thresholds: vec![
                    Threshold {
                        metric: "span_recall".into(),
                        key: syn::parse_quote!(min_span_recall),
                        bound: Bound::Min,
                        value: 0.8
                    },
                    Threshold {
                        metric: "mrr".into(),
                        key: syn::parse_quote!(max_mrr),
                        bound: Bound::Max,
                        value: 1.0
                    },
                    Threshold {
                        metric: "ndcg".into(),
                        key: syn::parse_quote!(r#min_ndcg),
                        bound: Bound::Min,
                        value: 0.25
                    },
                ],
                judge: Some(JudgePath(syn::parse_quote!(judges::local))),
                judge_samples: 3,
                max_invalid_share: 0.1,
                judge_per_query: true,
                judge_tolerance: 0.2,
                criteria: ["judges/a.md", "judges/b.md"]
                    .map(|path| CriteriaPath {
                        path: path.into(),
                        span: Span::call_site()
                    })
                    .to_vec(),
                embedder: Some(JudgePath(syn::parse_quote!(embedders::hashing))),
                langsmith_experiment: Some("bm25 k=10".into()),
                concurrency: Some(2),
                min_agreement: Some(0.6),
                labels: Some("golden/labels.jsonl".into()),
                agreement_threshold: 1.0,
                conversations: None,
                max_steps: None,
                ..CaseArgs::default()
            }
        );
    }

    #[test]
    fn a_traces_case_takes_its_file_join_rule_and_timeout() {
        let args = parse_ok(quote!(
            dataset = "d.jsonl",
            traces = "golden/traces.jsonl",
            join_attribute = "query.id",
            retrievals = "all",
            trace_timeout_ms = 2500,
            min_span_recall = 0.8
        ));
        assert_eq!(args.traces.as_deref(), Some("golden/traces.jsonl"));
        assert_eq!(args.join_attribute.as_deref(), Some("query.id"));
        assert_eq!(
            (args.retrievals.as_str(), args.trace_timeout_ms),
            ("all", 2500)
        );
        assert_eq!(
            (
                parse_ok(quote!(dataset = "d", traces = "t.jsonl")).retrievals,
                CaseArgs::default().trace_timeout_ms
            ),
            ("last".to_owned(), 10_000)
        );
        assert_eq!(
            messages(quote!(dataset = "d", join_attribute = "query.id", retrievals = "al", trace_timeout_ms = 0)),
            [
                "unknown retrieval rule `al`, did you mean `all`?",
                "`trace_timeout_ms` must be an integer literal ≥ 1 (milliseconds), got 0",
                "`join_attribute` says how a traces case reads its traces: it needs `traces = \"golden/traces.jsonl\"`",
                "`retrievals` says how a traces case reads its traces: it needs `traces = \"golden/traces.jsonl\"`",
                "`trace_timeout_ms` says how a traces case reads its traces: it needs `traces = \"golden/traces.jsonl\"`",
            ]
        );
        assert_eq!(
            messages(quote!(dataset = "d", traces = "", join_attribute = 3)),
            [
                "`traces` is empty: give the path the traces are recorded to, relative to the crate root, e.g. `traces = \"golden/traces.jsonl\"`",
                "`join_attribute` must be a string literal naming the span attribute that holds the row's id, e.g. `join_attribute = \"query.id\"`",
            ]
        );
    }

    #[test]
    fn a_conversation_case_takes_its_file_steps_and_bars_and_no_question_keys() {
        let args = parse_ok(quote!(
            conversations = "c.jsonl",
            max_steps = 4,
            tolerance = 0.0,
            min_tool_call_accuracy = 1.0
        ));
        assert_eq!(args.conversations.as_deref(), Some("c.jsonl"));
        assert_eq!(args.max_steps, Some(4));
        assert_eq!(args.thresholds[0].metric, "tool_call_accuracy");
        assert_eq!(
            messages(quote!(conversations = "c.jsonl", dataset = "d.jsonl", k = 3)),
            [
                "a case plays `conversations = \"…\"` or scores the questions of `dataset = \"…\"`, not both: split it into two cases",
                "`k` is a key of a question case; a conversation case (`conversations = …`) takes `max_steps`, `tolerance`, `per_query`, `ignore` and bars on its figures",
            ]
        );
        assert_eq!(
            messages(quote!(dataset = "d.jsonl", max_steps = 2)),
            ["`max_steps` bounds the steps of a conversation case: it needs `conversations = \"…\"`"]
        );
        assert_eq!(
            messages(quote!(conversations = "c.jsonl", max_steps = 0)),
            ["`max_steps` must be an integer literal ≥ 1, got 0"]
        );
    }

    /// Bars on any metric parse: whether the metric exists, and whether the case can compute
    /// it, is the library's registry's to say (`harness::vocabulary`), at compile time.
    #[test]
    fn bars_name_any_metric_the_library_then_checks() {
        let args = parse_ok(quote!(
            dataset = "d",
            min_answer_relevancy = 0.7,
            max_span_recal = 0.9
        ));
        let metrics: Vec<&str> = args.thresholds.iter().map(|t| t.metric.as_str()).collect();
        assert_eq!(metrics, ["answer_relevancy", "span_recal"]);
        assert_eq!(args.thresholds[1].key.to_string(), "max_span_recal");
    }

    #[test]
    fn a_langsmith_experiment_is_a_non_empty_string() {
        assert_eq!(
            messages(quote!(dataset = "d", langsmith_experiment = "  ")),
            ["`langsmith_experiment` is empty, e.g. `langsmith_experiment = \"bm25-k5\"`"]
        );
        assert_eq!(
            messages(quote!(dataset = "d", langsmith_experiment = bm25)),
            ["`langsmith_experiment` must be a string literal naming the experiment, e.g. `langsmith_experiment = \"bm25-k5\"`"]
        );
    }

    #[test]
    fn bars_are_min_or_max_and_a_name() {
        assert_eq!(key("min_mrr"), Ok(Key::Bar(Bound::Min, "mrr".into())));
        assert_eq!(
            key("max_span_iou"),
            Ok(Key::Bar(Bound::Max, "span_iou".into()))
        );
        assert_eq!(key("min_"), Err(UnknownKey::Metric));
        assert_eq!(key("mean_mrr"), Err(UnknownKey::Key));
        assert_eq!(
            unknown_key_message("mn_recall"),
            "unknown key `mn_recall`, did you mean `min_recall`?"
        );
        assert_eq!(
            unknown_key_message("maxx_hit"),
            "unknown key `maxx_hit`, did you mean `max_hit`?"
        );
    }

    #[test]
    fn all_problems_of_one_attribute_are_reported() {
        assert_eq!(
            messages(quote!(
                dataset = "d.jsonl",
                tolerence = 0.1,
                colour = "red",
                min_span_recal = 0.5,
                max_fast = 0.5,
                min_ = 0.5,
                k = 0,
                k = 3,
                tolerance = 1.5,
                min_recall = -0.1,
                mode = "fast",
                mode = 1,
                per_query = "yes",
                glob,
                corpus(x),
            )),
            [
                "unknown key `tolerence`, did you mean `tolerance`?",
                "unknown key `colour`; keys are dataset, corpus, glob, k, tolerance, mode, \
                 per_query, ignore, judge, judge_samples, max_invalid_share, judge_per_query, \
                 judge_tolerance, criteria, embedder, langsmith_experiment, concurrency, \
                 min_agreement, labels, agreement_threshold, conversations, max_steps, traces, join_attribute, retrievals, trace_timeout_ms, min_<metric> and max_<metric>",
                "`min_` needs a metric name, e.g. `min_span_recall`",
                "`k` must be an integer literal ≥ 1, got 0",
                "`k` is given twice",
                "`tolerance` must be between 0 and 1, got 1.5",
                "`min_recall` must be between 0 and 1, got -0.1",
                "unknown mode `fast`; modes are standard, chunking_evaluation, chroma",
                "`mode` is given twice",
                "`per_query` must be `true` or `false`",
                "`glob` needs a value, e.g. `glob = \"**/*.md\"`",
                "`corpus` needs a value, e.g. `corpus = \"corpus\"`",
            ]
        );
    }

    #[test]
    fn wrong_literal_types_name_what_was_expected() {
        assert_eq!(
            messages(quote!(
                dataset = 5,
                corpus = true,
                glob = 1,
                k = 2.5,
                tolerance = "low",
                mode = standard,
                min_hit = "0.5",
            )),
            [
                "`dataset` must be a string literal: the dataset's path relative to the crate root",
                "`corpus` must be a string literal: the corpus folder's path relative to the crate root",
                "`glob` must be a string literal, e.g. `glob = \"**/*.md\"`",
                "`k` must be an integer literal ≥ 1, got 2.5",
                "`tolerance` must be a number between 0 and 1",
                "`mode` must be \"standard\" or \"chunking_evaluation\"",
                "`min_hit` must be a number between 0 and 1",
            ]
        );
        assert_eq!(
            messages(quote!(
                dataset = "d.jsonl",
                concurrency = 0,
                judge_samples = 2.0
            )),
            [
                "`concurrency` must be an integer literal ≥ 1, got 0",
                "`judge_samples` must be an integer literal ≥ 1, got 2.0",
            ]
        );
        assert_eq!(
            messages(quote!(dataset = "", k = -3, k2 = 1, mode = "chrome")),
            [
                "`dataset` is empty: give the dataset's path relative to the crate root",
                "`k` must be an integer literal ≥ 1, got -3",
                "unknown key `k2`, did you mean `k`?",
                "unknown mode `chrome`, did you mean `chroma`?",
            ]
        );
    }

    #[test]
    fn a_missing_dataset_is_reported_with_the_other_problems() {
        assert_eq!(
            messages(quote!(k = 3, datset = "x")),
            [
                "unknown key `datset`, did you mean `dataset`?",
                "missing `dataset = \"…\"`: every case needs the path of its dataset, relative \
                 to the crate root",
            ]
        );
        assert_eq!(messages(quote!()).len(), 1);
    }

    #[test]
    fn contradictory_bars_are_reported_at_the_later_one() {
        assert_eq!(
            messages(quote!(dataset = "d", max_recall = 0.5, min_recall = 0.9, min_mrr = 0.5, max_mrr = 0.5)),
            ["`min_recall = 0.9` contradicts `max_recall = 0.5`: no figure is at least 0.9 and at most 0.5"]
        );
    }

    #[test]
    fn syntax_errors_stop_the_parse_but_keep_earlier_errors() {
        assert_eq!(
            messages(quote!(dataset = "d", tolerence = 0.1, k = 5 5, mode = 1)),
            [
                "unknown key `tolerence`, did you mean `tolerance`?",
                "expected `,`",
            ]
        );
        assert_eq!(messages(quote!(k = 5 5, dataset = "d")), ["expected `,`"]);
        assert_eq!(
            messages(quote!(dataset: "d", k: 0, per_query = true)),
            [
                "expected `=`, found `:`",
                "expected `=`, found `:`",
                "`k` must be an integer literal ≥ 1, got 0",
            ]
        );
        assert_eq!(
            messages(quote!(dataset = "d", a::b = 1)),
            ["expected a key such as `dataset`, found the path `a::b`"]
        );
    }

    #[test]
    fn numbers_keep_their_text_and_sign() {
        let parse = |tokens: TokenStream| number(&syn::parse2(tokens).unwrap());
        assert_eq!(
            parse(quote!(-0.25)),
            Some(Number {
                value: -0.25,
                integer: None,
                text: "-0.25".into()
            })
        );
        assert_eq!(
            parse(quote!(1_000usize)),
            Some(Number {
                value: 1000.0,
                integer: Some(1000),
                text: "1000".into()
            })
        );
        assert_eq!(parse(quote!(--1)), None);
        assert_eq!(parse(quote!(x)), None);
        assert_eq!(parse(quote!("1")), None);
    }

    #[test]
    fn an_agreement_with_labels() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let check = |tokens: TokenStream| {
            let mut errors = Errors::default();
            let args = parse(tokens, Some(root), &mut errors);
            (args, errors.messages())
        };
        let (args, problems) = check(quote!(dataset = "Cargo.toml", min_agreement = 0.6));
        assert_eq!(problems, Vec::<String>::new());
        assert_eq!(
            (args.min_agreement, args.labels, args.agreement_threshold),
            (Some(0.6), None, DEFAULT_AGREEMENT_THRESHOLD),
            "not a bar on a metric `agreement`"
        );
        assert!(args.thresholds.is_empty());
        let (args, problems) = check(quote!(
            dataset = "Cargo.toml",
            min_agreement = 0.6,
            labels = "Cargo.toml",
            agreement_threshold = 1
        ));
        assert_eq!(problems, Vec::<String>::new());
        assert_eq!(
            (args.labels.as_deref(), args.agreement_threshold),
            (Some("Cargo.toml"), 1.0)
        );
        let (_, problems) = check(quote!(
            dataset = "Cargo.toml",
            labels = "golden/none.jsonl",
            agreement_threshold = 1,
            min_agreement = 1.5
        ));
        assert_eq!(
            problems,
            [
                "labels file `golden/none.jsonl` does not exist relative to the crate root",
                "`min_agreement` must be between 0 and 1, got 1.5",
                "`labels` needs `min_agreement = 0.6`: the least agreement of the case's figures with the labels",
                "`agreement_threshold` needs `min_agreement = 0.6`: the least agreement of the case's figures with the labels",
            ]
        );
    }

    #[test]
    fn criteria_files_must_exist_and_need_a_judge() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let check = |tokens: TokenStream| {
            let mut errors = Errors::default();
            let args = parse(tokens, Some(root), &mut errors);
            (args, errors.messages())
        };
        let (args, problems) = check(quote!(
            dataset = "Cargo.toml",
            judge = j,
            criteria = "Cargo.toml"
        ));
        assert_eq!(problems, Vec::<String>::new());
        assert_eq!(args.criteria.len(), 1);
        let (_, problems) = check(quote!(
            dataset = "Cargo.toml",
            criteria = ["Cargo.toml", "judges/none.md"]
        ));
        assert_eq!(
            problems,
            [
                "criteria file `judges/none.md` does not exist relative to the crate root",
                "`criteria` needs `judge = my_judge_client`: a function returning the `LlmClient` that judges them",
            ]
        );
        let (_, problems) = check(quote!(dataset = "Cargo.toml", judge = j, criteria = []));
        assert_eq!(
            problems,
            ["`criteria` is empty, e.g. `criteria = \"judges/cites_sources.md\"`"]
        );
    }

    #[test]
    fn paths_are_checked_against_the_root() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let check = |tokens: TokenStream| {
            let mut errors = Errors::default();
            let args = parse(tokens, Some(root), &mut errors);
            (args, errors.messages())
        };
        let (args, problems) = check(quote!(dataset = "Cargo.toml", corpus = "src"));
        assert_eq!(problems, Vec::<String>::new());
        assert_eq!(
            (args.dataset.as_str(), args.corpus.as_deref()),
            ("Cargo.toml", Some("src"))
        );
        let (_, problems) = check(quote!(dataset = "golden/none.jsonl", corpus = "nowhere"));
        assert_eq!(
            problems,
            [
                "dataset `golden/none.jsonl` does not exist relative to the crate root",
                "corpus folder `nowhere` does not exist relative to the crate root",
            ]
        );
        let (_, problems) = check(quote!(dataset = "src", corpus = "Cargo.toml"));
        assert_eq!(
            problems,
            [
                "dataset `src` is a folder; expected a file",
                "corpus folder `Cargo.toml` is a file; expected a folder",
            ]
        );
    }
}
