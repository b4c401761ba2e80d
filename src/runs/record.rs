//! [`RunRecord`]: one run, everything needed to say what was measured, on what, and how it
//! scored; and its JSON form, the interchange format of `rag-eval runs export`/`import`.

use super::id::RunId;
use super::provenance::GitInfo;
use crate::error::{Result, RunRecordError};
use crate::metrics::{Figures, ResultLevel, RunConfig, RunResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The version of the JSON form this code writes ([`RunRecord::format`]). Fields may be added
/// without a new version (readers ignore fields they do not know); a field removed or changed
/// in meaning makes a new version. [`RunRecord::from_json`] also reads format 1 (before
/// `usage` was split into generator, judge and embedding) and format 2 (before the record's
/// settings and its result's configuration became one `config`), converting them.
pub const FORMAT_VERSION: u32 = 3;

/// A run: its id and time, where it came from (command, git commit), its inputs (dataset and
/// corpus fingerprints), its configuration, its [`RunResult`] (per-query figures of every
/// metric, difficulty labels), timings and token usage.
///
/// The JSON form (serde) is a public contract, documented in `docs/reference/commands.md`
/// (*`rag-eval runs`*):
///
/// ```json
/// {"format":3,"id":"01JDX3V8Q2M7R4K9N0T5W6Y1ZB","created":"2026-11-24T01:02:03.456Z",
///  "origin":"eval","label":"recursive:size=400",
///  "git":{"commit":"9fceb02…","dirty":false},
///  "dataset":{"path":"golden/datasets/handbook.jsonl","hash":"5d41402abc4b2a76"},
///  "corpus":{"path":"docs","documents":12,"fingerprint":"7c211433f0207158"},
///  "config":{"retriever":"bm25(k1=1.2,b=0.75) over recursive:…","spec":"bm25:…",
///            "chunker":"recursive:…","dataset":"golden/datasets/handbook.jsonl","corpus_documents":12},
///  "result":{"level":"token","k":5,"mode":"standard","queries":40,"metrics":{…},…},
///  "timings_ms":{"index":12.5,"retrieve":3.1,"score":0.4},
///  "usage":{"prompt_tokens":0,"completion_tokens":0,"embedding_tokens":1234}}
/// ```
///
/// ```
/// use rag_eval::metrics::{ResultLevel, RunResult};
/// use rag_eval::runs::{RunRecord, FORMAT_VERSION};
///
/// let result = RunResult::from_queries(ResultLevel::Chunk, vec!["mrr".into()], Vec::new());
/// let run = RunRecord::new("score", "golden/datasets/tiny.jsonl", result);
/// assert_eq!(run.format, FORMAT_VERSION);
/// let json = run.to_json();
/// assert_eq!(RunRecord::from_json(&json)?, run);
/// # Ok::<(), rag_eval::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The version of this JSON form: [`FORMAT_VERSION`].
    pub format: u32,
    /// Sortable by time of creation.
    pub id: RunId,
    /// When the run was recorded: RFC 3339, UTC, milliseconds.
    pub created: String,
    /// What made the run: `eval`, `score`, `harness`, or a name of the caller's choosing.
    pub origin: String,
    /// A short name within its origin: the chunker compared by `eval`, the harness case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The commit of the repository the run was made in, when it was made in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitInfo>,
    /// The ground truth.
    pub dataset: DatasetInfo,
    /// The corpus retrieved from, when the run knows it (`score` without `--corpus` does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corpus: Option<CorpusInfo>,
    /// What was evaluated, as specs: the result's [`RunResult::config`], kept here (the
    /// stored `result` has none), and what the command added (judges, cache, input files).
    #[serde(default)]
    pub config: RunConfig,
    /// The figures: means, standard deviations, per-query values, per-difficulty means.
    pub result: RunResult,
    /// Wall-clock milliseconds per phase (`index`, `retrieve`, `score`, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub timings_ms: BTreeMap<String, f64>,
    /// Tokens spent and their cost, where the providers reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// The dataset a run was scored against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatasetInfo {
    /// The path as given (TREC scoring: the qrels file).
    pub path: String,
    /// The content hash ([`dataset_hash`](crate::eval::Evaluation::dataset_hash); TREC: of the qrels file), the
    /// key that says two runs are comparable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
}

