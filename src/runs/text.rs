//! Runs as people read them (`rag-eval runs list` and `show`), and as JSON lines (`export`,
//! `import`).

use super::record::{RunRecord, RunSummary};
use crate::error::{Error, Result};
use crate::escape::terminal;
use crate::metrics::Figures;
use camino::Utf8Path;
use std::fmt::Write as _;

/// A table of runs, one line each: id, time, origin, label (or retriever), dataset, level,
/// cut-off, queries and commit (`*` when dirty).
pub fn list_table(runs: &[RunSummary]) -> String {
    let rows: Vec<[String; 8]> = runs
        .iter()
        .map(|r| {
            if let Some(why) = &r.unreadable {
                let dash = || "-".to_owned();
                return [
                    r.id.to_string(),
                    terminal(r.created.get(..19).unwrap_or(&r.created)).replace('T', " "),
                    dash(),
                    terminal(&format!("(unreadable: {why})")),
                    dash(),
                    dash(),
                    dash(),
                    dash(),
                ];
            }
            let dataset = match &r.dataset_hash {
                Some(h) => format!("{} ({h})", r.dataset),
                None => r.dataset.clone(),
            };
            let row = [
                r.id.to_string(),
                r.created.get(..19).unwrap_or(&r.created).replace('T', " "),
                r.origin.clone(),
                r.label
                    .clone()
                    .or_else(|| r.retriever.clone())
                    .or_else(|| r.rag.clone())
                    .unwrap_or_else(|| "-".into()),
                dataset,
                r.k.map_or_else(|| r.level.to_string(), |k| format!("{} k={k}", r.level)),
                r.queries.to_string(),
                r.git.as_ref().map_or_else(
                    || "-".into(),
                    |g| {
                        format!(
                            "{}{}",
                            &g.commit[..g.commit.len().min(10)],
                            if g.dirty { "*" } else { "" }
                        )
                    },
                ),
            ];
            // Every cell comes from a record, which anyone may have written.
            row.map(|cell| terminal(&cell))
        })
        .collect();
    let header = [
        "id",
        "created (UTC)",
        "origin",
        "label",
        "dataset",
        "level",
        "queries",
        "commit",
    ];
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut l = String::new();
        for (i, c) in cells.enumerate() {
            if i > 0 {
                l.push_str("  ");
            }
            let pad = widths[i].saturating_sub(c.chars().count());
            l.push_str(c);
            l.extend(std::iter::repeat_n(' ', pad));
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&mut header.iter().copied());
    for row in &rows {
        line(&mut row.iter().map(String::as_str));
    }
    if runs.is_empty() {
        out.push_str("(no runs)\n");
    }
    out
}

