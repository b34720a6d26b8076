//! The load flags of `steerd bench load` (and of `bench ab`, which passes them on): one
//! table, [`FLAGS`], applied to a [`LoadArgs`] draft; the `load` tool's own `--svg`.
//!
//! Input: the words of the command line that are not the other tool's. Output: a
//! [`LoadArgs`] with its URL checked for syntax, or an [`ArgsError`] of stage `bench`.

use super::super::flag::{lookup, rendered, rows, Flag, Seen, Takes};
use super::super::{duration, ArgsError};
use super::{bad, refused, BenchCommand, LoadArgs, Url};
use crate::cpuset::{CpuId, CpuSet};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

/// A load being parsed: its options, and whether `-t` was given (else `--pin` sets it).
pub(crate) struct Draft {
    load: LoadArgs<()>,
    threads_given: bool,
}

/// Where a load flag's value goes; [`apply`] parses it there. A tag rather than a
/// function per flag, as in `args/serve.rs`: the table stays plain data and the parsers
/// stay in one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Apply {
    /// `-c`
    Conns,
    /// `-t`
    Threads,
    /// `-d`
    Duration,
    /// `--close`
    Close,
    /// `--pin`
    Pin,
    /// `-H`
    Header,
    /// `--rate`
    Rate,
    /// `--json`
    Json,
}

/// Applies a load flag's value (empty for a switch) to the draft.
fn apply(d: &mut Draft, to: Apply, v: &str) -> Result<(), ArgsError> {
    let load = &mut d.load;
    match to {
        Apply::Conns => load.conns = count("-c", v)?,
        Apply::Threads => {
            d.threads_given = true;
            load.threads = count("-t", v)?;
        }
        Apply::Duration => load.duration = parse_duration(v)?,
        Apply::Close => load.close = true,
        Apply::Pin => load.pin = parse_pin(v)?,
        Apply::Header => load.headers.push(parse_header(v)?),
        Apply::Rate => load.rate = Some(parse_rate(v)?),
        Apply::Json => load.json = true,
    }
    Ok(())
}

/// Every load flag, in the order `--help` lists them (in both `load` and `ab` help).
pub(crate) const FLAGS: &[Flag<Apply>] = &[
    Flag::new(
        "-c CONNS\nconnections open at once, over all threads (default 10)",
        Takes::Value,
        Apply::Conns,
    ),
    Flag::new(
        "-t THREADS\nthreads, one epoll loop each (default 2, or one per --pin CPU)",
        Takes::Value,
        Apply::Threads,
    ),
    Flag::new(
        "-d DURATION\nhow long to load, such as 3, 2.5s, 500ms, 1m (default 10s)",
        Takes::Value,
        Apply::Duration,
    ),
    Flag::new(
        "--close\na new connection for every request (Connection: close)",
        Takes::Switch,
        Apply::Close,
    ),
    Flag::new(
        "--pin CPUS\npin thread i to the i-th CPU of the list (such as 0,1 or 0-3)",
        Takes::Value,
        Apply::Pin,
    ),
    Flag::new(
        "-H 'Name: value'\nan extra request header (repeatable)",
        Takes::Repeated,
        Apply::Header,
    ),
    Flag::new(
        "--rate R\nopen loop: R requests/s over all threads, latency measured from\n\
         each request's intended send time (no coordinated omission)",
        Takes::Value,
        Apply::Rate,
    ),
    Flag::new(
        "--json\nprint JSON instead of text",
        Takes::Switch,
        Apply::Json,
    ),
];

/// The flags of the `load` tool alone (not passed on by `ab`): `--svg FILE`, the one.
pub(crate) const TOOL_FLAGS: &[Flag<()>] = &[Flag::new(
    "--svg FILE\nalso write the run's latency CDF as an SVG figure",
    Takes::Value,
    (),
)];

/// The width of the label column of the load flags' help rows.
pub(crate) const WIDTH: usize = 18;

/// `steerd bench load --help`, its options from [`FLAGS`] and [`TOOL_FLAGS`].
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn help() -> &'static str {
    static HELP: OnceLock<String> = OnceLock::new();
    rendered(&HELP, || {
        format!(
            "usage: steerd bench load URL [options]\n\n\
             Sends HTTP/1.1 GET requests to URL (http://HOST[:PORT]/PATH) and reports requests/s,\n\
             bytes/s, errors by kind, and latency percentiles (request, connect, time to first\n\
             byte) per thread and merged.\n\noptions:\n{}{}",
            rows(FLAGS, WIDTH),
            rows(TOOL_FLAGS, WIDTH)
        )
    })
}

