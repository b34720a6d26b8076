//! `GET /status.json`: one JSON object with the machine, the plan and every worker's
//! counters, for the dashboard page and for scripts (schema in `docs/serving.md`).
//!
//! Input: the members fixed for the server's life, made once at start by the same code
//! as `steerd check --json` (so the two documents cannot disagree), the plan's workers,
//! their counter blocks and the master's [`History`] of the last minute. Output: those
//! members, then `version`, `uptime_ms`, `duration_bounds_ms` and `counters` (one object
//! per worker, in plan order, with its last minute: `per_second`, `p50_ms`, `p99_ms`). It
//! does not read the counters' meaning into rates: the page divides differences by
//! `uptime_ms` differences (the history's rates are the master's, `history.rs`).

use super::history::History;
use crate::json::Value;
use crate::plan::WorkerPlan;
use crate::stats::latency::BOUNDS_MS;
use crate::stats::WorkerCounters;
use core::sync::atomic::{AtomicU64, Ordering};
use std::net::SocketAddr;
use std::time::Instant;

/// The status document's fixed part and the server's start time.
pub(crate) struct StatusDocument {
    fixed: Vec<(String, Value)>,
    started: Instant,
}

impl StatusDocument {
    /// A status document whose fixed members are `fixed` (topology, plan, program,
    /// listen addresses, policy: what `steerd check --json` prints) and whose uptime
    /// counts from now.
    pub(crate) fn new(fixed: Vec<(String, Value)>) -> StatusDocument {
        StatusDocument {
            fixed,
            started: Instant::now(),
        }
    }

    /// Replaces the planned `listen` addresses and `policy` with those in force: the
    /// bound addresses (a port 0 is now the kernel's choice) and the policy attached (the
    /// hash when the kernel refused the program).
    pub(crate) fn in_force(&mut self, listen: &[SocketAddr], policy: &str) {
        let listen = Value::Arr(listen.iter().map(|a| Value::str(a.to_string())).collect());
        for (key, value) in [("listen", listen), ("policy", Value::str(policy))] {
            match self.fixed.iter_mut().find(|(k, _)| k == key) {
                Some((_, v)) => *v = value,
                None => self.fixed.push((key.to_string(), value)),
            }
        }
    }

    /// The document now. `workers` and `counters` pair up by position, and with the
    /// workers of `history`.
    pub(crate) fn render<'a>(
        &self,
        workers: &[WorkerPlan],
        counters: impl Iterator<Item = &'a WorkerCounters>,
        history: &History,
    ) -> String {
        let uptime = self.started.elapsed().as_millis();
        let bounds = BOUNDS_MS.iter().map(|&b| int(b)).collect();
        let each = workers.iter().zip(counters).enumerate();
        let live = [
            ("version", Value::str(env!("CARGO_PKG_VERSION"))),
            ("uptime_ms", int(u64::try_from(uptime).unwrap_or(u64::MAX))),
            ("duration_bounds_ms", Value::Arr(bounds)),
            (
                "counters",
                Value::Arr(each.map(|(i, wc)| worker(wc, history, i)).collect()),
            ),
        ];
        let mut pairs = self.fixed.clone();
        pairs.extend(live.into_iter().map(|(k, v)| (k.to_string(), v)));
        Value::Obj(pairs).to_text()
    }
}

fn int(n: u64) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

fn load(c: &AtomicU64) -> Value {
    int(c.load(Ordering::Relaxed))
}

/// One worker's counters, named as in `/metrics` without the `steerd_` prefix and unit,
/// and its last minute (`history` index `i`).
fn worker((w, c): (&WorkerPlan, &WorkerCounters), history: &History, i: usize) -> Value {
    let recent = history.recent(i, &c.latency.counts());
    let per_second = recent.per_second.iter().map(|&r| Value::fixed(r, 1));
    Value::obj([
        ("worker", int(u64::from(w.index))),
        ("cpu", int(w.cpu.get() as u64)),
        ("node", int(u64::from(w.node.0))),
        ("accepted", load(&c.accepted)),
        ("local", load(&c.local)),
        (
            "responses",
            Value::Arr(c.responses.iter().map(load).collect()),
        ),
        ("bytes_sent", load(&c.bytes_sent)),
        ("open", load(&c.open)),
        ("stale_events", load(&c.stale_events)),
        ("accept_pauses", load(&c.accept_pauses)),
        ("respawns", load(&c.respawns)),
        ("per_second", Value::Arr(per_second.collect())),
        ("p50_ms", Value::opt_fixed(recent.p50_ms, 1)),
        ("p99_ms", Value::opt_fixed(recent.p99_ms, 1)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuset::CpuId;

    #[test]
    fn fixed_members_then_version_uptime_and_counters_in_plan_order() {
        let mut status = StatusDocument::new(vec![("policy".into(), Value::str("cpu"))]);
        status.in_force(&["127.0.0.1:8080".parse().unwrap()], "hash");
        let workers = [3, 7].map(|cpu| WorkerPlan {
            index: (cpu / 4) as u16,
            cpu: CpuId::new(cpu).expect("cpu id"),
            node: crate::topology::NodeId(0),
        });
        let counters = [WorkerCounters::default(), WorkerCounters::default()];
        counters[1].accepted.store(5, Ordering::Relaxed);
        counters[1].responses[1].store(4, Ordering::Relaxed);
        for n in [4, 60] {
            counters[1].latency.record(n);
        }
        let mut history = History::default();
        history.offer(Instant::now(), || vec![[0; 12]; 2]);
        let text = status.render(&workers, counters.iter(), &history);
        let doc: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(doc.as_object().expect("an object").len(), 6);
        assert_eq!(doc["policy"], "hash");
        assert_eq!(doc["listen"], serde_json::json!(["127.0.0.1:8080"]));
        let at = |key: &str| text.find(&format!("\n  \"{key}\": ")).expect(key);
        assert!(at("policy") < at("version") && at("version") < at("uptime_ms"));
        assert!(at("uptime_ms") < at("duration_bounds_ms"));
        assert!(at("duration_bounds_ms") < at("counters"));
        assert_eq!(doc["duration_bounds_ms"][0], 5);
        let c = &doc["counters"];
        assert_eq!(
            (c[0]["worker"].as_u64(), c[0]["cpu"].as_u64()),
            (Some(0), Some(3))
        );
        assert_eq!(
            (c[1]["worker"].as_u64(), c[1]["cpu"].as_u64()),
            (Some(1), Some(7))
        );
        assert_eq!(c[1]["accepted"], 5);
        assert_eq!(c[1]["responses"], serde_json::json!([0, 4, 0, 0, 0]));
        assert_eq!(c[0]["respawns"], 0);
        assert_eq!(c[0]["p50_ms"], serde_json::Value::Null, "no response");
        assert_eq!(c[1]["p50_ms"], 5.0, "the top of the first of two buckets");
        assert_eq!(c[1]["p99_ms"], 99.0, "98% into the 50-100 ms bucket");
        assert_eq!(
            c[1]["per_second"],
            serde_json::json!([]),
            "one snapshot yet"
        );
    }
}
