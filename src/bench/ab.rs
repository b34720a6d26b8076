//! `steerd bench ab`: is B faster than A, and by how much, with what confidence?
//!
//! Input: `[ab options] [load options] URL -- A_COMMAND... -- B_COMMAND...`. Output: one
//! line per run as it finishes, then per metric a ministat-style summary, the pooled
//! Student's t verdict, the paired per-round ratio B/A with its interval and the
//! permutation p-value (`stats.rs`); `--json` prints all of it as one object instead.
//!
//! The method (`notes/benchmarking.md`): the machine's mood drifts by tens of percent, so
//! A and B alternate, A B A B, for `--rounds` rounds, each run with the same load, and
//! each B run is paired with the A run of its round. Both command lines usually bind
//! the URL's port, so every run starts its server afresh in its own process group,
//! waits until the port accepts, optionally warms it up, measures, and stops it (SIGTERM
//! to its first process, SIGKILL to its whole group if anything is left after 5 s). Server CPU per request is the CPU time of
//! the server's process tree during the measured load (`procs.rs`) over the requests
//! served. The per-worker split comes from steerd's `--metrics` page when the command
//! line has that flag, and is "n/a" otherwise. It does not build anything, compare
//! more than two variants, or decide what counts as a regression.

use super::hist::Hist;
use super::load::{self, LoadReport};
use super::spec::LoadSpec;
use super::stats::{self, Summary};
use super::{emit, figure, procs, report, OutFile, Usage};
use std::fmt::Write as _;
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const HELP: &str = "\
usage: steerd bench ab [ab options] [load options] URL -- A_COMMAND... -- B_COMMAND...

Runs the server command lines A and B alternately (A B A B ...), each run a fresh
server measured under the same load on URL, and says per metric whether B differs
from A: ministat-style summary, Student's t at 95% (\"Difference at 95.0% confidence\"
or \"No difference proven\"), the paired per-round ratio B/A with its 95% interval, and
a permutation-test p-value. Two flag sets of one steerd are two command lines:
  steerd bench ab -d 3 http://127.0.0.1:8080/f -- steerd serve --steer hash ... -- steerd serve --steer cpu ...

ab options:
    --rounds N         rounds of A then B (default 10)
    --warm             warm each server with an unmeasured load first (default)
    --cold             measure from the first request after the port accepts
    --warmup DURATION  length of the warm-up load (default 1s)
    --client builtin|wrk   the load generator (wrk: needs wrk on PATH; no --rate)
    --syscalls         after the rounds, one more run per side under strace -c -f,
                       printing system calls per request (counts only)
    --seed S           seed of the permutation test's generator (default 1)
    --report FILE      also write a self-contained HTML report: the figure below and
                       the text output
    --svg FILE         also write the figure alone: A's and B's latency CDFs (log
                       axis; p50, p99, p99.9 marked), req/s per round, the per-round
                       B/A ratio with its 95% interval, the req/s verdict

load options (as for `steerd bench load`):
";

/// Which program generates the load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    /// `steerd bench load`'s engine, in this process.
    Builtin,
    /// `wrk` from PATH (one per `--pin` CPU when pinned).
    Wrk,
}

/// Everything an A/B comparison needs, validated.
#[derive(Clone, Debug)]
pub struct AbSpec {
    /// Rounds of A then B.
    pub rounds: u32,
    /// Warm-up load before each measured run; `None` is cold.
    pub warmup: Option<Duration>,
    /// Load generator.
    pub client: Client,
    /// One extra traced run per side.
    pub syscalls: bool,
    /// Permutation test seed.
    pub seed: u64,
    /// The load each run gets.
    pub load: LoadSpec,
    /// Command line A.
    pub a: Vec<String>,
    /// Command line B.
    pub b: Vec<String>,
    /// `--report FILE`: the HTML report.
    pub report: Option<String>,
    /// `--svg FILE`: the figure alone.
    pub svg: Option<String>,
}