/// The corpus a run retrieved from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorpusInfo {
    /// The folder as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Number of documents.
    pub documents: usize,
    /// [`corpus_fingerprint`](super::corpus_fingerprint) over ids and contents.
    pub fingerprint: String,
}

/// Tokens a run spent and their cost, as far as the providers reported them, split by who
/// spent them: the generator under test, the LLM judges, the embedder. A part the run had
/// none of is left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// The generator's chat calls (`eval --answers`, harness cases that answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<Spend>,
    /// The LLM judges' chat calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<Spend>,
    /// The embedder's calls (embedded texts count as prompt tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<Spend>,
}

/// What one part of a run spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spend {
    /// Tokens sent (for an embedder: tokens embedded).
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Tokens answered with (none for an embedder).
    #[serde(default)]
    pub completion_tokens: u64,
    /// What it cost in US dollars, when a price was known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl Spend {
    /// An embedder's spend: `tokens` embedded, and the cost when a price was known.
    pub fn embedded(tokens: u64, cost_usd: Option<f64>) -> Spend {
        Spend {
            prompt_tokens: tokens,
            completion_tokens: 0,
            cost_usd,
        }
    }

    /// Prompt and completion tokens, no cost.
    pub fn tokens(prompt_tokens: u64, completion_tokens: u64) -> Spend {
        Spend {
            prompt_tokens,
            completion_tokens,
            cost_usd: None,
        }
    }

    /// What the judges of `summaries` spent together; `None` without any.
    #[cfg(feature = "answers")]
    pub fn of_judges(summaries: &[crate::judge::JudgeSummary]) -> Option<Spend> {
        let mut total = crate::metrics::JudgeUsage::default();
        for s in summaries {
            total.add(&s.usage);
        }
        (!summaries.is_empty()).then(|| Spend::tokens(total.prompt_tokens, total.completion_tokens))
    }

    /// Prompt and completion tokens together.
    pub fn total(&self) -> u64 {
        crate::metrics::add_tokens(self.prompt_tokens, self.completion_tokens)
    }
}

/// The `usage` of a format-1 record: chat tokens (only judges wrote them) and the tokens the
/// cache counted, LLM calls it wrapped included.
#[derive(Deserialize)]
struct UsageV1 {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    embedding_tokens: u64,
    #[serde(default)]
    cost_usd: Option<f64>,
}

impl From<UsageV1> for Usage {
    fn from(u: UsageV1) -> Usage {
        let chat = u.prompt_tokens > 0 || u.completion_tokens > 0;
        let embedded = u.embedding_tokens > 0 || u.cost_usd.is_some();
        Usage {
            generator: None,
            judge: chat.then(|| Spend::tokens(u.prompt_tokens, u.completion_tokens)),
            embedding: embedded.then_some(Spend {
                prompt_tokens: u.embedding_tokens,
                completion_tokens: 0,
                cost_usd: u.cost_usd,
            }),
        }
    }
}

/// The `config` of a format-1 or format-2 record: every component's spec (`retriever` the
/// retriever's), and `k` and `mode` again, which the result holds.
#[derive(Deserialize)]
struct SettingsV2 {
    #[serde(default)]
    retriever: Option<String>,
    #[serde(default)]
    chunker: Option<String>,
    #[serde(default)]
    embedder: Option<String>,
    #[serde(default)]
    store: Option<String>,
    #[serde(default)]
    reranker: Option<String>,
    #[serde(default)]
    generator: Option<String>,
    #[serde(default)]
    generator_model: Option<String>,
    #[serde(default)]
    generator_prompt: Option<String>,
    #[serde(default)]
    judge_models: Vec<String>,
    #[serde(default)]
    judge_samples: Option<u32>,
    #[serde(default)]
    judge_prompts: Vec<String>,
    #[serde(default)]
    extra: BTreeMap<String, String>,
}

