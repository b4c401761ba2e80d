//! The one shape of results: [`QueryResult`] per query and [`RunResult`] per run, for
//! `rag-eval score`, evaluations, the test harness and TREC scoring alike.
//!
//! Both serialise to the JSON that `rag-eval score --json` and `rag-eval eval --json` print
//! (fields a kind of run has no value for are left out) and read back from it, so a run can be
//! stored and compared later.

use super::{mean_std, Passage, QueryJudgement, SpanMode, Truth, TurnResult};
use crate::level::LevelKind;
use crate::spec::Value;
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;

/// Named figures in a fixed order (the order the metrics were given in), serialised as a JSON
/// object with keys in that order, and read back in the order written.
///
/// JSON has no NaN or infinity: serde writes them as `null`. A `null` figure reads back as a
/// missing one, so a record or a `score --json` file holding one stays readable.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures(pub Vec<(String, f64)>);

impl Figures {
    /// A figure by name.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }

    /// The names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(n, _)| n.as_str())
    }

    /// The values, in order.
    pub fn values(&self) -> impl Iterator<Item = f64> + '_ {
        self.0.iter().map(|(_, v)| *v)
    }

    /// Whether there is no figure.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Figures {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Figures {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct InOrder;
        impl<'de> Visitor<'de> for InOrder {
            type Value = Figures;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of metric names to numbers")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Figures, A::Error> {
                let mut v = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some((name, value)) = map.next_entry::<String, Option<f64>>()? {
                    if let Some(value) = value {
                        v.push((name, value));
                    }
                }
                Ok(Figures(v))
            }
        }
        d.deserialize_map(InOrder)
    }
}

/// What a run's ground truth was: chunk ids, character spans, or TREC qrels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResultLevel {
    /// A chunk-level dataset.
    Chunk,
    /// A token-level dataset.
    Token,
    /// TREC qrels and a run file.
    Trec,
    /// Conversations: one result per conversation, its transcript in
    /// [`QueryResult::turns`].
    Conversation,
}

impl ResultLevel {
    /// `chunk`, `token`, `trec` or `conversation`.
    pub fn as_str(self) -> &'static str {
        match self {
            ResultLevel::Chunk => "chunk",
            ResultLevel::Token => "token",
            ResultLevel::Trec => "trec",
            ResultLevel::Conversation => "conversation",
        }
    }
}

impl From<LevelKind> for ResultLevel {
    fn from(k: LevelKind) -> Self {
        match k {
            LevelKind::Chunk => ResultLevel::Chunk,
            LevelKind::Token => ResultLevel::Token,
        }
    }
}

impl fmt::Display for ResultLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The figures of one query.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QueryResult {
    /// The query's id.
    pub id: String,
    /// The query text (evaluations fill it in; `rag-eval score` leaves it out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The query's difficulty label, when the dataset has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difficulty: Option<String>,
    /// Metric values, by report name, in report order.
    pub metrics: Figures,
    /// What the query should have found (evaluations fill it in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truth: Option<Truth>,
    /// What was retrieved for it, best first (evaluations fill it in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieved: Option<Vec<Passage>>,
    /// The answer the system under test gave (runs that scored answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The passages the answer was given, in the order the generator saw them: the chunks
    /// retrieved for it (`eval --answers`) or the answers file's contexts (`score --answers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contexts: Option<Vec<Passage>>,
    /// The row's reference answers, for runs that scored answers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<String>,
    /// What each LLM judge said of the answer: every sample with its status, score, details
    /// (statements, verdicts, support spans, reasons, generated questions) and error message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judges: Vec<QueryJudgement>,
    /// A conversation's transcript, turn by turn, with each turn's figures (conversation
    /// runs); the conversation's own figures are in `metrics`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<TurnResult>,
}

impl QueryResult {
    /// The figure `name`, expected at position `i` (where it is when the query has every
    /// metric); `None` when the query has no figure for it.
    fn figure(&self, i: usize, name: &str) -> Option<f64> {
        match self.metrics.0.get(i) {
            Some((n, v)) if n == name => Some(*v),
            _ => self.metrics.get(name),
        }
    }
}

