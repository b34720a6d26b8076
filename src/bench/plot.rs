//! `steerd bench`'s figures: latency CDFs, req/s per round, the per-round B/A ratio with
//! its 95% interval, and the self-contained HTML report of `bench ab --report`.
//!
//! Input: latency histograms, per-round req/s of A and B, the paired ratio and the
//! verdict lines the text output prints. Output: SVG documents ([`ab_svg`], [`load_svg`])
//! and one HTML page ([`ab_html`]) with the figure inline and the text output below it.
//! It does not measure or compute statistics (`load.rs`, `ministat.rs`) and writes no files.
//!
//! The CDF's x axis is logarithmic: latencies of one run span decades, and the tail is
//! what A/B comparisons of steering are about. p50, p99 and p99.9 are marked on each curve
//! and listed with their values in the legend.

use super::hist::Hist;
use super::ministat::Ratio;
use super::report::human_ns;
use crate::svg::{self, Anchor, Point, Scale, Svg};
use core::fmt::Write as _;

/// Percentiles marked on each CDF, with their labels.
const MARKS: [(f64, &str); 3] = [(50.0, "p50"), (99.0, "p99"), (99.9, "p99.9")];

/// One latency distribution as CDF points: (nanoseconds, cumulative fraction).
#[derive(Clone, Debug)]
pub(crate) struct Cdf {
    points: Vec<Point>,
    marks: [(f64, &'static str, f64); 3],
    count: u64,
}

impl Cdf {
    /// The CDF of `hist`, read at every whole percentile and through the tail; `None`
    /// when it holds no value.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn of(hist: &Hist) -> Option<Cdf> {
        if hist.count() == 0 {
            return None;
        }
        let tail = [99.5, 99.9, 99.95, 99.99, 100.0];
        let ps = (1..100).map(f64::from).chain(tail);
        let mut points = vec![(hist.min() as f64, 0.0)];
        points.extend(ps.map(|p| (hist.percentile(p) as f64, p / 100.0)));
        let marks = MARKS.map(|(p, label)| (hist.percentile(p) as f64, label, p / 100.0));
        Some(Cdf {
            points,
            marks,
            count: hist.count(),
        })
    }

    fn range(&self) -> (f64, f64) {
        let xs = self.points.iter().map(|p| p.0);
        let lo = xs.clone().fold(f64::INFINITY, f64::min);
        (lo, xs.fold(0.0, f64::max))
    }

    fn legend(&self, side: &str) -> String {
        let mut s = format!("{side}:");
        for (ns, label, _) in self.marks {
            let _ = write!(s, " {label} {}", human_ns(ns as u64));
        }
        let _ = write!(s, " ({} requests)", self.count);
        s
    }
}

/// Everything one A/B figure shows.
pub(crate) struct AbFigure<'a> {
    /// The load line of the text output (what was run, how long, how many rounds).
    pub(crate) load: &'a str,
    /// Command lines A and B.
    pub(crate) commands: [&'a str; 2],
    /// A's and B's latencies over all their rounds; `None` when the client kept none
    /// (wrk).
    pub(crate) latency: [Option<&'a Cdf>; 2],
    /// A's and B's req/s, one per round.
    pub(crate) rps: [&'a [f64]; 2],
    /// The paired ratio B/A of req/s with its interval; `None` with fewer than 2 rounds.
    pub(crate) ratio: Option<Ratio>,
    /// The verdict lines of req/s, as the text output prints them.
    pub(crate) verdict: &'a str,
}

const SIDES: [&str; 2] = ["a", "b"];
const NAMES: [&str; 2] = ["A", "B"];
// CSS classes per side, written out: a `format!` at each use costs code in every caller.
const CDF: [&str; 2] = ["cdf a", "cdf b"];
const MARK: [&str; 2] = ["mark a", "mark b"];
const MARK_GROUP: [&str; 2] = ["marks a", "marks b"];
const LEGEND: [&str; 2] = ["legend a", "legend b"];
const ROUNDS: [&str; 2] = ["rounds a", "rounds b"];

const STYLE: &str = "text{fill:#222}.title{font-weight:bold;font-size:14px}\
.tick{fill:#555;font-size:11px}.frame{fill:none;stroke:#999}.grid{stroke:#e6e6e6}\
polyline{fill:none;stroke-width:2}.a{stroke:#1f6fb4}.b{stroke:#d2461e}\
circle.a,text.a{fill:#1f6fb4;stroke:none}circle.b,text.b{fill:#d2461e;stroke:none}.band{fill:#d2461e;fill-opacity:.18}.one{stroke:#555;stroke-dasharray:4 3}\
.mean{stroke:#d2461e;stroke-dasharray:7 3}.verdict{font-family:monospace;font-size:12px}";

const WIDTH: u32 = 920;

/// A plot area and its two scales.
struct Panel {
    left: f64,
    top: f64,
    width: f64,
    height: f64,
}

impl Panel {
    fn at(left: f64, top: f64, width: f64, height: f64) -> Panel {
        Panel {
            left,
            top,
            width,
            height,
        }
    }

    fn bottom(&self) -> f64 {
        self.top + self.height
    }

    fn right(&self) -> f64 {
        self.left + self.width
    }

    /// Frame, grid, tick labels, axis names and title.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn axes(&self, s: &mut Svg, x: (&Scale, &[(f64, String)]), y: (&Scale, &[(f64, String)])) {
        for (v, label) in x.1 {
            let at = x.0.at(*v);
            s.line((at, self.top), (at, self.bottom()), "grid");
            s.text((at, self.bottom() + 15.0), Anchor::Middle, "tick", label);
        }
        for (v, label) in y.1 {
            let at = y.0.at(*v);
            s.line((self.left, at), (self.right(), at), "grid");
            s.text((self.left - 6.0, at + 4.0), Anchor::End, "tick", label);
        }
        s.rect((self.left, self.top), self.width, self.height, "frame");
    }

    fn titles(&self, s: &mut Svg, title: &str, x_name: &str, y_name: &str) {
        s.text((self.left, self.top - 10.0), Anchor::Start, "title", title);
        let mid = self.left + self.width / 2.0;
        s.text((mid, self.bottom() + 32.0), Anchor::Middle, "label", x_name);
        if !y_name.is_empty() {
            s.text(
                (self.left - 6.0, self.top - 10.0),
                Anchor::End,
                "label",
                y_name,
            );
        }
    }
}

/// A tick label for a round value of nanoseconds (`20us`, `1ms`).
fn ns_tick(ns: f64) -> String {
    let s = human_ns(ns.round() as u64);
    let unit = s.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    let number = &s[..s.len() - unit.len()];
    match number.contains('.') {
        true => format!(
            "{}{unit}",
            number.trim_end_matches('0').trim_end_matches('.')
        ),
        false => s.clone(),
    }
}

/// Requests per second with a suffix (`12.3k`).
#[cfg_attr(feature = "cold-size", optimize(size))]
fn rate_tick(v: f64) -> String {
    match v.abs() {
        a if a >= 1e6 => format!("{:.3}M", v / 1e6),
        a if a >= 1e3 => format!("{:.1}k", v / 1e3),
        _ => format!("{v:.0}"),
    }
}

/// The CDF panel: one curve per distribution, marks and legend.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn cdf_panel(s: &mut Svg, p: &Panel, cdfs: &[(usize, &Cdf)], title: &str) {
    let (lo, hi) = cdfs
        .iter()
        .map(|(_, c)| c.range())
        .fold((f64::INFINITY, 0.0f64), |(l, h), (a, b)| {
            (l.min(a), h.max(b))
        });
    let ticks = svg::log_ticks(lo.max(1.0), hi.max(lo.max(1.0) * 1.01));
    let (lo, hi) = (
        ticks.first().copied().unwrap_or(lo).min(lo.max(1.0)),
        ticks.last().copied().unwrap_or(hi).max(hi),
    );
    let xs = Scale::log(lo, hi, p.left, p.right());
    let ys = Scale::linear(0.0, 1.0, p.bottom(), p.top);
    let xt: Vec<(f64, String)> = ticks.iter().map(|&t| (t, ns_tick(t))).collect();
    let yt: Vec<(f64, String)> = [0.0, 0.25, 0.5, 0.75, 0.9, 1.0]
        .iter()
        .map(|&f| (f, format!("{}%", f * 100.0)))
        .collect();
    p.axes(s, (&xs, &xt), (&ys, &yt));
    p.titles(s, title, "latency (log scale)", "");
    for (k, (side, cdf)) in cdfs.iter().enumerate() {
        let class = SIDES[*side];
        let pts: Vec<Point> = cdf
            .points
            .iter()
            .map(|&(x, y)| (xs.at(x), ys.at(y)))
            .collect();
        s.polyline(&pts, CDF[*side]);
        s.group(MARK_GROUP[*side]);
        for (i, (ns, label, frac)) in cdf.marks.iter().enumerate() {
            let at = (xs.at(*ns), ys.at(*frac));
            s.circle(at, 3.5, class);
            // A label sits left of its mark when the other curve's mark is further right,
            // else right of it; p99's below, p99.9's above.
            let left_of_other = cdfs.iter().any(|(o, c)| {
                o != side && (c.marks[i].0 > *ns || (c.marks[i].0 == *ns && *side == 0))
            });
            let (dx, anchor) = if left_of_other || at.0 > p.right() - 40.0 {
                (-6.0, Anchor::End)
            } else {
                (6.0, Anchor::Start)
            };
            let dy = [4.0, 13.0, -5.0][i];
            s.text((at.0 + dx, at.1 + dy), anchor, MARK[*side], label);
        }
        s.end_group();
        let y = p.bottom() - 12.0 - 16.0 * (cdfs.len() - 1 - k) as f64;
        let legend = cdf.legend(NAMES[*side]);
        s.text((p.right() - 8.0, y), Anchor::End, LEGEND[*side], &legend);
    }
}

/// Round numbers 1..=n on a linear x scale, as ticks.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn round_ticks(n: usize) -> Vec<(f64, String)> {
    let step = n.div_ceil(10).max(1);
    (1..=n)
        .filter(|r| (r - 1) % step == 0)
        .map(|r| (r as f64, r.to_string()))
        .collect()
}

