//! Golden snapshots of a case's figures, compared with a tolerance.
//!
//! The snapshot body is plain text with a fixed key order, every figure rounded to 4 decimals:
//!
//! ```text
//! level: token
//! k: 5
//! mode: standard
//! queries: 2
//! summary:
//!   span_recall@5: 0.7500
//! per_query:
//!   q0001:
//!     span_recall@5: 1.0000
//!   q0002:
//!     span_recall@5: 0.5000
//! ```

use crate::metrics::{Figures, RunResult};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Figures are stored with this many decimals.
const DECIMALS: usize = 4;

/// The parsed body of a golden snapshot.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Golden {
    /// `level`, `k`, `mode`, `queries`, in file order.
    pub header: Vec<(String, String)>,
    /// Summary figures (means), in file order.
    pub summary: Vec<(String, f64)>,
    /// Per-query figures, by query id.
    pub per_query: BTreeMap<String, Vec<(String, f64)>>,
}

impl Golden {
    /// The snapshot of `outcome`: what [`parse`] reads from the body [`render`] writes for it,
    /// made without the text (figures rounded to the stored decimals).
    pub(crate) fn of(outcome: &RunResult) -> Golden {
        Golden {
            header: header_of(outcome),
            summary: rounded(&outcome.metrics),
            per_query: outcome
                .per_query
                .iter()
                .map(|q| (q.id.clone(), rounded(&q.metrics)))
                .collect(),
        }
    }
}

/// Renders an outcome as a snapshot body.
pub(crate) fn render(outcome: &RunResult) -> String {
    let mut s = String::new();
    for (key, value) in header_of(outcome) {
        let _ = writeln!(s, "{key}: {value}");
    }
    s.push_str("summary:\n");
    for (name, value) in &outcome.metrics.0 {
        let _ = writeln!(s, "  {name}: {value:.DECIMALS$}");
    }
    s.push_str("per_query:\n");
    for q in &outcome.per_query {
        let _ = writeln!(s, "  {}:", quote_id(&q.id));
        for (name, value) in &q.metrics.0 {
            let _ = writeln!(s, "    {name}: {value:.DECIMALS$}");
        }
    }
    s
}

/// The body of the insta snapshot file at `path` read as it is, without insta's parse (a
/// process that runs a single query's test needs a few of its lines, and insta's reading of a
/// snapshot of 100,000 queries cost it half a second in a debug build); `None` when the file
/// is not a header between `---` lines then a body.
pub(crate) fn snapshot_body(path: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let text = text.replace("\r\n", "\n");
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---\n")?;
    Some(rest[end + "\n---\n".len()..].to_owned())
}

/// One query's figures in a snapshot body, found without parsing the rest: what a process
/// that runs a single query's test needs.
pub(crate) fn query_figures(text: &str, id: &str) -> Option<Vec<(String, f64)>> {
    let header = format!("\n  {}:\n", quote_id(id));
    let at = text.find(&header)? + header.len();
    text[at..]
        .lines()
        .take_while(|l| l.starts_with("    "))
        .map(|l| figure(l.trim()))
        .collect()
}

/// One query's figures from this run, rounded as the snapshot stores them.
pub(crate) fn rounded(figures: &Figures) -> Vec<(String, f64)> {
    figures
        .0
        .iter()
        .map(|(n, v)| (n.clone(), format!("{v:.DECIMALS$}").parse().unwrap_or(*v)))
        .collect()
}

/// How far a figure may move before it counts as a change: LLM judges' figures get their own,
/// usually wider, allowance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Tolerance<'a> {
    /// For retrieval and lexical figures.
    pub figures: f64,
    /// For the figures of LLM judges.
    pub judged: f64,
    /// The case's criteria judges, whose figures are judges' too.
    pub criteria: Criteria<'a>,
}

