//! The flags of `steerd bench responder`: one table, [`FLAGS`], applied to a
//! [`ResponderArgs`] draft; `--listen` and `--cpus` are required.
//!
//! Input: the arguments after `responder`. Output: a [`ResponderArgs`], or an
//! [`ArgsError`] of stage `bench`.

use super::super::flag::{lookup, rendered, rows, Flag, Seen, Takes};
use super::super::ArgsError;
use super::ab::number;
use super::load::value;
use super::{bad, refused, ResponderArgs};
use crate::cpuset::{CpuId, CpuSet};
use std::net::SocketAddr;
use std::sync::OnceLock;

/// A `responder` command line being parsed.
#[derive(Default)]
pub(crate) struct Draft {
    listen: Option<SocketAddr>,
    cpus: Option<Vec<CpuId>>,
    close: bool,
    steer: bool,
    response: Option<String>,
    spin: u64,
}

/// Where a `responder` flag's value goes; [`apply`] parses it there (a tag, as in
/// `args/serve.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Apply {
    /// `--listen`
    Listen,
    /// `--cpus`
    Cpus,
    /// `--close`
    Close,
    /// `--steer`
    Steer,
    /// `--response`
    Response,
    /// `--spin`
    Spin,
}

/// Applies a `responder` flag's value (empty for a switch) to the draft.
fn apply(d: &mut Draft, to: Apply, v: &str) -> Result<(), ArgsError> {
    match to {
        Apply::Listen => match v.parse() {
            Ok(addr) => d.listen = Some(addr),
            Err(_) => return bad(format!("--listen {v:?}: not ADDR:PORT")),
        },
        Apply::Cpus => {
            let set = CpuSet::parse_list(v).map_err(|e| refused(format!("--cpus {v:?}: {e}")))?;
            d.cpus = Some(set.iter().collect());
        }
        Apply::Close => d.close = true,
        Apply::Steer => d.steer = true,
        Apply::Response => d.response = Some(v.to_string()),
        Apply::Spin => d.spin = number("--spin", v, 0, 1_000_000_000)?,
    }
    Ok(())
}

/// Every flag of `responder`, in the order of its help.
pub(crate) const FLAGS: &[Flag<Apply>] = &[
    Flag::new(
        "--listen ADDR:PORT\naddress of every listener (required); port 0 picks a free port,\n\
         printed once all listeners are bound",
        Takes::Value,
        Apply::Listen,
    ),
    Flag::new(
        "--cpus LIST\none pinned thread and SO_REUSEPORT listener per CPU, in this order\n\
         (required)",
        Takes::Value,
        Apply::Cpus,
    ),
    Flag::new(
        "--close\nanswer and close each connection (TCP_DEFER_ACCEPT, no epoll)",
        Takes::Switch,
        Apply::Close,
    ),
    Flag::new(
        "--steer\nsend each connection to the listener of the CPU that received it (cBPF)",
        Takes::Switch,
        Apply::Steer,
    ),
    Flag::new(
        "--response FILE\nsend FILE's bytes instead of the canned response: a whole HTTP/1.1\n\
         response (head and body, at most 64 KiB), such as one a server sent, so\n\
         that both send the same bytes",
        Takes::Value,
        Apply::Response,
    ),
    Flag::new(
        "--spin N\nN iterations of busy work per request before answering: what a given\n\
         amount of a server's own work costs under the same load",
        Takes::Value,
        Apply::Spin,
    ),
];

/// What a missing value of `flag` is said to be (`--listen needs ADDR:PORT`).
fn needs(flag: &str) -> &'static str {
    match flag {
        "--listen" => "ADDR:PORT",
        "--cpus" => "a CPU list",
        "--spin" => "a number",
        _ => "a FILE",
    }
}

/// `steerd bench responder --help`, its options from [`FLAGS`].
pub(crate) fn help() -> &'static str {
    static HELP: OnceLock<String> = OnceLock::new();
    rendered(&HELP, || {
        format!(
            "usage: steerd bench responder --listen ADDR:PORT --cpus LIST [options]\n\n\
             The reference responder: one pinned thread per CPU in LIST, one SO_REUSEPORT listener\n\
             each, a canned 13-byte response to every request, one read and one write per request.\n\n\
             options:\n{}",
            rows(FLAGS, 20)
        )
    })
}

/// Parses the arguments after `responder`.
pub(crate) fn parse(args: &[String]) -> Result<ResponderArgs, ArgsError> {
    let mut draft = Draft::default();
    let mut seen = Seen::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let f = lookup(FLAGS, a).ok_or_else(|| refused(format!("unknown argument {a:?}")))?;
        let v = value(a, f.takes, &mut it, needs(a))?;
        seen.note(f).map_err(|t| refused(t.to_string()))?;
        apply(&mut draft, f.apply, v)?;
    }
    let cpus = draft
        .cpus
        .filter(|c| !c.is_empty())
        .ok_or_else(|| refused("--cpus LIST is required"))?;
    Ok(ResponderArgs {
        listen: draft
            .listen
            .ok_or_else(|| refused("--listen ADDR:PORT is required"))?,
        cpus,
        close: draft.close,
        steer: draft.steer,
        response: draft.response,
        spin: draft.spin,
    })
}
