//! `steerd bench`: the evidence tools. A load generator (`load`), an A/B harness that
//! runs two servers alternately and says whether they differ (`ab`), and the
//! speed-of-light reference server (`responder`).
//!
//! Input: the arguments after `bench`. Output: reports on stdout, an exit status.
//! Layout, in the order data flows:
//!
//! ```text
//! spec.rs      flags -> LoadSpec (validated), request bytes
//! load.rs      LoadSpec -> LoadReport: epoll threads, closed or open loop
//!   client.rs  response bytes -> complete / partial / error kind (no allocation)
//!   hist.rs    latencies -> fixed-size log-linear histograms, merged across threads
//! report.rs    LoadReport -> text or JSON
//! ab.rs        two command lines -> alternating runs -> per-run figures
//!   procs.rs   server process tree CPU time from /proc, metrics split
//!   stats.rs   per-metric samples -> ministat summary, t test, paired ratio, permutation p
//! responder.rs the minimal reuseport responder the others are measured against
//! ```
//!
//! It does not serve files or measure anything but HTTP/1.1 over TCP.

pub mod ab;
pub mod client;
pub mod hist;
pub mod load;
pub mod procs;
pub mod report;
pub mod responder;
pub mod spec;
pub mod stats;
pub mod wrk;

const HELP: &str = "\
steerd bench: load generator, A/B comparison, reference responder

usage:
  steerd bench load URL [options]
  steerd bench ab [ab options] [load options] URL -- A_COMMAND... -- B_COMMAND...
  steerd bench responder --listen ADDR:PORT --cpus LIST [--close]

Run `steerd bench load --help`, `steerd bench ab --help` or
`steerd bench responder --help` for each tool's options.
";

/// Runs `steerd bench ARGS...` and returns the exit status (0 ok, 1 failure, 2 usage).
pub fn main(args: &[String]) -> i32 {
    let Some((tool, rest)) = args.split_first() else {
        eprint!("{HELP}");
        return 2;
    };
    let result = match tool.as_str() {
        "load" => load_main(rest),
        "ab" => ab::main(rest),
        "responder" => responder::main(rest),
        "-h" | "--help" | "help" => {
            print!("{HELP}");
            Ok(0)
        }
        other => Err(Usage(format!(
            "unknown tool {other:?} (load, ab, responder)"
        ))),
    };
    match result {
        Ok(status) => status,
        Err(Usage(msg)) => {
            eprintln!("steerd: bench: {msg}");
            2
        }
    }
}

/// A bad command line: printed as `steerd: bench: ...`, exit status 2.
#[derive(Debug)]
pub struct Usage(pub String);

impl From<String> for Usage {
    fn from(s: String) -> Usage {
        Usage(s)
    }
}

const LOAD_HELP_HEAD: &str = "\
usage: steerd bench load URL [options]

Sends HTTP/1.1 GET requests to URL (http://HOST[:PORT]/PATH) and reports requests/s,
bytes/s, errors by kind, and latency percentiles (request, connect, time to first
byte) per thread and merged.

options:
";

/// True when `args` asks for help.
pub fn wants_help(args: &[String]) -> bool {
    args.iter().any(|a| a == "-h" || a == "--help")
}

/// Parses `load` arguments (a URL and load flags, in any order) into a spec.
pub fn parse_load(args: &[String]) -> Result<spec::LoadSpec, Usage> {
    let mut url = None;
    let mut flags = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if args[i].starts_with('-') {
            let end = (i + if spec::takes_value(&args[i]) { 2 } else { 1 }).min(args.len());
            flags.extend_from_slice(&args[i..end]);
            i = end;
        } else if url.is_none() {
            url = Some(args[i].as_str());
            i += 1;
        } else {
            return Err(Usage(format!("unexpected argument {:?}", args[i])));
        }
    }
    let url = url.ok_or_else(|| Usage("no URL given".into()))?;
    let mut s = spec::LoadSpec::new(spec::Target::parse(url)?);
    apply_flags(&flags, &mut s)?;
    Ok(s)
}

/// Applies load flags (and only load flags) to `s`, then checks the combination.
pub fn apply_flags(flags: &[String], s: &mut spec::LoadSpec) -> Result<(), String> {
    let mut i = 0;
    let mut threads_given = false;
    while i < flags.len() {
        let used = spec::parse_flag(flags, i, s)?;
        if used == 0 {
            return Err(format!("unknown option {:?}", flags[i]));
        }
        threads_given |= flags[i] == "-t";
        i += used;
    }
    spec::finish(s, threads_given)
}

fn load_main(args: &[String]) -> Result<i32, Usage> {
    if wants_help(args) {
        print!("{LOAD_HELP_HEAD}{}", spec::LOAD_FLAGS);
        return Ok(0);
    }
    let spec = parse_load(args).map_err(|Usage(m)| Usage(format!("load: {m}")))?;
    match load::run(&spec) {
        Ok(r) if spec.json => print!("{}", report::json(&spec, &r)),
        Ok(r) => print!("{}", report::text(&spec, &r)),
        Err(e) => {
            eprintln!("steerd: bench: {e}");
            return Ok(1);
        }
    }
    Ok(0)
}