/// Means over the queries with one difficulty label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DifficultyScores {
    /// Number of queries with the label.
    pub queries: usize,
    /// Mean of each metric over them.
    pub metrics: Figures,
}

/// What a run evaluated: every component as the [spec](crate::spec) that rebuilds it, where the
/// data came from, and what else shaped the run (the generator and judges of answers, a cache
/// mode, an input file). One type for every kind of run: `rag-eval eval --json` prints it as
/// the result's `config`, and a run record stores it once, as the record's `config`. Fields a
/// run has no value for are `None` or empty, and left out of the JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// The retriever's description for reports ([`Retriever::name`](crate::retrieve::Retriever::name)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retriever: Option<String>,
    /// The spec that rebuilds the retriever, its components included
    /// ([`Retriever::spec`](crate::retrieve::Retriever::spec)); its name for retrievers no
    /// spec builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
    /// The chunker's spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunker: Option<String>,
    /// The embedder's spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder: Option<String>,
    /// The vector store's spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// The reranker's spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reranker: Option<String>,
    /// Where the dataset came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    /// Number of documents in the corpus.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corpus_documents: Option<usize>,
    /// The answer generator's spec, for runs that generated answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<String>,
    /// The generator's model, as its server names it, when rag-eval called the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_model: Option<String>,
    /// The generator's prompt version (`answer/1`): answers are comparable only when made with
    /// the same prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_prompt: Option<String>,
    /// The models of the LLM judges that scored answers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judge_models: Vec<String>,
    /// Judgings per answer, for runs whose answers were judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_samples: Option<u32>,
    /// The judges' prompt versions (`faithfulness/1`, …): a judge figure is comparable only
    /// with one made with the same prompt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judge_prompts: Vec<String>,
    /// Anything else that shaped the run, by name (a cache mode, an input file).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, String>,
}

impl RunConfig {
    /// The configuration of a retriever described as `name`, built by `spec` (what
    /// [`Retriever::spec`](crate::retrieve::Retriever::spec) returns), whose chunks come from
    /// `chunker` (what [`Retriever::chunker`](crate::retrieve::Retriever::chunker) returns):
    /// the retriever's `chunker` (when `chunker` is `None`), `embedder`, `store`
    /// and `reranker` components are the spec's nested ones when it has them. A spec that is
    /// text (a custom retriever's name) names the retriever alone.
    pub fn of_retriever(name: String, spec: &Value, chunker: Option<&Value>) -> RunConfig {
        let mut c = RunConfig {
            retriever: Some(name),
            chunker: chunker.map(Value::to_string),
            spec: Some(spec.to_string()),
            ..RunConfig::default()
        };
        if let Value::Spec(spec) = spec {
            let part = |key: &str| spec.get(key).map(Value::to_string);
            c.chunker = c.chunker.or_else(|| part("chunker"));
            c.embedder = part("embedder");
            c.store = part("store");
            c.reranker = part("reranker");
        }
        c
    }

    /// The spec that rebuilds the retriever, or, for a run that recorded none, its
    /// description.
    pub fn retriever_spec(&self) -> Option<&str> {
        self.spec.as_deref().or(self.retriever.as_deref())
    }

    /// The spec of the RAG service a run of `rag-eval eval --rag` asked.
    pub fn rag_spec(&self) -> Option<&str> {
        self.extra.get("rag").map(String::as_str)
    }

    /// What the run evaluated, as the tables that list runs name it: the retriever's spec
    /// ([`RunConfig::retriever_spec`]), else the RAG service's ([`RunConfig::rag_spec`]), else
    /// the file `rag-eval score` read (`answers FILE`, `retrieved FILE`, `run FILE`).
    pub fn system(&self) -> Option<String> {
        if let Some(spec) = self.retriever_spec().or(self.rag_spec()) {
            return Some(spec.to_owned());
        }
        ["answers", "retrieved", "run"]
            .iter()
            .find_map(|key| Some(format!("{key} {}", self.extra.get(*key)?)))
    }
}