/// One run in full: where it came from, its configuration, every metric's mean and standard
/// deviation, and the means per difficulty label.
pub fn describe(run: &RunRecord) -> String {
    let mut s = String::new();
    // Every value comes from a record, which anyone may have written: no control character
    // reaches the terminal.
    let mut field = |name: &str, value: &str| {
        let _ = writeln!(s, "{:<10} {}", terminal(name), terminal(value));
    };
    field("run", run.id.as_str());
    field("created", &run.created);
    field(
        "origin",
        &match &run.label {
            Some(l) => format!("{} ({l})", run.origin),
            None => run.origin.clone(),
        },
    );
    if let Some(g) = &run.git {
        field(
            "commit",
            &format!("{}{}", g.commit, if g.dirty { " (dirty)" } else { "" }),
        );
    }
    field(
        "dataset",
        &match &run.dataset.hash {
            Some(h) => format!("{} (hash {h})", run.dataset.path),
            None => run.dataset.path.clone(),
        },
    );
    if let Some(c) = &run.corpus {
        field(
            "corpus",
            &format!(
                "{}{} documents (fingerprint {})",
                c.path.as_ref().map_or(String::new(), |p| format!("{p}, ")),
                c.documents,
                c.fingerprint
            ),
        );
    }
    let c = &run.config;
    for (name, value) in [
        ("retriever", &c.spec),
        ("chunker", &c.chunker),
        ("embedder", &c.embedder),
        ("store", &c.store),
        ("reranker", &c.reranker),
        ("generator", &c.generator),
    ] {
        if let Some(v) = value {
            field(name, v);
        }
    }
    if !c.judge_models.is_empty() {
        field("judges", &c.judge_models.join(", "));
    }
    for (k, v) in &c.extra {
        field(k, v);
    }
    if !run.timings_ms.is_empty() {
        let t: Vec<String> = run
            .timings_ms
            .iter()
            .map(|(k, v)| format!("{k} {v:.1} ms"))
            .collect();
        field("timings", &t.join(", "));
    }
    if let Some(u) = &run.usage {
        let parts: Vec<String> = [
            ("generator", &u.generator),
            ("judge", &u.judge),
            ("embedding", &u.embedding),
        ]
        .into_iter()
        .filter_map(|(name, spend)| {
            let spend = spend.as_ref()?;
            let mut t = format!(
                "{name} {} tokens ({} prompt, {} completion)",
                spend.total(),
                spend.prompt_tokens,
                spend.completion_tokens
            );
            if let Some(cost) = spend.cost_usd {
                let _ = write!(t, " ${cost:.4}");
            }
            Some(t)
        })
        .collect();
        field("usage", &parts.join(", "));
    }
    let r = &run.result;
    let _ = write!(
        s,
        "\n{}\n{}",
        r.headline(),
        crate::eval::metric_table_counted(
            &escaped_names(&r.metrics),
            &escaped_names(&r.std),
            &r.metrics.names().map(|n| r.coverage(n)).collect::<Vec<_>>()
        )
    );
    #[cfg(feature = "compare")]
    s.push_str(&crate::align::corrected_text(r));
    if let Some(groups) = r.by_difficulty.as_ref().filter(|g| !g.is_empty()) {
        let escaped = escaped_names(&r.metrics);
        let names: Vec<&str> = escaped.names().collect();
        let raw_names: Vec<&str> = r.metrics.names().collect();
        let label_w = groups
            .keys()
            .map(|k| terminal(k).chars().count())
            .chain(["difficulty".len()])
            .max()
            .unwrap_or(10);
        let widths: Vec<usize> = names.iter().map(|n| n.len().max(6)).collect();
        let _ = write!(
            s,
            "\nby difficulty\n{:<label_w$}  {:>7}",
            "difficulty", "queries"
        );
        for (n, w) in names.iter().zip(&widths) {
            let _ = write!(s, "  {n:>w$}");
        }
        s.push('\n');
        for (label, g) in groups {
            let _ = write!(s, "{:<label_w$}  {:>7}", terminal(label), g.queries);
            for (n, w) in raw_names.iter().zip(&widths) {
                match g.metrics.get(n) {
                    Some(v) => {
                        let _ = write!(s, "  {v:>w$.4}");
                    }
                    None => {
                        let _ = write!(s, "  {:>w$}", "-");
                    }
                }
            }
            s.push('\n');
        }
    }
    s
}

/// `figures` with names safe to print ([`terminal`]).
fn escaped_names(figures: &Figures) -> Figures {
    Figures(figures.0.iter().map(|(n, v)| (terminal(n), *v)).collect())
}

