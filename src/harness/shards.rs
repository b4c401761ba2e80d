//! Run groups: the shards of one run (nextest partitions on a CI's machine matrix) each write
//! the results of the queries they computed into one group of the shared run store, and a
//! final step gates over the group's merged results.
//!
//! A shard's rows are keyed by group, case, query and shard (`RAG_EVAL_SHARD`): a shard run
//! again overwrites its own queries; two shards reporting one query keep two rows, which the
//! merge compares.

use super::answers::{AnswerReport, Explained};
use crate::judge::JudgeSummary;
use crate::metrics::{Need, QueryResult, RunResult as Outcome, REGISTRY};
use crate::runs::{GroupRow, RunStore};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Names the run group; unset, the CI's run (`GITHUB_RUN_ID`, `CI_PIPELINE_ID`) names it.
pub const GROUP_ENV: &str = "RAG_EVAL_RUN_GROUP";
/// Names the shard writing (a CI matrix's index), so that a re-run shard overwrites its own
/// rows and two shards reporting one query are told apart.
pub const SHARD_ENV: &str = "RAG_EVAL_SHARD";

/// The run group this process writes into: `RAG_EVAL_RUN_GROUP`, else `github-<run id>` or
/// `gitlab-<pipeline id>` on those CIs. The run's attempt is left out on purpose: re-running
/// a failed shard job (a new attempt) must write into the group the other shards filled.
pub fn group_from_env() -> Option<String> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    var(GROUP_ENV)
        .or_else(|| var("GITHUB_RUN_ID").map(|id| format!("github-{id}")))
        .or_else(|| var("CI_PIPELINE_ID").map(|id| format!("gitlab-{id}")))
}

/// This process's shard name (`RAG_EVAL_SHARD`, empty when unset).
pub fn shard_from_env() -> String {
    std::env::var(SHARD_ENV).unwrap_or_default()
}

/// What a case is, written by every shard alike: what the merge and the gate need besides the
/// queries' rows.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Description {
    /// Every query id of the case, in dataset order.
    pub queries: Vec<String>,
    /// The case's result without its queries: level, cut-off, mode, configuration, dataset
    /// hash, and the metrics' names in order.
    pub frame: Outcome,
    /// The case's `min_…`/`max_…` bars.
    pub bars: Vec<crate::metrics::Bar>,
    /// The case's tolerance and its judges'.
    pub tolerance: f64,
    pub judge_tolerance: f64,
    /// Whether judge figures appear per query in the golden snapshot.
    pub judged_per_query: bool,
    /// The models that judged, for a case that answers.
    #[serde(default)]
    pub judge_models: Option<Vec<String>>,
    /// The names of the case's criteria judges, whose figures are judges' too.
    #[serde(default)]
    pub criteria: Vec<String>,
    /// For a case that judges, the share of invalid and failed judge answers above which its
    /// judges' figures cannot gate (`max_invalid_share`), checked over the whole group.
    #[serde(default)]
    pub max_invalid_share: Option<f64>,
}

/// One query's row: its figures and, for a case that answers, its answer explained.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Row {
    pub result: QueryResult,
    #[serde(default)]
    pub answer: Option<Explained>,
}

/// A group's rows of one case put together.
#[derive(Debug, Clone)]
pub(crate) struct Merged {
    pub description: Description,
    pub outcome: Outcome,
    pub answers: Option<AnswerReport>,
    /// Queries of the case no shard reported (a shard that died, or was never run).
    pub missing: Vec<String>,
    /// Queries reported by several shards with different figures, each with those shards.
    pub conflicts: Vec<(String, Vec<String>)>,
}

impl Merged {
    /// What is wrong with the group as a whole: the missing queries and the conflicting ones,
    /// one line each (none when the shards covered the case exactly).
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if !self.missing.is_empty() {
            const SHOWN: usize = 20;
            let more = self.missing.len().saturating_sub(SHOWN);
            problems.push(format!(
                "{} of {} queries were reported by no shard (a shard died or was not run): {}{}",
                self.missing.len(),
                self.description.queries.len(),
                self.missing[..self.missing.len().min(SHOWN)].join(", "),
                if more > 0 {
                    format!(", … and {more} more")
                } else {
                    String::new()
                }
            ));
        }
        for (query, shards) in &self.conflicts {
            let names: Vec<String> = shards.iter().map(|s| format!("`{s}`")).collect();
            problems.push(format!(
                "query `{query}` was reported with different figures by shards {}",
                names.join(" and ")
            ));
        }
        problems
    }
}

