//! Stage 1 for `steerd bench ...`: the arguments after `bench` to a typed [`BenchCommand`].
//!
//! Input: the arguments after `bench`. Output: a [`BenchCommand`] that `src/bench` runs
//! without parsing anything again. No syscalls: the URL is checked for syntax here and
//! its host resolved by the bench tool ([`LoadArgs`] carries the unresolved [`Url`]).
//! A bad command line is an [`ArgsError`] of stage `bench`, printed as
//! `steerd: bench: ...` with exit status 2.

use super::flag::wants_help;
use super::{duration, ArgsError};
use crate::cpuset::{CpuId, CpuSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// A bad `bench` command line: `steerd: bench: MESSAGE`, exit status 2.
#[cold]
fn refused(message: impl Into<String>) -> ArgsError {
    ArgsError {
        stage: "bench",
        message: message.into(),
        usage: "",
    }
}

fn bad<T>(message: impl Into<String>) -> Result<T, ArgsError> {
    Err(refused(message))
}

/// What `steerd bench ...` asked for.
#[derive(Clone, Debug)]
pub enum BenchCommand {
    /// `bench load URL [options] [--svg FILE]`
    Load {
        /// The load.
        load: LoadArgs,
        /// `--svg FILE`: where to draw the run's latency CDF.
        svg: Option<PathBuf>,
    },
    /// `bench ab [ab options] [load options] URL -- A... -- B...`
    Ab(AbArgs),
    /// `bench stats A_FILE B_FILE`
    Stats {
        /// File of A's numbers.
        a: String,
        /// File of B's numbers.
        b: String,
    },
    /// `bench responder --listen ADDR:PORT --cpus LIST [--close] [--steer]`
    Responder(ResponderArgs),
    /// A help text to print on stdout (exit status 0).
    Help(&'static str),
    /// No tool named: the tools' help on stderr (exit status 2).
    NoTool,
}

/// `http://HOST[:PORT][/PATH]` checked for syntax, not resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    /// The URL as given (for messages).
    pub text: String,
    /// HOST[:PORT] as given: the `Host` header value.
    pub(crate) authority: String,
    /// Request target, starting with `/`.
    pub path: String,
}

impl Url {
    /// Checks `http://HOST[:PORT][/PATH]`; only `http://` is supported.
    pub fn parse(url: &str) -> Result<Url, ArgsError> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            refused(format!(
                "URL {url:?}: only http://HOST[:PORT]/PATH is supported"
            ))
        })?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty() {
            return bad(format!("URL {url:?}: no host"));
        }
        Ok(Url {
            text: url.to_string(),
            authority: authority.to_string(),
            path: path.to_string(),
        })
    }
}

/// The load options of `bench load` (and `bench ab`), for a target `T`: a [`Url`] here,
/// the resolved address in the bench tool.
#[derive(Clone, Debug)]
pub struct LoadArgs<T = Url> {
    /// Where to send requests.
    pub target: T,
    /// Connections open at once, over all threads.
    pub conns: u32,
    /// Threads, each with its own epoll loop.
    pub threads: u32,
    /// How long to send requests.
    pub duration: Duration,
    /// A new connection for every request (`Connection: close`).
    pub close: bool,
    /// CPU for each thread (thread `i` on `pin[i % len]`); empty means unpinned.
    pub pin: Vec<CpuId>,
    /// Extra header lines, as given (`Name: value`).
    pub headers: Vec<String>,
    /// Open loop: requests per second over all threads; `None` is closed loop.
    pub rate: Option<f64>,
    /// Print JSON instead of text.
    pub json: bool,
}

impl<T> LoadArgs<T> {
    /// A closed-loop keep-alive load with wrk's defaults: 10 connections, 2 threads, 10 s.
    pub fn new(target: T) -> LoadArgs<T> {
        LoadArgs {
            target,
            conns: 10,
            threads: 2,
            duration: Duration::from_secs(10),
            close: false,
            pin: Vec::new(),
            headers: Vec::new(),
            rate: None,
            json: false,
        }
    }

