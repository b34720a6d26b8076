//! A small SVG writer and the axis arithmetic of a plot, for `steerd bench`'s figures.
//!
//! Input: shapes and text in user units (pixels of the `viewBox`), in drawing order.
//! Output: one standalone SVG 1.1 document (`image/svg+xml`, UTF-8) that a browser opens
//! alone or inside an HTML page; text is escaped, coordinates carry one decimal. Colours
//! and strokes come from CSS classes the caller defines with [`Svg::style`].
//! It does not lay out panels or choose what to draw (`bench/plot.rs` does).

use core::fmt::Write as _;

/// An SVG document being written.
pub(crate) struct Svg {
    out: String,
}

/// Where a text's anchor point sits on it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Anchor {
    /// The text starts at the point.
    Start,
    /// The text is centred on the point.
    Middle,
    /// The text ends at the point.
    End,
}

/// A point in user units.
pub(crate) type Point = (f64, f64);

// Drawing calls are many and each formats several numbers: kept out of line so that the
// code is written once (the figures are cold code; size matters more than speed there).
impl Svg {
    /// A `width` x `height` document.
    pub(crate) fn new(width: u32, height: u32) -> Svg {
        let mut out = String::with_capacity(16 * 1024);
        let _ = writeln!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
             viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\" font-size=\"12\">"
        );
        Svg { out }
    }

    /// A `<style>` block (CSS; its text must not contain `<`).
    #[inline(never)]
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn style(&mut self, css: &str) {
        let _ = writeln!(self.out, "<style>{css}</style>");
    }

    /// A straight line.
    #[inline(never)]
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn line(&mut self, from: Point, to: Point, class: &str) {
        let _ = writeln!(
            self.out,
            "<line class=\"{class}\" x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\"/>",
            from.0, from.1, to.0, to.1
        );
    }

    /// Connected line segments (none drawn for fewer than two points).
    #[inline(never)]
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn polyline(&mut self, points: &[Point], class: &str) {
        if points.len() < 2 {
            return;
        }
        let _ = write!(self.out, "<polyline class=\"{class}\" points=\"");
        for (i, (x, y)) in points.iter().enumerate() {
            let sep = if i == 0 { "" } else { " " };
            let _ = write!(self.out, "{sep}{x:.1},{y:.1}");
        }
        self.out.push_str("\"/>\n");
    }

    /// A rectangle from its top-left corner (negative sizes are drawn as zero).
    #[inline(never)]
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn rect(&mut self, at: Point, width: f64, height: f64, class: &str) {
        let _ = writeln!(
            self.out,
            "<rect class=\"{class}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"/>",
            at.0,
            at.1,
            width.max(0.0),
            height.max(0.0)
        );
    }

    /// A circle.
    #[inline(never)]
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn circle(&mut self, at: Point, r: f64, class: &str) {
        let _ = writeln!(
            self.out,
            "<circle class=\"{class}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"{r:.1}\"/>",
            at.0, at.1
        );
    }

    /// One line of text whose baseline passes through `at`.
    #[inline(never)]
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn text(&mut self, at: Point, anchor: Anchor, class: &str, text: &str) {
        let anchor = match anchor {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        };
        let _ = write!(
            self.out,
            "<text class=\"{class}\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">",
            at.0, at.1
        );
        escape_into(&mut self.out, text);
        self.out.push_str("</text>\n");
    }

    /// Opens a group (`<g class="...">`); close it with [`Svg::end_group`].
    #[inline(never)]
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn group(&mut self, class: &str) {
        let _ = writeln!(self.out, "<g class=\"{class}\">");
    }

    /// Closes the innermost group.
    pub(crate) fn end_group(&mut self) {
        self.out.push_str("</g>\n");
    }

    /// The finished document.
    pub(crate) fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

/// Text with `&`, `<`, `>` and `"` escaped for XML content and attributes.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn escape_into(out: &mut String, text: &str) {
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
}

/// Maps a data interval onto a pixel interval, linearly or by `log10`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scale {
    lo: f64,
    hi: f64,
    from: f64,
    to: f64,
    log: bool,
}

impl Scale {
    /// A linear scale; an empty data interval is widened so nothing divides by zero.
    pub(crate) fn linear(lo: f64, hi: f64, from: f64, to: f64) -> Scale {
        let hi = if hi > lo { hi } else { lo + 1.0 };
        Scale {
            lo,
            hi,
            from,
            to,
            log: false,
        }
    }