/// One case's verdict over a run group's merged results ([`gate`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The case's name.
    pub case: String,
    /// How many queries the case has.
    pub queries: usize,
    /// How many of them some shard reported.
    pub reported: usize,
    /// Every reason the case fails the gate, one line each (none: it passes).
    pub problems: Vec<String>,
}

/// Gates the cases of run group `group` in `store` over their merged results: the queries no
/// shard reported, the queries shards reported with different figures, every `min_…`/`max_…`
/// bar the merged means miss, every judge whose invalid and failed answers over the whole
/// group exceed the case's `max_invalid_share`, and every figure that dropped beyond the
/// case's tolerance from its golden snapshot `<golden>/<case>.snap` (a missing snapshot fails,
/// as under CI).
/// `cases` chooses cases by name (every case the group holds when empty); a named case the
/// group lacks fails. A group with no case at all is an error naming the store.
/// Figures that dropped are told as a failing summary tells them (the means, the five queries
/// that dropped most, how many more did); with `every`, each query's figures that dropped.
pub fn gate(
    store: &dyn RunStore,
    group: &str,
    cases: &[String],
    golden: &std::path::Path,
    every: bool,
) -> crate::Result<Vec<Verdict>> {
    let names = if cases.is_empty() {
        store.group_cases(group)?
    } else {
        cases.to_vec()
    };
    if names.is_empty() {
        return Err(crate::Error::RunStore {
            location: store.location(),
            message: format!("run group `{group}` holds no case: did any shard run with it?"),
        });
    }
    let mut verdicts = Vec::new();
    for case in names {
        let verdict = match read(store, group, &case) {
            Ok(Some(merged)) => {
                let mut problems = merged.problems();
                problems.extend(super::missed_bars(
                    &merged.description.bars,
                    &merged.outcome,
                    merged.answers.as_ref(),
                ));
                if let Some(answers) = &merged.answers {
                    problems.extend(super::unusable_judges(answers));
                }
                problems.extend(golden_problems(
                    &merged,
                    &golden.join(format!("{case}.snap")),
                    every,
                ));
                Verdict {
                    queries: merged.description.queries.len(),
                    reported: merged.outcome.per_query.len(),
                    case,
                    problems,
                }
            }
            Ok(None) => Verdict {
                problems: vec![format!(
                    "no shard of run group `{group}` recorded this case"
                )],
                case,
                queries: 0,
                reported: 0,
            },
            Err(e) => Verdict {
                problems: vec![e],
                case,
                queries: 0,
                reported: 0,
            },
        };
        verdicts.push(verdict);
    }
    Ok(verdicts)
}

/// The merged results against the golden snapshot at `path`, as a summary under CI compares
/// them and in its words (every query's drop with `every`).
fn golden_problems(merged: &Merged, path: &std::path::Path, every: bool) -> Vec<String> {
    use super::golden;
    let Some(old) = super::snapshot_text(path).and_then(|t| golden::parse(&t)) else {
        return vec![format!("no golden snapshot at {}", path.display())];
    };
    let new = golden::Golden::of(&snapshot(merged));
    let tolerance = golden::Tolerance {
        figures: merged.description.tolerance,
        judged: merged.description.judge_tolerance,
        criteria: super::golden::Criteria::Names(&merged.description.criteria),
    };
    let comparison = golden::compare(&old, &new, tolerance);
    let mut problems = Vec::new();
    if let Some(what) = &comparison.configuration {
        problems.push(format!(
            "the configuration changed ({what}): the snapshot {} cannot be compared",
            path.display()
        ));
    }
    let regressions: Vec<&golden::Change> = comparison.regressions().collect();
    if !regressions.is_empty() {
        let means = golden::means_table(&old.summary, &new.summary, &comparison.changes);
        problems.push(golden::dropped(
            tolerance.figures,
            path,
            &means,
            &regressions,
            every,
        ));
    }
    if !comparison.structure.is_empty() {
        problems.push(format!(
            "the golden snapshot no longer fits the case ({})",
            comparison.structure.join("; ")
        ));
    }
    problems
}

