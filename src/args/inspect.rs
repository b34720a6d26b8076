//! Stage 1, the flags of the subcommands that inspect and listen on nothing: `check` (the
//! serve flags and `--json`) and `topo`. One table each; `--help` names them from it.
//!
//! Input: the arguments after the subcommand. Output: a [`Command`]. No syscalls.

use super::flag::{lookup, rendered, split_inline, usage_words, wants_help, Flag, Seen, Takes};
use super::{err, parse_serve_in, ArgsError, Command, Outside, Roots};
use std::path::PathBuf;
use std::sync::OnceLock;

/// What `topo` is asked: where the kernel's files are, and whether to print JSON.
type TopoDraft = (Roots, bool);

/// How a `topo` flag is applied: the draft and the flag's value.
pub(crate) type TopoApply = fn(&mut TopoDraft, &str);

const fn topo(text: &'static str, takes: Takes, apply: TopoApply) -> Flag<TopoApply> {
    Flag::new(text, takes, apply)
}

/// Every flag of `topo`, in the order of its usage line.
pub(crate) const TOPO_FLAGS: &[Flag<TopoApply>] = &[
    topo("--sysfs DIR", Takes::Value, |d, v| {
        d.0.sysfs = PathBuf::from(v)
    }),
    topo("--procfs DIR", Takes::Value, |d, v| {
        d.0.procfs = PathBuf::from(v)
    }),
    topo("--json", Takes::Switch, |d, _| d.1 = true),
];

/// Every flag of `check` besides the serve flags (`args/serve.rs`).
pub(crate) const CHECK_FLAGS: &[Flag<()>] = &[
    Flag::new("--json", Takes::Switch, ()),
    Flag::new("--explain PATH", Takes::Value, ()),
    Flag::new("--explain-host NAME", Takes::Value, ()),
    Flag::new("--explain-addr ADDR", Takes::Value, ()),
];

/// `steerd topo --help`, its usage line from [`TOPO_FLAGS`].
pub(crate) fn topo_help() -> &'static str {
    static HELP: OnceLock<String> = OnceLock::new();
    rendered(&HELP, || {
        format!(
            "USAGE: steerd topo{}\n\n\
             Prints the machine as steerd sees it: CPUs, cores, packages, clusters, NUMA nodes,\n\
             distances, and the CPUs this process may use.\n",
            usage_words(TOPO_FLAGS)
        )
    })
}

/// `steerd check --help`, its usage line from [`CHECK_FLAGS`].
pub(crate) fn check_help() -> &'static str {
    static HELP: OnceLock<String> = OnceLock::new();
    rendered(&HELP, || {
        format!(
            "USAGE: steerd check [serve options]{}\n\n\
             Prints the topology, the plan (workers, master CPU, CPU -> listener map) and the steering\n\
             program as bpf_asm text and bytecode. It binds and listens on nothing.\n\
             With --explain PATH, prints instead what would answer PATH (with ?QUERY): the rule\n\
             and where it was given, the file or redirect target, the headers and Cache-Control;\n\
             with --explain-host NAME, for a request naming that host (and which host answers).\n\
             With --explain-addr ADDR, whether a client at ADDR would be let in by the address\n\
             lists, by which entry and where it was given.\n",
            usage_words(CHECK_FLAGS)
        )
    })
}

/// `steerd check ARGS`: its own flags taken out, the rest parsed as serve flags.
pub(crate) fn parse_check(args: &[String], outside: &Outside<'_>) -> Result<Command, ArgsError> {
    if wants_help(args) {
        return Ok(Command::Help(check_help()));
    }
    let mut seen = Seen::default();
    let mut rest = Vec::with_capacity(args.len());
    let (mut json, mut explain, mut explain_host, mut addr) = (false, None, None, None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (word, inline) = split_inline(a);
        let Some(f) = lookup(CHECK_FLAGS, word) else {
            rest.push(a.clone());
            continue;
        };
        seen.note(f).or_else(|t| err(t.to_string()))?;
        let value = match (f.takes, inline) {
            (Takes::Switch, _) => {
                json = true;
                continue;
            }
            (_, Some(v)) => v.to_string(),
            (_, None) => match it.next() {
                Some(v) => v.clone(),
                None => return err(format!("{word} needs a value")),
            },
        };
        match f.name() {
            "--explain-addr" => match value.parse() {
                Ok(ip) => addr = Some(ip),
                Err(_) => {
                    return err(format!(
                        "--explain-addr {value:?}: not an IPv4 or IPv6 address"
                    ))
                }
            },
            "--explain-host" => explain_host = Some(value),
            _ => explain = Some(value),
        }
    }
    if explain.as_deref().is_some_and(|p| !p.starts_with('/')) {
        return err("--explain PATH: a request path, beginning with /");
    }
    if explain_host.is_some() && explain.is_none() && addr.is_none() {
        return err("--explain-host NAME needs --explain PATH (the request it names a host for)");
    }
    Ok(Command::Check {
        json,
        explain,
        explain_host,
        explain_addr: addr,
        serve: parse_serve_in(&rest, outside)?,
    })
}

/// `steerd topo ARGS`.
pub(crate) fn parse_topo(args: &[String]) -> Result<Command, ArgsError> {
    if wants_help(args) {
        return Ok(Command::Help(topo_help()));
    }
    let mut draft = (Roots::default(), false);
    let mut seen = Seen::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let Some(f) = lookup(TOPO_FLAGS, arg) else {
            return err(format!("topo: unknown argument {arg:?}"));
        };
        seen.note(f).or_else(|t| err(t.to_string()))?;
        let value = match f.takes {
            Takes::Switch => "",
            _ => match it.next() {
                Some(v) => v.as_str(),
                None => return err(format!("{arg} needs a value")),
            },
        };
        (f.apply)(&mut draft, value);
    }
    Ok(Command::Topo {
        roots: draft.0,
        json: draft.1,
    })
}
