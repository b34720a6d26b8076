//! `steerd bench ab`: is B faster than A, and by how much, with what confidence?
//!
//! Input: the typed `ab` arguments of `args::bench`. Output: one line per run as it
//! finishes, then per metric a ministat-style summary, the pooled Student's t verdict,
//! the paired per-round ratio B/A with its interval and the permutation p-value
//! (`compare.rs`); `--json` prints all of it as one object instead.
//!
//! The method, and why (`docs/benchmarks.md`, "Why A and B alternate"): A and B alternate,
//! A B A B, for `--rounds` rounds, each run with the same load, and each B run is paired
//! with the A run of its round. Every run starts its server afresh (`ab/server.rs`),
//! optionally warms it up, measures, and stops it. Server CPU per request is the CPU
//! time of the server's process tree during the measured load (`procs.rs`) over the
//! requests served. The per-worker split comes from steerd's `--metrics` page when the
//! command line has that flag, and is "n/a" otherwise. `--syscalls` adds one traced run
//! per side (`ab/trace.rs`). `--svg` and `--report` draw the runs (`plot.rs`). It does
//! not build anything, compare more than two variants, or decide what counts as a
//! regression.

mod render;
mod server;
mod trace;

use super::figures::{RunFigures, SIDES};
use super::hist::Hist;
use super::load::{self, LoadReport};
use super::{compare, emit, ministat, plot, procs, spec, OutFile, Usage};
use crate::args::bench::{AbArgs, Client};
use crate::bench::BenchError;
use server::Server;
use trace::{Traced, Tracer};

/// An A/B comparison with its URL resolved.
pub(crate) type AbSpec = AbArgs<spec::Target>;

/// Entry point of `steerd bench ab`.
pub(crate) fn main(args: AbArgs) -> Result<i32, Usage> {
    let spec = resolve(args).map_err(|e| Usage::Target("ab", e))?;
    match run(&spec) {
        Ok(()) => Ok(0),
        Err(e) => {
            eprintln!("steerd: bench: ab: {e}");
            Ok(1)
        }
    }
}

fn resolve(args: AbArgs) -> Result<AbSpec, spec::TargetError> {
    Ok(AbArgs {
        load: spec::resolve(args.load)?,
        rounds: args.rounds,
        warmup: args.warmup,
        client: args.client,
        syscalls: args.syscalls,
        seed: args.seed,
        a: args.a,
        b: args.b,
        report: args.report,
        svg: args.svg,
    })
}

/// The text output: printed as it comes (unless `--json`) and kept for `--report`.
struct Transcript {
    json: bool,
    text: String,
}

impl Transcript {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn say(&mut self, line: String) {
        if !self.json {
            emit(&format!("{line}\n"));
        }
        self.text.push_str(&line);
        self.text.push('\n');
    }
}

fn run(spec: &AbSpec) -> Result<(), BenchError> {
    let json = spec.load.json;
    let report = OutFile::create(spec.report.as_deref())?;
    let svg = OutFile::create(spec.svg.as_deref())?;
    let mut out = Transcript {
        json,
        text: String::new(),
    };
    out.say(format!("A: {}", spec.a.join(" ")));
    out.say(format!("B: {}", spec.b.join(" ")));
    out.say(format!("load: {}", render::describe_load(spec)));
    let mut runs: [Vec<RunFigures>; 2] = [Vec::new(), Vec::new()];
    let mut latency = [Hist::new(), Hist::new()];
    for round in 1..=spec.rounds {
        for (side, argv) in [(0, &spec.a), (1, &spec.b)] {
            let mut fig = one_run(spec, argv, None)?;
            if let Some(h) = fig.latency.take() {
                latency[side].merge(&h);
            }
            out.say(format!(
                "round {round} {}: {}",
                SIDES[side],
                render::run_line(&fig)
            ));
            runs[side].push(fig);
        }
    }
    let mut syscalls = Vec::new();
    if spec.syscalls {
        for (side, argv) in [(0, &spec.a), (1, &spec.b)] {
            let mut traced = Traced::default();
            one_run(spec, argv, Some(&mut traced))?;
            out.say(traced.text(SIDES[side]));
            syscalls.push(traced);
        }
    }
    let text = render::summaries(spec, &runs);
    if json {
        emit(&render::json(spec, &runs, &syscalls));
    } else {
        emit(&text);
    }
    if !(svg.is_some() || report.is_some()) {
        return Ok(());
    }
    out.text.push_str(&text);
    let rps = runs
        .each_ref()
        .map(|rs| rs.iter().map(|r| r.rps).collect::<Vec<f64>>());
    let cdfs = latency.each_ref().map(plot::Cdf::of);
    let commands = [spec.a.join(" "), spec.b.join(" ")];
    let fig = plot::AbFigure {
        load: &render::describe_load(spec),
        commands: [&commands[0], &commands[1]],
        latency: [cdfs[0].as_ref(), cdfs[1].as_ref()],
        rps: [&rps[0], &rps[1]],
        ratio: ministat::paired_ratio(&rps[0], &rps[1], 95.0),
        verdict: &compare::verdict(&rps[0], &rps[1], spec.seed),
    };
    svg.write(&plot::ab_svg(&fig))?;
    report.write(&plot::ab_html(&fig, &out.text))
}