    /// The same options for another form of the target.
    pub(crate) fn with_target<U>(self, target: U) -> LoadArgs<U> {
        LoadArgs {
            target,
            conns: self.conns,
            threads: self.threads,
            duration: self.duration,
            close: self.close,
            pin: self.pin,
            headers: self.headers,
            rate: self.rate,
            json: self.json,
        }
    }
}

/// Which program generates the load of `bench ab`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    /// `steerd bench load`'s engine, in this process.
    Builtin,
    /// `wrk` from PATH (one per `--pin` CPU when pinned).
    Wrk,
}

/// Everything an A/B comparison needs, validated; `T` as in [`LoadArgs`].
#[derive(Clone, Debug)]
pub struct AbArgs<T = Url> {
    /// Rounds of A then B.
    pub rounds: u32,
    /// Warm-up load before each measured run; `None` is cold.
    pub warmup: Option<Duration>,
    /// Load generator.
    pub client: Client,
    /// One extra traced run per side.
    pub(crate) syscalls: bool,
    /// Permutation test seed.
    pub seed: u64,
    /// The load each run gets.
    pub load: LoadArgs<T>,
    /// Command line A.
    pub a: Vec<String>,
    /// Command line B.
    pub b: Vec<String>,
    /// `--report FILE`: the HTML report (figure and text output).
    pub report: Option<PathBuf>,
    /// `--svg FILE`: the figure alone.
    pub svg: Option<PathBuf>,
}

/// `bench responder` options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponderArgs {
    /// Address of every listener (port 0: the first listener's port).
    pub listen: SocketAddr,
    /// One thread and listener per CPU, in this order.
    pub cpus: Vec<CpuId>,
    /// Answer and close each connection.
    pub close: bool,
    /// Steer each connection to the listener of the CPU that received it.
    pub steer: bool,
    /// A file holding the whole response to send instead of the canned one.
    pub response: Option<String>,
    /// Iterations of busy work per request before answering (a server's own work).
    pub spin: u64,
}

/// Parses the arguments after `bench`; a refusal is a stage-1 [`ArgsError`] naming the
/// tool (`steerd: bench: load: -c "0": ...`).
pub fn parse(args: &[String]) -> Result<BenchCommand, ArgsError> {
    let Some((tool, rest)) = args.split_first() else {
        return Ok(BenchCommand::NoTool);
    };
    let of_tool = |mut e: ArgsError| {
        e.message = format!("{tool}: {}", e.message);
        e
    };
    match tool.as_str() {
        "load" if wants_help(rest) => Ok(BenchCommand::Help(LOAD_HELP)),
        "load" => parse_load_tool(rest).map_err(of_tool),
        "ab" if wants_help(rest.split(|a| a == "--").next().unwrap_or(&[])) => {
            Ok(BenchCommand::Help(AB_HELP))
        }
        "ab" => parse_ab(rest).map(BenchCommand::Ab).map_err(of_tool),
        "responder" if wants_help(rest) => Ok(BenchCommand::Help(RESPONDER_HELP)),
        "responder" => parse_responder(rest)
            .map(BenchCommand::Responder)
            .map_err(of_tool),
        "stats" => match rest {
            [a, b] => Ok(BenchCommand::Stats {
                a: a.clone(),
                b: b.clone(),
            }),
            _ => bad("stats: usage: steerd bench stats A_FILE B_FILE"),
        },
        "-h" | "--help" | "help" => Ok(BenchCommand::Help(HELP)),
        other => bad(format!("unknown tool {other:?} (load, ab, responder)")),
    }
}

/// Splits wrk-style attached values (`-c50`, `-t2`, `-d3s`) into flag and value.
fn split_attached(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    for a in args {
        match a.get(..2) {
            Some(f @ ("-c" | "-t" | "-d" | "-H")) if a.len() > 2 => {
                out.push(f.to_string());
                out.push(a[2..].to_string());
            }
            _ => out.push(a.clone()),
        }
    }
    out
}