impl SettingsV2 {
    /// One configuration of these settings and the result's configuration `of_result` (the
    /// retriever's description, spec, chunker, dataset and corpus size), which says the same
    /// of the retriever where both have it.
    fn joined(self, of_result: Option<RunConfig>) -> RunConfig {
        let c = of_result.unwrap_or_default();
        RunConfig {
            retriever: c.retriever,
            spec: c.spec.or(self.retriever),
            chunker: c.chunker.or(self.chunker),
            embedder: self.embedder,
            store: self.store,
            reranker: self.reranker,
            dataset: c.dataset,
            corpus_documents: c.corpus_documents,
            generator: self.generator,
            generator_model: self.generator_model,
            generator_prompt: self.generator_prompt,
            judge_models: self.judge_models,
            judge_samples: self.judge_samples,
            judge_prompts: self.judge_prompts,
            extra: self.extra,
        }
    }
}

/// A record of format 1 (its `usage` a [`UsageV1`]) or 2 (a [`Usage`]) read as this version:
/// its usage converted, its settings and its result's configuration joined into one
/// `config` ([`SettingsV2::joined`]).
fn from_earlier<U: serde::de::DeserializeOwned + Into<Usage>>(
    text: &str,
    format: u64,
) -> Result<RunRecord> {
    #[derive(Deserialize)]
    #[serde(bound = "V: Deserialize<'de>")]
    struct Earlier<V> {
        config: SettingsV2,
        #[serde(default)]
        usage: Option<V>,
        #[serde(flatten)]
        record: RunRecord,
    }
    let earlier: Earlier<U> = serde_json::from_str(text).map_err(|e| RunRecordError::Invalid {
        earlier: Some(format),
        message: e.to_string(),
    })?;
    let mut record = earlier.record;
    record.format = FORMAT_VERSION;
    record.usage = earlier.usage.map(Into::into);
    record.config = earlier.config.joined(record.result.config.take());
    Ok(record)
}

/// What `rag-eval runs list` shows of a run: enough to pick one without reading per-query
/// figures. Its JSON form is the `runs list --json` contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The run's id.
    pub id: RunId,
    /// When it was recorded.
    pub created: String,
    /// What made it.
    pub origin: String,
    /// Its label, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The dataset's path.
    pub dataset: String,
    /// The dataset's hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_hash: Option<String>,
    /// The retriever's spec ([`RunConfig::retriever_spec`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retriever: Option<String>,
    /// The RAG service's spec, for a run of `eval --rag` ([`RunConfig::rag_spec`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rag: Option<String>,
    /// The ground truth's level.
    pub level: ResultLevel,
    /// The cut-off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<usize>,
    /// Number of queries.
    pub queries: usize,
    /// The git commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitInfo>,
    /// The mean of every metric.
    pub metrics: Figures,
    /// Why the store could not read the run's summary, for a row shown by its id and time
    /// alone (every other field then empty); absent for a readable run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

impl RunSummary {
    /// The summary a store keeps as JSON (`text`) for the run `id` recorded at `created`; when
    /// it cannot be read, a row that says so instead of an error, so that one bad row never
    /// hides the others (or stops them being deleted).
    pub fn from_stored(id: RunId, created: &str, text: &str) -> RunSummary {
        serde_json::from_str(text).unwrap_or_else(|e| RunSummary {
            id,
            created: created.to_owned(),
            origin: String::new(),
            label: None,
            dataset: String::new(),
            dataset_hash: None,
            retriever: None,
            rag: None,
            level: ResultLevel::Token,
            k: None,
            queries: 0,
            git: None,
            metrics: Figures::default(),
            unreadable: Some(format!("unreadable summary: {e}")),
        })
    }
}