/// The merged results as the golden snapshot records them: judge and criteria figures per
/// query only when the case keeps them.
fn snapshot(merged: &Merged) -> Outcome {
    let criteria = super::golden::Criteria::Names(&merged.description.criteria);
    let mut snapshot = merged.outcome.clone();
    for q in &mut snapshot.per_query {
        q.metrics = super::kept_figures(merged.description.judged_per_query, &q.metrics, |m| {
            criteria.has(m)
        });
    }
    snapshot
}

/// Writes shard `shard`'s description of its case and the rows of the queries it computed,
/// together: a shard stopped midway leaves neither, and its queries show as missing.
pub(crate) fn write(
    store: &dyn RunStore,
    group: &str,
    case: &str,
    shard: &str,
    description: &Description,
    rows: &[(String, Row)],
) -> Result<(), String> {
    let text = serde_json::to_string(description).map_err(|e| e.to_string())?;
    let rows: Vec<(String, String)> = rows
        .iter()
        .map(|(id, row)| Ok((id.clone(), serde_json::to_string(row)?)))
        .collect::<Result<_, serde_json::Error>>()
        .map_err(|e| e.to_string())?;
    store
        .put_group_shard(group, case, shard, &text, &rows)
        .map_err(|e| e.to_string())
}

/// Reads case `case` of group `group` and merges its rows; `Ok(None)` when no shard wrote it.
pub(crate) fn read(
    store: &dyn RunStore,
    group: &str,
    case: &str,
) -> Result<Option<Merged>, String> {
    let Some((description, rows)) = store.group_case(group, case).map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    let description: Description = serde_json::from_str(&description).map_err(|e| {
        format!("the description of case `{case}` in run group `{group}` is unreadable: {e}")
    })?;
    merge(description, &rows).map(Some)
}