/// Parses `load` arguments (a URL and load flags, in any order).
pub(crate) fn parse_load(args: &[String]) -> Result<LoadArgs, ArgsError> {
    let args = &split_attached(args)[..];
    let mut url = None;
    let mut flags = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if args[i].starts_with('-') {
            let end = (i + if takes_value(&args[i]) { 2 } else { 1 }).min(args.len());
            flags.extend_from_slice(&args[i..end]);
            i = end;
        } else if url.is_none() {
            url = Some(args[i].as_str());
            i += 1;
        } else {
            return bad(format!("unexpected argument {:?}", args[i]));
        }
    }
    let url = url.ok_or_else(|| refused("no URL given"))?;
    let mut load = LoadArgs::new(Url::parse(url)?);
    apply_flags(&flags, &mut load)?;
    Ok(load)
}

/// `bench load`: the load, and `--svg FILE` (an option of the tool, not of the load
/// `bench ab` passes on).
fn parse_load_tool(args: &[String]) -> Result<BenchCommand, ArgsError> {
    let (mut svg, mut rest) = (None, Vec::with_capacity(args.len()));
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--svg" => {
                svg = Some(PathBuf::from(
                    it.next().ok_or_else(|| refused("--svg needs a FILE"))?,
                ))
            }
            _ => rest.push(a.clone()),
        }
    }
    let load = parse_load(&rest)?;
    Ok(BenchCommand::Load { load, svg })
}

/// Applies load flags (and only load flags) to `load`, then checks the combination.
fn apply_flags(flags: &[String], load: &mut LoadArgs) -> Result<(), ArgsError> {
    let mut i = 0;
    let mut threads_given = false;
    while i < flags.len() {
        let used = parse_flag(flags, i, load)?;
        if used == 0 {
            return bad(format!("unknown option {:?}", flags[i]));
        }
        threads_given |= flags[i] == "-t";
        i += used;
    }
    finish(load, threads_given)
}

/// True for the load flags that take a value.
fn takes_value(flag: &str) -> bool {
    matches!(flag, "-c" | "-t" | "-d" | "-H" | "--pin" | "--rate")
}

/// Parses one load flag at `args[i]` into `load`; returns how many arguments it used
/// (0 when `args[i]` is not a load flag).
fn parse_flag(args: &[String], i: usize, load: &mut LoadArgs) -> Result<usize, ArgsError> {
    let flag = args[i].as_str();
    let val = || -> Result<&str, ArgsError> {
        args.get(i + 1)
            .map(String::as_str)
            .ok_or_else(|| refused(format!("{flag} needs a value")))
    };
    match flag {
        "-c" => load.conns = parse_count(flag, val()?)?,
        "-t" => load.threads = parse_count(flag, val()?)?,
        "-d" => load.duration = parse_duration(val()?)?,
        "-H" => load.headers.push(parse_header(val()?)?),
        "--pin" => load.pin = parse_pin(val()?)?,
        "--rate" => load.rate = Some(parse_rate(val()?)?),
        "--close" => load.close = true,
        "--json" => load.json = true,
        _ => return Ok(0),
    }
    Ok(if takes_value(flag) { 2 } else { 1 })
}

/// Checks the combination once all flags are in: threads follow `--pin`, and every
/// thread has at least one connection.
fn finish(load: &mut LoadArgs, threads_given: bool) -> Result<(), ArgsError> {
    if !load.pin.is_empty() && !threads_given {
        load.threads = load.pin.len() as u32;
    }
    if load.conns < load.threads {
        return bad(format!(
            "-c {} is fewer than the {} threads: each thread needs a connection",
            load.conns, load.threads
        ));
    }
    Ok(())
}

fn parse_count(flag: &str, v: &str) -> Result<u32, ArgsError> {
    match v.parse::<u32>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ => bad(format!("{flag} {v:?}: expected a count from 1 to 1000000")),
    }
}

/// A time in the one grammar of `args::duration`.
fn parse_duration(v: &str) -> Result<Duration, ArgsError> {
    duration::parse(v).map_err(|e| refused(format!("duration {e}")))
}

