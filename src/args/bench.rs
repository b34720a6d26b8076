//! Stage 1 for `steerd bench ...`: the arguments after `bench` to a typed [`BenchCommand`].
//!
//! Input: the arguments after `bench`. Output: a [`BenchCommand`] that `src/bench` runs
//! without parsing anything again. No syscalls: the URL is checked for syntax here and
//! its host resolved by the bench tool ([`LoadArgs`] carries the unresolved [`Url`]).
//! A bad command line is an [`ArgsError`] of stage `bench`, printed as
//! `steerd: bench: ...` with exit status 2. Each tool's flags are one table, from which
//! its `--help` is rendered: `bench/load.rs` (the load flags `ab` passes on too),
//! `bench/ab.rs`, `bench/responder.rs`.

pub(crate) mod ab;
pub(crate) mod load;
pub(crate) mod responder;

use super::flag::wants_help;
use super::ArgsError;
use crate::cpuset::CpuId;
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
pub(crate) enum BenchCommand {
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
    pub(crate) text: String,
    /// HOST[:PORT] as given: the `Host` header value.
    pub(crate) authority: String,
    /// Request target, starting with `/`.
    pub(crate) path: String,
}

impl Url {
    /// Checks `http://HOST[:PORT][/PATH]`; only `http://` is supported.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn parse(url: &str) -> Result<Url, ArgsError> {
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
    pub(crate) target: T,
    /// Connections open at once, over all threads.
    pub conns: u32,
    /// Threads, each with its own epoll loop.
    pub threads: u32,
    /// How long to send requests.
    pub duration: Duration,
    /// A new connection for every request (`Connection: close`).
    pub close: bool,
    /// CPU for each thread (thread `i` on `pin[i % len]`); empty means unpinned.
    pub(crate) pin: Vec<CpuId>,
    /// Extra header lines, as given (`Name: value`).
    pub(crate) headers: Vec<String>,
    /// Open loop: requests per second over all threads; `None` is closed loop.
    pub(crate) rate: Option<f64>,
    /// Print JSON instead of text.
    pub(crate) json: bool,
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
pub(crate) enum Client {
    /// `steerd bench load`'s engine, in this process.
    Builtin,
    /// `wrk` from PATH (one per `--pin` CPU when pinned).
    Wrk,
}

/// Everything an A/B comparison needs, validated; `T` as in [`LoadArgs`].
#[derive(Clone, Debug)]
pub(crate) struct AbArgs<T = Url> {
    /// Rounds of A then B.
    pub(crate) rounds: u32,
    /// Warm-up load before each measured run; `None` is cold.
    pub(crate) warmup: Option<Duration>,
    /// Load generator.
    pub(crate) client: Client,
    /// One extra traced run per side.
    pub(crate) syscalls: bool,
    /// Permutation test seed.
    pub(crate) seed: u64,
    /// The load each run gets.
    pub(crate) load: LoadArgs<T>,
    /// Command line A.
    pub(crate) a: Vec<String>,
    /// Command line B.
    pub(crate) b: Vec<String>,
    /// `--report FILE`: the HTML report (figure and text output).
    pub(crate) report: Option<PathBuf>,
    /// `--svg FILE`: the figure alone.
    pub(crate) svg: Option<PathBuf>,
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
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn parse(args: &[String]) -> Result<BenchCommand, ArgsError> {
    let Some((tool, rest)) = args.split_first() else {
        return Ok(BenchCommand::NoTool);
    };
    let of_tool = |mut e: ArgsError| {
        e.message = format!("{tool}: {}", e.message);
        e
    };
    match tool.as_str() {
        "load" if wants_help(rest) => Ok(BenchCommand::Help(load::help())),
        "load" => load::parse_tool(rest).map_err(of_tool),
        "ab" if wants_help(rest.split(|a| a == "--").next().unwrap_or(&[])) => {
            Ok(BenchCommand::Help(ab::help()))
        }
        "ab" => ab::parse(rest).map(BenchCommand::Ab).map_err(of_tool),
        "responder" if wants_help(rest) => Ok(BenchCommand::Help(responder::help())),
        "responder" => responder::parse(rest)
            .map(BenchCommand::Responder)
            .map_err(of_tool),
        "stats" if wants_help(rest) => Ok(BenchCommand::Help(STATS_HELP)),
        "stats" => match rest {
            [a, b] => Ok(BenchCommand::Stats {
                a: a.clone(),
                b: b.clone(),
            }),
            _ => bad("stats: usage: steerd bench stats A_FILE B_FILE"),
        },
        "-h" | "--help" | "help" => Ok(BenchCommand::Help(HELP)),
        other => bad(format!(
            "unknown tool {other:?} (load, ab, responder, stats)"
        )),
    }
}

/// `steerd bench --help` (also printed on stderr when no tool is named).
pub(crate) const HELP: &str = "\
steerd bench: load generator, A/B comparison, reference responder

usage:
  steerd bench load URL [options]
  steerd bench ab [ab options] [load options] URL -- A_COMMAND... -- B_COMMAND...
  steerd bench responder --listen ADDR:PORT --cpus LIST [options]
  steerd bench stats A_FILE B_FILE     (one number per line, paired by line)

Run `steerd bench TOOL --help` for each tool's options.
";

/// `steerd bench stats --help`.
pub(crate) const STATS_HELP: &str = "\
usage: steerd bench stats A_FILE B_FILE

Compares two samples measured elsewhere, as `steerd bench ab` compares its runs: each
file holds one number per line (blank lines and lines starting with # are skipped),
line N of A paired with line N of B. Prints each sample's N, min, max, median, mean and
standard deviation, Student's t at 95% confidence, the paired ratio B/A with its
interval, and a permutation test's p on the paired differences.
";

#[cfg(test)]
mod tests {
    use super::load::{parse as parse_load, parse_duration, parse_header};
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