/// A whole run's results: means, population standard deviations and per-query figures, with
/// what the run was (level, cut-off, span mode) and, for evaluations, its configuration.
///
/// Its JSON form is the `rag-eval score --json` contract (`level`, `k`, `mode`, `queries`,
/// `metrics`, `std`, `per_query`); TREC scoring writes `cutoffs` instead of `k` and `mode`;
/// evaluations add `by_difficulty`, `config` and `dataset_hash` (and `rag-eval eval` its
/// timings, which are not part of the result: they differ between identical runs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// What the ground truth was.
    pub level: ResultLevel,
    /// The cut-off every `@k` metric was computed at (none for TREC scoring, which has
    /// [`RunResult::cutoffs`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<usize>,
    /// TREC scoring: the distinct cut-offs of the measures, ascending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cutoffs: Option<Vec<usize>>,
    /// How span metrics counted characters (chunk-level runs record `standard`; none for TREC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<SpanMode>,
    /// Number of queries scored.
    pub queries: usize,
    /// Mean of each metric over queries.
    pub metrics: Figures,
    /// Population standard deviation of each metric over queries.
    pub std: Figures,
    /// Every query's figures, in input order.
    pub per_query: Vec<QueryResult>,
    /// Means per difficulty label, labels sorted (evaluations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_difficulty: Option<BTreeMap<String, DifficultyScores>>,
    /// What was evaluated (evaluations). A run record keeps it as its own `config`, not here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<RunConfig>,
    /// Identifies the dataset's content: the first 16 hex digits of SHA-256 over its rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_hash: Option<String>,
    /// People's labels by query id (each a metric name and its value), when some queries were
    /// labelled: what [`align`](crate::align) checks the figures against and what corrects a
    /// judge's mean.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, Figures>,
}

impl RunResult {
    /// A result from per-query figures, the metrics `names` in that order: the means and
    /// population standard deviations are computed here (0 and 0 without queries), nothing
    /// optional is set. A query without a figure for a metric (an answer metric for a row
    /// without a reference answer) is left out of that metric's mean, not counted as 0.
    pub fn from_queries(
        level: ResultLevel,
        names: Vec<String>,
        per_query: Vec<QueryResult>,
    ) -> RunResult {
        let mut result = RunResult {
            level,
            k: None,
            cutoffs: None,
            mode: None,
            queries: per_query.len(),
            metrics: Figures(Vec::with_capacity(names.len())),
            std: Figures(Vec::with_capacity(names.len())),
            per_query,
            by_difficulty: None,
            config: None,
            dataset_hash: None,
            labels: BTreeMap::new(),
        };
        result.add_means(&names);
        result
    }

    /// Appends the mean and population standard deviation over queries of each metric of
    /// `names`, figures the queries already hold (a query without one is left out of its
    /// mean), and, when [`RunResult::by_difficulty`] is filled, each group's mean of them (a
    /// group none of whose queries has a figure gets none).
    pub fn add_means(&mut self, names: &[String]) {
        let at = self.metrics.0.len();
        for (i, n) in names.iter().enumerate() {
            let values: Vec<f64> = self
                .per_query
                .iter()
                .filter_map(|q| q.figure(at + i, n))
                .collect();
            let (m, s) = mean_std(&values);
            self.metrics.0.push((n.clone(), m));
            self.std.0.push((n.clone(), s));
        }
        let per_query = &self.per_query;
        for (label, group) in self.by_difficulty.iter_mut().flatten() {
            for n in names {
                let values: Vec<f64> = per_query
                    .iter()
                    .filter(|q| q.difficulty.as_deref().unwrap_or("unlabelled") == label)
                    .filter_map(|q| q.metrics.get(n))
                    .collect();
                if !values.is_empty() {
                    group.metrics.0.push((n.clone(), mean_std(&values).0));
                }
            }
        }
    }

    /// How many queries have a figure of `metric` (`n`) and how many the run has (`N`), when a
    /// mean must say so beside it: the metric is judged (a query holds a judgement of it: the
    /// judge may have scored only some) or some query has no figure of it. `None` otherwise.
    pub fn coverage(&self, metric: &str) -> Option<(usize, usize)> {
        let n = self
            .per_query
            .iter()
            .filter(|q| q.metrics.get(metric).is_some())
            .count();
        let judged = || {
            self.per_query
                .iter()
                .any(|q| q.judges.iter().any(|j| j.metric == metric))
        };
        (n < self.per_query.len() || judged()).then_some((n, self.per_query.len()))
    }