/// A case's criteria judges: its files, or their names as a run group recorded them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Criteria<'a> {
    Files(&'static [super::vocabulary::CriteriaFile]),
    /// A run group's record of the names (the gate, with the `runs` feature).
    #[cfg_attr(not(feature = "runs"), allow(dead_code))]
    Names(&'a [String]),
}

impl Criteria<'_> {
    /// Whether `metric` is the figure of one of the criteria judges.
    pub fn has(&self, metric: &str) -> bool {
        match self {
            Criteria::Files(files) => files.iter().any(|c| c.name() == metric),
            Criteria::Names(names) => names.iter().any(|n| n == metric),
        }
    }
}

impl Tolerance<'_> {
    /// The allowance for the figure reported as `name`.
    pub fn of(&self, name: &str) -> f64 {
        let metric = crate::metrics::ReportedName::parse(name).metric;
        if crate::metrics::registry::is_judged(metric) || self.criteria.has(metric) {
            self.judged
        } else {
            self.figures
        }
    }
}

impl From<f64> for Tolerance<'_> {
    fn from(t: f64) -> Self {
        Tolerance {
            figures: t,
            judged: t,
            criteria: Criteria::Files(&[]),
        }
    }
}

/// Changes beyond the tolerance between two lists of figures of one scope.
pub(crate) fn compare_scope<'a>(
    scope: &str,
    old: &[(String, f64)],
    new: &[(String, f64)],
    tolerance: impl Into<Tolerance<'a>>,
) -> Comparison {
    let mut out = Comparison::default();
    compare_figures(scope, old, new, tolerance.into(), &mut out);
    out
}

/// Query ids are written bare when they are plain, quoted (JSON) otherwise, so that any id
/// reads back unchanged.
fn quote_id(id: &str) -> String {
    let plain = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if plain {
        id.to_owned()
    } else {
        serde_json::to_string(id).expect("strings serialise")
    }
}

fn unquote_id(s: &str) -> Option<String> {
    if s.starts_with('"') {
        serde_json::from_str(s).ok()
    } else {
        Some(s.to_owned())
    }
}

/// Parses a snapshot body; `None` when it is not in the format [`render`] writes.
pub(crate) fn parse(text: &str) -> Option<Golden> {
    #[derive(PartialEq)]
    enum Section {
        Header,
        Summary,
        PerQuery,
    }
    let mut golden = Golden {
        header: Vec::new(),
        summary: Vec::new(),
        per_query: BTreeMap::new(),
    };
    let mut section = Section::Header;
    let mut current: Option<String> = None;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let indent = line.len() - line.trim_start().len();
        let body = line.trim();
        match (indent, body) {
            (0, "summary:") => section = Section::Summary,
            (0, "per_query:") => section = Section::PerQuery,
            (0, _) if section == Section::Header => {
                let (k, v) = body.split_once(": ")?;
                golden.header.push((k.to_owned(), v.to_owned()));
            }
            (2, _) if section == Section::Summary => golden.summary.push(figure(body)?),
            (2, _) if section == Section::PerQuery => {
                let id = unquote_id(body.strip_suffix(':')?)?;
                golden.per_query.insert(id.clone(), Vec::new());
                current = Some(id);
            }
            (4, _) if section == Section::PerQuery => {
                golden
                    .per_query
                    .get_mut(current.as_ref()?)?
                    .push(figure(body)?);
            }
            _ => return None,
        }
    }
    Some(golden)
}

fn figure(body: &str) -> Option<(String, f64)> {
    let (k, v) = body.rsplit_once(": ")?;
    Some((k.to_owned(), v.parse().ok()?))
}

/// How one figure moved between the golden snapshot and this run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Change {
    /// `summary` or a query id.
    pub scope: String,
    /// Metric report name.
    pub metric: String,
    /// Golden value.
    pub old: f64,
    /// This run's value (rounded like the snapshot).
    pub new: f64,
}

impl Change {
    /// Whether the change makes the figure worse (every reported metric is higher-is-better).
    pub fn is_regression(&self) -> bool {
        self.new < self.old
    }
}

/// Shape differences listed one by one before the rest is counted.
const MAX_STRUCTURE: usize = 5;

/// The difference between a golden snapshot and a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Comparison {
    /// Figures that moved by more than the tolerance, worst regression first.
    pub changes: Vec<Change>,
    /// Differences in shape: queries or metrics present on one side only.
    pub structure: Vec<String>,
    /// The configuration in the header (level, k, mode) changed, e.g. `k 5 → 1`: the figures
    /// were not compared.
    pub configuration: Option<String>,
}