/// A y scale and its ticks over `values` (with 5% margins).
#[inline(never)]
#[cfg_attr(feature = "cold-size", optimize(size))]
fn y_axis(p: &Panel, values: &[f64], fmt: fn(f64) -> String) -> (Scale, Vec<(f64, String)>) {
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
            (l.min(*v), h.max(*v))
        });
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    let pad = ((hi - lo) * 0.05).max(hi.abs() * 0.01).max(1e-9);
    let ticks = svg::linear_ticks(lo - pad, hi + pad, 4);
    let (lo, hi) = (ticks[0].min(lo - pad), ticks[ticks.len() - 1].max(hi + pad));
    let scale = Scale::linear(lo, hi, p.bottom(), p.top);
    (scale, ticks.into_iter().map(|t| (t, fmt(t))).collect())
}

fn rounds_panel(s: &mut Svg, p: &Panel, rps: [&[f64]; 2]) {
    let n = rps[0].len().max(rps[1].len()).max(1);
    let xs = Scale::linear(0.5, n as f64 + 0.5, p.left, p.right());
    let (ys, yt) = y_axis(p, &[rps[0], rps[1]].concat(), rate_tick);
    p.axes(s, (&xs, &round_ticks(n)), (&ys, &yt));
    p.titles(s, "requests/s per round", "round", "req/s");
    for (side, values) in rps.iter().enumerate() {
        let pts: Vec<Point> = values
            .iter()
            .enumerate()
            .map(|(i, &v)| (xs.at(i as f64 + 1.0), ys.at(v)))
            .collect();
        s.polyline(&pts, ROUNDS[side]);
        for &pt in &pts {
            s.circle(pt, 3.0, SIDES[side]);
        }
        let y = p.top + 16.0 + 14.0 * side as f64;
        s.text((p.right() - 8.0, y), Anchor::End, LEGEND[side], NAMES[side]);
    }
}