impl RunRecord {
    /// A record made now ([`RunId::new`], the current time and git commit) of `result`, made by
    /// `origin` against the dataset at `dataset_path`. The dataset hash is taken from the
    /// result, and the configuration out of it ([`RunRecord::config`]).
    pub fn new(origin: &str, dataset_path: &str, mut result: RunResult) -> RunRecord {
        let config = result.config.take().unwrap_or_default();
        let id = RunId::new();
        RunRecord {
            format: FORMAT_VERSION,
            created: super::provenance::rfc3339_from_ms(id.timestamp_ms()),
            id,
            origin: origin.to_owned(),
            label: None,
            git: GitInfo::current(),
            dataset: DatasetInfo {
                path: dataset_path.to_owned(),
                hash: result.dataset_hash.clone(),
            },
            corpus: None,
            config,
            result,
            timings_ms: BTreeMap::new(),
            usage: None,
        }
    }

    /// The record with what it knows of `corpus` (read from the folder `path`, if any): its
    /// size and [fingerprint](super::corpus_fingerprint).
    pub fn with_corpus(mut self, corpus: &crate::corpus::Corpus, path: Option<&str>) -> Self {
        self.corpus = Some(CorpusInfo {
            path: path.map(str::to_owned),
            documents: corpus.len(),
            fingerprint: super::corpus_fingerprint(corpus),
        });
        self
    }

    /// The record with an evaluation's timings (`index`, `retrieve`, `score`, and `generate`
    /// and `judge` for runs that had them).
    pub fn with_timings(mut self, t: &crate::eval::Timings) -> Self {
        self.timings_ms.insert("index".into(), t.index_ms);
        self.timings_ms.insert("retrieve".into(), t.retrieve_ms);
        self.timings_ms.insert("score".into(), t.score_ms);
        if let Some(ms) = t.generate_ms {
            self.timings_ms.insert("generate".into(), ms);
        }
        if let Some(ms) = t.judge_ms {
            self.timings_ms.insert("judge".into(), ms);
        }
        self
    }

    /// The run's result as reports and comparisons take it: with the record's configuration,
    /// the record's dataset path and corpus size where the configuration has none (`score`
    /// runs), and the record's dataset hash where the result has none (`eval --rag` and
    /// `score --answers` runs).
    pub fn into_result(self) -> RunResult {
        let mut result = self.result;
        let mut config = self.config;
        if config.dataset.is_none() {
            config.dataset = Some(self.dataset.path);
        }
        if config.corpus_documents.is_none() {
            config.corpus_documents = self.corpus.map(|c| c.documents);
        }
        if result.dataset_hash.is_none() {
            result.dataset_hash = self.dataset.hash;
        }
        result.config = Some(config);
        result
    }