fn parse_header(v: &str) -> Result<String, ArgsError> {
    let ok = v.split_once(':').is_some_and(|(name, _)| {
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic() && b != b':')
    });
    if !ok || v.contains(['\r', '\n']) {
        return bad(format!("-H {v:?}: expected 'Name: value' on one line"));
    }
    Ok(v.to_string())
}

fn parse_pin(v: &str) -> Result<Vec<CpuId>, ArgsError> {
    let set = CpuSet::parse_list(v).map_err(|e| refused(format!("--pin {v:?}: {e}")))?;
    if set.is_empty() {
        return bad(format!("--pin {v:?}: no CPU"));
    }
    Ok(set.iter().collect())
}

fn parse_rate(v: &str) -> Result<f64, ArgsError> {
    match v.parse::<f64>() {
        Ok(r) if r > 0.0 && r <= 1e9 => Ok(r),
        _ => bad(format!(
            "--rate {v:?}: expected requests per second above 0"
        )),
    }
}

/// Splits `ab` arguments into options, A and B at the first two `--`, and parses them.
fn parse_ab(args: &[String]) -> Result<AbArgs, ArgsError> {
    let mut parts = args.splitn(3, |a| a == "--");
    let opts = parts.next().unwrap_or(&[]);
    let a = parts
        .next()
        .ok_or_else(|| refused("need `-- A_COMMAND... -- B_COMMAND...`"))?
        .to_vec();
    let b = parts
        .next()
        .ok_or_else(|| refused("need a second `--` before B_COMMAND"))?
        .to_vec();
    if a.is_empty() || b.is_empty() {
        return bad("A_COMMAND and B_COMMAND must not be empty");
    }
    let (mut rounds, mut warmup, mut client) = (10, Some(Duration::from_secs(1)), Client::Builtin);
    let (mut syscalls, mut seed, mut warm) = (false, 1, true);
    let (mut report, mut svg) = (None, None);
    let mut rest = Vec::new();
    let mut it = opts.iter();
    while let Some(o) = it.next() {
        let mut val = || {
            it.next()
                .cloned()
                .ok_or_else(|| refused(format!("{o} needs a value")))
        };
        match o.as_str() {
            "--rounds" => rounds = parse_num(o, &val()?, 1, 10_000)? as u32,
            "--warm" => warm = true,
            "--cold" => warm = false,
            "--warmup" => warmup = Some(parse_duration(&val()?)?),
            "--syscalls" => syscalls = true,
            "--seed" => seed = parse_num(o, &val()?, 0, u64::MAX)?,
            "--report" => report = Some(PathBuf::from(val()?)),
            "--svg" => svg = Some(PathBuf::from(val()?)),
            "--client" => {
                client = match val()?.as_str() {
                    "builtin" => Client::Builtin,
                    "wrk" => Client::Wrk,
                    other => return bad(format!("--client {other:?}: expected builtin or wrk")),
                }
            }
            _ => rest.push(o.clone()),
        }
    }
    let load = parse_load(&rest)?;
    if client == Client::Wrk && load.rate.is_some() {
        return bad("--rate needs the builtin client (wrk has no open loop)");
    }
    Ok(AbArgs {
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

fn parse_num(flag: &str, v: &str, min: u64, max: u64) -> Result<u64, ArgsError> {
    match v.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => bad(format!(
            "{flag} {v:?}: expected a number from {min} to {max}"
        )),
    }
}

fn parse_responder(args: &[String]) -> Result<ResponderArgs, ArgsError> {
    let (mut listen, mut cpus, mut close, mut steer) = (None, None, false, false);
    let (mut response, mut spin) = (None, 0);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--listen" => {
                let v = it
                    .next()
                    .ok_or_else(|| refused("--listen needs ADDR:PORT"))?;
                listen = Some(
                    v.parse()
                        .map_err(|_| refused(format!("--listen {v:?}: not ADDR:PORT")))?,
                );
            }
            "--cpus" => {
                let v = it
                    .next()
                    .ok_or_else(|| refused("--cpus needs a CPU list"))?;
                let set =
                    CpuSet::parse_list(v).map_err(|e| refused(format!("--cpus {v:?}: {e}")))?;
                cpus = Some(set.iter().collect::<Vec<_>>());
            }
            "--close" => close = true,
            "--steer" => steer = true,
            "--response" => {
                response = Some(
                    it.next()
                        .ok_or_else(|| refused("--response needs a FILE"))?
                        .clone(),
                )
            }
            "--spin" => {
                let v = it.next().ok_or_else(|| refused("--spin needs a number"))?;
                spin = parse_num("--spin", v, 0, 1_000_000_000)?;
            }
            other => return bad(format!("unknown argument {other:?}")),
        }
    }
    let cpus = cpus
        .filter(|c| !c.is_empty())
        .ok_or_else(|| refused("--cpus LIST is required"))?;
    Ok(ResponderArgs {
        listen: listen.ok_or_else(|| refused("--listen ADDR:PORT is required"))?,
        cpus,
        close,
        steer,
        response,
        spin,
    })
}

