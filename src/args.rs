//! Stage 1 of the pipeline: command-line flags to a validated [`Command`].
//!
//! Input: the process arguments, and what the caller hands in from outside ([`Outside`]:
//! the `STEERD_*` variables, `/etc/hosts` for a `--listen` host name, whether a word
//! names a directory). Output: typed values that later stages use without re-checking.
//! No syscalls and no file reads happen here: a CPU list is checked for syntax, not
//! against the machine (that is the planner's job, with the topology). Every bad input
//! is an [`ArgsError`] that names the flag (or the variable) and the value.

pub mod bench;
pub(crate) mod bpf;
pub(crate) mod duration;
pub(crate) mod env;
pub(crate) mod file;
pub(crate) mod flag;
pub(crate) mod hosts;
pub(crate) mod inspect;
pub(crate) mod listen;
pub(crate) mod logging;
pub(crate) mod probe;
pub(crate) mod serve;
pub mod site;

use crate::config::Logging;
pub use crate::config::{SteerPolicy, UserSpec};
use crate::cpuset::{CpuId, CpuSet};
use core::fmt;
use flag::wants_help;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// What the user asked steerd to do.
#[derive(Debug)]
pub(crate) enum Command {
    /// `steerd [serve] ...`
    Serve(ServeArgs),
    /// `steerd check [serve options] [--json]`: plan and program, listens on nothing.
    Check {
        /// The serve options the plan is made for.
        serve: ServeArgs,
        /// Print JSON instead of text.
        json: bool,
        /// `--explain PATH`: print what would answer PATH instead.
        explain: Option<String>,
        /// `--explain-host NAME`: the host the explained request names.
        explain_host: Option<String>,
        /// `--explain-addr ADDR`: print whether ADDR would be let in.
        explain_addr: Option<std::net::IpAddr>,
    },
    /// `steerd topo [--sysfs DIR] [--json]`
    Topo {
        /// Where `/sys` and `/proc` are read from.
        roots: Roots,
        /// Print JSON instead of text.
        json: bool,
    },
    /// `steerd bpf ...`: the asm-bpf toolchain.
    Bpf(bpf::Bpf),
    /// `steerd bench ...`, typed by [`bench::parse`].
    Bench(bench::BenchCommand),
    /// `steerd probe URL [--timeout S]`: a health check through HTTP.
    Probe(probe::ProbeArgs),
    /// `--help`, with the text to print.
    Help(&'static str),
    /// `--version`
    Version,
}

/// What stage 1 may learn from outside the command line, handed in by the caller so that
/// parsing stays free of syscalls.
pub(crate) struct Outside<'a> {
    /// The process's `STEERD_*` variables (`args/env.rs`) and `SOURCE_DATE_EPOCH`.
    pub(crate) vars: Vec<(String, String)>,
    /// The text of `/etc/hosts`; called only when a `--listen` value names a host.
    pub(crate) hosts: &'a dyn Fn() -> Option<String>,
    /// Whether a word names a directory: a first word that is no subcommand but close
    /// to one is refused as a mistyped subcommand only when it is not a directory.
    pub(crate) is_dir: &'a dyn Fn(&str) -> bool,
    /// The text of a configuration file (`--config`), or why it cannot be read.
    pub(crate) read: &'a dyn Fn(&str) -> Result<String, String>,
}

fn no_hosts() -> Option<String> {
    None
}

fn no_dir(_: &str) -> bool {
    false
}

fn no_file(_: &str) -> Result<String, String> {
    Err("no files here".into())
}

impl Outside<'static> {
    /// Nothing from outside: no variables, no `/etc/hosts`, no directories.
    pub(crate) fn none() -> Outside<'static> {
        Outside {
            vars: Vec::new(),
            hosts: &no_hosts,
            is_dir: &no_dir,
            read: &no_file,
        }
    }
}

/// Where the kernel's files are read from; tests point these at captured trees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roots {
    /// Normally `/sys`.
    pub sysfs: PathBuf,
    /// Normally `/proc`.
    pub procfs: PathBuf,
}

impl Default for Roots {
    fn default() -> Self {
        Roots {
            sysfs: PathBuf::from("/sys"),
            procfs: PathBuf::from("/proc"),
        }
    }
}

/// How many workers to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workers {
    /// One per allowed CPU, capped by the CPU quota.
    Auto,
    /// Exactly this many (at least 1).
    Count(u16),
}

/// Where the master process runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MasterCpu {
    /// On the first worker's NUMA node, on a CPU running no worker if there is one.
    Auto,
    /// On this CPU.
    Cpu(CpuId),
    /// Not pinned.
    None,
}