/// One run: start, wait, warm, measure, stop. With `traced`, strace counts the calls.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn one_run(
    spec: &AbSpec,
    argv: &[String],
    traced: Option<&mut Traced>,
) -> Result<RunFigures, BenchError> {
    let mut server = Server::start(argv, spec.load.target.addr)?;
    if let Some(w) = spec.warmup {
        let mut warm = spec.load.clone();
        warm.duration = w;
        load::run(&warm)?;
    }
    let metrics = procs::metrics_flag(argv);
    let before = metrics.and_then(procs::fetch_metrics);
    let tracer = match traced.is_some() {
        true => Some(Tracer::attach(server.pid)?),
        false => None,
    };
    let cpu_before = procs::tree_cpu(server.pid);
    let measured = measure(spec);
    let server_cpu = procs::tree_cpu(server.pid).saturating_sub(cpu_before);
    let strace_text = tracer.map(Tracer::finish).transpose()?;
    let after = metrics.and_then(procs::fetch_metrics);
    server.stop();
    let mut fig = measured?;
    if fig.requests > 0 {
        fig.server_cpu_us = server_cpu.as_secs_f64() * 1e6 / fig.requests as f64;
    }
    if let Some(after) = after {
        let before = before.unwrap_or_default();
        fig.split = worker_delta(&before, &after, "accepted");
        let local: Option<u64> = worker_delta(&before, &after, "local").map(|v| v.iter().sum());
        let accepted: Option<u64> = fig.split.as_ref().map(|v| v.iter().sum());
        if let (Some(l), Some(a)) = (local, accepted.filter(|&a| a > 0)) {
            fig.local_pct = Some(l as f64 * 100.0 / a as f64);
        }
    }
    if let (Some(t), Some(text)) = (traced, strace_text) {
        t.requests = fig.requests;
        t.summary = procs::parse_strace(&text);
    }
    Ok(fig)
}

/// A per-worker counter's growth between two metrics pages (missing before = 0).
#[cfg_attr(feature = "cold-size", optimize(size))]
fn worker_delta(before: &str, after: &str, needle: &str) -> Option<Vec<u64>> {
    let old = procs::parse_per_worker(before, needle);
    let new = procs::parse_per_worker(after, needle);
    let v: Vec<u64> = new
        .iter()
        .map(|(w, n)| {
            let was = old.iter().find(|(v, _)| v == w).map_or(0, |p| p.1);
            n.saturating_sub(was)
        })
        .collect();
    (!v.is_empty()).then_some(v)
}

fn measure(spec: &AbSpec) -> Result<RunFigures, BenchError> {
    match spec.client {
        Client::Builtin => Ok(builtin_figures(&load::run(&spec.load)?)),
        Client::Wrk => super::wrk::run(&spec.load),
    }
}

fn builtin_figures(r: &LoadReport) -> RunFigures {
    RunFigures {
        rps: r.merged.rate(),
        p50_us: r.merged.latency.percentile(50.0) as f64 / 1e3,
        p99_us: r.merged.latency.percentile(99.0) as f64 / 1e3,
        server_cpu_us: 0.0,
        client_cpu_us: r.cpu_per_request_us(),
        requests: r.merged.requests,
        errors: r.merged.error_total(),
        split: None,
        local_pct: None,
        latency: Some(r.merged.latency.clone()),
    }
}