fn ratio_panel(s: &mut Svg, p: &Panel, rps: [&[f64]; 2], ratio: Option<Ratio>) {
    let per: Vec<f64> = rps[0]
        .iter()
        .zip(rps[1])
        .filter(|(a, _)| **a > 0.0)
        .map(|(a, b)| b / a)
        .collect();
    let n = per.len().max(1);
    let xs = Scale::linear(0.5, n as f64 + 0.5, p.left, p.right());
    let mut shown = per.clone();
    shown.extend(ratio.map_or(vec![1.0], |r| vec![1.0, r.low, r.high]));
    let (ys, yt) = y_axis(p, &shown, |v| format!("{v:.3}"));
    p.axes(s, (&xs, &round_ticks(n)), (&ys, &yt));
    p.titles(s, "B/A of requests/s per round", "round", "B/A");
    if let Some(r) = ratio {
        let (top, bottom) = (ys.at(r.high), ys.at(r.low));
        s.rect((p.left, top), p.width, bottom - top, "band");
        s.line((p.left, ys.at(r.mean)), (p.right(), ys.at(r.mean)), "mean");
        let text = format!(
            "mean {:.3}, {}% interval {:.3} to {:.3}",
            r.mean, r.confidence, r.low, r.high
        );
        s.text(
            (p.right() - 8.0, p.top + 16.0),
            Anchor::End,
            "legend ratio",
            &text,
        );
    }
    s.line((p.left, ys.at(1.0)), (p.right(), ys.at(1.0)), "one");
    let pts: Vec<Point> = per
        .iter()
        .enumerate()
        .map(|(i, &v)| (xs.at(i as f64 + 1.0), ys.at(v)))
        .collect();
    s.polyline(&pts, "ratio b");
    for &pt in &pts {
        s.circle(pt, 3.0, "b");
    }
}