/// Options of `serve` (and of `check`, which plans the same thing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeArgs {
    /// Directory to serve.
    pub root: PathBuf,
    /// Addresses to listen on (one reuseport group each).
    pub listen: Vec<SocketAddr>,
    /// Those of [`ServeArgs::listen`] that a port or a name stood for (`--listen 8080`,
    /// `localhost:8080`): skipped, with a warning, where their family cannot be bound.
    pub listen_implied: Vec<SocketAddr>,
    /// Where each flag given came from (the command line or a `STEERD_*` variable), in
    /// the order of [`serve::FLAGS`]; a flag not listed has its default.
    pub origins: Vec<(&'static str, env::Origin)>,
    /// Worker count.
    pub workers: Workers,
    /// Explicit worker CPUs.
    pub cpus: Option<CpuSet>,
    /// Steering policy.
    pub steer: SteerPolicy,
    /// Master placement.
    pub master_cpu: MasterCpu,
    /// User to become after binding.
    pub user: Option<UserSpec>,
    /// Connection slots per worker.
    pub max_conns: u32,
    /// Slots one client address may hold (default: `config::default_conns_per_addr`).
    pub max_conns_per_addr: u32,
    /// Deadline for a complete request head.
    pub header_timeout: Duration,
    /// Idle time allowed between keep-alive requests.
    pub keepalive_timeout: Duration,
    /// Time a send may stall before the connection is cut.
    pub send_timeout: Duration,
    /// `--send-buffer SIZE`: `SO_SNDBUF` of the listeners (`None`: autotuned).
    pub send_buffer: Option<u32>,
    /// How long a graceful stop (SIGQUIT) waits for responses in flight.
    pub shutdown_timeout: Duration,
    /// The access log and the client address it names (`args/logging.rs`).
    pub logging: Logging,
    /// Prometheus metrics endpoint.
    pub metrics: Option<SocketAddr>,
    /// `--max-body`, `--proxy-timeout`, `--proxy-max-conns`.
    pub proxy: crate::config::ProxyLimits,
    /// Where `/sys` and `/proc` are read from.
    pub roots: Roots,
    /// Everyday-serving options (`args/site.rs`).
    pub site: site::SiteArgs,
    /// `--config FILE` (or `STEERD_CONFIG`): the file the settings were read from, and
    /// are read again from on HUP.
    pub config: Option<PathBuf>,
    /// The virtual hosts: the file's host blocks, then `--host`, in order.
    pub hosts: Vec<hosts::HostArgs>,
    /// `--allowed-host`, lowercase.
    pub allowed_hosts: Vec<String>,
}

impl Default for ServeArgs {
    fn default() -> Self {
        ServeArgs {
            root: PathBuf::from("."),
            listen: Vec::new(),
            listen_implied: Vec::new(),
            origins: Vec::new(),
            workers: Workers::Auto,
            cpus: None,
            steer: SteerPolicy::Cpu,
            master_cpu: MasterCpu::Auto,
            user: None,
            max_conns: DEFAULT_MAX_CONNS,
            max_conns_per_addr: crate::config::default_conns_per_addr(DEFAULT_MAX_CONNS),
            header_timeout: Duration::from_secs(20),
            keepalive_timeout: Duration::from_secs(30),
            send_timeout: Duration::from_secs(60),
            send_buffer: None,
            shutdown_timeout: Duration::from_secs(30),
            logging: Logging::default(),
            metrics: None,
            proxy: crate::config::ProxyLimits::default(),
            roots: Roots::default(),
            site: site::SiteArgs::default(),
            config: None,
            hosts: Vec::new(),
            allowed_hosts: Vec::new(),
        }
    }
}

/// Default connection slots per worker: 10,240 keeps 10,000 concurrent connections
/// servable even when every one of them is steered to a single worker.
pub(crate) const DEFAULT_MAX_CONNS: u32 = 10_240;

/// The variable that names the date a reproducible build gave every file: an mtime equal
/// to it is unknown (`site::validators`).
pub(crate) const SOURCE_DATE_EPOCH: &str = "SOURCE_DATE_EPOCH";
pub(crate) use crate::config::DEFAULT_LISTEN;

/// A flag or value that cannot be used: printed as `steerd: STAGE: MESSAGE` (one such
/// line per line of the message: one per problem), then the usage text when there is
/// one, and the process exits 2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgsError {
    /// Who refused it: `args`, or the subcommand (`bpf`).
    pub(crate) stage: &'static str,
    /// What is wrong, naming the flag and the value.
    pub(crate) message: String,
    /// The usage text printed after the message (empty for none).
    pub(crate) usage: &'static str,
}

impl fmt::Display for ArgsError {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, line) in self.message.lines().enumerate() {
            let sep = if i == 0 { "" } else { "\n" };
            write!(f, "{sep}steerd: {}: {line}", self.stage)?;
        }
        match self.usage.strip_suffix('\n') {
            Some(usage) => write!(f, "\n{usage}"),
            None => Ok(()),
        }
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, ArgsError> {
    Err(flag_error(msg.into()))
}

/// An error of the serve flags (stage `args`, no usage text); out of line, so each of
/// the many call sites stays one call.
#[cold]
#[inline(never)]
#[cfg_attr(feature = "cold-size", optimize(size))]
fn flag_error(message: String) -> ArgsError {
    ArgsError {
        stage: "args",
        message,
        usage: "",
    }
}

/// Parses everything after the program name, with nothing from outside.
#[cfg(test)]
pub(crate) fn parse(args: &[String]) -> Result<Command, ArgsError> {
    parse_in(args, &Outside::none())
}

/// The subcommands, for the suggestion after a mistyped one.
const SUBCOMMANDS: [&str; 7] = ["serve", "check", "topo", "bpf", "bench", "probe", "help"];

