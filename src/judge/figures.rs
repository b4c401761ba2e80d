//! Judge figures next to retrieval figures: one run's scores folded into a [`RunResult`].

use super::run::JudgeRun;
use crate::metrics::RunResult;

/// Adds `run`'s figures to `result`: each query keeps the judge's judgement
/// ([`QueryResult::judges`](crate::metrics::QueryResult::judges)), each scored query gets the
/// judge's score under the metric's name, the means and population standard deviations get the summary's (over
/// scored queries), and each difficulty group the mean of its scored queries. Queries a judge
/// could not score (`undetermined`, `invalid`, `error`) get no figure, so they stay out of
/// every mean; a run that scored nothing adds no mean.
pub fn add_to_result(result: &mut RunResult, run: &JudgeRun) {
    let metric = run.summary.metric.as_str();
    let scores: std::collections::HashMap<&str, f64> = run
        .judgements
        .iter()
        .filter_map(|j| Some((j.query_id.as_str(), j.score()?)))
        .collect();
    for q in &mut result.per_query {
        if let Some(&score) = scores.get(q.id.as_str()) {
            q.metrics.0.push((metric.to_owned(), score));
        }
        q.judges.extend(
            run.judgements
                .iter()
                .filter(|j| j.query_id == q.id)
                .cloned(),
        );
    }
    let Some(mean) = run.summary.mean else {
        return;
    };
    result.metrics.0.push((metric.to_owned(), mean));
    result
        .std
        .0
        .push((metric.to_owned(), run.summary.std.unwrap_or(0.0)));
    if let Some(groups) = &mut result.by_difficulty {
        for (label, group) in groups.iter_mut() {
            let values: Vec<f64> = result
                .per_query
                .iter()
                .filter(|q| q.difficulty.as_deref().unwrap_or("unlabelled") == label)
                .filter_map(|q| scores.get(q.id.as_str()).copied())
                .collect();
            if !values.is_empty() {
                let mean = values.iter().sum::<f64>() / values.len() as f64;
                group.metrics.0.push((metric.to_owned(), mean));
            }
        }
    }
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