/// Splits `args` into options, A and B at the first two `--`, and parses them.
pub fn parse(args: &[String]) -> Result<AbSpec, String> {
    let mut parts = args.splitn(3, |a| a == "--");
    let opts = parts.next().unwrap_or(&[]);
    let a = parts
        .next()
        .ok_or("need `-- A_COMMAND... -- B_COMMAND...`")?
        .to_vec();
    let b = parts
        .next()
        .ok_or("need a second `--` before B_COMMAND")?
        .to_vec();
    if a.is_empty() || b.is_empty() {
        return Err("A_COMMAND and B_COMMAND must not be empty".into());
    }
    let (mut rounds, mut warmup, mut client) = (10, Some(Duration::from_secs(1)), Client::Builtin);
    let (mut syscalls, mut seed, mut warm) = (false, 1, true);
    let (mut report, mut svg) = (None, None);
    let mut rest = Vec::new();
    let mut it = opts.iter();
    while let Some(o) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{o} needs a value"));
        match o.as_str() {
            "--rounds" => rounds = parse_num(o, &val()?, 1, 10_000)? as u32,
            "--warm" => warm = true,
            "--cold" => warm = false,
            "--warmup" => warmup = Some(super::spec::parse_duration(&val()?)?),
            "--syscalls" => syscalls = true,
            "--seed" => seed = parse_num(o, &val()?, 0, u64::MAX)?,
            "--report" => report = Some(val()?),
            "--svg" => svg = Some(val()?),
            "--client" => {
                client = match val()?.as_str() {
                    "builtin" => Client::Builtin,
                    "wrk" => Client::Wrk,
                    other => return Err(format!("--client {other:?}: expected builtin or wrk")),
                }
            }
            _ => rest.push(o.clone()),
        }
    }
    let load = super::parse_load(&rest).map_err(|Usage(m)| m)?;
    if client == Client::Wrk && load.rate.is_some() {
        return Err("--rate needs the builtin client (wrk has no open loop)".into());
    }
    Ok(AbSpec {
        rounds,
        warmup: warmup.filter(|_| warm),
        client,
        syscalls,
        seed,
        load,
        a,
        b,
        report,
        svg,
    })
}

fn parse_num(flag: &str, v: &str, min: u64, max: u64) -> Result<u64, String> {
    match v.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "{flag} {v:?}: expected a number from {min} to {max}"
        )),
    }
}

/// Entry point of `steerd bench ab`.
pub fn main(args: &[String]) -> Result<i32, Usage> {
    if super::wants_help(args.split(|a| a == "--").next().unwrap_or(&[])) {
        emit(&format!("{HELP}{}", super::spec::LOAD_FLAGS));
        return Ok(0);
    }
    let spec = parse(args).map_err(|m| Usage(format!("ab: {m}")))?;
    match run(&spec) {
        Ok(()) => Ok(0),
        Err(e) => {
            eprintln!("steerd: bench: ab: {e}");
            Ok(1)
        }
    }
}

/// `steerd bench stats A_FILE B_FILE`: the same per-metric verdict for numbers measured
/// elsewhere, one per line (blank lines and `#` comments skipped), paired by line.
pub fn stats_main(args: &[String]) -> Result<i32, Usage> {
    let [a, b] = args else {
        return Err(Usage(
            "stats: usage: steerd bench stats A_FILE B_FILE".into(),
        ));
    };
    let read = |path: &String| -> Result<Vec<f64>, Usage> {
        let text =
            std::fs::read_to_string(path).map_err(|e| Usage(format!("stats: {path}: {e}")))?;
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| {
                l.parse::<f64>()
                    .map_err(|_| Usage(format!("stats: {path}: {l:?} is not a number")))
            })
            .collect()
    };
    let (xa, xb) = (read(a)?, read(b)?);
    let mut o = String::from(
        "    N           Min           Max        Median           Avg        Stddev\n",
    );
    for (label, xs) in [("A", &xa), ("B", &xb)] {
        match Summary::of(xs) {
            Some(s) => o.push_str(&format!("{}\n", summary_row(label, &s))),
            None => return Err(Usage(format!("stats: {label} has no numbers"))),
        }
    }
    o.push_str(&format!("{}\n", verdict(&xa, &xb, 1)));
    emit(&o);
    Ok(0)
}

/// What one measured run produced.
#[derive(Clone, Debug, Default)]
pub struct RunFigures {
    /// Responses per second.
    pub rps: f64,
    /// Median latency, microseconds.
    pub p50_us: f64,
    /// 99th percentile latency, microseconds.
    pub p99_us: f64,
    /// Server process tree CPU time per response, microseconds.
    pub server_cpu_us: f64,
    /// Load generator CPU time per response, microseconds.
    pub client_cpu_us: f64,
    /// Responses.
    pub requests: u64,
    /// Failed requests of every kind.
    pub errors: u64,
    /// Connections accepted per worker during the run, when the server reports it.
    pub split: Option<Vec<u64>>,
    /// Share of those connections accepted on the CPU that received them (steerd's
    /// `connections_local` counter), percent.
    pub local_pct: Option<f64>,
    /// The run's latencies (the builtin client keeps them; wrk does not).
    pub latency: Option<Hist>,
}