/// The value a flag of `takes` needs after `flag`: the next word, or `""` for a switch.
pub(crate) fn value<'w>(
    flag: &str,
    takes: Takes,
    words: &mut impl Iterator<Item = &'w String>,
    needs: &str,
) -> Result<&'w str, ArgsError> {
    match takes {
        Takes::Switch => Ok(""),
        _ => words
            .next()
            .map(String::as_str)
            .ok_or_else(|| refused(format!("{flag} needs {needs}"))),
    }
}

/// `bench load`: the load, and `--svg FILE` (an option of the tool, not of the load
/// `bench ab` passes on).
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn parse_tool(args: &[String]) -> Result<BenchCommand, ArgsError> {
    let (mut svg, mut rest) = (None, Vec::with_capacity(args.len()));
    let mut seen = Seen::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match lookup(TOOL_FLAGS, a) {
            Some(f) => {
                let v = value(a, f.takes, &mut it, "a FILE")?;
                seen.note(f).map_err(|t| refused(t.to_string()))?;
                svg = Some(PathBuf::from(v));
            }
            None => rest.push(a.clone()),
        }
    }
    let load = parse(&rest)?;
    Ok(BenchCommand::Load { load, svg })
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

/// Parses `load` arguments (a URL and load flags, in any order): the URL is found
/// first, so that a command line without one says so whatever its flags hold.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn parse(args: &[String]) -> Result<LoadArgs, ArgsError> {
    let args = &split_attached(args)[..];
    let mut url = None;
    let mut flags = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if args[i].starts_with('-') {
            let takes = lookup(FLAGS, &args[i]).map_or(Takes::Switch, |f| f.takes);
            let end = (i + if takes == Takes::Switch { 1 } else { 2 }).min(args.len());
            flags.extend_from_slice(&args[i..end]);
            i = end;
        } else if url.is_none() {
            url = Some(args[i].as_str());
            i += 1;
        } else {
            return bad(format!("unexpected argument {:?}", args[i]));
        }
    }
    let url = Url::parse(url.ok_or_else(|| refused("no URL given"))?)?;
    let mut draft = Draft {
        load: LoadArgs::new(()),
        threads_given: false,
    };
    apply_flags(&flags, &mut draft)?;
    finish(draft).map(|load| load.with_target(url))
}

/// Applies load flags (and only load flags) to `draft`.
fn apply_flags(flags: &[String], draft: &mut Draft) -> Result<(), ArgsError> {
    let mut seen = Seen::default();
    let mut it = flags.iter();
    while let Some(a) = it.next() {
        let f = lookup(FLAGS, a).ok_or_else(|| refused(format!("unknown option {a:?}")))?;
        let v = value(a, f.takes, &mut it, "a value")?;
        seen.note(f).map_err(|t| refused(t.to_string()))?;
        apply(draft, f.apply, v)?;
    }
    Ok(())
}

/// Checks the combination once all flags are in: threads follow `--pin`, and every
/// thread has at least one connection.
fn finish(mut draft: Draft) -> Result<LoadArgs<()>, ArgsError> {
    let load = &mut draft.load;
    if !load.pin.is_empty() && !draft.threads_given {
        load.threads = load.pin.len() as u32;
    }
    if load.conns < load.threads {
        return bad(format!(
            "-c {} is fewer than the {} threads: each thread needs a connection",
            load.conns, load.threads
        ));
    }
    Ok(draft.load)
}

#[cfg_attr(feature = "cold-size", optimize(size))]
fn count(flag: &str, v: &str) -> Result<u32, ArgsError> {
    match v.parse::<u32>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ => bad(format!("{flag} {v:?}: expected a count from 1 to 1000000")),
    }
}

/// A time in the one grammar of `args::duration`.
pub(crate) fn parse_duration(v: &str) -> Result<Duration, ArgsError> {
    duration::parse(v).map_err(|e| refused(format!("duration {e}")))
}

pub(crate) fn parse_header(v: &str) -> Result<String, ArgsError> {
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