    /// The first figure that is NaN or infinite (a mean, a standard deviation, a query's or a
    /// difficulty's figure), described for an error message: `the mean of \`recall\` is inf`.
    /// `None` when every figure is finite. JSON cannot hold such a figure: a run is checked
    /// before it is printed or recorded.
    pub fn non_finite(&self) -> Option<String> {
        let bad = |f: &Figures| f.0.iter().find(|(_, v)| !v.is_finite()).cloned();
        if let Some((n, v)) = bad(&self.metrics) {
            return Some(format!("the mean of `{n}` is not finite ({v})"));
        }
        if let Some((n, v)) = bad(&self.std) {
            return Some(format!(
                "the standard deviation of `{n}` is not finite ({v})"
            ));
        }
        for q in &self.per_query {
            if let Some((n, v)) = bad(&q.metrics) {
                return Some(format!("query `{}`: `{n}` is not finite ({v})", q.id));
            }
        }
        for (label, d) in self.by_difficulty.iter().flatten() {
            if let Some((n, v)) = bad(&d.metrics) {
                return Some(format!(
                    "the mean of `{n}` over `{label}` queries is not finite ({v})"
                ));
            }
        }
        None
    }

    /// The first line of a text report: `token-level, k = 5, mode = standard, 12 queries`
    /// (`trec, 12 queries` for TREC scoring, `conversation-level, 3 conversations` for
    /// conversations).
    pub fn headline(&self) -> String {
        let mut s = match self.level {
            ResultLevel::Trec => "trec".to_owned(),
            level => format!("{level}-level"),
        };
        if let Some(k) = self.k {
            s.push_str(&format!(", k = {k}"));
        }
        if let Some(mode) = self.mode {
            s.push_str(&format!(", mode = {mode}"));
        }
        let what = match self.level {
            ResultLevel::Conversation => "conversations",
            _ => "queries",
        };
        s.push_str(&format!(", {} {what}", self.queries));
        s
    }

    /// Position of a metric given by base name (`span_recall` for `span_recall@5`) or report
    /// name.
    pub fn metric_index(&self, base: &str) -> Option<usize> {
        self.metrics
            .names()
            .position(|n| super::ReportedName::parse(n).is_of(base))
    }