/// The whole A/B figure: commands, CDFs, req/s and B/A per round, the req/s verdict.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn ab_svg(f: &AbFigure) -> String {
    let verdict: Vec<&str> = f.verdict.lines().collect();
    let mut s = Svg::new(WIDTH, 760 + 16 * verdict.len() as u32);
    s.style(STYLE);
    let title = format!("steerd bench ab: {}", f.load);
    s.text((20.0, 22.0), Anchor::Start, "title", &title);
    for (side, command) in f.commands.iter().enumerate() {
        let line = format!("{}: {command}", NAMES[side]);
        let at = (20.0, 42.0 + 16.0 * side as f64);
        s.text(at, Anchor::Start, LEGEND[side], &line);
    }
    let top = Panel::at(70.0, 100.0, 820.0, 300.0);
    let cdfs: Vec<(usize, &Cdf)> = (0..2)
        .filter_map(|i| f.latency[i].map(|c| (i, c)))
        .collect();
    if cdfs.is_empty() {
        let msg = "no latency distribution: the wrk client reports percentiles only";
        s.text((top.left, top.top + 20.0), Anchor::Start, "label", msg);
    } else {
        let title = "latency: share of requests at or below, all rounds (CDF)";
        cdf_panel(&mut s, &top, &cdfs, title);
    }
    rounds_panel(&mut s, &Panel::at(70.0, 480.0, 360.0, 200.0), f.rps);
    ratio_panel(
        &mut s,
        &Panel::at(530.0, 480.0, 360.0, 200.0),
        f.rps,
        f.ratio,
    );
    s.text((20.0, 740.0), Anchor::Start, "title", "requests/s: verdict");
    for (i, line) in verdict.iter().enumerate() {
        s.text(
            (20.0, 760.0 + 16.0 * i as f64),
            Anchor::Start,
            "verdict",
            line,
        );
    }
    s.finish()
}

/// The latency CDF of one `bench load` run.
pub(crate) fn load_svg(title: &str, cdf: &Cdf) -> String {
    let mut s = Svg::new(WIDTH, 420);
    s.style(STYLE);
    s.text(
        (20.0, 22.0),
        Anchor::Start,
        "title",
        &format!("steerd bench load: {title}"),
    );
    let p = Panel::at(70.0, 60.0, 820.0, 300.0);
    cdf_panel(
        &mut s,
        &p,
        &[(0, cdf)],
        "latency: share of requests at or below (CDF)",
    );
    s.finish()
}

