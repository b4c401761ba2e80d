//! The HTML page: one file, nothing fetched. Styles and the script are inline; charts are SVG
//! drawn in [`super::svg`]. Every string from a run is escaped.

use super::passage::{judgements, passage_with, swatch, PASSAGE_STYLE};
use super::stats::Analysis;
use super::svg::{self, Series};
use super::{pairs, transcript, Report};
use crate::escape::html as esc;
use crate::metrics::{Passage, QueryResult, RunResult, Truth};
use std::fmt::Write as _;

const STYLE: &str = r#"
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1360px;padding:0 20px 60px;color:#1d1d1f;background:#fff}
h1{font-size:24px;margin:24px 0 4px}h2{font-size:19px;margin:32px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f4f4f6}td code{word-break:break-all}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
#query-table th{cursor:pointer;user-select:none}#query-table th:after{content:" \2195";color:#aaa}
.swatch{display:inline-block;width:10px;height:10px;margin-right:5px;border-radius:2px}
.better{color:#1a7f37}.worse{color:#cf222e}.muted{color:#777}
.pass{color:#1a7f37;font-weight:600}.fail{color:#cf222e;font-weight:600}
svg.chart{max-width:100%;height:auto;margin:6px 12px 6px 0;font:11px system-ui,sans-serif}
svg .tick{fill:#555}svg .legend{fill:#222}svg .caption{fill:#222;font-weight:600}svg .axis-label{fill:#222}
.charts{display:flex;flex-wrap:wrap;align-items:flex-start}.scroll{overflow-x:auto;max-width:100%}
figure{margin:0}figure[hidden]{display:none}
details{margin:4px 0}summary{cursor:pointer;color:#4269d0}
#query-table td:nth-child(3){min-width:380px;max-width:640px}#query-table th{font-size:12px}
input[type=search]{font-size:14px;padding:4px 8px;width:320px}
.nowrap{white-space:nowrap}figcaption{font:600 11px system-ui,sans-serif;margin:6px 0 0 36px;max-width:220px;overflow-wrap:anywhere}
@media (max-width:700px){body{padding:0 8px 40px}th,td{padding:2px 4px}#metric-table th,#metric-table td:first-child{overflow-wrap:anywhere}td code{display:inline-block;min-width:14em}table{font-size:12px;display:block;overflow-x:auto;max-width:100%}
td.num{white-space:normal}#query-table td:nth-child(3){min-width:calc(100vw - 13em);overflow-wrap:anywhere}input[type=search]{width:100%;box-sizing:border-box}}
"#;

const SCRIPT: &str = r#"
(function () {
  var search = document.getElementById('query-search');
  var table = document.getElementById('query-table');
  var rows = table ? Array.prototype.slice.call(table.tBodies[0].rows) : [];
  var count = document.getElementById('query-count');
  if (search) {
    search.addEventListener('input', function () {
      var q = search.value.toLowerCase();
      var shown = 0;
      rows.forEach(function (r) {
        var hit = q === '' || r.textContent.toLowerCase().indexOf(q) >= 0;
        r.hidden = !hit;
        if (hit) { shown += 1; }
      });
      count.textContent = String(shown);
    });
  }
  if (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      var ascending = true;
      th.addEventListener('click', function () {
        var key = function (r) {
          var c = r.cells[i];
          var v = c.getAttribute('data-v');
          return v === null ? c.textContent.toLowerCase() : parseFloat(v);
        };
        rows.sort(function (a, b) {
          var x = key(a), y = key(b);
          var o = x < y ? -1 : x > y ? 1 : 0;
          return ascending ? o : -o;
        });
        ascending = !ascending;
        rows.forEach(function (r) { table.tBodies[0].appendChild(r); });
      });
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll('[data-group]'), function (box) {
    var selects = box.querySelectorAll('select[data-key]');
    var figures = box.querySelectorAll('figure');
    var update = function () {
      Array.prototype.forEach.call(figures, function (f) {
        var show = true;
        Array.prototype.forEach.call(selects, function (s) {
          if (f.getAttribute('data-' + s.getAttribute('data-key')) !== s.value) { show = false; }
        });
        f.hidden = !show;
      });
    };
    Array.prototype.forEach.call(selects, function (s) { s.addEventListener('change', update); });
    update();
  });
  // A link to a conversation opens its transcript.
  var opened = function () {
    var t = location.hash && document.getElementById(location.hash.slice(1));
    if (t && t.tagName === 'DETAILS') { t.open = true; }
  };
  window.addEventListener('hashchange', opened);
  opened();
  document.body.setAttribute('data-ready', 'yes');
})();
"#;

pub(crate) fn render(report: &Report) -> String {
    let mut s = String::with_capacity(64 * 1024);
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title><style>{STYLE}{PASSAGE_STYLE}{}</style></head><body>\n<h1>{}</h1>\n",
        esc(&report.title),
        transcript::TRANSCRIPT_STYLE,
        esc(&report.title)
    );
    let analysis = Analysis::of(report);
    runs(&mut s, report);
    metrics(&mut s, report, &analysis);
    corrected(&mut s, report);
    if !report.bars.is_empty() {
        bars(&mut s, report);
    }
    difficulty(&mut s, report);
    if report.runs.len() > 1 {
        scatters(&mut s, report);
    }
    histograms(&mut s, report);
    queries(&mut s, report);
    transcript::section(&mut s, report);
    let _ = write!(s, "<script>{SCRIPT}</script>\n</body></html>\n");
    s
}

/// The judge-corrected means of the runs whose queries carry people's labels; nothing when none
/// does.
fn corrected(s: &mut String, report: &Report) {
    let rows: Vec<(usize, &String, crate::align::CorrectedFigure)> = report
        .runs
        .iter()
        .enumerate()
        .flat_map(|(i, (label, r))| {
            crate::align::corrected_means(r)
                .into_iter()
                .map(move |c| (i, label, c))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    s.push_str("<section id=\"corrected\"><h2>Judge-corrected means</h2><p class=\"muted\">A judged metric's mean corrected by the judge's error on the queries people labelled (prediction-powered inference), with its 95% interval.</p><table><thead><tr><th>run</th><th>metric</th><th>raw mean</th><th>corrected</th><th>95% interval</th><th>labelled</th></tr></thead><tbody>\n");
    for (i, label, c) in rows {
        let m = &c.corrected;
        let _ = writeln!(
            s,
            "<tr><td>{}{}</td><td>{}</td><td class=\"num\">{:.4}</td><td class=\"num\">{:.4}</td><td class=\"num\">[{:.4}, {:.4}]</td><td class=\"num\">{} of {}</td></tr>",
            swatch(i),
            esc(label),
            esc(&c.metric),
            c.raw,
            m.mean,
            m.low,
            m.high,
            m.labelled,
            m.judged
        );
    }
    s.push_str("</tbody></table></section>\n");
}

fn runs(s: &mut String, report: &Report) {
    s.push_str("<section id=\"runs\"><h2>Runs</h2><table><thead><tr><th title=\"the run's short name in the query table\">#</th><th>run</th><th>level</th><th>k</th><th>mode</th><th>queries</th><th title=\"the retriever's spec, the RAG service's, or the file scored\">system</th><th>dataset</th><th>dataset hash</th></tr></thead><tbody>\n");
    for (i, (label, r)) in report.runs.iter().enumerate() {
        let config = r.config.as_ref();
        let system = config.and_then(|c| c.system());
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}{}{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td><code>{}</code></td><td>{}</td><td><code>{}</code></td></tr>",
            Report::short_label(i),
            swatch(i),
            esc(label),
            if i == 0 && report.runs.len() > 1 { " <span class=\"muted\">(baseline)</span>" } else { "" },
            r.level,
            r.k.map_or("—".into(), |k| k.to_string()),
            r.mode.map_or("—".into(), |m| m.to_string()),
            r.queries,
            esc(system.as_deref().unwrap_or("—")),
            esc(config.and_then(|c| c.dataset.as_deref()).unwrap_or("—")),
            esc(r.dataset_hash.as_deref().unwrap_or("—"))
        );
    }
    s.push_str("</tbody></table></section>\n");
}

/// Per-query values of `metric` in `run`, by query id.
fn values(run: &RunResult, metric: &str) -> Vec<f64> {
    run.per_query
        .iter()
        .filter_map(|q| q.metrics.get(metric))
        .collect()
}

/// The note under a table's heading: where its intervals and p-values come from.
/// `charts`: whether the page draws the means with their intervals.
pub(super) fn method(report: &Report, analysis: &Analysis, charts: bool) -> String {
    let o = report.options();
    let level = o.confidence * 100.0;
    let mut note = String::from("Mean ± standard deviation over queries");
    if charts {
        note.push_str(&format!(
            "; charts: each mean with its {level:.0}% bootstrap interval ({} resamples, seed {})",
            o.resamples, o.seed
        ));
    }
    match (&analysis.comparison, &analysis.refused) {
        (Some(c), _) => {
            let test = match c.test {
                crate::compare::PairedTest::Fisher => "Fisher randomization test",
                crate::compare::PairedTest::Student => "paired t-test",
            };
            note.push_str(&format!(
                ". For the other runs, as rag-eval compare gives it: Δ, the mean difference \
                 from the baseline with its {level:.0}% paired bootstrap interval, and p, the \
                 {test}'s p-value after {} correction across metrics × runs; * marks p ≤ {}",
                c.correction,
                report.alpha()
            ));
            if c.datasets_differ {
                note.push_str(&format!(
                    " (the runs differ in dataset or queries: compared on the {} query ids \
                     they share)",
                    c.queries
                ));
            }
            let partial: Vec<String> = c
                .metrics
                .iter()
                .filter(|m| m.queries < c.queries)
                .map(|m| format!("{} on {}", m.metric, m.queries))
                .collect();
            if !partial.is_empty() {
                note.push_str(&format!(
                    "; where some run has no figure for a query, a metric is compared on the \
                     queries with a figure in every run: {}",
                    partial.join(", ")
                ));
            }
            for u in &c.metrics_untested {
                note.push_str(&format!("; {} is not tested: {}", u.metric, u.reason));
            }
            for r in &c.metrics_redefined {
                note.push_str(&format!(
                    "; {} is not compared: the runs define it differently ({})",
                    r.metric,
                    r.definitions.join(" / ")
                ));
            }
        }
        (None, Some(why)) => note.push_str(&format!(". The runs are not compared: {why}")),
        (None, None) => {}
    }
    note.push('.');
    note
}

fn metrics(s: &mut String, report: &Report, analysis: &Analysis) {
    let names = report.metric_names();
    let alpha = report.alpha();
    let _ = write!(
        s,
        "<section id=\"metrics\"><h2>Metrics</h2><p class=\"muted\">{}</p><table id=\"metric-table\"><thead><tr><th>metric</th>",
        esc(&method(report, analysis, true))
    );
    for (i, (label, _)) in report.runs.iter().enumerate() {
        let _ = write!(s, "<th>{}{}</th>", swatch(i), esc(label));
    }
    s.push_str("</tr></thead><tbody>\n");
    for n in &names {
        let _ = write!(s, "<tr><td>{}</td>", esc(n));
        for (i, (_, r)) in report.runs.iter().enumerate() {
            let (Some(m), Some(sd)) = (r.metrics.get(n), r.std.get(n)) else {
                s.push_str("<td class=\"num muted\">—</td>");
                continue;
            };
            let _ = write!(s, "<td class=\"num\">{m:.4} ± {sd:.4}");
            if let Some((covered, of)) = r.coverage(n) {
                let _ = write!(
                    s,
                    "<br><span class=\"muted\">over {covered} of {of} queries</span>"
                );
            }
            if let Some(d) = analysis.difference(i, n) {
                let class = if !d.significant(alpha) {
                    "muted"
                } else if d.difference > 0.0 {
                    "better"
                } else {
                    "worse"
                };
                let _ = write!(
                    s,
                    "<br><span class=\"{class}\" data-ci=\"{} {}\" data-p=\"{}\">Δ {:+.4} <span class=\"nowrap\">[{:+.4}, {:+.4}]</span><br>p {:.4}{}</span>",
                    d.ci[0],
                    d.ci[1],
                    d.corrected_p_value,
                    d.difference,
                    d.ci[0],
                    d.ci[1],
                    d.corrected_p_value,
                    if d.significant(alpha) { " *" } else { "" }
                );
            }
            s.push_str("</td>");
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table><div class=\"charts\">");
    let head = report.headline_metrics();
    let series: Vec<Series<'_>> = report
        .runs
        .iter()
        .enumerate()
        .map(|(i, (label, r))| Series {
            label,
            colour: svg::colour(i),
            values: head
                .iter()
                .map(|n| Some((r.metrics.get(n)?, analysis.mean_interval(i, n))))
                .collect(),
        })
        .collect();
    let level = report.options().confidence * 100.0;
    s.push_str(&svg::bars(
        &format!("Means with {level:.0}% bootstrap intervals"),
        &head,
        &series,
    ));
    if analysis.comparison.is_some() {
        let diffs: Vec<Series<'_>> = report.runs[1..]
            .iter()
            .enumerate()
            .map(|(i, (label, _))| Series {
                label,
                colour: svg::colour(i + 1),
                values: head
                    .iter()
                    .map(|n| {
                        let d = analysis.difference(i + 1, n)?;
                        Some((d.difference, Some(d.interval())))
                    })
                    .collect(),
            })
            .collect();
        s.push_str(&svg::bars(
            &format!("Difference from the baseline with {level:.0}% paired bootstrap intervals"),
            &head,
            &diffs,
        ));
    }
    s.push_str("</div></section>\n");
}

fn bars(s: &mut String, report: &Report) {
    s.push_str("<section id=\"bars\"><h2>Bars</h2><table><thead><tr><th>bar</th><th>run</th><th>mean</th><th>verdict</th><th>queries below the bar</th></tr></thead><tbody>\n");
    for bar in &report.bars {
        for (label, r) in &report.runs {
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td>",
                esc(&bar.to_string()),
                esc(label)
            );
            match bar.mean_and_missed(r) {
                None => s.push_str(
                    "<td class=\"num\">—</td><td class=\"fail\">not computed or no queries</td><td></td>",
                ),
                Some((m, missed)) => {
                    let _ = write!(
                        s,
                        "<td class=\"num\">{m:.4}</td><td class=\"{}\">{}</td><td class=\"num\">{missed} of {}</td>",
                        if bar.passes(m) { "pass" } else { "fail" },
                        if bar.passes(m) { "pass" } else { "fail" },
                        r.per_query.len()
                    );
                }
            }
            s.push_str("</tr>\n");
        }
    }
    s.push_str("</tbody></table></section>\n");
}

fn difficulty(s: &mut String, report: &Report) {
    let head = report.headline_metrics();
    s.push_str("<section id=\"difficulty\"><h2>By difficulty</h2>");
    if report.runs.iter().all(|(_, r)| r.by_difficulty.is_none()) {
        s.push_str("<p class=\"muted\">No run records difficulty labels (<code>rag-eval score</code> results have none).</p></section>\n");
        return;
    }
    s.push_str(
        "<div class=\"scroll\"><table id=\"difficulty-table\"><thead><tr><th>difficulty</th><th>run</th><th>queries</th>",
    );
    for n in &head {
        let _ = write!(s, "<th>{}</th>", esc(n));
    }
    s.push_str("</tr></thead><tbody>\n");
    for label in report.difficulty_labels() {
        for (i, (run, r)) in report.runs.iter().enumerate() {
            let Some(d) = r.by_difficulty.as_ref().and_then(|d| d.get(label)) else {
                continue;
            };
            let _ = write!(
                s,
                "<tr><td>{}</td><td title=\"{}\">{}{}</td><td class=\"num\">{}</td>",
                esc(label),
                esc(run),
                swatch(i),
                Report::short_label(i),
                d.queries
            );
            for n in &head {
                match d.metrics.get(n) {
                    Some(v) => {
                        let _ = write!(s, "<td class=\"num\">{v:.4}</td>");
                    }
                    None => s.push_str("<td class=\"num muted\">—</td>"),
                }
            }
            s.push_str("</tr>\n");
        }
    }
    s.push_str("</tbody></table></div></section>\n");
}

fn select(s: &mut String, key: &str, label: &str, options: &[String]) {
    let _ = write!(
        s,
        "<label>{} <select data-key=\"{}\">",
        esc(label),
        esc(key)
    );
    for o in options {
        let _ = write!(s, "<option value=\"{}\">{}</option>", esc(o), esc(o));
    }
    s.push_str("</select></label> ");
}

fn scatters(s: &mut String, report: &Report) {
    let head = report.headline_metrics();
    let (base_label, base) = &report.runs[0];
    let others: Vec<String> = report.runs[1..].iter().map(|(l, _)| l.clone()).collect();
    s.push_str("<section id=\"scatter\" data-group=\"scatter\"><h2>Per query: baseline against another run</h2><p class=\"muted\">Each point is a query (sized by how many share it); above the diagonal the other run did better.</p><p>");
    select(s, "metric", "metric", &head);
    select(s, "run", "run", &others);
    s.push_str("</p><div class=\"charts\">");
    for (label, r) in &report.runs[1..] {
        for n in &head {
            let p = pairs(base, r, n);
            let _ = write!(
                s,
                "<figure data-metric=\"{}\" data-run=\"{}\">{}</figure>",
                esc(n),
                esc(label),
                svg::scatter(
                    &format!("{n}: {base_label} against {label}"),
                    &format!("{base_label} ({n})"),
                    &format!("{label} ({n})"),
                    &p
                )
            );
        }
    }
    s.push_str("</div></section>\n");
}

fn histograms(s: &mut String, report: &Report) {
    let names = report.metric_names();
    s.push_str("<section id=\"histograms\" data-group=\"histograms\"><h2>Distribution of per-query figures</h2><p>");
    select(s, "metric", "metric", &names);
    s.push_str("</p><div class=\"charts\">");
    for n in &names {
        let all: Vec<Vec<f64>> = report.runs.iter().map(|(_, r)| values(r, n)).collect();
        let lo = all.iter().flatten().copied().fold(0.0f64, f64::min);
        let hi = all.iter().flatten().copied().fold(1.0f64, f64::max);
        for (i, ((label, _), v)) in report.runs.iter().zip(&all).enumerate() {
            if v.is_empty() {
                continue;
            }
            let _ = write!(
                s,
                // The title in HTML, where a long run label wraps instead of being cut.
                "<figure data-metric=\"{}\"><figcaption>{}: {}</figcaption>{}</figure>",
                esc(n),
                esc(label),
                esc(n),
                svg::histogram(&format!("{label}: {n}"), svg::colour(i), v, lo, hi)
            );
        }
    }
    s.push_str("</div></section>\n");
}

fn passage(s: &mut String, p: &Passage, rank: Option<usize>, truth: Option<&Truth>) {
    let marks = truth.map(|t| t.matched(p)).unwrap_or_default();
    let hit = truth.is_some_and(|t| t.is_hit(p));
    passage_with(s, p, rank, &marks, hit);
}

/// A context of an answer, `marks` (relative to its text) marked as supporting statements.
fn passage_marked(s: &mut String, p: &Passage, rank: Option<usize>, marks: &[(usize, usize)]) {
    passage_with(s, p, rank, marks, false);
}

/// A query id short enough for a table cell (the whole id on hover).
fn short_id(id: &str) -> String {
    if id.chars().count() <= 12 {
        return id.to_owned();
    }
    let head: String = id.chars().take(10).collect();
    format!("{head}…")
}

fn detail(s: &mut String, report: &Report, n: usize, row: &[Option<&QueryResult>]) {
    let truth = row.iter().flatten().find_map(|q| q.truth.as_ref());
    let any_retrieved = row.iter().flatten().any(|q| q.retrieved.is_some());
    let any_answer = row.iter().flatten().any(|q| q.answer.is_some());
    if truth.is_none() && !any_retrieved && !any_answer {
        return;
    }
    let _ = write!(
        s,
        "<details><summary>{}</summary>",
        if any_answer {
            "answers, judges and chunks"
        } else {
            "ground truth and retrieved chunks"
        }
    );
    if let Some(refs) = row
        .iter()
        .flatten()
        .map(|q| &q.references)
        .find(|r| !r.is_empty())
    {
        s.push_str("<h3>Reference answer</h3>");
        for r in refs {
            let _ = write!(s, "<blockquote class=\"reference\">{}</blockquote>", esc(r));
        }
    }
    for (i, q) in row.iter().enumerate() {
        if let Some(q) = q.filter(|q| q.answer.is_some()) {
            answer(s, report, n, i, q);
        }
    }
    match truth {
        Some(Truth::Spans(spans)) => {
            s.push_str("<h3>Ground truth</h3>");
            for p in spans {
                passage(s, p, None, None);
            }
        }
        Some(Truth::ChunkIds(ids)) => {
            s.push_str("<h3>Ground truth</h3><p>");
            let list: Vec<String> = ids
                .iter()
                .map(|i| format!("<code>{}</code>", esc(i)))
                .collect();
            s.push_str(&list.join(", "));
            s.push_str("</p>");
        }
        None => {}
    }
    for (i, q) in row.iter().enumerate() {
        // A run that answered showed its retrieved chunks as its answer's contexts.
        if q.is_some_and(|q| q.contexts.is_some()) {
            continue;
        }
        let Some(retrieved) = q.and_then(|q| q.retrieved.as_ref()) else {
            continue;
        };
        let _ = write!(
            s,
            "<h3>{}{}: retrieved</h3>",
            swatch(i),
            esc(&report.runs[i].0)
        );
        if retrieved.is_empty() {
            s.push_str("<p class=\"muted\">nothing</p>");
        }
        for (rank, p) in retrieved.iter().enumerate() {
            passage(s, p, Some(rank + 1), truth);
        }
    }
    s.push_str("</details>");
}

/// Run `i`'s answer to query number `n`: the text, each judge's verdicts (statements marked
/// supported or not, linked to the characters of the context that support them, with the
/// judge's reasons), then the contexts with those characters marked.
fn answer(s: &mut String, report: &Report, n: usize, i: usize, q: &QueryResult) {
    let _ = write!(
        s,
        "<h3>{}{} {}: answer</h3><blockquote class=\"answer\">{}</blockquote>",
        swatch(i),
        Report::short_label(i),
        esc(&report.runs[i].0),
        esc(q.answer.as_deref().unwrap_or(""))
    );
    let anchor = |c: usize| format!("q{n}-r{i}-c{c}");
    // Per context, the character ranges (relative to the passage) statements rest on.
    let contexts = q.contexts.as_deref().unwrap_or_default();
    let mut marks: Vec<Vec<(usize, usize)>> = vec![Vec::new(); contexts.len()];
    judgements(s, &q.judges, contexts, &mut marks, &anchor);
    if !contexts.is_empty() {
        s.push_str("<h4>Contexts</h4>");
    }
    for (c, p) in contexts.iter().enumerate() {
        let mut m = marks[c].clone();
        m.sort_unstable();
        let _ = write!(s, "<div id=\"{}\">", anchor(c));
        passage_marked(s, p, Some(c + 1), &m);
        s.push_str("</div>");
    }
}

fn queries(s: &mut String, report: &Report) {
    let head = report.query_metrics();
    let rows = report.queries();
    let _ = write!(
        s,
        "<section id=\"queries\"><h2>Queries</h2><p><input type=\"search\" id=\"query-search\" placeholder=\"Search questions, ids, truth and retrieved text\" aria-label=\"search queries\"> <span id=\"query-count\">{}</span> of {} shown; click a column to sort.</p><div class=\"scroll\"><table id=\"query-table\"><thead><tr><th>id</th><th>difficulty</th><th>question</th>",
        rows.len(),
        rows.len()
    );
    for (i, (label, _)) in report.runs.iter().enumerate() {
        for n in &head {
            let _ = write!(
                s,
                "<th title=\"{}: {}\">{}{}<br>{}</th>",
                esc(label),
                esc(n),
                swatch(i),
                Report::short_label(i),
                esc(n)
            );
        }
    }
    s.push_str("</tr></thead><tbody>\n");
    for (n, (id, row)) in rows.iter().enumerate() {
        let any = row.iter().flatten().next();
        // A conversation's question is its first user turn.
        let question = any
            .and_then(|q| q.query.as_deref().or_else(|| transcript::opening(q)))
            .unwrap_or("");
        let difficulty = any.and_then(|q| q.difficulty.as_deref()).unwrap_or("");
        let _ = write!(
            s,
            "<tr><td title=\"{}\">{}</td><td>{}</td><td>{}",
            esc(id),
            esc(&short_id(id)),
            esc(difficulty),
            esc(question)
        );
        detail(s, report, n, row);
        if row.iter().flatten().any(|q| !q.turns.is_empty()) {
            let _ = write!(s, " <a href=\"#conv-{n}\">transcript</a>");
        }
        s.push_str("</td>");
        for q in row {
            for n in &head {
                match q.and_then(|q| q.metrics.get(n)) {
                    Some(v) => {
                        let _ = write!(s, "<td class=\"num\" data-v=\"{v}\">{v:.4}</td>");
                    }
                    None => s.push_str("<td class=\"num muted\" data-v=\"-1\">—</td>"),
                }
            }
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table></div></section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_score_run_shows_its_dataset() {
        use crate::metrics::{ResultLevel, RunResult};
        let result = RunResult::from_queries(ResultLevel::Token, vec![], vec![]);
        let mut record = crate::runs::RunRecord::new("score", "golden/questions.jsonl", result);
        record.label = Some("system-b".into());
        let run = record.into_result();
        let html = Report::new(vec![("system-b".into(), run)]).unwrap().html();
        let runs = &html[html.find("id=\"runs\"").unwrap()..html.find("id=\"metrics\"").unwrap()];
        assert!(runs.contains("<td>golden/questions.jsonl</td>"), "{runs}");
    }

    #[test]
    fn a_judged_figure_is_coloured_by_its_score_not_only_its_status() {
        use crate::metrics::{
            JudgeDetails, JudgeSample, JudgeStatus, QueryJudgement, QueryResult, ResultLevel,
            RunResult,
        };
        let sample = |score: Option<f64>, status: JudgeStatus, matches: bool| JudgeSample {
            sample: 0,
            status,
            score,
            details: JudgeDetails::AnswerMatch {
                matches,
                reason: "r".into(),
            },
            message: None,
            kind: None,
            usage: Default::default(),
        };
        let judged = |metric: &str, s: JudgeSample| QueryJudgement {
            metric: metric.into(),
            query_id: "q1".into(),
            samples: vec![s],
        };
        let q = QueryResult {
            id: "q1".into(),
            answer: Some("Paris".into()),
            judges: vec![
                judged("answer_match", sample(Some(0.0), JudgeStatus::Ok, false)),
                judged("faithfulness", sample(Some(1.0), JudgeStatus::Ok, true)),
                judged("answer_relevancy", sample(None, JudgeStatus::Error, false)),
            ],
            ..Default::default()
        };
        let run = RunResult::from_queries(ResultLevel::Token, vec![], vec![]);
        let report = Report::new(vec![("a".into(), run)]).unwrap();
        let mut s = String::new();
        answer(&mut s, &report, 0, 0, &q);
        assert!(
            s.contains("<b>answer_match</b> <span class=\"score-low\">0.00</span>"),
            "{s}"
        );
        assert!(
            s.contains("<b>faithfulness</b> <span class=\"status-ok\">1.00</span>"),
            "{s}"
        );
        assert!(
            s.contains("<b>answer_relevancy</b> <span class=\"status-error\">error</span>"),
            "{s}"
        );
    }
}