/// Load flags, in the order `--help` lists them (in both `load` and `ab` help).
macro_rules! load_flags {
    () => {
        "    -c CONNS          connections open at once, over all threads (default 10)
    -t THREADS        threads, one epoll loop each (default 2, or one per --pin CPU)
    -d DURATION       how long to load, such as 3, 2.5s, 500ms, 1m (default 10s)
    --close           a new connection for every request (Connection: close)
    --pin CPUS        pin thread i to the i-th CPU of the list (such as 0,1 or 0-3)
    -H 'Name: value'  an extra request header (repeatable)
    --rate R          open loop: R requests/s over all threads, latency measured from
                      each request's intended send time (no coordinated omission)
    --json            print JSON instead of text
"
    };
}

/// `steerd bench --help` (also printed on stderr when no tool is named).
pub(crate) const HELP: &str = "\
steerd bench: load generator, A/B comparison, reference responder

usage:
  steerd bench load URL [options]
  steerd bench ab [ab options] [load options] URL -- A_COMMAND... -- B_COMMAND...
  steerd bench responder --listen ADDR:PORT --cpus LIST [options]
  steerd bench stats A_FILE B_FILE     (one number per line, paired by line)

Run `steerd bench load --help`, `steerd bench ab --help` or
`steerd bench responder --help` for each tool's options.
";

const LOAD_HELP: &str = concat!(
    "\
usage: steerd bench load URL [options]

Sends HTTP/1.1 GET requests to URL (http://HOST[:PORT]/PATH) and reports requests/s,
bytes/s, errors by kind, and latency percentiles (request, connect, time to first
byte) per thread and merged.

options:
",
    load_flags!(),
    "    --svg FILE        also write the run's latency CDF as an SVG figure
"
);

const AB_HELP: &str = concat!(
    "\
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
",
    load_flags!()
);

const RESPONDER_HELP: &str = "\
usage: steerd bench responder --listen ADDR:PORT --cpus LIST [--close] [--steer]
                              [--response FILE] [--spin N]

The reference responder: one pinned thread per CPU in LIST, one SO_REUSEPORT listener
each, a canned 13-byte response to every request, one read and one write per request.
--close answers and closes each connection (TCP_DEFER_ACCEPT, no epoll).
--steer sends each connection to the listener of the CPU that received it (cBPF).
--response FILE sends FILE's bytes instead: a whole HTTP/1.1 response (head and body,
    at most 64 KiB), such as one a server sent, so that both send the same bytes.
--spin N does N iterations of busy work per request before answering: what a given
    amount of a server's own work costs under the same load.