/// Parses everything after the program name, with the variables and files `outside`
/// hands in.
pub(crate) fn parse_in(args: &[String], outside: &Outside<'_>) -> Result<Command, ArgsError> {
    let (first, rest) = match args.split_first() {
        Some((f, r)) => (f.as_str(), r),
        None => return parse_serve_in(&[], outside).map(Command::Serve),
    };
    match first {
        "serve" => parse_serve_or_help(rest, outside, Command::Serve),
        "check" => inspect::parse_check(rest, outside),
        "topo" => inspect::parse_topo(rest),
        "bpf" => bpf::parse(rest),
        "bench" => bench::parse(rest).map(Command::Bench),
        "probe" => Ok(probe::parse(rest)?.map_or(Command::Help(probe::help()), Command::Probe)),
        "-h" | "--help" | "help" => Ok(Command::Help(MAIN_HELP)),
        "-V" | "--version" => Ok(Command::Version),
        word => match mistyped_subcommand(word, outside) {
            Some(like) => err(format!(
                "unknown subcommand {word:?} (did you mean {like:?}?)"
            )),
            None => parse_serve_or_help(args, outside, Command::Serve),
        },
    }
}

/// The subcommand `word` looks like a typo of, when it is no directory that could be a
/// ROOT: one edit away (two for longer words), or a prefix of at least three letters.
fn mistyped_subcommand(word: &str, outside: &Outside<'_>) -> Option<&'static str> {
    if word.starts_with('-') || word.contains('/') || word.len() < 3 || word.len() > 12 {
        return None;
    }
    let close = |s: &&str| {
        let most = if s.len() > 4 { 2 } else { 1 };
        s.starts_with(word) || edit_distance(word, s) <= most
    };
    let like = SUBCOMMANDS.into_iter().find(close)?;
    (!(outside.is_dir)(word)).then_some(like)
}

/// Levenshtein distance of two short ASCII words.
fn edit_distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != cb))
                .min(above + 1)
                .min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg_attr(feature = "cold-size", optimize(size))]
fn parse_serve_or_help(
    args: &[String],
    outside: &Outside<'_>,
    wrap: fn(ServeArgs) -> Command,
) -> Result<Command, ArgsError> {
    if wants_help(args) {
        return Ok(Command::Help(serve::help()));
    }
    parse_serve_in(args, outside).map(wrap)
}

/// Parses serve options with the configuration file `name` holding `text` (for the
/// fuzz target and tests: the file is handed in, not read).
pub fn parse_serve_with_file(
    args: &[String],
    name: &str,
    text: &str,
) -> Result<ServeArgs, ArgsError> {
    let read = |path: &str| match path == name {
        true => Ok(text.to_string()),
        false => Err("no such file".to_string()),
    };
    let mut all = vec!["--config".to_string(), name.to_string()];
    all.extend_from_slice(args);
    let outside = Outside {
        read: &read,
        ..Outside::none()
    };
    parse_serve_in(&all, &outside)
}

/// Parses serve options (everything but the subcommand word), with nothing from outside.
pub fn parse_serve(args: &[String]) -> Result<ServeArgs, ArgsError> {
    parse_serve_in(args, &Outside::none())
}

/// Parses serve options with the `STEERD_*` variables of `outside` for the flags the
/// command line does not give (`args/env.rs`). A bad value from a variable is named
/// with its variable.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn parse_serve_in(
    args: &[String],
    outside: &Outside<'_>,
) -> Result<ServeArgs, ArgsError> {
    let from_env = env::tokens(&outside.vars, args)?;
    let env_words = from_env.iter().map(|t| t.token.as_str());
    let given: Vec<&str> = env_words.chain(args.iter().map(String::as_str)).collect();
    let from_file = match config_file(&given) {
        Some(path) => {
            let text = (outside.read)(&path).or_else(|why| err(format!("{path}: {why}")))?;
            file::tokens(&path, &text, &given, outside.hosts)?
        }
        None => file::FromFile::default(),
    };
    let mut all: Vec<String> = from_file.tokens.iter().map(|t| t.token.clone()).collect();
    all.extend(from_env.iter().map(|t| t.token.clone()));
    all.extend_from_slice(args);
    let at: Vec<String> = from_file.tokens.iter().map(|t| t.at.clone()).collect();
    let tokens = serve::Tokens {
        words: &all,
        at: &at,
        root: from_file.root.as_ref().map(|(dir, _)| dir.as_str()),
    };
    let mut out = match serve::parse_sourced(&tokens, outside.hosts) {
        Ok(out) => out,
        Err(mut e) => {
            // A variable whose value alone is refused the same way is named.
            let alone = |t: &env::EnvToken| {
                serve::parse_tokens(std::slice::from_ref(&t.token), outside.hosts)
            };
            if let Some(t) = from_env
                .iter()
                .find(|t| alone(t).err().is_some_and(|a| a.message == e.message))
            {
                e.message = format!("{}: {}", t.var, e.message);
            }
            return Err(e);
        }
    };
    if let Some((k, v)) = outside.vars.iter().find(|(k, _)| k == SOURCE_DATE_EPOCH) {
        let epoch = crate::site::validators::parse_source_date_epoch(v);
        out.site.source_date_epoch = Some(epoch.or_else(|why| err(format!("{k} {v:?}: {why}")))?);
    }
    let path = config_file(&given).unwrap_or_default();
    let flagged = core::mem::take(&mut out.hosts);
    for b in &from_file.hosts {
        let host = file::from_block(&path, b, &out.site, &out.root)?;
        out.hosts.push(host);
    }
    for mut h in flagged {
        h.site.source_date_epoch = out.site.source_date_epoch;
        out.hosts.push(h);
    }
    hosts::check(&out)?;
    out.origins = serve::FLAGS
        .iter()
        .filter_map(|f| {
            if args.iter().any(|a| f.is(a)) {
                Some((f.name(), env::Origin::CommandLine))
            } else if let Some(t) = from_env.iter().find(|t| f.is(&t.token)) {
                Some((f.name(), env::Origin::Environment(t.var.clone())))
            } else {
                let t = from_file.tokens.iter().find(|t| f.is(&t.token))?;
                Some((f.name(), env::Origin::File(t.at.clone())))
            }
        })
        .collect();
    Ok(out)
}