/// Reads one metric from a run.
type Getter = fn(&RunFigures) -> f64;

/// The metrics compared, with how each is read from a run.
const METRICS: [(&str, Getter); 5] = [
    ("requests/s", |r| r.rps),
    ("p50 latency (us)", |r| r.p50_us),
    ("p99 latency (us)", |r| r.p99_us),
    ("server CPU per request (us)", |r| r.server_cpu_us),
    ("client CPU per request (us)", |r| r.client_cpu_us),
];

/// The text output: printed as it comes (unless `--json`) and kept for `--report`.
struct Transcript {
    json: bool,
    text: String,
}

impl Transcript {
    fn say(&mut self, line: String) {
        if !self.json {
            emit(&format!("{line}\n"));
        }
        self.text.push_str(&line);
        self.text.push('\n');
    }
}

fn run(spec: &AbSpec) -> Result<(), String> {
    let json = spec.load.json;
    let (report, svg) = (
        OutFile::create(spec.report.as_deref())?,
        OutFile::create(spec.svg.as_deref())?,
    );
    let mut out = Transcript {
        json,
        text: String::new(),
    };
    out.say(format!("A: {}", spec.a.join(" ")));
    out.say(format!("B: {}", spec.b.join(" ")));
    out.say(format!("load: {}", describe_load(spec)));
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
                side_name(side),
                run_line(&fig)
            ));
            runs[side].push(fig);
        }
    }
    let mut syscalls = Vec::new();
    if spec.syscalls {
        for (side, argv) in [(0, &spec.a), (1, &spec.b)] {
            let mut traced = Traced::default();
            one_run(spec, argv, Some(&mut traced))?;
            out.say(traced.text(side_name(side)));
            syscalls.push(traced);
        }
    }
    let text = summaries(spec, &runs);
    if json {
        emit(&json_out(spec, &runs, &syscalls));
    } else {
        emit(&text);
    }
    out.text.push_str(&text);
    if !(svg.is_some() || report.is_some()) {
        return Ok(());
    }
    let rps = runs
        .each_ref()
        .map(|rs| rs.iter().map(|r| r.rps).collect::<Vec<f64>>());
    let cdfs = latency.each_ref().map(figure::Cdf::of);
    let commands = [spec.a.join(" "), spec.b.join(" ")];
    let fig = figure::AbFigure {
        load: &describe_load(spec),
        commands: [&commands[0], &commands[1]],
        latency: [cdfs[0].as_ref(), cdfs[1].as_ref()],
        rps: [&rps[0], &rps[1]],
        ratio: stats::paired_ratio(&rps[0], &rps[1], 95.0),
        verdict: &verdict(&rps[0], &rps[1], spec.seed),
    };
    svg.write(&figure::ab_svg(&fig))?;
    report.write(&figure::ab_html(&fig, &out.text))
}

fn side_name(side: usize) -> &'static str {
    ["A", "B"][side]
}

