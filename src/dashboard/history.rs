//! The last minute of each worker's responses, for the dashboard: what a person needs to
//! see a change without a second tool.
//!
//! Input: every worker's response-time buckets (`stats::latency`, a slot's generations
//! summed), offered by the master at each turn of its loop (at least every 100 ms), and
//! the time. Output, per worker: the responses finished in each of the last
//! [`SECONDS`] seconds, as rates over the time really between snapshots, and the p50 and
//! p99 of the responses of the last [`WINDOW`] seconds to now, estimated from the buckets
//! as `histogram_quantile` does. It keeps one snapshot of the buckets a second,
//! [`SECONDS`] + 1 deep: 12 counters a worker a snapshot, about 6 KB a worker in the
//! master, only with `--metrics`. Nothing here runs in a worker.
//!
//! A snapshot is taken once at least a second has passed since the last one, so they are
//! 1 s to 1.1 s apart; the rates divide by the real interval. Counters only grow (a slot's
//! blocks outlive its workers), but a difference is taken saturating all the same.

use crate::stats::latency::{self, BUCKETS};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Seconds of per-second rates kept.
pub(crate) const SECONDS: usize = 60;
/// Seconds the quantiles look back.
pub(crate) const WINDOW: usize = 10;
/// Time between snapshots (at least).
const PERIOD: Duration = Duration::from_secs(1);

/// The buckets of every worker at one moment.
struct Snapshot {
    at: Instant,
    workers: Vec<[u64; BUCKETS]>,
}

/// Snapshots of the last minute, oldest first.
#[derive(Default)]
pub(crate) struct History {
    snapshots: VecDeque<Snapshot>,
}

/// One worker's last minute.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Recent {
    /// Responses finished per second, one figure per snapshot interval, oldest first.
    pub(crate) per_second: Vec<f64>,
    /// The median response time of the last [`WINDOW`] seconds, in milliseconds.
    pub(crate) p50_ms: Option<f64>,
    /// The 99th percentile of the same.
    pub(crate) p99_ms: Option<f64>,
}

impl History {
    /// Takes a snapshot of `workers` (each worker's buckets, in plan order) when a
    /// [`PERIOD`] has passed since the last one; drops the oldest beyond [`SECONDS`] + 1.
    pub(crate) fn offer(&mut self, now: Instant, workers: impl FnOnce() -> Vec<[u64; BUCKETS]>) {
        let due = self
            .snapshots
            .back()
            .is_none_or(|last| now.saturating_duration_since(last.at) >= PERIOD);
        if !due {
            return;
        }
        if self.snapshots.len() > SECONDS {
            self.snapshots.pop_front();
        }
        self.snapshots.push_back(Snapshot {
            at: now,
            workers: workers(),
        });
    }

    /// Worker `i`'s last minute; `now` is its buckets at this moment.
    pub(crate) fn recent(&self, i: usize, now: &[u64; BUCKETS]) -> Recent {
        let total = |s: &Snapshot| s.workers.get(i).map_or(0, |b| b.iter().sum::<u64>());
        let per_second = self
            .snapshots
            .iter()
            .zip(self.snapshots.iter().skip(1))
            .map(|(a, b)| {
                let secs = b.at.saturating_duration_since(a.at).as_secs_f64();
                total(b).saturating_sub(total(a)) as f64 / secs.max(1e-3)
            })
            .collect();
        let from = self.snapshots.len().saturating_sub(WINDOW + 1);
        let since = self.snapshots.get(from).and_then(|s| s.workers.get(i));
        let window: [u64; BUCKETS] =
            core::array::from_fn(|b| now[b].saturating_sub(since.map_or(0, |s| s[b])));
        Recent {
            per_second,
            p50_ms: latency::quantile(0.5, &window),
            p99_ms: latency::quantile(0.99, &window),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Buckets with `fast` responses in the first bucket and `slow` in the 100 ms one.
    fn buckets(fast: u64, slow: u64) -> [u64; BUCKETS] {
        let mut b = [0; BUCKETS];
        b[0] = fast;
        b[4] = slow;
        b
    }

    #[test]
    fn one_snapshot_a_second_kept_a_minute_deep() {
        let start = Instant::now();
        let mut h = History::default();
        for tenth in 0..=1000u64 {
            let n = tenth * 10; // 100 responses a second
            h.offer(start + Duration::from_millis(tenth * 100), || {
                vec![buckets(n, 0)]
            });
        }
        assert_eq!(h.snapshots.len(), SECONDS + 1);
        let r = h.recent(0, &buckets(10_000, 0));
        assert_eq!(r.per_second.len(), SECONDS);
        for rate in &r.per_second {
            assert!((rate - 100.0).abs() < 1e-6, "{:?}", r.per_second);
        }
        assert_eq!(r.p50_ms, Some(2.5), "all in the first bucket");
    }

    #[test]
    fn quantiles_look_at_the_last_ten_seconds_only() {
        let start = Instant::now();
        let mut h = History::default();
        // Slow responses for 30 s, then fast ones for 20 s.
        for s in 0..=50u64 {
            let (fast, slow) = (s.saturating_sub(30) * 100, s.min(30) * 100);
            h.offer(start + Duration::from_secs(s), || vec![buckets(fast, slow)]);
        }
        let r = h.recent(0, &buckets(2000, 3000));
        assert_eq!(
            r.p99_ms,
            Some(4.95),
            "the slow ones are older than the window"
        );
        let before = h.recent(0, &buckets(0, 3000));
        assert_eq!(before.p50_ms, None, "nothing finished in the window");
        assert_eq!(h.recent(7, &buckets(0, 0)).p50_ms, None, "no such worker");
    }

    #[test]
    fn an_empty_history_still_answers() {
        let h = History::default();
        let r = h.recent(0, &buckets(4, 0));
        assert!(r.per_second.is_empty());
        assert_eq!(r.p99_ms, Some(4.95));
    }
}
