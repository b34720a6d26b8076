//! `steerd_proxy_responses_total`: forwarded requests by upstream and outcome.
//!
//! Input: each worker's [`ProxyResponses`] block (bumped by `conn::proxy` once per
//! forwarded request, when its outcome is known) and the names of the upstreams counted
//! apart (`config::rows`: the first `site::upstream::UPSTREAMS_COUNTED` distinct ones in
//! the order the configurations since start named them, each row kept by its name). Output: the family's lines in the
//! Prometheus text format. It counts nothing itself.

use super::{labels, load};
use crate::plan::WorkerPlan;
use crate::site::upstream::UPSTREAMS_COUNTED;
use core::fmt::Write as _;
use core::sync::atomic::AtomicU64;

/// The `outcome` label of each counter, by [`Outcome`] index.
pub(crate) const OUTCOMES: [&str; 7] = [
    "relayed",
    "refused",
    "bad_head",
    "timeout",
    "busy",
    "bad_request",
    "cut_short",
];

/// How one forwarded request ended (its counter's index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The upstream's response went to the client whole.
    Relayed = 0,
    /// 502: no connection to the upstream (refused, no socket there), or the request could
    /// not be written to it.
    Refused = 1,
    /// 502: the upstream's answer was no usable head (malformed, too long, a 101 nobody
    /// asked for, or the upstream closed before a head).
    BadHead = 2,
    /// 504: no head within `--proxy-timeout`.
    Timeout = 3,
    /// 503: `--proxy-max-conns` exchanges were in flight to the upstream already.
    Busy = 4,
    /// 400, 408 or 413 from steerd: the request's body was malformed, too slow or too
    /// large (the upstream's connection was cut before a complete request).
    BadRequest = 5,
    /// The response did not reach the client whole: the upstream cut its body short or
    /// went silent in it, or the client went away first.
    CutShort = 6,
}

impl Outcome {
    /// The outcome of steerd's own answer `status` in place of the upstream's; `head`:
    /// the request was out and a head awaited when it came.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn of_own(status: u16, head: bool) -> Outcome {
        match status {
            504 => Outcome::Timeout,
            503 => Outcome::Busy,
            400 | 408 | 413 => Outcome::BadRequest,
            502 if head => Outcome::BadHead,
            _ => Outcome::Refused,
        }
    }
}

/// Forwarded requests by upstream (its place, `Rule::counted`) and outcome.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct ProxyResponses(pub(crate) [[AtomicU64; OUTCOMES.len()]; UPSTREAMS_COUNTED]);

impl Default for ProxyResponses {
    fn default() -> Self {
        ProxyResponses(core::array::from_fn(|_| Default::default()))
    }
}

impl ProxyResponses {
    /// Counts one request to the upstream at `place` that ended as `outcome`.
    pub(crate) fn count(&self, place: u8, outcome: Outcome) {
        if let Some(row) = self.0.get(usize::from(place)) {
            row[outcome as usize].fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        }
    }

    /// The sum of two blocks' counts (a worker slot's two generations).
    pub(crate) fn merged(a: Option<&Self>, b: Option<&Self>) -> Self {
        let one = |c: Option<&Self>, u: usize, k: usize| c.map_or(0, |c| load(&c.0[u][k]));
        ProxyResponses(core::array::from_fn(|u| {
            core::array::from_fn(|k| AtomicU64::new(one(a, u, k) + one(b, u, k)))
        }))
    }
}

/// The family's help, type and one line per worker, upstream and outcome (nothing without
/// upstreams).
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn render<'a>(
    out: &mut String,
    pairs: impl Iterator<Item = (&'a WorkerPlan, &'a ProxyResponses)>,
    upstreams: &[Box<str>],
) {
    const NAME: &str = "steerd_proxy_responses_total";
    if upstreams.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "# HELP {NAME} Forwarded requests by upstream and outcome.\n# TYPE {NAME} counter\n"
    );
    for (w, c) in pairs {
        for (name, row) in upstreams.iter().zip(&c.0) {
            for (outcome, n) in OUTCOMES.iter().zip(row) {
                let _ = write!(out, "{NAME}{{");
                labels(out, w);
                out.push_str(",upstream=\"");
                label_value(out, name);
                let _ = writeln!(out, "\",outcome=\"{outcome}\"}} {}", load(n));
            }
        }
    }
}

/// `value` escaped as a label value is (`\\`, `\"`, `\n`: the text format's rule).
fn label_value(out: &mut String, value: &str) {
    for ch in value.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::tests::worker;

    #[test]
    fn one_line_per_upstream_and_outcome_with_escaped_names() {
        let c = ProxyResponses::default();
        c.count(1, Outcome::Timeout);
        c.count(1, Outcome::Timeout);
        c.count(0, Outcome::Relayed);
        c.count(200, Outcome::Relayed);
        let w = worker(0, 2, 0);
        let mut out = String::new();
        render(
            &mut out,
            [(&w, &c)].into_iter(),
            &["unix:/run/a\"b.sock".into(), "http://127.0.0.1:9".into()],
        );
        let l = "worker=\"0\",cpu=\"2\",node=\"0\"";
        for want in [
            format!("steerd_proxy_responses_total{{{l},upstream=\"unix:/run/a\\\"b.sock\",outcome=\"relayed\"}} 1"),
            format!("steerd_proxy_responses_total{{{l},upstream=\"http://127.0.0.1:9\",outcome=\"timeout\"}} 2"),
            format!("steerd_proxy_responses_total{{{l},upstream=\"http://127.0.0.1:9\",outcome=\"cut_short\"}} 0"),
        ] {
            assert!(out.lines().any(|line| line == want), "missing {want:?} in\n{out}");
        }
        assert_eq!(out.lines().filter(|l| !l.starts_with('#')).count(), 14);
        let mut none = String::new();
        render(&mut none, [(&w, &c)].into_iter(), &[]);
        assert!(none.is_empty(), "no upstream, no family");
    }

    #[test]
    fn own_answers_name_their_outcome() {
        assert_eq!(Outcome::of_own(502, false), Outcome::Refused);
        assert_eq!(Outcome::of_own(502, true), Outcome::BadHead);
        assert_eq!(Outcome::of_own(504, true), Outcome::Timeout);
        assert_eq!(Outcome::of_own(503, false), Outcome::Busy);
        assert_eq!(Outcome::of_own(413, false), Outcome::BadRequest);
        assert_eq!(Outcome::of_own(500, false), Outcome::Refused);
    }
}