Port 0 picks a free port; the address is printed once all listeners are bound.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn load_arguments_in_any_order_and_wrk_style() {
        let s = parse_load(&argv("-t1 http://127.0.0.1:9/x -c50 -d2s --close")).unwrap();
        assert_eq!(
            (s.threads, s.conns, s.duration.as_secs(), s.close),
            (1, 50, 2, true)
        );
        assert_eq!(s.target.path, "/x");
        assert!(parse_load(&argv("-c 5")).is_err(), "no URL");
        assert!(parse_load(&argv("http://127.0.0.1:9/ http://127.0.0.1:9/")).is_err());
        assert!(parse_load(&argv("http://127.0.0.1:9/ --bogus")).is_err());
    }

    #[test]
    fn urls() {
        let u = Url::parse("http://127.0.0.1:8080/a/b?c").unwrap();
        assert_eq!(
            (u.authority.as_str(), u.path.as_str()),
            ("127.0.0.1:8080", "/a/b?c")
        );
        assert_eq!(Url::parse("http://[::1]").unwrap().path, "/");
        assert!(Url::parse("https://x/").is_err());
        assert!(Url::parse("http:///").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("0.3s"), Ok(Duration::from_millis(300)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("0").is_err() && parse_duration("x").is_err());
    }

    #[test]
    fn load_flags() {
        let s = parse_load(&argv("http://127.0.0.1:9/f -c 4 --pin 0,1 --close")).unwrap();
        assert_eq!((s.conns, s.threads, s.pin.len(), s.close), (4, 2, 2, true));
        let s = parse_load(&argv("http://127.0.0.1:9/f -H X-A:1 -H X-B:2")).unwrap();
        assert_eq!(s.headers, ["X-A:1", "X-B:2"]);
        assert!(parse_header("bad").is_err() && parse_header("A: b\r\nC: d").is_err());
        assert!(parse_load(&argv("http://127.0.0.1:9/f -c 1 -t 2")).is_err());
    }

    #[test]
    fn tools_and_their_errors() {
        assert!(matches!(parse(&[]), Ok(BenchCommand::NoTool)));
        assert!(matches!(
            parse(&argv("load --help")),
            Ok(BenchCommand::Help(_))
        ));
        assert!(parse(&argv("ab x -- --help -- y")).is_err());
        let e = parse(&argv("ab http://127.0.0.1:9/ -- a")).unwrap_err();
        assert_eq!(e.stage, "bench");
        assert!(e.message.starts_with("ab: need a second"), "{e}");
        let Ok(BenchCommand::Responder(r)) =
            parse(&argv("responder --listen 127.0.0.1:0 --cpus 0-1"))
        else {
            panic!("not responder")
        };
        assert_eq!((r.cpus.len(), r.close, r.steer), (2, false, false));
        assert_eq!((r.response, r.spin), (None, 0));
        let line = "responder --listen 127.0.0.1:0 --cpus 0 --response r.bin --spin 500";
        let Ok(BenchCommand::Responder(r)) = parse(&argv(line)) else {
            panic!("not responder")
        };
        assert_eq!((r.response.as_deref(), r.spin), (Some("r.bin"), 500));
        for bad in ["--spin", "--spin -1", "--spin 1000000001", "--response"] {
            let line = format!("responder --listen 127.0.0.1:0 --cpus 0 {bad}");
            let m = parse(&argv(&line)).unwrap_err().message;
            assert!(m.starts_with("responder: --"), "{m}");
        }
        assert!(parse(&argv("stats a")).is_err());
        assert!(parse(&argv("nope")).is_err());
    }

    #[test]
    fn figure_files() {
        let Ok(BenchCommand::Load { load, svg }) = parse(&argv("load --svg f.svg http://h/ -c 2"))
        else {
            panic!("not load")
        };
        assert_eq!((svg, load.conns), (Some(PathBuf::from("f.svg")), 2));
        assert!(parse(&argv("load http://h/ --svg")).is_err());
        let ab = "ab --svg a.svg --report a.html -c 2 http://h/ -- x -- y";
        let Ok(BenchCommand::Ab(ab)) = parse(&argv(ab)) else {
            panic!("not ab")
        };
        assert_eq!(ab.svg, Some(PathBuf::from("a.svg")));
        assert_eq!(ab.report, Some(PathBuf::from("a.html")));
        let Ok(BenchCommand::Ab(plain)) = parse(&argv("ab http://h/ -- x -- y")) else {
            panic!("not ab")
        };
        assert_eq!((plain.svg, plain.report), (None, None));
    }
}
