//! Inline SVG charts: grouped bars with interval whiskers, a scatter of two runs' per-query
//! figures, and histograms. Drawn here so the page needs nothing from the network.

use super::stats::Interval;
use crate::escape::html as esc;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Run colours, the baseline first (a colour-blind-safe palette).
pub(crate) const PALETTE: [&str; 10] = [
    "#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#97bbf5",
    "#9c6b4e", "#9498a0",
];

pub(crate) fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// One run's bars: a value and its interval per group (none where the run lacks the metric).
pub(crate) struct Series<'a> {
    pub label: &'a str,
    pub colour: &'static str,
    pub values: Vec<Option<(f64, Option<Interval>)>>,
}

/// Grouped bars, one group per name, one bar per series, whiskers where an interval is given.
/// The axis spans 0 and every bar and whisker end.
pub(crate) fn bars(title: &str, groups: &[String], series: &[Series<'_>]) -> String {
    let bar_w = 16.0;
    let gap = 22.0;
    let group_w = bar_w * series.len().max(1) as f64 + gap;
    // The title, then one legend line per run, then the plot.
    let legend_top = 24.0;
    let top = legend_top + 16.0 * series.len() as f64 + 12.0;
    let (left, plot_h) = (48.0, 180.0);
    let legend_w = series
        .iter()
        .map(|x| x.label.chars().count())
        .max()
        .unwrap_or(0) as f64
        * 7.0
        + 30.0;
    let title_w = title.chars().count() as f64 * 7.0 + 10.0;
    // Room on the right for the last group's slanted label.
    let width = (left + group_w * groups.len().max(1) as f64 + 70.0)
        .max(left + legend_w)
        .max(title_w);
    let plot_right = left + group_w * groups.len().max(1) as f64 + 10.0;
    let label_room = groups.iter().map(|g| g.chars().count()).max().unwrap_or(0) as f64 * 6.0;
    let height = top + plot_h + 16.0 + label_room.min(160.0);
    let mut lo: f64 = 0.0;
    let mut hi: f64 = 0.0;
    for s in series {
        for (v, ci) in s.values.iter().flatten() {
            lo = lo.min(*v);
            hi = hi.max(*v);
            if let Some(ci) = ci {
                lo = lo.min(ci.lo);
                hi = hi.max(ci.hi);
            }
        }
    }
    let (lo, hi, step) = round_range(lo, hi);
    let y = |v: f64| top + plot_h * (hi - v) / (hi - lo);
    let mut s = open(title, width, height);
    let _ = write!(
        s,
        r#"<text x="4" y="15" class="caption">{}</text>"#,
        esc(title)
    );
    axis(&mut s, left, top, plot_h, (lo, hi, step), plot_right);
    legend(
        &mut s,
        left,
        legend_top,
        series.iter().map(|x| (x.label, x.colour)),
    );
    if lo < 0.0 {
        let _ = write!(
            s,
            r##"<line class="zero" x1="{left}" y1="{:.1}" x2="{plot_right:.1}" y2="{:.1}" stroke="#444"/>"##,
            y(0.0),
            y(0.0)
        );
    }
    for (g, name) in groups.iter().enumerate() {
        let x0 = left + gap / 2.0 + g as f64 * group_w;
        for (i, ser) in series.iter().enumerate() {
            let Some((v, ci)) = ser.values.get(g).copied().flatten() else {
                continue;
            };
            let x = x0 + i as f64 * bar_w;
            let (y0, y1) = (y(v.max(0.0)), y(v.min(0.0)));
            let _ = write!(
                s,
                r#"<rect class="bar" x="{x:.1}" y="{y0:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}: {} = {v:.4}{}</title></rect>"#,
                bar_w - 2.0,
                (y1 - y0).max(0.5),
                ser.colour,
                esc(ser.label),
                esc(name),
                ci.map(|c| format!(" (95% interval {:.4} to {:.4})", c.lo, c.hi))
                    .unwrap_or_default()
            );
            if let Some(c) = ci {
                let cx = x + (bar_w - 2.0) / 2.0;
                let _ = write!(
                    s,
                    r##"<path class="whisker" d="M{cx:.1} {:.1}V{:.1}M{:.1} {:.1}h6M{:.1} {:.1}h6" stroke="#222" fill="none"/>"##,
                    y(c.hi),
                    y(c.lo),
                    cx - 3.0,
                    y(c.hi),
                    cx - 3.0,
                    y(c.lo)
                );
            }
        }
        let lx = x0 + bar_w * series.len() as f64 / 2.0;
        let ly = top + plot_h + 12.0;
        let _ = write!(
            s,
            r#"<text x="{lx:.1}" y="{ly:.1}" transform="rotate(35 {lx:.1} {ly:.1})" class="tick">{}</text>"#,
            esc(name)
        );
    }
    s.push_str("</svg>");
    s
}

/// Per-query figures of run B against run A; points at the same place are drawn once, sized
/// by how many queries sit there. The diagonal is "no change".
pub(crate) fn scatter(title: &str, a: &str, b: &str, points: &[(f64, f64)]) -> String {
    let (left, top, side) = (48.0, 14.0, 260.0);
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for (x, y) in points {
        lo = lo.min(*x).min(*y);
        hi = hi.max(*x).max(*y);
    }
    let range = round_range(lo, hi);
    let (lo, hi, _) = range;
    let px = |v: f64| left + side * (v - lo) / (hi - lo);
    let py = |v: f64| top + side * (hi - v) / (hi - lo);
    let mut counts: BTreeMap<(i64, i64), usize> = BTreeMap::new();
    for (x, y) in points {
        *counts
            .entry(((x * 1000.0).round() as i64, (y * 1000.0).round() as i64))
            .or_default() += 1;
    }
    let mut s = open(title, left + side + 20.0, top + side + 44.0);
    axis(&mut s, left, top, side, range, left + side);
    let _ = write!(
        s,
        r##"<line class="diagonal" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#999" stroke-dasharray="4 3"/>"##,
        px(lo),
        py(lo),
        px(hi),
        py(hi)
    );
    for ((x, y), n) in &counts {
        let (x, y) = (*x as f64 / 1000.0, *y as f64 / 1000.0);
        let r = 2.5 + (*n as f64).sqrt().min(8.0);
        let fill = if y > x + 1e-9 {
            "#3ca951"
        } else if y < x - 1e-9 {
            "#e5484d"
        } else {
            "#888"
        };
        let _ = write!(
            s,
            r#"<circle class="point" cx="{:.1}" cy="{:.1}" r="{r:.1}" fill="{fill}" fill-opacity="0.6"><title>{n} quer{} at {x:.3}, {y:.3}</title></circle>"#,
            px(x),
            py(y),
            if *n == 1 { "y" } else { "ies" }
        );
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" class="axis-label" text-anchor="middle">{}</text><text x="12" y="{:.1}" class="axis-label" text-anchor="middle" transform="rotate(-90 12 {:.1})">{}</text></svg>"#,
        left + side / 2.0,
        top + side + 36.0,
        esc(a),
        top + side / 2.0,
        top + side / 2.0,
        esc(b)
    );
    s
}

/// A histogram of `values` in `bins` equal bins over `[lo, hi]` (the last bin closed).
pub(crate) fn histogram(title: &str, colour: &str, values: &[f64], lo: f64, hi: f64) -> String {
    let bins = 10usize;
    let mut counts = vec![0usize; bins];
    let span = if hi - lo < 1e-12 { 1.0 } else { hi - lo };
    for v in values {
        let i = (((v - lo) / span) * bins as f64).floor();
        let i = if i.is_finite() {
            (i.max(0.0) as usize).min(bins - 1)
        } else {
            0
        };
        counts[i] += 1;
    }
    // The title is the page's to show (it may be longer than the chart is wide); the chart
    // keeps it only as its accessible name.
    let (left, top, w, h) = (36.0, 8.0, 220.0, 110.0);
    let max = counts.iter().copied().max().unwrap_or(0).max(1) as f64;
    let mut s = open(title, left + w + 10.0, top + h + 30.0);
    let bw = w / bins as f64;
    for (i, c) in counts.iter().enumerate() {
        let bh = h * *c as f64 / max;
        let (a, b) = (
            lo + span * i as f64 / bins as f64,
            lo + span * (i + 1) as f64 / bins as f64,
        );
        let _ = write!(
            s,
            r#"<rect class="bin" x="{:.1}" y="{:.1}" width="{:.1}" height="{bh:.1}" fill="{colour}"><title>{c} quer{} in [{a:.2}, {b:.2}{}</title></rect>"#,
            left + i as f64 * bw + 1.0,
            top + h - bh,
            bw - 2.0,
            if *c == 1 { "y" } else { "ies" },
            if i + 1 == bins { "]" } else { ")" }
        );
    }
    let _ = write!(
        s,
        r##"<line x1="{left}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#444"/><text x="{left}" y="{:.1}" class="tick">{lo:.2}</text><text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{hi:.2}</text><text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text></svg>"##,
        top + h,
        left + w,
        top + h,
        top + h + 14.0,
        left + w,
        top + h + 14.0,
        left - 4.0,
        top + 8.0,
        max as usize
    );
    s
}

fn open(title: &str, width: f64, height: f64) -> String {
    format!(
        r#"<svg class="chart" xmlns="http://www.w3.org/2000/svg" role="img" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}"><title>{}</title>"#,
        esc(title)
    )
}

/// `[lo, hi]` widened to round numbers, and the step between ticks: 1, 2, 2.5 or 5 times a
/// power of ten, at most six steps. An empty range becomes `[lo, lo + 1]`.
pub(crate) fn round_range(lo: f64, hi: f64) -> (f64, f64, f64) {
    let hi = if hi - lo < 1e-9 { lo + 1.0 } else { hi };
    let raw = (hi - lo) / 5.0;
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|s| (hi - lo) / s <= 6.0 + 1e-9)
        .unwrap_or(10.0 * power);
    let lo = (lo / step + 1e-9).floor() * step;
    let hi = (hi / step - 1e-9).ceil() * step;
    (lo, hi, step)
}