/// The `--config` (or `STEERD_CONFIG`) among the command line's and environment's
/// tokens, found through the flag table.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn config_file(given: &[&str]) -> Option<String> {
    let is_config = |w: &str| {
        let (word, _) = flag::split_inline(w);
        flag::lookup(serve::FLAGS, word).is_some_and(|f| f.apply == serve::Apply::Config)
    };
    let at = given.iter().position(|w| is_config(w))?;
    match flag::split_inline(given[at]) {
        (_, Some(v)) => Some(v.to_string()),
        (_, None) => given.get(at + 1).map(|v| v.to_string()),
    }
}

fn parse_addr(flag: &str, v: &str) -> Result<SocketAddr, ArgsError> {
    v.parse().or_else(|_| {
        err(format!(
            "{flag} {v:?}: expected ADDR:PORT, such as 127.0.0.1:8080 or [::1]:8080"
        ))
    })
}

fn parse_workers(v: &str) -> Result<Workers, ArgsError> {
    if v == "auto" {
        return Ok(Workers::Auto);
    }
    match v.parse::<u16>() {
        Ok(n) if n >= 1 => Ok(Workers::Count(n)),
        _ => err(format!(
            "--workers {v:?}: expected auto or a number from 1 to 65535"
        )),
    }
}

fn parse_cpus(v: &str) -> Result<CpuSet, ArgsError> {
    match CpuSet::parse_list(v) {
        Ok(set) if !set.is_empty() => Ok(set),
        Ok(_) => err("--cpus: the list is empty"),
        Err(e) => err(format!("--cpus {v:?}: {e}")),
    }
}

fn parse_steer(v: &str) -> Result<SteerPolicy, ArgsError> {
    match v {
        "cpu" => Ok(SteerPolicy::Cpu),
        "numa" => Ok(SteerPolicy::Numa),
        "hash" => Ok(SteerPolicy::Hash),
        _ => err(format!("--steer {v:?}: expected cpu, numa or hash")),
    }
}

fn parse_master_cpu(v: &str) -> Result<MasterCpu, ArgsError> {
    match v {
        "auto" => Ok(MasterCpu::Auto),
        "none" => Ok(MasterCpu::None),
        _ => match v.parse::<usize>().ok().and_then(CpuId::new) {
            Some(c) => Ok(MasterCpu::Cpu(c)),
            None => err(format!(
                "--master-cpu {v:?}: expected auto, none or a CPU number"
            )),
        },
    }
}

fn parse_user(v: &str) -> Result<UserSpec, ArgsError> {
    let (user, group) = match v.split_once(':') {
        Some((u, g)) if !g.is_empty() => (u, Some(g.to_string())),
        Some(_) => return err(format!("--user {v:?}: empty group after ':'")),
        None => (v, None),
    };
    if user.is_empty() {
        return err("--user: empty user name");
    }
    match user.parse::<u32>() {
        Ok(uid) => Ok(UserSpec::Id(uid, group)),
        Err(_) => Ok(UserSpec::Name(user.to_string(), group)),
    }
}

/// A slot count (`--max-conns`, `--max-conns-per-addr`).
#[cfg_attr(feature = "cold-size", optimize(size))]
fn parse_slots(flag: &str, v: &str) -> Result<u32, ArgsError> {
    match v.parse::<u32>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ => err(format!("{flag} {v:?}: expected a number from 1 to 1000000")),
    }
}

/// A socket buffer size: bytes, or with `k` (KiB) or `M` (MiB), from 4k to 1024M; the
/// kernel doubles it for its bookkeeping and caps it at `net.core.wmem_max` (socket(7)).
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(super) fn parse_size(flag: &str, v: &str) -> Result<u32, ArgsError> {
    let (digits, unit) = match v.strip_suffix(['k', 'K']) {
        Some(d) => (d, 1024),
        None => v.strip_suffix('M').map_or((v, 1), |d| (d, 1024 * 1024)),
    };
    let n = digits.parse::<u32>().ok().and_then(|n| n.checked_mul(unit));
    match n {
        Some(n) if (4096..=1 << 30).contains(&n) => Ok(n),
        _ => err(format!(
            "{flag} {v:?}: expected bytes from 4096 to 1073741824, or with k or M (64k)"
        )),
    }
}

/// A body size: bytes, or with `k`, `M` or `G` (binary units), from 0 to 1 TiB.
fn parse_body_size(flag: &str, v: &str) -> Result<u64, ArgsError> {
    let unit = match v.as_bytes().last() {
        Some(b'k' | b'K') => 1 << 10,
        Some(b'M') => 1 << 20,
        Some(b'G') => 1 << 30,
        _ => 1,
    };
    let digits = if unit == 1 { v } else { &v[..v.len() - 1] };
    let n = digits.parse::<u64>().ok().and_then(|n| n.checked_mul(unit));
    match n {
        Some(n) if n <= 1 << 40 => Ok(n),
        _ => err(format!(
            "{flag} {v:?}: expected bytes, or with k, M or G (64k, 1M, 2G), at most 1024G"
        )),
    }
}