    /// The record as one line of JSON (no newline).
    pub fn to_json(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A record from its JSON form, records of formats 1 and 2 converted to this one. A later
    /// `format` is refused with an error that names both ([`RunRecordError::OtherFormat`]).
    pub fn from_json(text: &str) -> Result<RunRecord> {
        // Read straight from the text, never through `serde_json::Value`, whose maps would
        // sort the metrics by name.
        #[derive(Deserialize)]
        struct Head {
            format: Option<serde_json::Value>,
        }
        let head: Head =
            serde_json::from_str(text).map_err(|e| RunRecordError::NotJson(e.to_string()))?;
        match head.format.as_ref().and_then(serde_json::Value::as_u64) {
            Some(v) if v == u64::from(FORMAT_VERSION) => {}
            Some(1) => return from_earlier::<UsageV1>(text, 1),
            Some(2) => return from_earlier::<Usage>(text, 2),
            Some(found) => {
                return Err(RunRecordError::OtherFormat {
                    found,
                    reads: FORMAT_VERSION.into(),
                }
                .into())
            }
            None => return Err(RunRecordError::NoFormat.into()),
        }
        serde_json::from_str(text).map_err(|e| {
            RunRecordError::Invalid {
                earlier: None,
                message: e.to_string(),
            }
            .into()
        })
    }

    /// Tokens the run's chat calls spent (generator and judges), to add to its usage.
    pub fn add_chat_usage(&mut self, generator: Option<Spend>, judge: Option<Spend>) {
        let usage = self.usage.get_or_insert_with(Usage::default);
        let add = |part: &mut Option<Spend>, more: Option<Spend>| {
            if let Some(m) = more {
                let p = part.get_or_insert_with(Spend::default);
                p.prompt_tokens = crate::metrics::add_tokens(p.prompt_tokens, m.prompt_tokens);
                p.completion_tokens =
                    crate::metrics::add_tokens(p.completion_tokens, m.completion_tokens);
            }
        };
        add(&mut usage.generator, generator);
        add(&mut usage.judge, judge);
    }

    /// What `runs list` shows of the run.
    pub fn summary(&self) -> RunSummary {
        RunSummary {
            id: self.id.clone(),
            created: self.created.clone(),
            origin: self.origin.clone(),
            label: self.label.clone(),
            dataset: self.dataset.path.clone(),
            dataset_hash: self.dataset.hash.clone(),
            retriever: self.config.retriever_spec().map(str::to_owned),
            rag: self.config.rag_spec().map(str::to_owned),
            level: self.result.level,
            k: self.result.k,
            queries: self.result.queries,
            git: self.git.clone(),
            metrics: self.result.metrics.clone(),
            unreadable: None,
        }
    }

    /// Refuses a record that holds a NaN or infinite figure ([`RunResult::non_finite`]): JSON
    /// cannot hold it, and a store must only keep what it can read back.
    pub fn check_storable(&self) -> Result<()> {
        match self.result.non_finite() {
            Some(what) => Err(RunRecordError::NotStorable {
                run: self.id.to_string(),
                what,
            }
            .into()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{QueryResult, SpanMode};
    use crate::spec::{Kind, Spec};

    fn sample() -> RunRecord {
        let q = |id: &str, d: Option<&str>, r: f64| QueryResult {
            id: id.into(),
            query: Some(format!("question {id}")),
            difficulty: d.map(str::to_owned),
            metrics: Figures(vec![("span_recall@5".into(), r), ("mrr".into(), 1.0 - r)]),
            ..QueryResult::default()
        };
        let mut result = RunResult::from_queries(
            ResultLevel::Token,
            vec!["span_recall@5".into(), "mrr".into()],
            vec![q("q1", Some("hard"), 0.25), q("q2", None, 1.0)],
        );
        result.k = Some(5);
        result.mode = Some(SpanMode::Standard);
        result.group_by_difficulty();
        result.dataset_hash = Some("0123456789abcdef".into());
        result.config = Some(RunConfig {
            dataset: Some("d.jsonl".into()),
            corpus_documents: Some(2),
            ..RunConfig::of_retriever(
                "dense over recursive".into(),
                &Spec::parse(
                    Kind::Retriever,
                    "dense:chunker=recursive(size=400),embedder=hashing(dim=64),store=memory",
                )
                .unwrap()
                .into(),
                None,
            )
        });
        let mut run = RunRecord::new("eval", "d.jsonl", result);
        run.id = RunId::from_parts(1_700_000_000_000, 42);
        run.created = "2023-11-14T22:13:20.000Z".into();
        run.git = Some(GitInfo {
            commit: "a".repeat(40),
            dirty: true,
        });
        run.label = Some("recursive:size=400".into());
        run.corpus = Some(CorpusInfo {
            path: Some("docs".into()),
            documents: 2,
            fingerprint: "fedcba9876543210".into(),
        });
        run.config.judge_models = vec!["gpt-4o-mini".into()];
        run.timings_ms.insert("index".into(), 1.5);
        run.usage = Some(Usage {
            embedding: Some(Spend {
                prompt_tokens: 10,
                completion_tokens: 0,
                cost_usd: Some(0.25),
            }),
            ..Usage::default()
        });
        run
    }

    #[test]
    fn the_configuration_is_kept_once_and_given_back_with_the_result() {
        let run = sample();
        assert_eq!(run.result.config, None);
        let c = &run.config;
        assert_eq!(c.retriever.as_deref(), Some("dense over recursive"));
        assert_eq!(c.embedder.as_deref(), Some("hashing:dim=64"));
        assert_eq!(c.judge_models, ["gpt-4o-mini"]);
        assert_eq!(run.dataset.hash.as_deref(), Some("0123456789abcdef"));
        assert_eq!(
            run.summary().retriever.as_deref(),
            Some("dense:chunker=recursive(size=400),embedder=hashing(dim=64),store=memory")
        );
        let config = run.config.clone();
        assert_eq!(run.into_result().config, Some(config));
        // A run whose result had none (`score`) gets the record's dataset and corpus.
        let mut score = sample();
        score.config = RunConfig::default();
        let c = score.into_result().config.unwrap();
        assert_eq!(c.dataset.as_deref(), Some("d.jsonl"));
        assert_eq!(c.corpus_documents, Some(2));
    }

    #[test]
    fn json_form_is_stable_and_round_trips() {
        let run = sample();
        let json = run.to_json();
        assert!(
            json.starts_with(
                r#"{"format":3,"id":"01HF7YAT00000000000000001A","created":"2023-11-14T22:13:20.000Z","origin":"eval","label":"recursive:size=400","git":{"commit":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","dirty":true},"dataset":{"path":"d.jsonl","hash":"0123456789abcdef"},"corpus":{"path":"docs","documents":2,"fingerprint":"fedcba9876543210"},"config":{"retriever":"dense over recursive","spec":"dense:chunker=recursive(size=400),embedder=hashing(dim=64),store=memory","chunker":"recursive:size=400","embedder":"hashing:dim=64","store":"memory","dataset":"d.jsonl","corpus_documents":2,"judge_models":["gpt-4o-mini"]},"result":{"level":"token","k":5,"mode":"standard","queries":2,"#
            ),
            "{json}"
        );
        assert!(json.ends_with(
            r#""timings_ms":{"index":1.5},"usage":{"embedding":{"prompt_tokens":10,"completion_tokens":0,"cost_usd":0.25}}}"#
        ));
        assert_eq!(RunRecord::from_json(&json).unwrap(), run);
        // Fields a later version adds are ignored.
        let extended = json.replacen("{\"format\":3,", "{\"format\":3,\"future\":[1],", 1);
        assert_eq!(RunRecord::from_json(&extended).unwrap(), run);
    }

    #[test]
    fn other_formats_and_broken_records_are_refused() {
        let json = sample().to_json();
        let newer = json.replacen("\"format\":3", "\"format\":4", 1);
        let e = RunRecord::from_json(&newer).unwrap_err().to_string();
        assert!(
            e.contains("format 4 is not the one this rag-eval reads (3); upgrade"),
            "{e}"
        );
        let e = RunRecord::from_json(r#"{"id":"x"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no numeric `format`"), "{e}");
        let e = RunRecord::from_json(r#"{"format":3,"id":"nope"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`nope` is not a run id"), "{e}");
        assert!(RunRecord::from_json("{")
            .unwrap_err()
            .to_string()
            .contains("not valid JSON"));
    }

    proptest::proptest! {
        /// Every figure reads back to the same bits (serde_json's `float_roundtrip`).
        #[test]
        fn figures_read_back_bit_for_bit(values in proptest::collection::vec(0.0f64..=1.0, 1..20)) {
            let mut run = sample();
            run.result.per_query[0].metrics.0[0].1 = values[0];
            run.result.std.0 = values.iter().enumerate().map(|(i, v)| (format!("m{i}"), *v)).collect();
            let back = RunRecord::from_json(&run.to_json()).unwrap();
            proptest::prop_assert_eq!(back, run);
        }
    }

    #[test]
    fn summary_has_the_means() {
        let s = sample().summary();
        assert_eq!(s.metrics.get("span_recall@5"), Some(0.625));
        assert_eq!(s.queries, 2);
        assert_eq!(s.dataset_hash.as_deref(), Some("0123456789abcdef"));
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<RunSummary>(&json).unwrap(), s);
    }
}