/// The value axis: a tick and grid line every `step` from `lo` to `hi`.
fn axis(s: &mut String, left: f64, top: f64, h: f64, (lo, hi, step): (f64, f64, f64), right: f64) {
    let n = ((hi - lo) / step).round() as usize;
    let decimals = if step >= 1.0 {
        0
    } else if (step * 10.0).fract().abs() < 1e-9 {
        1
    } else {
        2
    };
    for i in 0..=n {
        let v = lo + step * i as f64;
        let y = top + h * (hi - v) / (hi - lo);
        // `-0.0` prints as 0.
        let v = if v.abs() < 1e-12 { 0.0 } else { v };
        let _ = write!(
            s,
            r##"<line x1="{left}" y1="{y:.1}" x2="{right:.1}" y2="{y:.1}" stroke="#e4e4e4"/><text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{v:.decimals$}</text>"##,
            left - 4.0,
            y + 4.0
        );
    }
    let _ = write!(
        s,
        r##"<line x1="{left}" y1="{top}" x2="{left}" y2="{:.1}" stroke="#444"/>"##,
        top + h
    );
}

/// One line per item, from `top` down.
fn legend<'a>(
    s: &mut String,
    left: f64,
    top: f64,
    items: impl Iterator<Item = (&'a str, &'a str)>,
) {
    for (i, (label, colour)) in items.enumerate() {
        let y = top + 16.0 * i as f64;
        let _ = write!(
            s,
            r#"<rect x="{left:.1}" y="{:.1}" width="10" height="10" fill="{colour}"/><text x="{:.1}" y="{:.1}" class="legend">{}</text>"#,
            y,
            left + 14.0,
            y + 9.0,
            esc(label)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scatter_draws_each_place_once_and_histogram_counts_every_value() {
        let svg = scatter("t", "a", "b", &[(0.5, 0.5), (0.5, 0.5), (0.0, 1.0)]);
        assert_eq!(svg.matches(r#"class="point""#).count(), 2);
        assert!(svg.contains("2 queries at 0.500, 0.500"));
        let svg = histogram("h", "#000", &[0.0, 0.05, 1.0, 1.0, 0.55], 0.0, 1.0);
        assert!(svg.contains("2 queries in [0.00, 0.10)"));
        assert!(svg.contains("2 queries in [0.90, 1.00]"), "{svg}");
        assert!(svg.contains("1 query in [0.50, 0.60)"));
        assert_eq!(svg.matches(r#"class="bin""#).count(), 10);
    }

    #[test]
    fn ranges_widen_to_round_ticks() {
        let close = |(lo, hi, step): (f64, f64, f64), want: (f64, f64, f64)| {
            let ok = (lo - want.0).abs() < 1e-9
                && (hi - want.1).abs() < 1e-9
                && (step - want.2).abs() < 1e-9;
            assert!(ok, "{:?} is not {want:?}", (lo, hi, step));
        };
        close(round_range(0.0, 0.89), (0.0, 1.0, 0.2));
        close(round_range(-0.12, 0.3), (-0.2, 0.3, 0.1));
        close(round_range(0.0, 0.0), (0.0, 1.0, 0.2));
        close(round_range(-0.031, 0.047), (-0.04, 0.06, 0.02));
        let bars = bars(
            "Means",
            &["a".into()],
            &[Series {
                label: "run",
                colour: "#000",
                values: vec![Some((0.89, None))],
            }],
        );
        for tick in [">0.0<", ">0.2<", ">1.0<"] {
            assert!(bars.contains(tick), "{tick}: {bars}");
        }
        assert!(!bars.contains(">0.89<"), "{bars}");
        assert!(bars.contains("class=\"caption\">Means<"), "{bars}");
    }

    #[test]
    fn labels_are_escaped() {
        let series = [Series {
            label: "<run>",
            colour: colour(0),
            values: vec![Some((0.5, None))],
        }];
        let svg = bars("<t>", &["<m>".to_owned()], &series);
        assert!(!svg.contains("<run>") && !svg.contains("<m>") && !svg.contains("<t>"));
    }
}