/// A time in the one grammar of `args::duration` (`500ms`, `2s`, `1.5s`, `1m`, `3`).
fn parse_secs(flag: &str, v: &str) -> Result<Duration, ArgsError> {
    duration::parse(v).or_else(|e| err(format!("{flag} {e}")))
}

/// `steerd --help`
pub(crate) const MAIN_HELP: &str = "\
steerd: a static HTTP/1.1 server that handles each connection on the CPU where it arrives

USAGE:
    steerd [serve] [OPTIONS] [ROOT]   serve ROOT (default: the current directory)
    steerd check [OPTIONS] [--json]   topology, plan and steering program; listens on nothing
    steerd topo [--sysfs DIR] [--json]
    steerd bpf asm|check|run|dis ...  the classic BPF assembler and its tools
    steerd bench TOOL ...             load, ab, responder, stats: measure and compare
    steerd probe URL [--timeout S]    exit 0 when URL answers 2xx (health checks)

Run `steerd serve --help` for the serve options.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn defaults() {
        let Command::Serve(s) = parse(&[]).unwrap() else {
            panic!("not serve")
        };
        assert_eq!(s.listen, vec![DEFAULT_LISTEN.parse().unwrap()]);
        assert_eq!(s.steer, SteerPolicy::Cpu);
        assert_eq!(s.root, PathBuf::from("."));
    }

    #[test]
    fn serve_flags() {
        let a = argv("serve site --listen [::1]:0 --listen=127.0.0.1:9 --workers 2 --cpus 0-1 --steer numa --master-cpu 3 --user www:web --max-conns 5 --header-timeout 0.5");
        let Command::Serve(s) = parse(&a).unwrap() else {
            panic!("not serve")
        };
        assert_eq!(s.root, PathBuf::from("site"));
        assert_eq!(s.listen.len(), 2);
        assert_eq!(s.workers, Workers::Count(2));
        assert_eq!(s.cpus.unwrap().to_string(), "0-1");
        assert_eq!(s.master_cpu, MasterCpu::Cpu(CpuId::new(3).unwrap()));
        assert_eq!(
            s.user,
            Some(UserSpec::Name("www".into(), Some("web".into())))
        );
        assert_eq!(s.header_timeout, Duration::from_millis(500));
    }

    #[test]
    fn conns_per_addr_defaults_to_a_quarter_of_max_conns_at_least_16() {
        for (input, want) in [
            ("", 2560),
            ("--max-conns 64", 16),
            ("--max-conns 8", 16),
            ("--max-conns 40000", 10_000),
            ("--max-conns 64 --max-conns-per-addr 3", 3),
            ("--max-conns-per-addr=100000 --max-conns 8", 100_000),
        ] {
            let Command::Serve(s) = parse(&argv(input)).unwrap() else {
                panic!("not serve")
            };
            assert_eq!(s.max_conns_per_addr, want, "{input}");
        }
    }

    #[test]
    fn root_without_subcommand() {
        let Command::Serve(s) = parse(&argv("./site --workers 1")).unwrap() else {
            panic!()
        };
        assert_eq!(s.root, PathBuf::from("./site"));
    }

    #[test]
    fn send_buffer_takes_bytes_k_and_m() {
        for (input, want) in [
            ("4096", 4096),
            ("64k", 65_536),
            ("64K", 65_536),
            ("1M", 1 << 20),
        ] {
            let Command::Serve(s) = parse(&argv(&format!("--send-buffer {input}"))).unwrap() else {
                panic!("not serve")
            };
            assert_eq!(s.send_buffer, Some(want), "{input}");
        }
    }

    #[test]
    fn bad_values_are_named() {
        for (input, needle) in [
            ("--workers 0", "--workers"),
            ("--cpus 3-1", "--cpus"),
            ("--steer queue", "--steer"),
            ("--listen localhost", "--listen"),
            ("-p x", "-p \"x\""),
            ("--listen nosuch.example:80", "no DNS"),
            ("--max-conns 0", "--max-conns"),
            ("--max-conns-per-addr 0", "--max-conns-per-addr \"0\""),
            ("--max-conns-per-addr x", "--max-conns-per-addr \"x\""),
            ("--send-buffer 4095", "--send-buffer \"4095\""),
            ("--send-buffer 2G", "--send-buffer \"2G\""),
            ("--send-buffer 1025M", "--send-buffer \"1025M\""),
            ("--header-timeout -1", "--header-timeout"),
            ("--bogus", "--bogus"),
            ("a b", "ROOT"),
            ("--listen", "needs a value"),
            ("--listen 127.0.0.1:1 --listen 127.0.0.1:1", "twice"),
            ("--workers 1 -w 2", "--workers given twice"),
            ("--user a --user=b", "--user given twice"),
        ] {
            let e = parse(&argv(input)).unwrap_err();
            assert!(e.message.contains(needle), "{input}: {e}");
        }
    }

    #[test]
    fn listen_takes_ports_and_names() {
        let Command::Serve(s) =
            parse(&argv("-p 8080 --listen localhost:9 -l 127.0.0.2:1")).unwrap()
        else {
            panic!("not serve")
        };
        let got: Vec<String> = s.listen.iter().map(|a| a.to_string()).collect();
        assert_eq!(
            got,
            [
                "0.0.0.0:8080",
                "[::]:8080",
                "127.0.0.1:9",
                "[::1]:9",
                "127.0.0.2:1"
            ]
        );
        assert_eq!(s.listen_implied, s.listen[..4]);
        let e = parse(&argv("-p 80 --listen :80")).unwrap_err();
        assert!(e.message.contains("given twice"), "{e}");
    }

    #[test]
    fn a_mistyped_subcommand_is_named_unless_it_is_a_directory() {
        let outside = |dir: bool| Outside {
            vars: Vec::new(),
            hosts: &no_hosts,
            is_dir: if dir { &|_: &str| true } else { &no_dir },
            read: &no_file,
        };
        for (word, like) in [
            ("serv", "serve"),
            ("chekc", "check"),
            ("bnech", "bench"),
            ("prob", "probe"),
        ] {
            let e = parse_in(&argv(&format!("{word} site")), &outside(false)).unwrap_err();
            assert_eq!(
                e.message,
                format!("unknown subcommand {word:?} (did you mean {like:?}?)")
            );
        }
        let Command::Serve(s) = parse_in(&argv("serv"), &outside(true)).unwrap() else {
            panic!("not serve")
        };
        assert_eq!(
            s.root,
            PathBuf::from("serv"),
            "an existing directory is a ROOT"
        );
        for root in ["site", "public", "./serv", "dist", "www"] {
            assert!(parse_in(&argv(root), &outside(false)).is_ok(), "{root}");
        }
    }

    #[test]
    fn variables_fill_flags_the_command_line_does_not_give() {
        let outside = Outside {
            vars: vec![
                ("STEERD_WORKERS".into(), "3".into()),
                ("STEERD_LISTEN".into(), "127.0.0.1:1,127.0.0.1:2".into()),
                (
                    "STEERD_CACHE_CONTROL".into(),
                    r"*.css=public\, max-age=60".into(),
                ),
            ],
            ..Outside::none()
        };
        let Command::Check { serve: s, .. } = parse_in(&argv("check -w 2"), &outside).unwrap()
        else {
            panic!("not check")
        };
        assert_eq!(s.workers, Workers::Count(2), "the command line wins");
        assert_eq!(s.listen.len(), 2);
        assert_eq!(
            s.site.cache_rules[0].line.as_bytes(),
            b"Cache-Control: public, max-age=60\r\n"
        );
        use env::Origin;
        assert_eq!(
            s.origins,
            [
                ("--listen", Origin::Environment("STEERD_LISTEN".into())),
                ("--workers", Origin::CommandLine),
                (
                    "--cache-control",
                    Origin::Environment("STEERD_CACHE_CONTROL".into())
                ),
            ]
        );
        let bad = Outside {
            vars: vec![("STEERD_MAX_CONNS".into(), "lots".into())],
            ..Outside::none()
        };
        let e = parse_in(&argv("site"), &bad).unwrap_err();
        assert!(
            e.message.starts_with("STEERD_MAX_CONNS: --max-conns"),
            "{e}"
        );
    }

    #[test]
    fn the_file_fills_what_flags_and_variables_do_not_give() {
        let read = |path: &str| match path {
            "site.conf" => Ok("root /srv/www\nworkers 3\nmax-conns 64\nheader A: 1\n\
                               redirect /old/** /new/$1\nlist-dirs\n"
                .to_string()),
            _ => Err("No such file or directory (os error 2)".to_string()),
        };
        let outside = Outside {
            vars: vec![("STEERD_MAX_CONNS".into(), "32".into())],
            read: &read,
            ..Outside::none()
        };
        let Command::Check { serve: s, .. } =
            parse_in(&argv("check --config site.conf -w 2"), &outside).unwrap()
        else {
            panic!("not check")
        };
        assert_eq!(s.root, PathBuf::from("/srv/www"));
        assert_eq!(s.workers, Workers::Count(2), "the command line wins");
        assert_eq!(s.max_conns, 32, "the environment wins");
        assert_eq!(s.site.headers.len(), 1);
        assert!(s.site.list_dirs);
        assert_eq!(&*s.site.rules[0].source, "site.conf:5");
        assert_eq!(s.config, Some(PathBuf::from("site.conf")));
        use env::Origin;
        let origin = |name: &str| s.origins.iter().find(|(n, _)| *n == name).map(|o| &o.1);
        assert_eq!(origin("--workers"), Some(&Origin::CommandLine));
        assert_eq!(
            origin("--max-conns"),
            Some(&Origin::Environment("STEERD_MAX_CONNS".into()))
        );
        assert_eq!(
            origin("--header"),
            Some(&Origin::File("site.conf:4".into()))
        );
        let Command::Serve(s) = parse_in(&argv("/elsewhere --config=site.conf"), &outside).unwrap()
        else {
            panic!("not serve")
        };
        assert_eq!(s.root, PathBuf::from("/elsewhere"), "ROOT wins over root");
        let e = parse_in(&argv("--config nope.conf"), &outside).unwrap_err();
        assert_eq!(
            e.message,
            "nope.conf: No such file or directory (os error 2)"
        );
        let vars = Outside {
            vars: vec![("STEERD_CONFIG".into(), "site.conf".into())],
            read: &read,
            ..Outside::none()
        };
        let Command::Serve(s) = parse_in(&[], &vars).unwrap() else {
            panic!("not serve")
        };
        assert_eq!(s.workers, Workers::Count(3), "STEERD_CONFIG names the file");
    }

    /// The flag table, the parser and `--help` agree: every flag of the table is in the
    /// help and parses; every flag the help shows is in the table; only repeatables
    /// repeat.
    #[test]
    fn the_flag_table_the_parser_and_the_help_agree() {
        let sample = |f: &flag::Flag<serve::Apply>| match f.name() {
            "--listen" => "127.0.0.1:0",
            "--workers" | "--max-conns" | "--max-conns-per-addr" | "--proxy-max-conns" => "2",
            "--cpus" => "0",
            "--steer" => "hash",
            "--master-cpu" => "none",
            "--user" => "nobody",
            "--send-buffer" => "64k",
            "--access-log" => "-",
            "--log-format" => "json",
            "--syslog-socket" | "--sysfs" | "--procfs" => "/x",
            "--real-ip-from" => "10.0.0.0/8",
            "--metrics" => "127.0.0.1:0",
            "--precompressed" => "gzip",
            "--header" => "X-A: 1",
            "--cache-control" => "*.css=no-cache",
            "--error-page" => "404=/404.html",
            "--fallback" => "/index.html",
            "--fallback-skip" => "css",
            "--mime" => "md=text/markdown",
            "--dotfiles" => "allow",
            "--etag" => "mtime",
            "--compress" => "off",
            "--compress-types" => "text/*",
            "--compress-cache" => "/var/cache/steerd",
            "--mime-types" => "/etc/mime.types",
            "--cors" => "https://app.example",
            "--basic-auth" => "/etc/steerd/htpasswd",
            "--basic-auth-realm" => "Team docs",
            "--basic-auth-skip" => "/favicon.ico",
            "--redirect" => "/old/** /new/$1 308",
            "--rewrite" => "/app/** /app/index.html",
            "--try-ext" => "html",
            "--proxy" => "/api/** unix:/run/app.sock",
            "--max-body" => "2M",
            "--allow" => "private",
            "--deny" => "10.0.0.0/8",
            "--rate-limit" => "100",
            "--max-rate" => "200k",
            "--config" => "site.conf",
            "--host" => "a.test=/srv/a",
            "--allowed-host" => "nas.test",
            n if n.ends_with("-timeout") => "1",
            _ => "",
        };
        for f in serve::FLAGS {
            assert!(
                serve::help().contains(&format!("    {} ", f.name()))
                    || serve::help().contains(&format!(", {} ", f.name())),
                "{} is in --help",
                f.name()
            );
            let mut once = match f.takes {
                flag::Takes::Switch => vec![f.name().to_string()],
                _ => vec![f.name().to_string(), sample(f).to_string()],
            };
            if f.name() == "--syslog-socket" {
                once.extend(["--access-log".into(), "syslog".into()]);
            }
            if [
                "--proxy-protocol",
                "--real-ip-recursive",
                "--https-redirect",
            ]
            .contains(&f.name())
            {
                once.extend(["--real-ip-from".into(), "10.0.0.0/8".into()]);
            }
            if f.name().starts_with("--basic-auth-") {
                once.extend(["--basic-auth".into(), "/x".into()]);
            }
            let empty = |_: &str| Ok(String::new());
            let outside = Outside {
                read: &empty,
                ..Outside::none()
            };
            let parse_serve = |a: &[String]| parse_serve_in(a, &outside);
            parse_serve(&once).unwrap_or_else(|e| panic!("{}: {e}", f.name()));
            let mut twice = once.clone();
            twice.extend(
                once.iter()
                    .take(if f.takes == flag::Takes::Switch { 1 } else { 2 })
                    .cloned(),
            );
            let second = parse_serve(&twice);
            match f.takes {
                flag::Takes::Repeated if f.name() == "--listen" => {
                    assert!(second.unwrap_err().message.contains("given twice"))
                }
                flag::Takes::Repeated if f.name() == "--host" => {
                    assert!(second.unwrap_err().message.contains("already given"))
                }
                flag::Takes::Repeated => assert!(second.is_ok(), "{} repeats", f.name()),
                _ => assert!(second.is_err(), "{} refuses a second use", f.name()),
            }
        }
        for line in serve::help().lines() {
            let words = line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'));
            for word in words.filter(|w| w.starts_with("--") && w.len() > 2) {
                assert!(
                    serve::FLAGS.iter().any(|f| f.is(word)),
                    "{word} of --help is in the table"
                );
            }
        }
    }

    /// Each flag of `table` is in `help` and parses (after `base`, with the value
    /// `sample` gives for its name), a repeatable repeats, any other is refused a second
    /// use; each flag `help` shows is in `table` or named in `also` (another table's).
    fn walk<A>(
        table: &[flag::Flag<A>],
        help: &str,
        base: &[&str],
        parse: &dyn Fn(&[String]) -> Result<(), ArgsError>,
        sample: &dyn Fn(&str) -> &'static str,
        also: &[&str],
    ) {
        for f in table {
            assert!(help.contains(f.label()), "{} is in --help", f.name());
            let mut once: Vec<String> = base.iter().map(|a| a.to_string()).collect();
            once.push(f.name().to_string());
            if f.takes != flag::Takes::Switch {
                once.push(sample(f.name()).to_string());
            }
            parse(&once).unwrap_or_else(|e| panic!("{}: {e}", f.name()));
            let twice = [&once[..], &once[base.len()..]].concat();
            match f.takes {
                flag::Takes::Repeated => assert!(parse(&twice).is_ok(), "{} repeats", f.name()),
                _ => {
                    let e = parse(&twice).unwrap_err().message;
                    assert!(e.ends_with(&format!("{} given twice", f.name())), "{e}")
                }
            }
        }
        let words = help.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'));
        for word in words.filter(|w| w.starts_with("--") && w.len() > 2) {
            let known = table.iter().any(|f| f.name() == word) || also.contains(&word);
            assert!(
                known || word == "--help",
                "{word} of --help is in the table"
            );
        }
    }

    fn file_sample(name: &str) -> &'static str {
        match name {
            "--timeout" => "1",
            "--explain-addr" => "::1",
            _ => "/x",
        }
    }

    #[test]
    fn the_tables_of_topo_check_and_probe_agree_with_their_help() {
        let topo = |a: &[String]| parse(&[&["topo".to_string()], a].concat()).map(drop);
        walk(
            inspect::TOPO_FLAGS,
            inspect::topo_help(),
            &[],
            &topo,
            &file_sample,
            &[],
        );
        // `--explain-host` names the host of an `--explain` request: given with one.
        let check = |a: &[String]| {
            let mut all = [&["check".to_string()], a].concat();
            if a.iter().any(|w| w == "--explain-host") && !a.iter().any(|w| w == "--explain") {
                all.extend(["--explain".to_string(), "/".to_string()]);
            }
            parse(&all).map(drop)
        };
        let (table, help) = (inspect::CHECK_FLAGS, inspect::check_help());
        walk(table, help, &[], &check, &file_sample, &[]);
        let probe_ = |a: &[String]| probe::parse(a).map(drop);
        walk(
            probe::FLAGS,
            probe::help(),
            &["http://h/"],
            &probe_,
            &file_sample,
            &[],
        );
    }

    fn names<A>(table: &[flag::Flag<A>]) -> Vec<&'static str> {
        table.iter().map(|f| f.name()).collect()
    }

    /// A value each `bench` and `bpf` flag takes.
    fn tool_sample(name: &str) -> &'static str {
        match name {
            "-H" => "X-A: 1",
            "--pin" | "--cpus" => "0",
            "-c" => "2",
            "--client" => "builtin",
            "--listen" => "127.0.0.1:0",
            "--payload" => "0a",
            "--svg" | "--report" | "--response" => "/x",
            _ => "1",
        }
    }

    fn words(lead: &[&str], args: &[String], tail: &[&str]) -> Vec<String> {
        let own = |w: &[&str]| w.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        [own(lead), args.to_vec(), own(tail)].concat()
    }

    #[test]
    fn the_tables_of_bench_and_bpf_agree_with_their_help() {
        use bench::{ab, load, responder};
        let load_names = names(load::FLAGS);
        let bench = |lead: &'static [&'static str], tail: &'static [&'static str]| {
            move |a: &[String]| parse(&words(lead, a, tail)).map(drop)
        };
        let (lead, ab_tail) = (&["bench", "ab"][..], &["--", "x", "--", "y"][..]);
        let (load_, ab_) = (bench(&["bench", "load"], &[]), bench(lead, ab_tail));
        let ab_help = ab::help();
        let tool = &tool_sample;
        let svg = names(load::TOOL_FLAGS);
        walk(
            load::FLAGS,
            load::help(),
            &["http://h/"],
            &load_,
            tool,
            &svg,
        );
        walk(
            load::TOOL_FLAGS,
            load::help(),
            &["http://h/"],
            &load_,
            tool,
            &load_names,
        );
        // The help's example names a serve flag: the command lines A and B.
        let ab_also = [names(ab::FLAGS), vec!["--steer"]].concat();
        walk(load::FLAGS, ab_help, &["http://h/"], &ab_, tool, &ab_also);
        let ab_also = [load_names, vec!["--steer"]].concat();
        walk(ab::FLAGS, ab_help, &["http://h/"], &ab_, tool, &ab_also);
        let responder_ = |a: &[String]| {
            let mut a = a.to_vec();
            for (flag, v) in [("--listen", "127.0.0.1:0"), ("--cpus", "0")] {
                if !a.iter().any(|w| w == flag) {
                    a.extend([flag.to_string(), v.to_string()]);
                }
            }
            parse(&words(&["bench", "responder"], &a, &[])).map(drop)
        };
        walk(
            responder::FLAGS,
            responder::help(),
            &[],
            &responder_,
            tool,
            &[],
        );
        for sub in bpf::SUBCOMMANDS {
            let Command::Help(help) = parse(&argv(&format!("bpf {} --help", sub.name))).unwrap()
            else {
                panic!("bpf {} --help is a help text", sub.name)
            };
            let bpf_ = |a: &[String]| parse(&words(&["bpf", sub.name], a, &[])).map(drop);
            walk(sub.flags, help, &[], &bpf_, tool, &[]);
        }
    }

    #[test]
    fn check_and_topo() {
        let Command::Check { serve, json, .. } = parse(&argv("check --json --workers 3")).unwrap()
        else {
            panic!()
        };
        assert!(json);
        assert_eq!(serve.workers, Workers::Count(3));
        let Command::Topo { roots, json } = parse(&argv("topo --sysfs /tmp/x")).unwrap() else {
            panic!()
        };
        assert!(!json);
        assert_eq!(roots.sysfs, PathBuf::from("/tmp/x"));
    }
}
