//! Response time per worker: a fixed-bucket histogram in the worker's shared counter
//! block, `steerd_response_duration_seconds` in `/metrics`, and quantiles estimated from
//! its buckets for the dashboard.
//!
//! Input: one duration in milliseconds per response finished whole (`conn/logged.rs`);
//! for rendering, the blocks' buckets. Output: the Prometheus histogram (cumulative
//! `_bucket{le=...}`, `_sum`, `_count`) and [`quantile`]. Recording is two relaxed
//! `fetch_add`s on the worker's own cache lines (one when the duration is 0), no
//! allocation and no clock read.
//!
//! What is timed, and how finely: from the loop turn in which a response was planned (its
//! head complete and answered) to the turn in which its last byte was handed to the
//! kernel, on the loop's turn clock (`Ctx::now_ms`: `CLOCK_MONOTONIC_COARSE`, read once a
//! turn after `epoll_wait`). Its resolution is the kernel tick (4 ms at `CONFIG_HZ=250`,
//! 1 ms at 1000) and the turn: a response finished in the turn that planned it counts 0,
//! whatever its microseconds, and lands in the first bucket (5 ms). The histogram shows
//! what is slow at the scale of milliseconds and more (large files, slow readers, a loop
//! that falls behind), which is what the buckets resolve; a response cut short (client
//! gone, timeout, stop) is counted in `steerd_responses_cut_short_total`, not here, so
//! `_count` is `steerd_responses_total` less those cut short and those still in flight.
//!
//! The buckets are Prometheus's default bounds, so the usual `histogram_quantile` queries
//! and the dashboard agree.

use super::labels;
use crate::plan::WorkerPlan;
use core::fmt::Write as _;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The buckets' upper bounds in milliseconds; one more bucket (`+Inf`) holds the rest.
pub(crate) const BOUNDS_MS: [u64; 11] = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000];

/// Number of buckets, `+Inf` included.
pub(crate) const BUCKETS: usize = BOUNDS_MS.len() + 1;

/// One worker's histogram. All atomics, `#[repr(C)]`: it lives in the shared mapping.
#[repr(C)]
#[derive(Debug, Default)]
pub(crate) struct Latency {
    /// Responses per bucket, not cumulative: bucket `i` counts durations above
    /// `BOUNDS_MS[i - 1]` and at most `BOUNDS_MS[i]`; the last, those above every bound.
    pub(crate) buckets: [AtomicU64; BUCKETS],
    /// The durations' sum, in milliseconds.
    pub(crate) sum_ms: AtomicU64,
}

impl Latency {
    /// Counts one response that took `ms` milliseconds.
    #[inline]
    pub(crate) fn record(&self, ms: u64) {
        let i = BOUNDS_MS
            .iter()
            .position(|&b| ms <= b)
            .unwrap_or(BOUNDS_MS.len());
        self.buckets[i].fetch_add(1, Relaxed);
        if ms > 0 {
            self.sum_ms.fetch_add(ms, Relaxed);
        }
    }

    /// The per-bucket counts now.
    pub(crate) fn counts(&self) -> [u64; BUCKETS] {
        self.buckets.each_ref().map(|b| b.load(Relaxed))
    }

    /// The sum of two histograms (a worker slot's two generations); a missing one is
    /// empty.
    pub(crate) fn merged(a: Option<&Latency>, b: Option<&Latency>) -> Latency {
        let load = |l: Option<&Latency>| {
            l.map_or(([0; BUCKETS], 0), |l| (l.counts(), l.sum_ms.load(Relaxed)))
        };
        let ((counts_a, ms_a), (counts_b, ms_b)) = (load(a), load(b));
        Latency {
            buckets: core::array::from_fn(|i| AtomicU64::new(counts_a[i] + counts_b[i])),
            sum_ms: AtomicU64::new(ms_a + ms_b),
        }
    }
}

/// Per-bucket counts made cumulative, as `le` buckets are: the last is the total.
pub(crate) fn cumulative(counts: &[u64; BUCKETS]) -> [u64; BUCKETS] {
    let mut run = 0;
    counts.map(|n| {
        run += n;
        run
    })
}