fn describe_load(spec: &AbSpec) -> String {
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

fn run_line(f: &RunFigures) -> String {
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

/// Worker shares as percentages, or "n/a".
pub fn split_text(split: Option<&[u64]>) -> String {
    let Some(s) = split.filter(|s| !s.is_empty()) else {
        return "n/a".into();
    };
    let total: u64 = s.iter().sum::<u64>().max(1);
    let parts: Vec<String> = s
        .iter()
        .enumerate()
        .map(|(i, &n)| format!("w{i} {:.1}%", n as f64 * 100.0 / total as f64))
        .collect();
    parts.join(" / ")
}

/// A server this harness started, in its own process group.
/// Its stdout and stderr go to a log file, removed when it stops; the log's tail is
/// quoted if it fails to start.
struct Server {
    child: Child,
    pid: u32,
    log: std::path::PathBuf,
}

impl Server {
    fn start(argv: &[String], addr: SocketAddr) -> Result<Server, String> {
        use std::os::unix::process::CommandExt;
        let log = std::env::temp_dir().join(format!("steerd-ab-{}-server.log", std::process::id()));
        let out = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out
            .try_clone()
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("starting {:?}: {e}", argv[0]))?;
        let pid = child.id();
        let mut s = Server { child, pid, log };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = s.child.try_wait() {
                return Err(format!(
                    "{:?} exited ({status}) before accepting on {addr}; its output ends:\n{}",
                    argv[0],
                    s.log_tail()
                ));
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(s);
            }
            if Instant::now() > deadline {
                s.stop();
                return Err(format!(
                    "{:?} did not accept on {addr} within 10 s",
                    argv[0]
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The last lines the server wrote.
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(8)..].join("\n")
    }

    /// SIGTERM to the server's first process (a master stops its own workers, as nginx
    /// and steerd do); SIGKILL to the whole group if anything in it is alive 5 s later.
    fn stop(&mut self) {
        use rustix::process::{kill_process, kill_process_group, Pid, Signal};
        let Some(pgid) = Pid::from_raw(self.pid as i32) else {
            return;
        };
        let _ = kill_process(pgid, Signal::TERM);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            let root_gone = matches!(self.child.try_wait(), Ok(Some(_)));
            if root_gone && !procs::group_alive(self.pid) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = kill_process_group(pgid, Signal::KILL);
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.log);
        if !matches!(self.child.try_wait(), Ok(Some(_))) || procs::group_alive(self.pid) {
            self.stop();
        }
    }
}

/// One run: start, wait, warm, measure, stop. With `traced`, strace counts the calls.
fn one_run(
    spec: &AbSpec,
    argv: &[String],
    traced: Option<&mut Traced>,
) -> Result<RunFigures, String> {
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

fn measure(spec: &AbSpec) -> Result<RunFigures, String> {
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

/// `strace -c -f` attached to every process of a server tree.
struct Tracer {
    child: Child,
    out: std::path::PathBuf,
}

impl Tracer {
    fn attach(root: u32) -> Result<Tracer, String> {
        let out =
            std::env::temp_dir().join(format!("steerd-ab-strace-{}-{root}", std::process::id()));
        let mut cmd = Command::new("strace");
        cmd.args(["-c", "-f", "-q", "-o"]).arg(&out);
        for pid in procs::tree_pids(root) {
            cmd.arg("-p").arg(pid.to_string());
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting strace: {e}"))?;
        // strace attaches to each PID before it starts counting; give it a moment.
        std::thread::sleep(Duration::from_millis(500));
        Ok(Tracer { child, out })
    }

    /// SIGINT makes strace detach and write its summary.
    fn finish(mut self) -> Result<String, String> {
        if let Some(pid) = rustix::process::Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
        }
        let _ = self.child.wait();
        let text =
            std::fs::read_to_string(&self.out).map_err(|e| format!("reading strace output: {e}"));
        let _ = std::fs::remove_file(&self.out);
        text
    }
}

/// The traced run's counts.
#[derive(Clone, Debug, Default)]
pub struct Traced {
    requests: u64,
    summary: Option<(u64, Vec<(String, u64)>)>,
}

impl Traced {
    fn per_request(&self) -> Option<(f64, Vec<(String, f64)>)> {
        let (total, rows) = self.summary.as_ref()?;
        let n = self.requests.max(1) as f64;
        let mut per: Vec<(String, f64)> = rows
            .iter()
            .map(|(s, c)| (s.clone(), *c as f64 / n))
            .collect();
        per.sort_by(|x, y| y.1.total_cmp(&x.1));
        per.retain(|(_, c)| *c >= 0.01);
        Some((*total as f64 / n, per))
    }

    fn text(&self, side: &str) -> String {
        match self.per_request() {
            None => format!("syscalls {side}: strace gave no summary"),
            Some((total, per)) => {
                let rows: Vec<String> = per.iter().map(|(s, c)| format!("{s} {c:.2}")).collect();
                format!(
                    "syscalls {side}: {total:.2} per request over {} requests ({})",
                    self.requests,
                    rows.join(", ")
                )
            }
        }
    }
}

/// The per-metric comparison, as text.
fn summaries(spec: &AbSpec, runs: &[Vec<RunFigures>; 2]) -> String {
    let mut o = String::new();
    for (name, get) in METRICS {
        let a: Vec<f64> = runs[0].iter().map(get).collect();
        let b: Vec<f64> = runs[1].iter().map(get).collect();
        let _ = writeln!(o, "\n== {name}");
        let _ = writeln!(
            o,
            "    N           Min           Max        Median           Avg        Stddev"
        );
        for (label, xs) in [("A", &a), ("B", &b)] {
            if let Some(s) = Summary::of(xs) {
                let _ = writeln!(o, "{}", summary_row(label, &s));
            }
        }
        let _ = writeln!(o, "{}", verdict(&a, &b, spec.seed));
    }
    let _ = writeln!(o, "\n== per-worker connection split (mean share)");
    for (side, rs) in runs.iter().enumerate() {
        let _ = writeln!(o, "{}: {}", side_name(side), mean_split(rs));
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

fn summary_row(label: &str, s: &Summary) -> String {
    format!(
        "{label} {:>3} {:>13} {:>13} {:>13} {:>13} {:>13}",
        s.n,
        stats::sig6(s.min),
        stats::sig6(s.max),
        stats::sig6(s.median),
        stats::sig6(s.mean),
        stats::sig6(s.stddev)
    )
}

/// The t verdict, the paired ratio and the permutation p, one per line.
fn verdict(a: &[f64], b: &[f64], seed: u64) -> String {
    let t = stats::student_t(a, b, 95.0).map_or(
        "No difference proven at 95.0% confidence (too few runs)".into(),
        |c| c.to_string(),
    );
    let ratio =
        stats::paired_ratio(a, b, 95.0).map_or("B/A per round: n/a".into(), |r| r.to_string());
    let p = stats::permutation_p(a, b, seed).map_or("n/a".into(), |p| format!("{p:.4}"));
    let how = if a.len().min(b.len()) <= stats::EXACT_LIMIT {
        "exact"
    } else {
        "sampled"
    };
    format!("{t}\n{ratio}\npermutation test on paired differences ({how}): p = {p}")
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

/// Everything as one JSON object (for scripts).
fn json_out(spec: &AbSpec, runs: &[Vec<RunFigures>; 2], syscalls: &[Traced]) -> String {
    let esc = |v: &[String]| report::json_escape(&v.join(" "));
    let mut o = format!(
        "{{\"a\":\"{}\",\"b\":\"{}\",\"rounds\":{},\"runs\":[",
        esc(&spec.a),
        esc(&spec.b),
        spec.rounds
    );
    let mut first = true;
    for (side, rs) in runs.iter().enumerate() {
        for (i, r) in rs.iter().enumerate() {
            let split = r.split.as_ref().map_or("null".into(), |s| format!("{s:?}"));
            let local = num_or_null(r.local_pct);
            let _ = write!(
                o,
                "{}{{\"side\":\"{}\",\"round\":{},\"rps\":{:.3},\"p50_us\":{:.3},\"p99_us\":{:.3},\"server_cpu_us\":{:.4},\"client_cpu_us\":{:.4},\"requests\":{},\"errors\":{},\"split\":{split},\"local_pct\":{local}}}",
                if first { "" } else { "," },
                side_name(side),
                i + 1,
                r.rps,
                r.p50_us,
                r.p99_us,
                r.server_cpu_us,
                r.client_cpu_us,
                r.requests,
                r.errors
            );
            first = false;
        }
    }
    o.push_str("],\"metrics\":[");
    for (k, (name, get)) in METRICS.iter().enumerate() {
        let a: Vec<f64> = runs[0].iter().map(get).collect();
        let b: Vec<f64> = runs[1].iter().map(get).collect();
        let t = stats::student_t(&a, &b, 95.0);
        let r = stats::paired_ratio(&a, &b, 95.0);
        let _ = write!(
            o,
            "{}{{\"name\":\"{name}\",\"a_mean\":{:.4},\"b_mean\":{:.4},\"significant\":{},\"diff_pct\":{},\"diff_pct_ci\":{},\"ratio\":{},\"ratio_low\":{},\"ratio_high\":{},\"p\":{}}}",
            if k == 0 { "" } else { "," },
            stats::mean_stddev(&a).0,
            stats::mean_stddev(&b).0,
            t.is_some_and(|c| c.significant()),
            num_or_null(t.map(|c| c.diff_pct)),
            num_or_null(t.map(|c| c.half_width_pct)),
            num_or_null(r.map(|r| r.mean)),
            num_or_null(r.map(|r| r.low)),
            num_or_null(r.map(|r| r.high)),
            num_or_null(stats::permutation_p(&a, &b, spec.seed))
        );
    }
    o.push_str("],\"syscalls_per_request\":[");
    let per: Vec<String> = syscalls
        .iter()
        .map(|t| num_or_null(t.per_request().map(|p| p.0)))
        .collect();
    o.push_str(&per.join(","));
    o.push_str("]}\n");
    o
}

fn num_or_null(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{v:.6}"),
        _ => "null".into(),
    }
}
