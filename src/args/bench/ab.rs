//! The flags of `steerd bench ab` that are its own (rounds, warm-up, client, seed,
//! figures): one table, [`FLAGS`]; the load flags it passes on are `load::FLAGS`.
//!
//! Input: the words before the first `--`, then the two command lines. Output: an
//! [`AbArgs`], or an [`ArgsError`] of stage `bench`.

use super::super::flag::{lookup, rendered, rows, Flag, Seen, Takes};
use super::super::ArgsError;
use super::load::{self, parse_duration, value};
use super::{bad, refused, AbArgs, Client};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

/// An `ab` command line being parsed: everything but the load and the two commands.
pub(crate) struct Draft {
    rounds: u32,
    warmup: Duration,
    warm: bool,
    client: Client,
    syscalls: bool,
    seed: u64,
    report: Option<PathBuf>,
    svg: Option<PathBuf>,
}

/// Where an `ab` flag's value goes; [`apply`] parses it there (a tag, as in
/// `args/serve.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Apply {
    /// `--rounds`
    Rounds,
    /// `--warm`
    Warm,
    /// `--cold`
    Cold,
    /// `--warmup`
    Warmup,
    /// `--client`
    Client,
    /// `--syscalls`
    Syscalls,
    /// `--seed`
    Seed,
    /// `--report`
    Report,
    /// `--svg`
    Svg,
}

/// Applies an `ab` flag's value (empty for a switch) to the draft.
fn apply(d: &mut Draft, to: Apply, v: &str) -> Result<(), ArgsError> {
    match to {
        Apply::Rounds => d.rounds = number("--rounds", v, 1, 10_000)? as u32,
        Apply::Warm => d.warm = true,
        Apply::Cold => d.warm = false,
        Apply::Warmup => d.warmup = parse_duration(v)?,
        Apply::Client => {
            d.client = match v {
                "builtin" => Client::Builtin,
                "wrk" => Client::Wrk,
                other => return bad(format!("--client {other:?}: expected builtin or wrk")),
            }
        }
        Apply::Syscalls => d.syscalls = true,
        Apply::Seed => d.seed = number("--seed", v, 0, u64::MAX)?,
        Apply::Report => d.report = Some(PathBuf::from(v)),
        Apply::Svg => d.svg = Some(PathBuf::from(v)),
    }
    Ok(())
}

/// Every flag of `ab` besides the load flags, in the order `--help` lists them.
pub(crate) const FLAGS: &[Flag<Apply>] = &[
    Flag::new(
        "--rounds N\nrounds of A then B (default 10)",
        Takes::Value,
        Apply::Rounds,
    ),
    Flag::new(
        "--warm\nwarm each server with an unmeasured load first (default)",
        Takes::Switch,
        Apply::Warm,
    ),
    Flag::new(
        "--cold\nmeasure from the first request after the port accepts",
        Takes::Switch,
        Apply::Cold,
    ),
    Flag::new(
        "--warmup DURATION\nlength of the warm-up load (default 1s)",
        Takes::Value,
        Apply::Warmup,
    ),
    Flag::new(
        "--client builtin|wrk\nthe load generator (wrk: needs wrk on PATH; no --rate)",
        Takes::Value,
        Apply::Client,
    ),
    Flag::new(
        "--syscalls\nafter the rounds, one more run per side under strace -c -f,\n\
         printing system calls per request (counts only)",
        Takes::Switch,
        Apply::Syscalls,
    ),
    Flag::new(
        "--seed S\nseed of the permutation test's generator (default 1)",
        Takes::Value,
        Apply::Seed,
    ),
    Flag::new(
        "--report FILE\nalso write a self-contained HTML report: the figure below and\n\
         the text output",
        Takes::Value,
        Apply::Report,
    ),
    Flag::new(
        "--svg FILE\nalso write the figure alone: A's and B's latency CDFs (log\n\
         axis; p50, p99, p99.9 marked), req/s per round, the per-round\n\
         B/A ratio with its 95% interval, the req/s verdict",
        Takes::Value,
        Apply::Svg,
    ),
];

/// `steerd bench ab --help`, its options from [`FLAGS`] and `load::FLAGS`.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn help() -> &'static str {
    static HELP: OnceLock<String> = OnceLock::new();
    rendered(&HELP, || {
        format!(
            "usage: steerd bench ab [ab options] [load options] URL -- A_COMMAND... -- B_COMMAND...\n\n\
             Runs the server command lines A and B alternately (A B A B ...), each run a fresh\n\
             server measured under the same load on URL, and says per metric whether B differs\n\
             from A: ministat-style summary, Student's t at 95% (\"Difference at 95.0% confidence\"\n\
             or \"No difference proven\"), the paired per-round ratio B/A with its 95% interval, and\n\
             a permutation-test p-value. Two flag sets of one steerd are two command lines:\n  \
             steerd bench ab -d 3 http://127.0.0.1:8080/f -- steerd serve --steer hash ... -- steerd serve --steer cpu ...\n\n\
             ab options:\n{}\nload options (as for `steerd bench load`):\n{}",
            rows(FLAGS, 19),
            rows(load::FLAGS, load::WIDTH)
        )
    })
}

/// Splits `ab` arguments into options, A and B at the first two `--`, and parses them.
pub(crate) fn parse(args: &[String]) -> Result<AbArgs, ArgsError> {
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
    let mut draft = Draft {
        rounds: 10,
        warmup: Duration::from_secs(1),
        warm: true,
        client: Client::Builtin,
        syscalls: false,
        seed: 1,
        report: None,
        svg: None,
    };
    let rest = apply_own_flags(opts, &mut draft)?;
    let load = load::parse(&rest)?;
    if draft.client == Client::Wrk && load.rate.is_some() {
        return bad("--rate needs the builtin client (wrk has no open loop)");
    }
    Ok(AbArgs {
        rounds: draft.rounds,
        warmup: Some(draft.warmup).filter(|_| draft.warm),
        client: draft.client,
        syscalls: draft.syscalls,
        seed: draft.seed,
        load,
        a,
        b,
        report: draft.report,
        svg: draft.svg,
    })
}

/// Applies the flags of [`FLAGS`] in `opts` to `draft`; the other words (the URL and
/// the load flags) are returned in order.
fn apply_own_flags(opts: &[String], draft: &mut Draft) -> Result<Vec<String>, ArgsError> {
    let mut seen = Seen::default();
    let mut rest = Vec::new();
    let mut it = opts.iter();
    while let Some(o) = it.next() {
        let Some(f) = lookup(FLAGS, o) else {
            rest.push(o.clone());
            continue;
        };
        let v = value(o, f.takes, &mut it, "a value")?;
        seen.note(f).map_err(|t| refused(t.to_string()))?;
        apply(draft, f.apply, v)?;
    }
    Ok(rest)
}

/// A number from `min` to `max`.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn number(flag: &str, v: &str, min: u64, max: u64) -> Result<u64, ArgsError> {
    match v.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => bad(format!(
            "{flag} {v:?}: expected a number from {min} to {max}"
        )),
    }
}
