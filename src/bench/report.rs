//! A [`LoadReport`] as text for people or JSON for scripts.
//!
//! Input: the report and the spec it came from. Output: a `String`. Text: a header line,
//! one line per thread, the merged totals, errors by kind, and a latency table (request,
//! connect, time to first byte) with p50/p90/p99/p99.9/max. JSON: one object with the
//! same figures, latencies in microseconds, written by `json::Value`. No I/O here.

use super::hist::{Hist, REPORTED};
use super::load::{ErrorKind, LoadReport, ThreadReport};
use super::spec::LoadSpec;
use crate::json::Value;
use std::fmt::Write;

/// Formats nanoseconds with a unit a person reads quickly.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn human_ns(ns: u64) -> String {
    let ns = ns as f64;
    if ns < 1e3 {
        format!("{ns:.0}ns")
    } else if ns < 1e6 {
        format!("{:.1}us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.2}s", ns / 1e9)
    }
}

fn mode(spec: &LoadSpec) -> String {
    let conn = if spec.close { "close" } else { "keep-alive" };
    let lp = match spec.rate {
        Some(r) => format!("open loop at {r} req/s"),
        None => "closed loop".into(),
    };
    format!("{conn}, {lp}")
}

/// What was loaded and how: `http://HOST/PATH: 2 threads, 10 connections, 2.00 s, ...`.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn headline(spec: &LoadSpec) -> String {
    format!(
        "http://{}{}: {} threads, {} connections, {:.2} s, {}",
        spec.target.host,
        spec.target.path,
        spec.threads,
        spec.conns,
        spec.duration.as_secs_f64(),
        mode(spec)
    )
}

/// The text report.
pub(crate) fn text(spec: &LoadSpec, r: &LoadReport) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "load {}", headline(spec));
    let _ = writeln!(
        o,
        "  thread  cpu   requests       req/s     p50       p99       max"
    );
    for (i, t) in r.threads.iter().enumerate() {
        let cpu = t.cpu.map_or("-".to_string(), |c| c.to_string());
        let _ = writeln!(
            o,
            "  {i:<6}  {cpu:<4}  {:<12}  {:<8.0}  {:<8}  {:<8}  {}",
            t.requests,
            t.rate(),
            human_ns(t.latency.percentile(50.0)),
            human_ns(t.latency.percentile(99.0)),
            human_ns(t.latency.max())
        );
    }
    let m = &r.merged;
    let _ = writeln!(
        o,
        "requests: {} in {:.3} s",
        m.requests,
        m.elapsed.as_secs_f64()
    );
    let _ = writeln!(o, "requests/s: {:.1}", m.rate());
    let _ = writeln!(
        o,
        "bytes/s: {:.0} ({:.2} MiB/s)",
        m.byte_rate(),
        m.byte_rate() / 1048576.0
    );
    let _ = writeln!(o, "errors: {}", errors_text(m));
    if spec.rate.is_some() {
        let _ = writeln!(o, "unsent (due but not sent by the end): {}", m.unsent);
    }
    let _ = writeln!(
        o,
        "latency     p50       p90       p99       p99.9     max       mean"
    );
    for (name, h) in [
        ("request", &m.latency),
        ("connect", &m.connect),
        ("ttfb", &m.ttfb),
    ] {
        let _ = write!(o, "{name:<10}");
        for (p, _) in REPORTED {
            let _ = write!(o, "  {:<8}", human_ns(h.percentile(p)));
        }
        let _ = writeln!(
            o,
            "  {:<8}  {}",
            human_ns(h.max()),
            human_ns(h.mean() as u64)
        );
    }
    let _ = writeln!(
        o,
        "client cpu: {:.3} s, {:.2} us/request",
        r.client_cpu.as_secs_f64(),
        r.cpu_per_request_us()
    );
    o
}

fn errors_text(t: &ThreadReport) -> String {
    let parts: Vec<String> = ErrorKind::ALL
        .iter()
        .map(|k| format!("{} {}", k.name(), t.errors[*k as usize]))
        .collect();
    format!("{} ({})", t.error_total(), parts.join(", "))
}

#[cfg_attr(feature = "cold-size", optimize(size))]
fn hist_json(h: &Hist) -> Value {
    let mut pairs = vec![("count".to_string(), Value::uint(h.count()))];
    for (p, name) in REPORTED {
        let us = h.percentile(p) as f64 / 1e3;
        pairs.push((name.to_string() + "_us", Value::fixed(us, 3)));
    }
    pairs.push(("max_us".into(), Value::fixed(h.max() as f64 / 1e3, 3)));
    pairs.push(("mean_us".into(), Value::fixed(h.mean() / 1e3, 3)));
    Value::Obj(pairs)
}

#[cfg_attr(feature = "cold-size", optimize(size))]
fn thread_json(t: &ThreadReport) -> Value {
    let cpu = t.cpu.map_or(Value::Null, |c| Value::uint(c.get() as u64));
    let errors = ErrorKind::ALL
        .iter()
        .map(|k| (k.name().to_string(), Value::uint(t.errors[*k as usize])))
        .collect();
    Value::obj([
        ("cpu", cpu),
        ("requests", Value::uint(t.requests)),
        ("seconds", Value::fixed(t.elapsed.as_secs_f64(), 6)),
        ("requests_per_s", Value::fixed(t.rate(), 3)),
        ("bytes", Value::uint(t.bytes)),
        ("bytes_per_s", Value::fixed(t.byte_rate(), 3)),
        ("errors", Value::Obj(errors)),
        ("unsent", Value::uint(t.unsent)),
        ("latency", hist_json(&t.latency)),
        ("connect", hist_json(&t.connect)),
        ("ttfb", hist_json(&t.ttfb)),
    ])
}

/// The JSON report: `{"url", "threads", "connections", ..., "merged": {...}, "per_thread": [...]}`.
pub(crate) fn json(spec: &LoadSpec, r: &LoadReport) -> String {
    let url = format!("http://{}{}", spec.target.host, spec.target.path);
    Value::obj([
        ("url", Value::str(url)),
        ("threads", Value::Int(spec.threads.into())),
        ("connections", Value::Int(spec.conns.into())),
        ("duration_s", Value::fixed(spec.duration.as_secs_f64(), 3)),
        ("close", Value::Bool(spec.close)),
        (
            "rate",
            spec.rate.map_or(Value::Null, |x| Value::Num(x, None)),
        ),
        ("client_cpu_s", Value::fixed(r.client_cpu.as_secs_f64(), 6)),
        (
            "client_cpu_per_request_us",
            Value::fixed(r.cpu_per_request_us(), 4),
        ),
        ("merged", thread_json(&r.merged)),
        (
            "per_thread",
            Value::Arr(r.threads.iter().map(thread_json).collect()),
        ),
    ])
    .to_compact()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(human_ns(999), "999ns");
        assert_eq!(human_ns(12_340), "12.3us");
        assert_eq!(human_ns(2_500_000), "2.50ms");
        assert_eq!(human_ns(3_000_000_000), "3.00s");
    }
}
