//! `ab`'s output: the header lines, one line per run, and at the end per metric the
//! ministat table and verdict as text, or everything as one JSON object.
//!
//! Input: the spec and the figures of every run (and of the traced runs). Output: text.
//! No I/O here; `ab.rs` prints.

use super::trace::Traced;
use super::AbSpec;
use crate::args::bench::Client;
use crate::bench::compare::{summary_row, verdict, TABLE_HEAD};
use crate::bench::figures::{split_text, RunFigures, METRICS, SIDES};
use crate::bench::ministat::{self, Summary};
use crate::json::Value;
use std::fmt::Write as _;

/// The load line: client, URL, flags, rounds, warm-up.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn describe_load(spec: &AbSpec) -> String {
    let l = &spec.load;
    format!(
        "{} http://{}{} -c {} -t {} -d {:.2}s{}{}{}, {} rounds, {}",
        if spec.client == Client::Wrk {
            "wrk"
        } else {
            "builtin"
        },
        l.target.host,
        l.target.path,
        l.conns,
        l.threads,
        l.duration.as_secs_f64(),
        if l.close { " --close" } else { "" },
        l.rate.map_or(String::new(), |r| format!(" --rate {r}")),
        if l.pin.is_empty() {
            String::new()
        } else {
            format!(
                " --pin {:?}",
                l.pin.iter().map(|c| c.get()).collect::<Vec<_>>()
            )
        },
        spec.rounds,
        spec.warmup.map_or("cold".into(), |w| format!(
            "warm ({:.2}s warm-up)",
            w.as_secs_f64()
        ))
    )
}

/// One run's figures on one line.
pub(crate) fn run_line(f: &RunFigures) -> String {
    format!(
        "{:.0} req/s, p50 {:.1}us, p99 {:.1}us, server cpu {:.2}us/req, client cpu {:.2}us/req, errors {}, split {}{}",
        f.rps,
        f.p50_us,
        f.p99_us,
        f.server_cpu_us,
        f.client_cpu_us,
        f.errors,
        split_text(f.split.as_deref()),
        f.local_pct.map_or(String::new(), |p| format!(", local {p:.1}%"))
    )
}

/// The per-metric comparison, as text.
pub(crate) fn summaries(spec: &AbSpec, runs: &[Vec<RunFigures>; 2]) -> String {
    let mut o = String::new();
    for (name, get) in METRICS {
        let a: Vec<f64> = runs[0].iter().map(get).collect();
        let b: Vec<f64> = runs[1].iter().map(get).collect();
        let _ = writeln!(o, "\n== {name}");
        let _ = writeln!(o, "{TABLE_HEAD}");
        for (label, xs) in [("A", &a), ("B", &b)] {
            if let Some(s) = Summary::of(xs) {
                let _ = writeln!(o, "{}", summary_row(label, &s));
            }
        }
        let _ = writeln!(o, "{}", verdict(&a, &b, spec.seed));
    }
    let _ = writeln!(o, "\n== per-worker connection split (mean share)");
    for (side, rs) in runs.iter().enumerate() {
        let _ = writeln!(o, "{}: {}", SIDES[side], mean_split(rs));
    }
    let errors: u64 = runs.iter().flatten().map(|r| r.errors).sum();
    if errors > 0 {
        let _ = writeln!(
            o,
            "\nwarning: {errors} failed requests over all runs (see the run lines)"
        );
    }
    o
}

fn mean_split(rs: &[RunFigures]) -> String {
    let splits: Vec<&Vec<u64>> = rs.iter().filter_map(|r| r.split.as_ref()).collect();
    let Some(first) = splits.first() else {
        return "n/a".into();
    };
    let workers = first.len();
    let mut share = vec![0.0; workers];
    for s in splits.iter().filter(|s| s.len() == workers) {
        let total = s.iter().sum::<u64>().max(1) as f64;
        for (acc, &n) in share.iter_mut().zip(s.iter()) {
            *acc += n as f64 / total * 100.0 / splits.len() as f64;
        }
    }
    let parts: Vec<String> = share
        .iter()
        .enumerate()
        .map(|(i, p)| format!("w{i} {p:.1}%"))
        .collect();
    parts.join(" / ")
}

/// Everything as one JSON object on one line (for scripts).
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(super) fn json(spec: &AbSpec, runs: &[Vec<RunFigures>; 2], syscalls: &[Traced]) -> String {
    let mut rows = Vec::new();
    for (side, rs) in runs.iter().enumerate() {
        for (i, r) in rs.iter().enumerate() {
            rows.push(run_json(SIDES[side], i + 1, r));
        }
    }
    let metrics = METRICS
        .iter()
        .map(|(name, get)| {
            let a: Vec<f64> = runs[0].iter().map(get).collect();
            let b: Vec<f64> = runs[1].iter().map(get).collect();
            metric_json(name, &a, &b, spec.seed)
        })
        .collect();
    let per = syscalls
        .iter()
        .map(|t| Value::opt_fixed(t.per_request().map(|p| p.0), 6))
        .collect();
    Value::obj([
        ("a", Value::str(spec.a.join(" "))),
        ("b", Value::str(spec.b.join(" "))),
        ("rounds", Value::Int(spec.rounds.into())),
        ("runs", Value::Arr(rows)),
        ("metrics", Value::Arr(metrics)),
        ("syscalls_per_request", Value::Arr(per)),
    ])
    .to_compact()
}

fn run_json(side: &str, round: usize, r: &RunFigures) -> Value {
    let split = r.split.as_ref().map_or(Value::Null, |s| {
        Value::Arr(s.iter().map(|&n| Value::uint(n)).collect())
    });
    Value::obj([
        ("side", Value::str(side)),
        ("round", Value::uint(round as u64)),
        ("rps", Value::fixed(r.rps, 3)),
        ("p50_us", Value::fixed(r.p50_us, 3)),
        ("p99_us", Value::fixed(r.p99_us, 3)),
        ("server_cpu_us", Value::fixed(r.server_cpu_us, 4)),
        ("client_cpu_us", Value::fixed(r.client_cpu_us, 4)),
        ("requests", Value::uint(r.requests)),
        ("errors", Value::uint(r.errors)),
        ("split", split),
        ("local_pct", Value::opt_fixed(r.local_pct, 6)),
    ])
}

fn metric_json(name: &str, a: &[f64], b: &[f64], seed: u64) -> Value {
    let t = ministat::student_t(a, b, 95.0);
    let r = ministat::paired_ratio(a, b, 95.0);
    Value::obj([
        ("name", Value::str(name)),
        ("a_mean", Value::fixed(ministat::mean_stddev(a).0, 4)),
        ("b_mean", Value::fixed(ministat::mean_stddev(b).0, 4)),
        (
            "significant",
            Value::Bool(t.is_some_and(|c| c.significant())),
        ),
        ("diff_pct", Value::opt_fixed(t.map(|c| c.diff_pct), 6)),
        (
            "diff_pct_ci",
            Value::opt_fixed(t.map(|c| c.half_width_pct), 6),
        ),
        ("ratio", Value::opt_fixed(r.map(|r| r.mean), 6)),
        ("ratio_low", Value::opt_fixed(r.map(|r| r.low), 6)),
        ("ratio_high", Value::opt_fixed(r.map(|r| r.high), 6)),
        (
            "p",
            Value::opt_fixed(ministat::permutation_p(a, b, seed), 6),
        ),
    ])
}