/// Run records from JSON lines (`rag-eval runs export`'s output): blank lines are skipped, and
/// a line that is not a record, whose query count is not the number of queries it holds
/// figures of, whose means are not those of its per-query figures (or not finite), or whose
/// `created` is not a time up to now (a record dated in the future would stay `latest` for
/// good), is an error naming `source` and the line.
pub fn read_jsonl(text: &str, source: &Utf8Path) -> Result<Vec<RunRecord>> {
    // A day of slack for clocks that disagree.
    let latest_allowed = super::provenance::rfc3339_from_ms(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
            .saturating_add(86_400_000),
    );
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let fail = |message: String| Error::Parse {
                path: source.to_owned(),
                line: i + 1,
                message,
            };
            let run = RunRecord::from_json(l).map_err(|e| fail(e.to_string()))?;
            // RFC 3339 times in UTC sort as text: a record dated after tomorrow (or not
            // dated at all) would be `latest` for good.
            if run.created.as_str() > latest_allowed.as_str()
                || !run.created.starts_with(|c: char| c.is_ascii_digit())
            {
                return Err(fail(format!(
                    "run `{}` was created `{}`, which is no time up to now",
                    run.id, run.created
                )));
            }
            let r = &run.result;
            if r.queries != r.per_query.len() {
                return Err(fail(format!(
                    "run `{}` says it has {} queries but holds figures of {}",
                    run.id,
                    r.queries,
                    r.per_query.len()
                )));
            }
            if let Some(problem) = means_against_rows(r) {
                return Err(fail(format!("run `{}`: {problem}", run.id)));
            }
            Ok(run)
        })
        .collect()
}