/// The self-contained report of `bench ab --report`: the figure inline, then the whole
/// text output (run lines, summaries, verdicts).
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn ab_html(f: &AbFigure, text: &str) -> String {
    let mut o = String::from(
        "<!doctype html>\n<html lang=\"en\">\n<meta charset=\"utf-8\">\n\
         <title>steerd bench ab</title>\n<style>body{font:14px sans-serif;margin:16px}\
         pre{font-size:12px;background:#f6f6f6;padding:8px;overflow:auto}</style>\n\
         <h1>steerd bench ab</h1>\n",
    );
    o.push_str(&ab_svg(f));
    o.push_str("<h2>Text output</h2>\n<pre>");
    svg::escape_into(&mut o, text);
    o.push_str("</pre>\n</html>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: impl Iterator<Item = u64>) -> Hist {
        let mut h = Hist::new();
        values.for_each(|v| h.record(v));
        h
    }

    #[test]
    fn cdf_rises_from_min_to_max_with_marks_at_their_percentiles() {
        let h = hist((1..=10_000).map(|i| i * 1000));
        let c = Cdf::of(&h).expect("values");
        assert_eq!(c.points[0], (1000.0, 0.0));
        assert_eq!(*c.points.last().unwrap(), (10_000_000.0, 1.0));
        assert!(c
            .points
            .windows(2)
            .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        assert_eq!(c.marks[1].1, "p99");
        assert_eq!(c.marks[1].0, h.percentile(99.0) as f64);
        assert!(Cdf::of(&Hist::new()).is_none());
    }

    #[test]
    fn tick_labels_drop_zero_decimals() {
        assert_eq!(ns_tick(20_000.0), "20us");
        assert_eq!(ns_tick(1_000_000.0), "1ms");
        assert_eq!(ns_tick(500.0), "500ns");
        assert_eq!(ns_tick(2_500_000.0), "2.5ms");
        assert_eq!(rate_tick(12_345.0), "12.3k");
    }

    #[test]
    fn ab_figure_has_both_curves_marks_rounds_band_and_verdict() {
        let (a, b) = (
            hist((1..500).map(|i| i * 900)),
            hist((1..500).map(|i| i * 1000)),
        );
        let (ca, cb) = (Cdf::of(&a).unwrap(), Cdf::of(&b).unwrap());
        let (ra, rb) = ([100.0, 110.0, 105.0], [95.0, 100.0, 99.0]);
        let ratio = super::super::ministat::paired_ratio(&ra, &rb, 95.0);
        let fig = AbFigure {
            load: "builtin http://127.0.0.1:1/ <x>",
            commands: ["steerd serve --steer hash", "steerd serve --steer cpu"],
            latency: [Some(&ca), Some(&cb)],
            rps: [&ra, &rb],
            ratio,
            verdict: "Difference at 95.0% confidence\nB/A per round: 0.93",
        };
        let svg = ab_svg(&fig);
        for want in [
            "class=\"cdf a\"",
            "class=\"cdf b\"",
            "class=\"rounds a\"",
            "class=\"rounds b\"",
            "class=\"ratio b\"",
            "class=\"band\"",
            ">p99.9</text>",
            "&lt;x&gt;",
            ">B/A per round: 0.93</text>",
            ">B: steerd serve --steer cpu</text>",
        ] {
            assert!(svg.contains(want), "missing {want}");
        }
        let html = ab_html(&fig, "round 1 A: 100 req/s <&>");
        assert!(html.contains("<svg xmlns"), "inline figure");
        assert!(html.contains("round 1 A: 100 req/s &lt;&amp;&gt;"));
    }

    #[test]
    fn figures_without_latencies_or_rounds_still_render() {
        let fig = AbFigure {
            load: "wrk",
            commands: ["a", "b"],
            latency: [None, None],
            rps: [&[], &[]],
            ratio: None,
            verdict: "",
        };
        let svg = ab_svg(&fig);
        assert!(svg.contains("no latency distribution") && svg.ends_with("</svg>\n"));
        for bad in ["NaN", "=\"inf", "=\"-inf", ",inf", ",-inf"] {
            assert!(!svg.contains(bad), "{bad} in {svg}");
        }
    }
}