/// The case's result from every shard's rows: queries in dataset order, means and deviations
/// computed over them as a single run computes them.
pub(crate) fn merge(description: Description, rows: &[GroupRow]) -> Result<Merged, String> {
    let mut by_query: BTreeMap<&str, Vec<(&str, Row)>> = BTreeMap::new();
    for r in rows {
        let row: Row = serde_json::from_str(&r.result).map_err(|e| {
            format!(
                "the row of query `{}` from shard `{}` is unreadable: {e}",
                r.query, r.shard
            )
        })?;
        by_query
            .entry(r.query.as_str())
            .or_default()
            .push((r.shard.as_str(), row));
    }
    let (mut missing, mut conflicts, mut per_query) = (Vec::new(), Vec::new(), Vec::new());
    let mut explained = BTreeMap::new();
    for id in &description.queries {
        let Some(reports) = by_query.remove(id.as_str()) else {
            missing.push(id.clone());
            continue;
        };
        let figures: BTreeSet<String> = reports
            .iter()
            .map(|(_, r)| format!("{:?}", r.result.metrics))
            .collect();
        if figures.len() > 1 {
            conflicts.push((
                id.clone(),
                reports.iter().map(|(s, _)| (*s).to_owned()).collect(),
            ));
        }
        let (_, row) = reports
            .into_iter()
            .next()
            .expect("a query's rows are not empty");
        if let Some(answer) = row.answer {
            explained.insert(id.clone(), answer);
        }
        per_query.push(row.result);
    }
    let frame = &description.frame;
    let mut names: Vec<String> = frame.metrics.names().map(str::to_owned).collect();
    for q in &per_query {
        for (n, _) in &q.metrics.0 {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    names.sort_by_key(|n| rank(n, &description.criteria));
    let summaries = match description.max_invalid_share {
        Some(share) => judge_summaries(&per_query, &description.criteria, share),
        None => Vec::new(),
    };
    let mut outcome = Outcome::from_queries(frame.level, names, per_query);
    outcome.k = frame.k;
    outcome.mode = frame.mode;
    outcome.config.clone_from(&frame.config);
    outcome.dataset_hash.clone_from(&frame.dataset_hash);
    if frame.by_difficulty.is_some() {
        outcome.group_by_difficulty();
    }
    let answers = description
        .judge_models
        .clone()
        .map(|judge_models| AnswerReport {
            summaries,
            queries: explained,
            judge_models,
        });
    Ok(Merged {
        description,
        outcome,
        answers,
        missing,
        conflicts,
    })
}

/// Where figure `name` goes among a merged result's, as a single run orders them: the
/// retrieval figures first, in the frame's order (every shard computes them all); then the
/// answer and judge figures in registry order, then the criteria in the case's order. The
/// order does not depend on which shard described the case last nor on which figures its
/// queries happened to have.
fn rank(name: &str, criteria: &[String]) -> usize {
    let base = crate::metrics::ReportedName::parse(name).metric;
    let answer = REGISTRY
        .iter()
        .position(|m| m.name == base && m.needs(Need::Answer));
    match answer {
        Some(i) => 1 + i,
        None => criteria
            .iter()
            .position(|c| c == name)
            .map_or(0, |i| 1 + REGISTRY.len() + i),
    }
}

/// Each judge's summary over every query of the group (in the merged figures' order), as a
/// single run sums up its judgements: what `max_invalid_share` is checked on.
fn judge_summaries(
    per_query: &[QueryResult],
    criteria: &[String],
    max_invalid_share: f64,
) -> Vec<JudgeSummary> {
    let mut metrics: Vec<&str> = Vec::new();
    for j in per_query.iter().flat_map(|q| &q.judges) {
        if !metrics.contains(&j.metric.as_str()) {
            metrics.push(&j.metric);
        }
    }
    metrics.sort_by_key(|m| rank(m, criteria));
    metrics
        .into_iter()
        .map(|metric| {
            let judgements: Vec<_> = per_query
                .iter()
                .flat_map(|q| &q.judges)
                .filter(|j| j.metric == metric)
                .cloned()
                .collect();
            JudgeSummary::new(metric, &judgements, max_invalid_share)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Figures, ResultLevel};

    fn query(id: &str, recall: f64) -> QueryResult {
        QueryResult {
            id: id.into(),
            metrics: Figures(vec![("recall@3".into(), recall)]),
            ..QueryResult::default()
        }
    }

    fn row(id: &str, shard: &str, recall: f64) -> GroupRow {
        let row = Row {
            result: query(id, recall),
            answer: None,
        };
        GroupRow {
            query: id.into(),
            shard: shard.into(),
            result: serde_json::to_string(&row).unwrap(),
        }
    }

    fn description() -> Description {
        let mut frame = Outcome::from_queries(ResultLevel::Token, vec!["recall@3".into()], vec![]);
        frame.k = Some(3);
        Description {
            queries: ["q1", "q2", "q3", "q4"].map(String::from).to_vec(),
            frame,
            bars: Vec::new(),
            tolerance: 0.0,
            judge_tolerance: 0.0,
            judged_per_query: false,
            judge_models: None,
            criteria: Vec::new(),
            max_invalid_share: None,
        }
    }

    /// A SQLite run store in `dir`.
    fn store(dir: &std::path::Path) -> Box<dyn RunStore> {
        let path = dir.join("runs.sqlite");
        let choice = crate::runs::StoreChoice::parse(path.to_str());
        crate::runs::open(&choice).unwrap().unwrap()
    }

    /// Query `id` of a case that answers and judges: its figures, and one faithfulness
    /// sample, `ok` (scored 1) or `invalid`.
    fn judged(id: &str, figures: &[(&str, f64)], faithful: bool) -> (String, Row) {
        use crate::judge::JudgeStatus;
        use crate::metrics::{JudgeDetails, JudgeSample, JudgeUsage, QueryJudgement};
        let mut result = query(id, 1.0);
        result
            .metrics
            .0
            .extend(figures.iter().map(|(n, v)| ((*n).to_owned(), *v)));
        if faithful {
            result.metrics.0.push(("faithfulness".into(), 1.0));
        }
        let status = if faithful {
            JudgeStatus::Ok
        } else {
            JudgeStatus::Invalid
        };
        result.judges.push(QueryJudgement {
            metric: "faithfulness".into(),
            query_id: id.into(),
            samples: vec![JudgeSample {
                sample: 0,
                status,
                score: faithful.then_some(1.0),
                details: JudgeDetails::None,
                message: (!faithful).then(|| "not JSON".to_owned()),
                kind: None,
                usage: JudgeUsage::default(),
            }],
        });
        let row = Row {
            result,
            answer: None,
        };
        (id.to_owned(), row)
    }

    /// The description shard `rows` give of a judged case: its frame's means are those of its
    /// own queries, in the order they come.
    fn judged_description(rows: &[(String, Row)]) -> Description {
        let mut names: Vec<String> = Vec::new();
        for (_, row) in rows {
            for (n, _) in &row.result.metrics.0 {
                if !names.contains(n) {
                    names.push(n.clone());
                }
            }
        }
        let per_query = rows.iter().map(|(_, r)| r.result.clone()).collect();
        let mut d = description();
        d.frame = Outcome::from_queries(ResultLevel::Token, names, per_query);
        d.frame.per_query.clear();
        d.frame.k = Some(3);
        d.judge_models = Some(vec!["judge".into()]);
        d.max_invalid_share = Some(0.25);
        d
    }

    #[test]
    fn the_merged_order_is_the_cases_whichever_shard_wrote_last() {
        // Shard a's queries have no reference answer (no token_f1); shard b's answers were
        // judged invalid (no faithfulness): each shard's own order lacks a figure.
        let a = vec![
            judged("q1", &[("answer_relevancy", 0.5)], true),
            judged("q2", &[("answer_relevancy", 0.7)], true),
        ];
        let b = vec![
            judged("q3", &[("token_f1", 0.4), ("answer_relevancy", 0.9)], false),
            judged("q4", &[("token_f1", 0.6), ("answer_relevancy", 0.3)], true),
        ];
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let golden = dir.path().join("golden");
        std::fs::create_dir_all(&golden).unwrap();
        let orders = [
            ("ab", [("a", &a), ("b", &b)]),
            ("ba", [("b", &b), ("a", &a)]),
        ];
        for (group, shards) in &orders {
            for (shard, rows) in shards {
                let d = judged_description(rows);
                write(store.as_ref(), group, "case", shard, &d, rows).unwrap();
            }
        }
        let merged = read(store.as_ref(), "ab", "case").unwrap().unwrap();
        let names: Vec<&str> = merged.outcome.metrics.names().collect();
        assert_eq!(
            names,
            ["recall@3", "token_f1", "faithfulness", "answer_relevancy"]
        );
        // A baseline every figure falls short of, so that the verdict lists them all.
        let mut high = merged.outcome.clone();
        for q in &mut high.per_query {
            for (_, v) in &mut q.metrics.0 {
                *v = 1.0;
            }
        }
        let names = names.iter().map(|n| (*n).to_owned()).collect();
        let mut baseline = Outcome::from_queries(ResultLevel::Token, names, high.per_query);
        baseline.k = Some(3);
        let body = super::super::golden::render(&baseline);
        std::fs::write(
            golden.join("case.snap"),
            format!("---\nsource: shards.rs\n---\n{body}"),
        )
        .unwrap();
        let verdicts = |group: &str| {
            let v = gate(store.as_ref(), group, &[], &golden, false).unwrap();
            serde_json::to_string(&v).unwrap()
        };
        let (ab, ba) = (verdicts("ab"), verdicts("ba"));
        assert!(ab.contains("token_f1"), "{ab}");
        assert_eq!(ab, ba);
        let again = read(store.as_ref(), "ba", "case").unwrap().unwrap();
        assert_eq!(again.outcome, merged.outcome);
        assert_eq!(again.answers, merged.answers);
    }

    /// Figures of 1e308 merge to a mean of inf, which passes a lower bar and rises against any
    /// snapshot: the gate fails it instead, whatever the bars.
    #[test]
    fn a_mean_that_is_not_finite_fails_the_gate() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let mut d = description();
        d.bars = vec!["recall=0.5".parse().unwrap()];
        let rows: Vec<(String, Row)> = ["q1", "q2", "q3", "q4"]
            .map(|id| {
                let result = query(id, 1e308);
                (
                    id.to_owned(),
                    Row {
                        result,
                        answer: None,
                    },
                )
            })
            .to_vec();
        write(store.as_ref(), "g", "case", "a", &d, &rows).unwrap();
        let verdict = gate(store.as_ref(), "g", &[], dir.path(), false)
            .unwrap()
            .remove(0);
        assert_eq!(verdict.reported, 4);
        assert!(
            verdict.problems.iter().any(|p| p
                == "the mean of recall@3 is inf, not a finite number: its per-query figures are too large to add up"),
            "{:?}",
            verdict.problems
        );
        // The bar itself says nothing more of it.
        assert!(
            !verdict.problems.iter().any(|p| p.contains("the bar")),
            "{:?}",
            verdict.problems
        );
    }

    #[test]
    fn max_invalid_share_is_checked_over_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let problems = |group: &str| -> String {
            gate(store.as_ref(), group, &[], dir.path(), false)
                .unwrap()
                .remove(0)
                .problems
                .join("\n")
        };
        // Shard a alone: 1 of 2 answers invalid (50%); the group: 1 of 4 (25%), at the bar.
        let a = vec![judged("q1", &[], false), judged("q2", &[], true)];
        let b = vec![judged("q3", &[], true), judged("q4", &[], true)];
        for (shard, rows) in [("a", &a), ("b", &b)] {
            write(
                store.as_ref(),
                "under",
                "case",
                shard,
                &judged_description(rows),
                rows,
            )
            .unwrap();
        }
        let under = problems("under");
        assert!(!under.contains("max_invalid_share"), "{under}");
        // Each shard at the bar (1 of 4 queries), the group over it (2 of 4 queries).
        let c = vec![judged("q3", &[], false), judged("q4", &[], true)];
        for (shard, rows) in [("a", &a), ("c", &c)] {
            write(
                store.as_ref(),
                "over",
                "case",
                shard,
                &judged_description(rows),
                rows,
            )
            .unwrap();
        }
        let over = problems("over");
        assert!(
            over.contains("faithfulness: 2 invalid and 0 failed judge answers of 4 samples (50.0%) exceed the allowed share 25.0% (max_invalid_share)"),
            "{over}"
        );
    }

    #[test]
    fn criteria_figures_over_a_group_have_the_judges_tolerance() {
        let rows = |polite: f64| -> Vec<GroupRow> {
            ["q1", "q2", "q3", "q4"]
                .map(|id| {
                    let mut r = row(id, "a", 1.0);
                    let mut parsed: Row = serde_json::from_str(&r.result).unwrap();
                    parsed.result.metrics.0.push(("polite".into(), polite));
                    r.result = serde_json::to_string(&parsed).unwrap();
                    r
                })
                .to_vec()
        };
        let mut d = description();
        d.judge_tolerance = 0.1;
        d.criteria = vec!["polite".into()];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("case.snap");
        let before = merge(d.clone(), &rows(0.8)).unwrap();
        let body = super::super::golden::render(&snapshot(&before));
        std::fs::write(&path, format!("---\nsource: shards.rs\n---\n{body}")).unwrap();
        assert!(!std::fs::read_to_string(&path)
            .unwrap()
            .contains("q1: {recall@3: 1.0000, polite"));
        // A drop of 0.05: within the judges' tolerance, beyond the figures' (0).
        let after = merge(d, &rows(0.75)).unwrap();
        assert_eq!(golden_problems(&after, &path, false), Vec::<String>::new());
        let mut unnamed = after.clone();
        unnamed.description.criteria.clear();
        let problems = golden_problems(&unnamed, &path, false).join("\n");
        assert!(problems.contains("polite"), "{problems}");
    }

    #[test]
    fn a_drop_is_told_as_a_failing_summary_tells_it_and_every_figure_when_verbose() {
        const METRICS: [&str; 6] = [
            "recall@3",
            "precision@3",
            "mrr@3",
            "ndcg@3",
            "hit_rate@3",
            "map@3",
        ];
        let ids: Vec<String> = (0..67).map(|i| format!("q{i:02}")).collect();
        // Every figure of every query drops by 0.1, the later queries' a little more.
        let rows = |drop: f64| -> Vec<GroupRow> {
            ids.iter()
                .enumerate()
                .map(|(i, id)| {
                    let mut r = row(id, "a", 0.0);
                    let mut parsed: Row = serde_json::from_str(&r.result).unwrap();
                    parsed.result.metrics.0 = METRICS
                        .iter()
                        .map(|m| ((*m).to_owned(), 0.9 - drop * (1.0 + i as f64 / 1000.0)))
                        .collect();
                    r.result = serde_json::to_string(&parsed).unwrap();
                    r
                })
                .collect()
        };
        let mut d = description();
        d.queries = ids.clone();
        d.frame = Outcome::from_queries(
            ResultLevel::Token,
            METRICS.map(String::from).to_vec(),
            Vec::new(),
        );
        d.frame.k = Some(3);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("case.snap");
        let before = merge(d.clone(), &rows(0.0)).unwrap();
        let body = super::super::golden::render(&snapshot(&before));
        std::fs::write(&path, format!("---\nsource: shards.rs\n---\n{body}")).unwrap();
        let after = merge(d, &rows(0.1)).unwrap();

        let concise = golden_problems(&after, &path, false);
        assert_eq!(concise.len(), 1, "{concise:?}");
        let lines: Vec<&str> = concise[0].lines().collect();
        // The heading, the means table (a heading and six means), the five queries that
        // dropped most and how many more did: what a failing summary says.
        assert_eq!(lines.len(), 1 + 7 + 1 + 5 + 1, "{}", concise[0]);
        assert!(lines[0].starts_with("figures dropped beyond the tolerance 0 against "));
        assert!(lines[1].contains("mean") && lines[1].contains("before"));
        assert!(lines[2].contains("0.9000") && lines[2].ends_with("dropped"));
        assert_eq!(lines[8], "  queries (67 in all, largest change first):");
        assert!(lines[9].starts_with("    q66: "), "{}", lines[9]);
        assert!(lines[9].ends_with(" and 3 more"), "{}", lines[9]);
        assert_eq!(lines[14], "    … and 62 more");

        let every = golden_problems(&after, &path, true);
        let lines: Vec<&str> = every[0].lines().collect();
        // The same table, then each query's six figures.
        assert_eq!(lines.len(), 1 + 7 + 67 * 6, "{}", every[0]);
        for id in &ids {
            for m in METRICS {
                assert!(
                    lines
                        .iter()
                        .any(|l| l.starts_with(&format!("  {id} {m}: "))),
                    "{id} {m}"
                );
            }
        }
    }

    #[test]
    fn a_merge_is_the_single_run_over_the_queries_present_and_names_the_rest() {
        // Rows come back sorted by query, not in dataset order; q2 twice alike is no conflict.
        let rows = [
            row("q2", "b", 0.5),
            row("q2", "c", 0.5),
            row("q1", "a", 1.0),
            row("q4", "b", 0.0),
        ];
        let merged = merge(description(), &rows).unwrap();
        let want = Outcome::from_queries(
            ResultLevel::Token,
            vec!["recall@3".into()],
            vec![query("q1", 1.0), query("q2", 0.5), query("q4", 0.0)],
        );
        assert_eq!(merged.outcome.per_query, want.per_query);
        assert_eq!(
            (&merged.outcome.metrics, &merged.outcome.std),
            (&want.metrics, &want.std)
        );
        assert_eq!(merged.outcome.k, Some(3));
        assert_eq!(merged.missing, ["q3"]);
        assert!(merged.conflicts.is_empty());
        assert_eq!(
            merged.problems(),
            ["1 of 4 queries were reported by no shard (a shard died or was not run): q3"]
        );
    }

    #[test]
    fn a_query_two_shards_report_differently_is_named_with_both() {
        let rows = [
            row("q1", "a", 1.0),
            row("q2", "a", 1.0),
            row("q2", "b", 0.0),
            row("q3", "a", 1.0),
            row("q4", "a", 1.0),
        ];
        let merged = merge(description(), &rows).unwrap();
        assert!(merged.missing.is_empty());
        assert_eq!(
            merged.problems(),
            ["query `q2` was reported with different figures by shards `a` and `b`"]
        );
    }

    #[test]
    fn an_unreadable_row_is_an_error_naming_it() {
        let mut bad = row("q1", "a", 1.0);
        bad.result = "{".into();
        let e = merge(description(), &[bad]).unwrap_err();
        assert!(
            e.starts_with("the row of query `q1` from shard `a` is unreadable"),
            "{e}"
        );
    }
}