/// Where a run's stored means are not what its per-query figures give (a query without a
/// figure left out, 0 with none, as [`RunResult::from_queries`] computes them), or what they
/// give is not finite: the first such metric, in words. A store keeps the means it is given and
/// every list, comparison and gate reads them.
///
/// [`RunResult::from_queries`]: crate::metrics::RunResult::from_queries
fn means_against_rows(r: &crate::metrics::RunResult) -> Option<String> {
    r.metrics.0.iter().find_map(|(name, stored)| {
        let values: Vec<f64> = r.per_query.iter().filter_map(|q| q.metrics.get(name)).collect();
        let recomputed = crate::metrics::mean_std(&values).0;
        if !recomputed.is_finite() {
            return Some(format!(
                "the mean of `{name}` over its {} per-query figures is {recomputed}, not a finite number",
                values.len()
            ));
        }
        // Written and read back, a mean is the same number; another tool's sum may differ in
        // the last digits.
        let close = (stored - recomputed).abs() <= 1e-9 * recomputed.abs().max(1.0);
        (!close).then(|| {
            format!(
                "the stored mean of `{name}` is {stored}, but its {} per-query figures give {recomputed}",
                values.len()
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Figures, QueryResult, ResultLevel, RunResult};
    use crate::runs::{GitInfo, RunId};

    fn run() -> RunRecord {
        let q = |id: &str, d: &str, v: f64| QueryResult {
            id: id.into(),
            query: None,
            difficulty: Some(d.into()),
            metrics: Figures(vec![("recall@5".into(), v), ("mrr".into(), v)]),
            ..QueryResult::default()
        };
        let mut result = RunResult::from_queries(
            ResultLevel::Chunk,
            vec!["recall@5".into(), "mrr".into()],
            vec![
                q("a", "easy", 1.0),
                q("b", "hard", 0.0),
                q("c", "hard", 0.5),
            ],
        );
        result.k = Some(5);
        result.group_by_difficulty();
        let mut r = RunRecord::new("score", "d.jsonl", result);
        r.id = RunId::from_parts(1_700_000_000_000, 7);
        r.created = "2023-11-14T22:13:20.000Z".into();
        r.git = Some(GitInfo {
            commit: "0123456789abcdef0123456789abcdef01234567".into(),
            dirty: true,
        });
        r
    }

    #[test]
    fn standard_deviations_go_with_their_metric_by_name() {
        let mut r = run();
        r.result.metrics = Figures(vec![("recall@5".into(), 0.5), ("mrr".into(), 0.25)]);
        // Keys in another order, as a hand-edited or foreign record may have them.
        r.result.std = Figures(vec![("mrr".into(), 0.111), ("recall@5".into(), 0.999)]);
        let text = describe(&r);
        let row = |name: &str| {
            text.lines()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("{text}"))
                .split_whitespace()
                .collect::<Vec<_>>()
        };
        assert_eq!(row("recall@5")[1..], ["0.5000", "0.9990"], "{text}");
        assert_eq!(row("mrr ")[1..], ["0.2500", "0.1110"], "{text}");
    }

    #[test]
    fn imported_records_must_have_as_many_queries_as_they_say() {
        let mut r = run();
        r.result.queries = 1_000_000;
        let e = read_jsonl(&format!("\n{}\n", r.to_json()), Utf8Path::new("in.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("in.jsonl:2") && e.contains("1000000 queries") && e.contains("3"),
            "{e}"
        );
        assert_eq!(
            read_jsonl(&run().to_json(), Utf8Path::new("in.jsonl"))
                .unwrap()
                .len(),
            1
        );
        for created in ["2999-01-01T00:00:00.000Z", "soon"] {
            let mut r = run();
            r.created = created.into();
            let e = read_jsonl(&r.to_json(), Utf8Path::new("in.jsonl"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("which is no time up to now"), "{created}: {e}");
        }
    }

    /// A record whose means contradict its per-query figures, or whose figures add up to an
    /// infinity, is refused with the metric and both means.
    #[test]
    fn imported_means_must_be_those_of_the_rows() {
        let mut r = run();
        // recall@5 over 1, 0 and 0.5 is 0.5.
        r.result.metrics.0[0].1 = 0.9;
        let e = read_jsonl(&r.to_json(), Utf8Path::new("in.jsonl"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "in.jsonl:1: run `01HF7YAT000000000000000007`: the stored mean of `recall@5` is 0.9, but its 3 per-query figures give 0.5"
        );
        let mut r = run();
        for q in &mut r.result.per_query {
            q.metrics.0[1].1 = 1e308;
        }
        r.result.metrics.0[1].1 = 1e308;
        let e = read_jsonl(&r.to_json(), Utf8Path::new("in.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with(
                "the mean of `mrr` over its 3 per-query figures is inf, not a finite number"
            ),
            "{e}"
        );
        // A mean in its last digits off, as another tool may sum, is the same mean.
        let mut r = run();
        r.result.metrics.0[0].1 = 0.5 + 1e-15;
        assert!(read_jsonl(&r.to_json(), Utf8Path::new("in.jsonl")).is_ok());
    }

    #[test]
    fn list_table_by_hand() {
        let t = list_table(&[run().summary()]);
        assert_eq!(
            t,
            "id                          created (UTC)        origin  label  dataset  level      queries  commit\n\
             01HF7YAT000000000000000007  2023-11-14 22:13:20  score   -      d.jsonl  chunk k=5  3        0123456789*\n"
        );
        assert!(list_table(&[]).ends_with("(no runs)\n"));
    }

    #[test]
    fn describe_has_the_difficulty_breakdown() {
        let t = describe(&run());
        assert!(
            t.starts_with("run        01HF7YAT000000000000000007\n"),
            "{t}"
        );
        assert!(t.contains("commit     0123456789abcdef0123456789abcdef01234567 (dirty)\n"));
        assert!(
            t.contains(
                "by difficulty\n\
             difficulty  queries  recall@5     mrr\n\
             easy              1    1.0000  1.0000\n\
             hard              2    0.2500  0.2500\n"
            ),
            "{t}"
        );
    }

    #[test]
    fn jsonl_errors_name_the_line() {
        let good = run().to_json();
        let text = format!("{good}\n\n{{\"format\":3}}\n");
        let e = read_jsonl(&text, Utf8Path::new("runs.jsonl"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "runs.jsonl:3: invalid run record: missing field `id` at line 1 column 12"
        );
        let back = read_jsonl(&format!("{good}\n{good}\n"), Utf8Path::new("x")).unwrap();
        assert_eq!(back, vec![run(), run()]);
    }
}