    /// A `log10` scale; `lo` is raised to a positive value.
    pub(crate) fn log(lo: f64, hi: f64, from: f64, to: f64) -> Scale {
        let lo = lo.max(1e-9);
        let hi = if hi > lo { hi } else { lo * 10.0 };
        Scale {
            lo: lo.log10(),
            hi: hi.log10(),
            from,
            to,
            log: true,
        }
    }

    /// The pixel position of `v` (values outside the interval are clamped to it).
    #[inline(never)]
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn at(&self, v: f64) -> f64 {
        let v = if self.log { v.max(1e-9).log10() } else { v };
        let t = ((v - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0);
        self.from + t * (self.to - self.from)
    }
}

/// Round tick values covering `[lo, hi]` for a linear axis: multiples of 1, 2 or 5
/// times a power of ten, about `want` of them.
pub(crate) fn linear_ticks(lo: f64, hi: f64, want: usize) -> Vec<f64> {
    let span = if hi > lo { hi - lo } else { lo.abs().max(1.0) };
    let rough = span / want.max(1) as f64;
    let power = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|s| *s >= rough)
        .unwrap_or(10.0 * power);
    let first = (lo / step).floor() as i64;
    let last = (hi / step).ceil() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// Tick values for a `log10` axis over `[lo, hi]` (both positive): 1, 2 and 5 times each
/// power of ten when the axis spans at most three decades, else the powers of ten only.
pub(crate) fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (lo, hi) = (lo.max(1e-9), hi.max(lo.max(1e-9)));
    let (first, last) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let steps: &[f64] = if last - first <= 3 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    (first..=last)
        .flat_map(|e| steps.iter().map(move |m| m * 10f64.powi(e)))
        .filter(|v| *v >= lo * 0.999 && *v <= hi * 1.001)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_shapes_and_escapes_text() {
        let mut s = Svg::new(100, 50);
        s.style(".a{stroke:red}");
        s.group("plot");
        s.line((0.0, 1.0), (2.25, 3.0), "a");
        s.polyline(&[(0.0, 0.0), (1.0, 2.0)], "a");
        s.polyline(&[(5.0, 5.0)], "never");
        s.rect((1.0, 2.0), -3.0, 4.0, "band");
        s.circle((1.0, 1.0), 2.0, "a");
        s.text((1.0, 2.0), Anchor::End, "t", "p<99> & \"B\"");
        s.end_group();
        let text = s.finish();
        assert!(text.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100\""));
        assert!(text.ends_with("</g>\n</svg>\n"));
        assert!(text.contains("<line class=\"a\" x1=\"0.0\" y1=\"1.0\" x2=\"2.2\" y2=\"3.0\"/>"));
        assert!(text.contains("points=\"0.0,0.0 1.0,2.0\""));
        assert!(!text.contains("never"));
        assert!(text.contains("width=\"0.0\" height=\"4.0\""));
        assert!(text.contains(">p&lt;99&gt; &amp; &quot;B&quot;</text>"));
        assert!(text.contains("text-anchor=\"end\""));
    }

    #[test]
    fn scales_map_and_clamp() {
        let lin = Scale::linear(0.0, 10.0, 100.0, 200.0);
        assert_eq!(
            (lin.at(5.0), lin.at(-1.0), lin.at(11.0)),
            (150.0, 100.0, 200.0)
        );
        let log = Scale::log(10.0, 1000.0, 0.0, 100.0);
        assert!((log.at(100.0) - 50.0).abs() < 1e-9);
        assert_eq!(log.at(0.0), 0.0);
        let flat = Scale::linear(3.0, 3.0, 0.0, 10.0);
        assert!(flat.at(3.0).is_finite());
    }

    #[test]
    fn ticks_are_round_and_cover_the_interval() {
        assert_eq!(linear_ticks(0.0, 10.0, 5), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let t = linear_ticks(0.93, 1.07, 4);
        assert!(t[0] <= 0.93 && *t.last().unwrap() >= 1.07, "{t:?}");
        assert!(t.len() <= 9, "{t:?}");
        assert_eq!(log_ticks(15.0, 900.0), [20.0, 50.0, 100.0, 200.0, 500.0]);
        assert_eq!(log_ticks(1.0, 1e6), [1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6]);
    }
}
