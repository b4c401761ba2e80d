//! Judge figures next to retrieval figures: one run's scores folded into a [`RunResult`].

use super::run::JudgeRun;
use crate::metrics::claims;
use crate::metrics::{JudgeStatus, QueryJudgement, RunResult};

/// The figures a judgement gives its query: the judge's score under the judge's name; for the
/// claims judge, each of its figures the query has, as the mean over the `ok` samples that
/// have it (a figure with nothing to judge is left out, not 0).
pub fn query_figures(j: &QueryJudgement) -> Vec<(String, f64)> {
    if j.metric != claims::JUDGE {
        return j
            .score()
            .map(|s| (j.metric.clone(), s))
            .into_iter()
            .collect();
    }
    let samples: Vec<[Option<f64>; 11]> = j
        .samples
        .iter()
        .filter(|s| s.status == JudgeStatus::Ok)
        .filter_map(|s| s.details.claim_metrics())
        .map(|m| m.values())
        .collect();
    claims::NAMES
        .iter()
        .enumerate()
        .filter_map(|(k, (name, ..))| {
            let v: Vec<f64> = samples.iter().filter_map(|m| m[k]).collect();
            (!v.is_empty()).then(|| (name.to_string(), v.iter().sum::<f64>() / v.len() as f64))
        })
        .collect()
}

/// Adds `run`'s figures to `result`: each query keeps the judge's judgement
/// ([`QueryResult::judges`](crate::metrics::QueryResult::judges)), each scored query gets its
/// [`query_figures`] (the judge's score under the metric's name; the claims judge's eleven
/// figures under theirs), the means and population standard deviations get the mean over the
/// queries with the figure (for a one-figure judge, its summary's), and each difficulty group
/// the mean of its queries with the figure. Queries a judge could not score (`undetermined`,
/// `invalid`, `error`) get no figure, so they stay out of every mean; a figure no query has
/// gets no mean.
pub fn add_to_result(result: &mut RunResult, run: &JudgeRun) {
    let metric = run.summary.metric.as_str();
    let figures: Vec<(&str, Vec<(String, f64)>)> = run
        .judgements
        .iter()
        .map(|j| (j.query_id.as_str(), query_figures(j)))
        .collect();
    let by_id: std::collections::HashMap<&str, &Vec<(String, f64)>> =
        figures.iter().map(|(q, f)| (*q, f)).collect();
    let of = |id: &str, name: &str| {
        let f = by_id.get(id)?;
        f.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    };
    for q in &mut result.per_query {
        if let Some(f) = by_id.get(q.id.as_str()) {
            q.metrics.0.extend(f.iter().cloned());
        }
        q.judges.extend(
            run.judgements
                .iter()
                .filter(|j| j.query_id == q.id)
                .cloned(),
        );
    }
    let names: Vec<&str> = if metric == claims::JUDGE {
        claims::NAMES.iter().map(|(ours, ..)| *ours).collect()
    } else {
        vec![metric]
    };
    for name in names {
        let values: Vec<f64> = figures
            .iter()
            .filter_map(|(_, f)| f.iter().find(|(n, _)| n == name).map(|(_, v)| *v))
            .collect();
        let (mean, std) = if name == metric {
            (run.summary.mean, run.summary.std)
        } else {
            population(&values)
        };
        let Some(mean) = mean else {
            continue;
        };
        result.metrics.0.push((name.to_owned(), mean));
        result.std.0.push((name.to_owned(), std.unwrap_or(0.0)));
        if let Some(groups) = &mut result.by_difficulty {
            for (label, group) in groups.iter_mut() {
                let values: Vec<f64> = result
                    .per_query
                    .iter()
                    .filter(|q| q.difficulty.as_deref().unwrap_or("unlabelled") == label)
                    .filter_map(|q| of(&q.id, name))
                    .collect();
                if !values.is_empty() {
                    let mean = values.iter().sum::<f64>() / values.len() as f64;
                    group.metrics.0.push((name.to_owned(), mean));
                }
            }
        }
    }
}

/// The mean and population standard deviation of `values`, as [`JudgeSummary`] computes
/// them (`None` for none).
///
/// [`JudgeSummary`]: super::JudgeSummary
fn population(values: &[f64]) -> (Option<f64>, Option<f64>) {
    if values.is_empty() {
        return (None, None);
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let std = (values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    (Some(mean), Some(std))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::{JudgeDetails, JudgeSample, JudgeStatus, JudgeSummary, QueryJudgement};
    use crate::metrics::{DifficultyScores, Figures, QueryResult, ResultLevel};

    fn query(id: &str, difficulty: &str) -> QueryResult {
        QueryResult {
            id: id.into(),
            query: None,
            difficulty: Some(difficulty.into()),
            metrics: Figures(vec![("mrr".into(), 1.0)]),
            ..QueryResult::default()
        }
    }

    fn judged(id: &str, status: JudgeStatus, score: Option<f64>) -> QueryJudgement {
        QueryJudgement {
            metric: "faithfulness".into(),
            query_id: id.into(),
            samples: vec![JudgeSample {
                sample: 0,
                status,
                score,
                details: JudgeDetails::None,
                message: None,
                kind: None,
                usage: Default::default(),
            }],
        }
    }

    #[test]
    fn scored_queries_get_figures_and_the_rest_stay_out_of_every_mean() {
        let mut result = RunResult::from_queries(
            ResultLevel::Token,
            vec!["mrr".into()],
            vec![query("a", "easy"), query("b", "easy"), query("c", "hard")],
        );
        let mut groups = std::collections::BTreeMap::new();
        for (l, n) in [("easy", 2), ("hard", 1)] {
            groups.insert(
                l.to_owned(),
                DifficultyScores {
                    queries: n,
                    metrics: Figures(vec![("mrr".into(), 1.0)]),
                },
            );
        }
        result.by_difficulty = Some(groups);
        let judgements = vec![
            judged("a", JudgeStatus::Ok, Some(1.0)),
            judged("b", JudgeStatus::Ok, Some(0.5)),
            judged("c", JudgeStatus::Invalid, None),
        ];
        let summary = JudgeSummary::new("faithfulness", &judgements, 0.05);
        add_to_result(
            &mut result,
            &JudgeRun {
                judgements,
                summary,
            },
        );
        assert_eq!(result.metrics.get("faithfulness"), Some(0.75));
        assert_eq!(result.std.get("faithfulness"), Some(0.25));
        assert_eq!(result.per_query[1].metrics.get("faithfulness"), Some(0.5));
        assert_eq!(result.per_query[2].metrics.get("faithfulness"), None);
        let groups = result.by_difficulty.unwrap();
        assert_eq!(groups["easy"].metrics.get("faithfulness"), Some(0.75));
        assert_eq!(groups["hard"].metrics.get("faithfulness"), None);
    }
}