impl Comparison {
    /// Figures that got worse beyond the tolerance.
    pub fn regressions(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| c.is_regression())
    }

    /// Figures that got better beyond the tolerance.
    pub fn improvements(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| !c.is_regression())
    }

    /// Whether the run matches the snapshot within the tolerance.
    pub fn is_match(&self) -> bool {
        self.changes.is_empty() && self.structure.is_empty() && self.configuration.is_none()
    }
}

/// Compares two snapshot bodies figure by figure. A figure changed when it differs by more
/// than `tolerance` (with a little slack for the 4-decimal rounding).
pub(crate) fn compare<'a>(
    old: &Golden,
    new: &Golden,
    tolerance: impl Into<Tolerance<'a>>,
) -> Comparison {
    let tolerance = tolerance.into();
    let mut out = Comparison::default();
    if let Some(moved) = configuration_change(&old.header, &new.header) {
        // Figures of another level, k or mode are not comparable one by one: the per-figure
        // account would be every figure gone and every figure new.
        out.configuration = Some(moved);
        return out;
    }
    compare_figures("summary", &old.summary, &new.summary, tolerance, &mut out);
    for (id, figures) in &new.per_query {
        match old.per_query.get(id) {
            Some(before) => compare_figures(id, before, figures, tolerance, &mut out),
            None => out.structure.push(format!("query `{id}` is new")),
        }
    }
    for id in old
        .per_query
        .keys()
        .filter(|id| !new.per_query.contains_key(*id))
    {
        out.structure.push(format!("query `{id}` is gone"));
    }
    // A dataset that changed a lot would make one line of thousands of ids.
    if out.structure.len() > MAX_STRUCTURE {
        let more = out.structure.len() - MAX_STRUCTURE;
        out.structure.truncate(MAX_STRUCTURE);
        out.structure.push(format!("and {more} more differences"));
    }
    out.changes.sort_by(|a, b| {
        b.is_regression()
            .cmp(&a.is_regression())
            .then_with(|| (b.old - b.new).abs().total_cmp(&(a.old - a.new).abs()))
            .then_with(|| a.scope.cmp(&b.scope))
            .then_with(|| a.metric.cmp(&b.metric))
    });
    out
}

/// How the configuration (level, k, mode) of snapshot header `new` differs from `old`'s,
/// e.g. `k 5 → 1`; `None` when it is the same.
pub(crate) fn configuration_change(
    old: &[(String, String)],
    new: &[(String, String)],
) -> Option<String> {
    let configuration = |h: &[(String, String)]| -> Vec<(String, String)> {
        h.iter().filter(|(k, _)| k != "queries").cloned().collect()
    };
    let (was, is) = (configuration(old), configuration(new));
    if was == is {
        return None;
    }
    let mut moved: Vec<String> = was
        .iter()
        .zip(&is)
        .filter(|((_, a), (_, b))| a != b)
        .map(|((k, a), (_, b))| format!("{k} {a} → {b}"))
        .collect();
    if was.len() != is.len() || moved.is_empty() {
        moved.push("the snapshot header".into());
    }
    Some(moved.join(", "))
}