    /// Fills [`RunResult::by_difficulty`]: means per difficulty label (`unlabelled` for
    /// queries without one), labels sorted.
    pub fn group_by_difficulty(&mut self) {
        let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, q) in self.per_query.iter().enumerate() {
            let label = q.difficulty.clone().unwrap_or_else(|| "unlabelled".into());
            groups.entry(label).or_default().push(i);
        }
        let grouped = groups
            .into_iter()
            .map(|(label, idx)| {
                let figures = self
                    .metrics
                    .names()
                    .enumerate()
                    .map(|(m, name)| {
                        let values: Vec<f64> = idx
                            .iter()
                            .filter_map(|&i| self.per_query[i].figure(m, name))
                            .collect();
                        (name.to_owned(), mean_std(&values).0)
                    })
                    .collect();
                (
                    label,
                    DifficultyScores {
                        queries: idx.len(),
                        metrics: Figures(figures),
                    },
                )
            })
            .collect();
        self.by_difficulty = Some(grouped);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Kind, Spec};

    fn q(id: &str, difficulty: Option<&str>, values: &[(&str, f64)]) -> QueryResult {
        QueryResult {
            id: id.into(),
            query: None,
            difficulty: difficulty.map(str::to_owned),
            metrics: Figures(values.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect()),
            ..QueryResult::default()
        }
    }

    #[test]
    fn null_figures_read_as_missing_and_non_finite_ones_are_named() {
        let f: Figures = serde_json::from_str(r#"{"a":0.5,"b":null,"c":1}"#).unwrap();
        assert_eq!(f, Figures(vec![("a".into(), 0.5), ("c".into(), 1.0)]));
        let mut r = RunResult::from_queries(
            ResultLevel::Chunk,
            vec!["mrr".into()],
            vec![
                q("a", None, &[("mrr", 1e308)]),
                q("b", None, &[("mrr", 1e308)]),
            ],
        );
        assert_eq!(
            r.non_finite().as_deref(),
            Some("the mean of `mrr` is not finite (inf)")
        );
        r.metrics.0[0].1 = 1.0;
        r.std.0[0].1 = 0.0;
        r.per_query[1].metrics.0[0].1 = f64::NAN;
        assert_eq!(
            r.non_finite().as_deref(),
            Some("query `b`: `mrr` is not finite (NaN)")
        );
    }

    #[test]
    fn means_stds_and_groups_by_hand() {
        let mut r = RunResult::from_queries(
            ResultLevel::Token,
            vec!["span_recall@5".into(), "mrr".into()],
            vec![
                q("a", Some("hard"), &[("span_recall@5", 1.0), ("mrr", 0.5)]),
                q("b", None, &[("span_recall@5", 0.0), ("mrr", 1.0)]),
                q("c", Some("hard"), &[("span_recall@5", 0.5), ("mrr", 0.0)]),
            ],
        );
        assert_eq!(r.metrics.get("span_recall@5"), Some(0.5));
        assert_eq!(r.metrics.get("mrr"), Some(0.5));
        assert!((r.std.get("span_recall@5").unwrap() - (1.0f64 / 6.0).sqrt()).abs() < 1e-12);
        assert_eq!(r.metric_index("span_recall"), Some(0));
        assert_eq!(r.metric_index("mrr"), Some(1));
        assert_eq!(r.metric_index("recall"), None);
        r.group_by_difficulty();
        let groups = r.by_difficulty.as_ref().unwrap();
        assert_eq!(groups.keys().collect::<Vec<_>>(), ["hard", "unlabelled"]);
        assert_eq!(groups["hard"].queries, 2);
        assert_eq!(groups["hard"].metrics.get("span_recall@5"), Some(0.75));
        assert_eq!(groups["unlabelled"].metrics.get("mrr"), Some(1.0));
    }

    /// A judge that scored 1 of 5 queries (4 invalid): its mean says so beside it, as does a
    /// judged mean over all of them; a retrieval metric over every query does not.
    #[test]
    fn a_judged_mean_says_how_many_queries_it_covers() {
        use crate::metrics::{JudgeDetails, JudgeSample, JudgeStatus, QueryJudgement};
        let judgement = |id: &str, metric: &str, score: Option<f64>| QueryJudgement {
            metric: metric.into(),
            query_id: id.into(),
            samples: vec![JudgeSample {
                sample: 0,
                status: if score.is_some() {
                    JudgeStatus::Ok
                } else {
                    JudgeStatus::Invalid
                },
                score,
                details: JudgeDetails::None,
                message: None,
                kind: None,
                usage: Default::default(),
            }],
        };
        let queries = (0..5)
            .map(|i| {
                let id = format!("q{i}");
                let faithful = (i == 0).then_some(1.0 / 3.0);
                let mut query = q(&id, None, &[("mrr", 1.0), ("polite", 1.0)]);
                if let Some(v) = faithful {
                    query.metrics.0.push(("faithfulness".into(), v));
                }
                query.judges = vec![
                    judgement(&id, "faithfulness", faithful),
                    judgement(&id, "polite", Some(1.0)),
                ];
                query
            })
            .collect();
        let names = ["mrr", "faithfulness", "polite"].map(String::from).to_vec();
        let r = RunResult::from_queries(ResultLevel::Token, names, queries);
        assert_eq!(r.coverage("faithfulness"), Some((1, 5)));
        assert_eq!(r.coverage("polite"), Some((5, 5)));
        assert_eq!(r.coverage("mrr"), None);
        let counts: Vec<_> = r.metrics.names().map(|n| r.coverage(n)).collect();
        assert_eq!(
            crate::eval::metric_table_counted(&r.metrics, &r.std, &counts),
            "metric            mean       std  queries\n\
             mrr             1.0000    0.0000\n\
             faithfulness    0.3333    0.0000  1 of 5\n\
             polite          1.0000    0.0000  5 of 5\n"
        );
        // Without any count, the table is as it was.
        assert_eq!(
            crate::eval::metric_table_counted(&r.metrics, &r.std, &[None, None, None]),
            crate::eval::metric_table(&r.metrics, &r.std)
        );
        assert!(!crate::eval::metric_table(&r.metrics, &r.std).contains("queries"));
    }

    #[test]
    fn a_missing_figure_is_left_out_of_its_mean_not_counted_as_zero() {
        let mut r = RunResult::from_queries(
            ResultLevel::Token,
            vec!["mrr".into(), "bleu".into()],
            vec![
                q("a", Some("hard"), &[("mrr", 1.0), ("bleu", 0.5)]),
                q("b", Some("hard"), &[("mrr", 0.0)]),
                q("c", None, &[("mrr", 0.5), ("bleu", 0.25)]),
            ],
        );
        assert_eq!(r.metrics.get("mrr"), Some(0.5));
        assert_eq!(r.metrics.get("bleu"), Some(0.375));
        assert_eq!(r.std.get("bleu"), Some(0.125));
        r.group_by_difficulty();
        let g = r.by_difficulty.unwrap();
        assert_eq!(g["hard"].metrics.get("bleu"), Some(0.5));
        assert_eq!(g["hard"].metrics.get("mrr"), Some(0.5));
    }

    #[test]
    fn json_round_trips_and_keeps_metric_order() {
        let mut r = RunResult::from_queries(
            ResultLevel::Chunk,
            vec!["zeta@3".into(), "alpha".into()],
            vec![q("q1", None, &[("zeta@3", 0.25), ("alpha", 1.0)])],
        );
        r.k = Some(3);
        r.mode = Some(SpanMode::Standard);
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.starts_with(r#"{"level":"chunk","k":3,"mode":"standard","queries":1,"metrics":{"zeta@3":0.25,"alpha":1.0}"#), "{json}");
        assert!(!json.contains("cutoffs") && !json.contains("config"));
        let back: RunResult = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
        assert_eq!(
            r.headline(),
            "chunk-level, k = 3, mode = standard, 1 queries"
        );
        let trec = RunResult {
            cutoffs: Some(vec![5]),
            ..RunResult::from_queries(ResultLevel::Trec, vec!["mrr".into()], Vec::new())
        };
        assert_eq!(trec.headline(), "trec, 0 queries");
        let json = serde_json::to_string(&trec).unwrap();
        assert_eq!(
            json,
            r#"{"level":"trec","cutoffs":[5],"queries":0,"metrics":{"mrr":0.0},"std":{"mrr":0.0},"per_query":[]}"#
        );
    }

    #[test]
    fn a_configuration_names_the_components_of_its_retriever_spec() {
        let spec = "dense:chunker=recursive(size=400),embedder=hashing(dim=64),store=memory";
        let value = Value::Spec(Spec::parse(Kind::Retriever, spec).unwrap());
        let c = RunConfig::of_retriever("dense over recursive".into(), &value, None);
        assert_eq!(c.retriever.as_deref(), Some("dense over recursive"));
        assert_eq!(c.retriever_spec(), Some(spec));
        assert_eq!(c.chunker.as_deref(), Some("recursive:size=400"));
        assert_eq!(c.embedder.as_deref(), Some("hashing:dim=64"));
        assert_eq!(c.store.as_deref(), Some("memory"));
        assert_eq!(c.reranker, None);
        // The retriever's own chunker spec wins over the spec's part.
        let own = RunConfig::of_retriever("x".into(), &value, Some(&"mine".into()));
        assert_eq!(own.chunker.as_deref(), Some("mine"));
        // A custom retriever's name is no spec: it names the retriever alone.
        let custom = RunConfig::of_retriever("my search()".into(), &"my search()".into(), None);
        assert_eq!(custom.retriever_spec(), Some("my search()"));
        assert_eq!((custom.chunker, custom.embedder), (None, None));
        // A configuration read without a spec (older `eval --json`) falls back to the name.
        let named = RunConfig {
            retriever: Some("bm25".into()),
            ..RunConfig::default()
        };
        assert_eq!(named.retriever_spec(), Some("bm25"));
    }
}