/// The `q` quantile (0 < q ≤ 1) in milliseconds of the responses counted in `counts`
/// (per bucket), estimated as Prometheus's `histogram_quantile` does: the bucket holding
/// the rank `q × total`, interpolated linearly within it (the first bucket starts at 0);
/// a rank in the `+Inf` bucket gives the highest finite bound. `None` with no response.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn quantile(q: f64, counts: &[u64; BUCKETS]) -> Option<f64> {
    let cum = cumulative(counts);
    let total = cum[BUCKETS - 1];
    if total == 0 || !(q > 0.0 && q <= 1.0) {
        return None;
    }
    let rank = q * total as f64;
    let b = cum.iter().position(|&c| c as f64 >= rank)?;
    if b == BOUNDS_MS.len() {
        return Some(BOUNDS_MS[b - 1] as f64);
    }
    let (start, below) = match b {
        0 => (0.0, 0),
        _ => (BOUNDS_MS[b - 1] as f64, cum[b - 1]),
    };
    let inside = (cum[b] - below) as f64;
    let end = BOUNDS_MS[b] as f64;
    Some(start + (end - start) * (rank - below as f64) / inside)
}

/// Milliseconds as the seconds Prometheus wants: `5` -> `0.005`, `2500` -> `2.5`.
fn seconds(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// Appends the histogram family, one worker after another in plan order.
pub(crate) fn render<'a>(
    out: &mut String,
    pairs: impl Iterator<Item = (&'a WorkerPlan, &'a Latency)>,
) {
    const NAME: &str = "steerd_response_duration_seconds";
    let _ = write!(
        out,
        "# HELP {NAME} Response time, from the loop turn that answered the request's head \
         to the turn that handed its last byte to the kernel (coarse turn clock: a response \
         finished in one turn counts 0); responses cut short are not counted.\n\
         # TYPE {NAME} histogram\n"
    );
    for (w, l) in pairs {
        let cum = cumulative(&l.counts());
        for (i, n) in cum.iter().enumerate() {
            let _ = write!(out, "{NAME}_bucket{{");
            labels(out, w);
            match BOUNDS_MS.get(i) {
                Some(&b) => {
                    let _ = writeln!(out, ",le=\"{}\"}} {n}", seconds(b));
                }
                None => {
                    let _ = writeln!(out, ",le=\"+Inf\"}} {n}");
                }
            }
        }
        let _ = write!(out, "{NAME}_sum{{");
        labels(out, w);
        let _ = writeln!(out, "}} {}", seconds(l.sum_ms.load(Relaxed)));
        let _ = write!(out, "{NAME}_count{{");
        labels(out, w);
        let _ = writeln!(out, "}} {}", cum[BUCKETS - 1]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(durations_ms: &[u64]) -> Latency {
        let l = Latency::default();
        durations_ms.iter().for_each(|&ms| l.record(ms));
        l
    }

    #[test]
    fn a_duration_goes_to_the_first_bucket_whose_bound_holds_it() {
        let l = histogram(&[0, 5, 6, 10, 11, 10_000, 10_001, u64::MAX / 2]);
        let mut want = [0u64; BUCKETS];
        want[0] = 2; // 0 and 5: le 5 ms
        want[1] = 2; // 6, 10
        want[2] = 1; // 11
        want[10] = 1; // 10 s
        want[11] = 2; // above every bound
        assert_eq!(l.counts(), want);
        assert_eq!(l.sum_ms.load(Relaxed), 32 + 20_001 + u64::MAX / 2);
        assert_eq!(cumulative(&want)[BUCKETS - 1], 8);
    }

    /// The naive oracle: every duration sorted, the rank's bucket found by walking them,
    /// interpolated by the same rule.
    fn naive_quantile(q: f64, durations: &[u64]) -> Option<f64> {
        let mut sorted = durations.to_vec();
        sorted.sort_unstable();
        let rank = q * sorted.len() as f64;
        let bound = |i: usize| BOUNDS_MS.get(i).copied();
        let bucket_of = |ms: u64| BOUNDS_MS.iter().position(|&b| ms <= b).unwrap_or(11);
        if sorted.is_empty() {
            return None;
        }
        // Smallest k with k >= rank samples at or below it: the k-th sample's bucket.
        let k = (rank.ceil() as usize).max(1);
        let b = bucket_of(sorted[k - 1]);
        let Some(end) = bound(b) else {
            return Some(BOUNDS_MS[10] as f64);
        };
        let start = if b == 0 { 0 } else { BOUNDS_MS[b - 1] };
        let below = sorted.iter().filter(|&&d| bucket_of(d) < b).count() as f64;
        let inside = sorted.iter().filter(|&&d| bucket_of(d) == b).count() as f64;
        Some(start as f64 + (end - start) as f64 * (rank - below) / inside)
    }

    #[test]
    fn quantiles_agree_with_a_naive_walk_of_the_durations() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for case in 0..200 {
            let n = 1 + case % 37;
            let durations: Vec<u64> = (0..n)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed % [8, 80, 800, 20_000][case % 4]
                })
                .collect();
            let counts = histogram(&durations).counts();
            for q in [0.01, 0.5, 0.9, 0.99, 1.0] {
                let (fast, naive) = (quantile(q, &counts), naive_quantile(q, &durations));
                let (f, s) = (fast.expect("some"), naive.expect("some"));
                assert!((f - s).abs() < 1e-9, "q {q} of {durations:?}: {f} vs {s}");
            }
        }
    }

    #[test]
    fn quantile_edges() {
        let empty = [0u64; BUCKETS];
        assert_eq!(quantile(0.5, &empty), None);
        let counts = histogram(&[1, 1, 1, 1]).counts();
        assert_eq!(
            quantile(0.5, &counts),
            Some(2.5),
            "half of the first bucket"
        );
        assert_eq!(quantile(1.0, &counts), Some(5.0));
        assert_eq!(quantile(0.0, &counts), None);
        let slow = histogram(&[60_000]).counts();
        assert_eq!(
            quantile(0.99, &slow),
            Some(10_000.0),
            "the highest finite bound"
        );
    }

    #[test]
    fn renders_cumulative_buckets_sum_and_count_per_worker() {
        let w = crate::stats::tests::worker(1, 3, 0);
        let l = histogram(&[0, 4, 8, 30, 20_000]);
        let mut out = String::new();
        render(&mut out, [(&w, &l)].into_iter());
        let lines: Vec<&str> = out.lines().collect();
        let labels = "worker=\"1\",cpu=\"3\",node=\"0\"";
        for want in [
            "# TYPE steerd_response_duration_seconds histogram".to_string(),
            format!("steerd_response_duration_seconds_bucket{{{labels},le=\"0.005\"}} 2"),
            format!("steerd_response_duration_seconds_bucket{{{labels},le=\"0.01\"}} 3"),
            format!("steerd_response_duration_seconds_bucket{{{labels},le=\"0.025\"}} 3"),
            format!("steerd_response_duration_seconds_bucket{{{labels},le=\"0.05\"}} 4"),
            format!("steerd_response_duration_seconds_bucket{{{labels},le=\"2.5\"}} 4"),
            format!("steerd_response_duration_seconds_bucket{{{labels},le=\"10\"}} 4"),
            format!("steerd_response_duration_seconds_bucket{{{labels},le=\"+Inf\"}} 5"),
            format!("steerd_response_duration_seconds_sum{{{labels}}} 20.042"),
            format!("steerd_response_duration_seconds_count{{{labels}}} 5"),
        ] {
            assert!(lines.contains(&want.as_str()), "missing {want:?} in\n{out}");
        }
        assert_eq!(lines.len(), 2 + BUCKETS + 2);
    }

    #[test]
    fn merged_adds_both_generations() {
        let (a, b) = (histogram(&[1, 2000]), histogram(&[3]));
        let m = Latency::merged(Some(&a), Some(&b));
        assert_eq!(m.counts()[0], 2);
        assert_eq!(m.sum_ms.load(Relaxed), 2004);
        assert_eq!(Latency::merged(None, Some(&b)).counts(), b.counts());
    }
}