/// The header of a snapshot body (`level`, `k`, `mode`, `queries`), read without the figures.
pub(crate) fn header(text: &str) -> Vec<(String, String)> {
    text.lines()
        .take_while(|l| l.trim() != "summary:")
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// The header [`render`] writes for `outcome`: `level`, `k`, `mode` and `queries` (a
/// conversation run, which has no cut-off nor span mode, `level` and `queries` alone).
pub(crate) fn header_of(outcome: &RunResult) -> Vec<(String, String)> {
    let conversations = outcome.level == crate::metrics::ResultLevel::Conversation;
    [
        ("level", outcome.level.to_string()),
        ("k", outcome.k.unwrap_or_default().to_string()),
        ("mode", outcome.mode.unwrap_or_default().to_string()),
        ("queries", outcome.per_query.len().to_string()),
    ]
    .into_iter()
    .filter(|(k, _)| !(conversations && matches!(*k, "k" | "mode")))
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

fn compare_figures(
    scope: &str,
    old: &[(String, f64)],
    new: &[(String, f64)],
    tolerance: Tolerance,
    out: &mut Comparison,
) {
    let slack = 0.5 * 10f64.powi(-(DECIMALS as i32)) + 1e-12;
    for (metric, value) in new {
        match old.iter().find(|(m, _)| m == metric) {
            Some((_, before)) if (value - before).abs() > tolerance.of(metric) + slack => {
                out.changes.push(Change {
                    scope: scope.to_owned(),
                    metric: metric.clone(),
                    old: *before,
                    new: *value,
                })
            }
            Some(_) => {}
            None => out.structure.push(format!("{scope}: `{metric}` is new")),
        }
    }
    for (metric, _) in old.iter().filter(|(m, _)| !new.iter().any(|(n, _)| n == m)) {
        out.structure.push(format!("{scope}: `{metric}` is gone"));
    }
}

/// A readable account of changes: one line per figure, `metric: old → new (±delta)`.
pub(crate) fn describe(changes: &[&Change]) -> String {
    let mut s = String::new();
    for c in changes {
        let scope = if c.scope == "summary" {
            String::new()
        } else {
            format!("{} ", c.scope)
        };
        let _ = writeln!(
            s,
            "  {scope}{}: {:.4} → {:.4} ({:+.4})",
            c.metric,
            c.old,
            c.new,
            c.new - c.old
        );
    }
    s
}

/// One query's changes on one line: `metric old → new (±delta); …`.
pub(crate) fn describe_inline(changes: &[&Change]) -> String {
    changes
        .iter()
        .map(|c| {
            format!(
                "{} {:.4} → {:.4} ({:+.4})",
                c.metric,
                c.old,
                c.new,
                c.new - c.old
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Queries a failing summary and `rag-eval gate` name one by one; the test of each one that
/// dropped says more, and `gate --verbose` shows every figure.
pub(crate) const DROPS_SHOWN: usize = 5;

/// The account of figures that dropped beyond `tolerance` against the snapshot at `path`, as a
/// failing summary and `rag-eval gate` give it: `means` (the [`means_table`], or nothing), then
/// the [`DROPS_SHOWN`] queries that dropped most and how many more did, or with `every`, each
/// query's figures that dropped, one a line.
pub(crate) fn dropped(
    tolerance: f64,
    path: &std::path::Path,
    means: &str,
    regressions: &[&Change],
    every: bool,
) -> String {
    let queries = if every {
        let per_query: Vec<&Change> = regressions
            .iter()
            .copied()
            .filter(|c| c.scope != "summary")
            .collect();
        describe(&per_query)
    } else {
        query_account(regressions, DROPS_SHOWN)
    };
    format!(
        "figures dropped beyond the tolerance {tolerance} against {}:\n{means}{}",
        path.display(),
        queries.trim_end()
    )
}

/// Figures of one query shown on its line of a gate's account before the rest is counted.
const SHOWN_FIGURES: usize = 3;

/// The means of a run against its baseline, one table: each mean before, after and its
/// change, those that dropped beyond the tolerance first and marked `dropped`, then those that
/// gained (`improved`), worst or best first as `changes` holds them, then the rest in the run's
/// order. A mean on one side only has `—` on the other.
pub(crate) fn means_table(
    old: &[(String, f64)],
    new: &[(String, f64)],
    changes: &[Change],
) -> String {
    let moved = |metric: &str| {
        changes
            .iter()
            .position(|c| c.scope == "summary" && c.metric == metric)
    };
    let mut rows: Vec<(&str, Option<f64>, Option<f64>)> = new
        .iter()
        .map(|(m, v)| (m.as_str(), find(old, m), Some(*v)))
        .collect();
    rows.extend(
        old.iter()
            .filter(|(m, _)| find(new, m).is_none())
            .map(|(m, v)| (m.as_str(), Some(*v), None)),
    );
    // Moved means in `changes`' order (drops first), then the others as they were.
    rows.sort_by_key(|(m, ..)| moved(m).unwrap_or(usize::MAX));
    let width = rows
        .iter()
        .map(|(m, ..)| m.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    let cell = |v: Option<f64>| v.map_or("—".to_owned(), |v| format!("{v:.4}"));
    let mut s = format!(
        "  {:<width$}  {:>8}  {:>8}  {:>8}\n",
        "mean", "before", "after", "change"
    );
    for (metric, before, after) in rows {
        let change = match (before, after) {
            (Some(b), Some(a)) => format!("{:+.4}", a - b),
            _ => "—".to_owned(),
        };
        let mark = match moved(metric).map(|i| changes[i].is_regression()) {
            Some(true) => "  dropped",
            Some(false) => "  improved",
            None => "",
        };
        let _ = writeln!(
            s,
            "  {metric:<width$}  {:>8}  {:>8}  {change:>8}{mark}",
            cell(before),
            cell(after)
        );
    }
    s
}

fn find(figures: &[(String, f64)], metric: &str) -> Option<f64> {
    figures.iter().find(|(m, _)| m == metric).map(|(_, v)| *v)
}

/// The queries among `changes` (all regressions or all improvements), news first: the `shown`
/// that moved most (one line each, their largest changes first), then how many more did.
/// Empty when no query moved.
pub(crate) fn query_account(changes: &[&Change], shown: usize) -> String {
    let mut queries: Vec<(&str, Vec<&Change>)> = Vec::new();
    // `changes` comes worst first, so each query's first change is its largest.
    for c in changes.iter().copied().filter(|c| c.scope != "summary") {
        match queries.iter_mut().find(|(id, _)| *id == c.scope) {
            Some((_, list)) => list.push(c),
            None => queries.push((&c.scope, vec![c])),
        }
    }
    let mut s = String::new();
    if !queries.is_empty() {
        let _ = writeln!(
            s,
            "  queries ({} in all, largest change first):",
            queries.len()
        );
        for (id, list) in queries.iter().take(shown) {
            let more = match list.len().saturating_sub(SHOWN_FIGURES) {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            let first = &list[..list.len().min(SHOWN_FIGURES)];
            let _ = writeln!(s, "    {id}: {}{more}", describe_inline(first));
        }
        if queries.len() > shown {
            let _ = writeln!(s, "    … and {} more", queries.len() - shown);
        }
    }
    s
}

/// insta comparator: snapshots match when they hold the same figures, each within the
/// tolerance. Bodies that are not in the harness's format compare as text.
#[derive(Debug, Clone)]
pub struct ToleranceComparator {
    tolerance: Tolerance<'static>,
}

impl ToleranceComparator {
    /// A comparator with the given tolerance (`judged` for LLM judges' figures).
    pub fn new(tolerance: f64, judged: f64) -> Self {
        ToleranceComparator {
            tolerance: Tolerance {
                figures: tolerance,
                judged,
                criteria: Criteria::Files(&[]),
            },
        }
    }
}

impl insta::Comparator for ToleranceComparator {
    fn matches(&self, reference: &insta::Snapshot, test: &insta::Snapshot) -> bool {
        let text = |s: &insta::Snapshot| s.as_text().map(|t| t.to_string());
        match (text(reference), text(test)) {
            (Some(a), Some(b)) => match (parse(&a), parse(&b)) {
                (Some(old), Some(new)) => compare(&old, &new, self.tolerance).is_match(),
                _ => a == b,
            },
            _ => false,
        }
    }

    fn dyn_clone(&self) -> Box<dyn insta::Comparator> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "level: token\nk: 5\nmode: standard\nqueries: 2\nsummary:\n  span_recall@5: 0.7500\n  mrr: 0.5000\nper_query:\n  q1:\n    span_recall@5: 1.0000\n    mrr: 1.0000\n  \"odd id: x\":\n    span_recall@5: 0.5000\n    mrr: 0.0000\n";

    #[test]
    fn a_snapshot_file_read_as_it_is_gives_a_query_what_insta_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("case.snap");
        for eol in ["\n", "\r\n"] {
            let file = format!("---\nsource: tests/rag.rs\ndescription: \"k: 5\"\n---\n{OLD}")
                .replace('\n', eol);
            std::fs::write(&path, file).unwrap();
            let body = snapshot_body(&path).unwrap();
            let insta = insta::Snapshot::from_file(&path).unwrap();
            let insta = insta.as_text().unwrap().to_string();
            for id in ["q1", "odd id: x"] {
                assert_eq!(query_figures(&body, id), query_figures(&insta, id), "{id}");
                assert!(query_figures(&body, id).is_some(), "{id}");
            }
            assert_eq!(header(&body), header(&insta));
            assert_eq!(header(&body).len(), 4);
        }
        std::fs::write(&path, OLD).unwrap();
        assert_eq!(snapshot_body(&path), None, "not an insta file");
    }

    #[test]
    fn a_snapshot_is_what_its_rendered_body_reads_back_as() {
        use crate::metrics::{QueryResult, ResultLevel};
        let query = |id: &str, v: f64| QueryResult {
            id: id.into(),
            metrics: Figures(vec![("span_recall@5".into(), v), ("mrr".into(), 1.0 - v)]),
            ..QueryResult::default()
        };
        let mut outcome = RunResult::from_queries(
            ResultLevel::Token,
            vec!["span_recall@5".into(), "mrr".into()],
            vec![
                query("q1", 1.0 / 3.0),
                query("odd id: x", 0.123_456),
                query("", 2.0 / 3.0),
            ],
        );
        outcome.k = Some(5);
        let body = render(&outcome);
        assert_eq!(Golden::of(&outcome), parse(&body).unwrap(), "{body}");
        assert_eq!(header_of(&outcome), header(&body));
        assert_eq!(
            Golden::of(&outcome).summary[0],
            ("span_recall@5".into(), 0.3745)
        );
    }

    #[test]
    fn bodies_round_trip_and_odd_ids_are_quoted() {
        let g = parse(OLD).unwrap();
        assert_eq!(
            g.summary,
            [("span_recall@5".into(), 0.75), ("mrr".into(), 0.5)]
        );
        assert_eq!(g.per_query["odd id: x"][1], ("mrr".into(), 0.0));
        assert_eq!(g.header[3], ("queries".into(), "2".into()));
        assert!(parse("level: token\nsummary:\n  broken line\n").is_none());
    }

    #[test]
    fn changes_beyond_tolerance_are_classified_worst_first() {
        let old = parse(OLD).unwrap();
        let new = parse(
            &OLD.replace("  span_recall@5: 0.7500", "  span_recall@5: 0.7550")
                .replace("    span_recall@5: 1.0000", "    span_recall@5: 0.6000")
                .replace("    mrr: 0.0000", "    mrr: 0.2000"),
        )
        .unwrap();
        let c = compare(&old, &new, 0.01);
        assert!(c.structure.is_empty());
        let got: Vec<(&str, &str, bool)> = c
            .changes
            .iter()
            .map(|c| (c.scope.as_str(), c.metric.as_str(), c.is_regression()))
            .collect();
        // The summary moved by 0.005, within the tolerance.
        assert_eq!(
            got,
            [("q1", "span_recall@5", true), ("odd id: x", "mrr", false)]
        );
        assert_eq!(
            describe(&c.regressions().collect::<Vec<_>>()),
            "  q1 span_recall@5: 1.0000 → 0.6000 (-0.4000)\n"
        );
        assert!(compare(&old, &old, 0.0).is_match());
    }

    #[test]
    fn one_query_is_read_without_parsing_the_rest() {
        assert_eq!(
            query_figures(OLD, "odd id: x").unwrap(),
            parse(OLD).unwrap().per_query["odd id: x"]
        );
        assert_eq!(query_figures(OLD, "q1").unwrap().len(), 2);
        assert!(query_figures(OLD, "q2").is_none());
    }

    #[test]
    fn tolerance_is_inclusive_up_to_rounding() {
        let old = parse(OLD).unwrap();
        let new =
            parse(&OLD.replace("  span_recall@5: 0.7500", "  span_recall@5: 0.7600")).unwrap();
        assert!(
            compare(&old, &new, 0.01).is_match(),
            "a move of exactly the tolerance passes"
        );
        assert!(!compare(&old, &new, 0.005).is_match());
    }

    #[test]
    fn a_criteria_judges_figures_have_the_judges_tolerance() {
        static FILES: [super::super::vocabulary::CriteriaFile; 1] =
            [super::super::vocabulary::CriteriaFile {
                path: "judges/polite.md",
                text: "---\nname: polite\nscale: pass/fail\n---\nBe nice.\n",
            }];
        let t = Tolerance {
            figures: 0.01,
            judged: 0.05,
            criteria: Criteria::Files(&FILES),
        };
        assert_eq!(t.of("polite"), 0.05);
        assert_eq!(t.of("faithfulness"), 0.05);
        assert_eq!(t.of("mrr@5"), 0.01);
        assert_eq!(Tolerance::from(0.01).of("polite"), 0.01);
    }

    #[test]
    fn judge_figures_have_their_own_tolerance() {
        let with_judge = OLD.replace("summary:\n", "summary:\n  faithfulness: 0.8000\n");
        let old = parse(&with_judge).unwrap();
        let moved = |from: &str, to: &str| parse(&with_judge.replace(from, to)).unwrap();
        let wide = Tolerance {
            figures: 0.01,
            judged: 0.05,
            criteria: Criteria::Files(&[]),
        };
        // A judge's mean moving by 0.04 is within its tolerance, not within the figures'.
        let judge = moved("faithfulness: 0.8000", "faithfulness: 0.7600");
        assert!(compare(&old, &judge, wide).is_match());
        assert!(!compare(&old, &judge, 0.01).is_match());
        let c = compare(
            &old,
            &moved("faithfulness: 0.8000", "faithfulness: 0.7400"),
            wide,
        );
        assert_eq!(c.regressions().count(), 1);
        // Retrieval figures keep the case's tolerance.
        let recall = moved("  span_recall@5: 0.7500", "  span_recall@5: 0.7300");
        assert!(!compare(&old, &recall, wide).is_match());
        assert_eq!(wide.of("span_recall@5"), 0.01);
        assert_eq!(wide.of("faithfulness"), 0.05);
    }

    #[test]
    fn shape_changes_are_reported() {
        let old = parse(OLD).unwrap();
        let new = parse(&OLD.replace("  q1:", "  q9:")).unwrap();
        let c = compare(&old, &new, 0.01);
        assert_eq!(c.structure, ["query `q9` is new", "query `q1` is gone"]);
        assert_eq!(c.configuration, None);
    }

    #[test]
    fn a_changed_configuration_is_one_statement_not_a_list_of_figures() {
        let old = parse(OLD).unwrap();
        let new = parse(&OLD.replace("k: 5", "k: 1").replace("@5", "@1")).unwrap();
        let c = compare(&old, &new, 0.01);
        assert_eq!(c.configuration.as_deref(), Some("k 5 → 1"));
        assert!(c.structure.is_empty() && c.changes.is_empty(), "{c:?}");
        assert!(!c.is_match());
        let both = parse(
            &OLD.replace("k: 5", "k: 1")
                .replace("mode: standard", "mode: chroma"),
        )
        .unwrap();
        assert_eq!(
            compare(&old, &both, 0.01).configuration.as_deref(),
            Some("k 5 → 1, mode standard → chroma")
        );
    }

    #[test]
    fn the_means_are_one_table_drops_first_then_gains_then_the_rest() {
        let old = "level: token\nk: 5\nmode: standard\nqueries: 0\nsummary:\n  span_recall@5: 0.7500\n  mrr: 0.9000\n  precision_omega: 0.1000\n  map: 0.8000\n  ndcg@5: 0.5000\n  gone: 0.5000\nper_query:\n";
        let new = old
            .replace("mrr: 0.9000", "mrr: 0.6000")
            .replace("span_recall@5: 0.7500", "span_recall@5: 0.7000")
            .replace("precision_omega: 0.1000", "precision_omega: 0.2000")
            .replace("map: 0.8000", "map: 0.8040")
            .replace("  gone: 0.5000\n", "  new_metric: 0.2500\n");
        let c = compare(&parse(old).unwrap(), &parse(&new).unwrap(), 0.01);
        let (old, new) = (parse(old).unwrap().summary, parse(&new).unwrap().summary);
        assert_eq!(
            means_table(&old, &new, &c.changes),
            "  mean               before     after    change\n\
             \x20 mrr                0.9000    0.6000   -0.3000  dropped\n\
             \x20 span_recall@5      0.7500    0.7000   -0.0500  dropped\n\
             \x20 precision_omega    0.1000    0.2000   +0.1000  improved\n\
             \x20 map                0.8000    0.8040   +0.0040\n\
             \x20 ndcg@5             0.5000    0.5000   +0.0000\n\
             \x20 new_metric              —    0.2500         —\n\
             \x20 gone               0.5000         —         —\n"
        );
    }

    #[test]
    fn a_query_account_gives_the_worst_queries_one_line_each_then_counts() {
        let mut old = String::from("level: token\nk: 5\nmode: standard\nqueries: 30\nsummary:\n  mrr: 0.9000\n  map: 0.9000\nper_query:\n");
        let mut new = old.replace("  mrr: 0.9000", "  mrr: 0.6000");
        for i in 0..30 {
            old.push_str(&format!("  q{i:02}:\n    mrr: 1.0000\n    map: 1.0000\n"));
            // Query i drops by 0.01 × (i + 5) on mrr, and q29 on map too.
            let map = if i == 29 { 0.0 } else { 1.0 };
            new.push_str(&format!(
                "  q{i:02}:\n    mrr: {:.4}\n    map: {map:.4}\n",
                1.0 - 0.01 * (i + 5) as f64
            ));
        }
        let c = compare(&parse(&old).unwrap(), &parse(&new).unwrap(), 0.01);
        let text = query_account(&c.regressions().collect::<Vec<_>>(), 10);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "  queries (30 in all, largest change first):");
        assert_eq!(
            lines[1],
            "    q29: map 1.0000 → 0.0000 (-1.0000); mrr 1.0000 → 0.6600 (-0.3400)"
        );
        assert_eq!(lines[2], "    q28: mrr 1.0000 → 0.6700 (-0.3300)");
        assert_eq!(lines.len(), 1 + 10 + 1, "{text}");
        assert_eq!(lines[lines.len() - 1], "    … and 20 more");
        assert_eq!(query_account(&[], 10), "");
        // At most three figures a query.
        let many: Vec<Change> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|m| Change {
                scope: "q1".into(),
                metric: (*m).into(),
                old: 1.0,
                new: 0.0,
            })
            .collect();
        assert_eq!(
            query_account(&many.iter().collect::<Vec<_>>(), 10).lines().nth(1),
            Some("    q1: a 1.0000 → 0.0000 (-1.0000); b 1.0000 → 0.0000 (-1.0000); c 1.0000 → 0.0000 (-1.0000) and 2 more")
        );
    }

    #[test]
    fn the_header_is_read_alone_and_its_change_named() {
        let h = header(OLD);
        assert_eq!(h.len(), 4);
        assert_eq!(configuration_change(&h, &h), None);
        let other = header(&OLD.replace("mode: standard", "mode: chroma"));
        assert_eq!(
            configuration_change(&h, &other).as_deref(),
            Some("mode standard → chroma")
        );
        // The count of queries is not configuration.
        let more = header(&OLD.replace("queries: 2", "queries: 3"));
        assert_eq!(configuration_change(&h, &more), None);
    }

    #[test]
    fn many_new_queries_are_counted_not_listed() {
        let old = parse(OLD).unwrap();
        let mut body = OLD.to_owned();
        for i in 0..40 {
            body.push_str(&format!(
                "  n{i}:\n    span_recall@5: 1.0000\n    mrr: 1.0000\n"
            ));
        }
        let c = compare(&old, &parse(&body).unwrap(), 0.01);
        assert_eq!(c.structure.len(), MAX_STRUCTURE + 1);
        assert_eq!(c.structure[MAX_STRUCTURE], "and 35 more differences");
    }
}
