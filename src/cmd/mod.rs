//! Subcommand dispatch: a parsed [`Command`] to the pipeline stage that runs it, and
//! every error to one `stage: what failed: why` line on stderr with an exit status.
//!
//! Exit statuses: 0 success, 1 a failure of the work itself, 2 bad arguments.

use crate::args::{self, Command};
use core::fmt;

pub(crate) mod as_user;
pub(crate) mod bpf;
pub(crate) mod bpf_exec;
pub mod bpf_input;
pub(crate) mod check;
pub(crate) mod explain;
pub(crate) mod preflight;
pub(crate) mod prepare;
pub(crate) mod probe;
pub(crate) mod serve;
pub(crate) mod topo;

/// An error on its way to the user: which stage, and what went wrong.
#[derive(Debug)]
pub(crate) struct Failure {
    /// Pipeline stage, such as `topology` or `listen`.
    pub(crate) stage: &'static str,
    /// What failed and why.
    pub(crate) message: String,
    /// Process exit status.
    pub(crate) status: i32,
}

impl Failure {
    /// A failure of `stage` with exit status 1.
    pub(crate) fn new(stage: &'static str, message: impl fmt::Display) -> Failure {
        Failure {
            stage,
            message: message.to_string(),
            status: 1,
        }
    }
}

impl fmt::Display for Failure {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "steerd: {}: {}", self.stage, self.message)
    }
}

/// `/etc/hosts`, read only when a `--listen` value names a host.
fn hosts() -> Option<String> {
    std::fs::read_to_string("/etc/hosts").ok()
}

fn is_dir(word: &str) -> bool {
    std::path::Path::new(word).is_dir()
}

/// The process's `STEERD_*` variables and `SOURCE_DATE_EPOCH` (`site::validators`); one
/// that is not UTF-8 is an error naming it.
fn steerd_vars() -> Result<Vec<(String, String)>, args::ArgsError> {
    let mut vars = Vec::new();
    for (k, v) in std::env::vars_os() {
        let ours = |k: &&str| k.starts_with("STEERD_") || *k == args::SOURCE_DATE_EPOCH;
        let Some(k) = k.to_str().filter(ours) else {
            continue;
        };
        match v.into_string() {
            Ok(v) => vars.push((k.to_string(), v)),
            Err(_) => {
                return Err(args::ArgsError {
                    stage: "args",
                    message: format!("{k} is not valid UTF-8"),
                    usage: "",
                })
            }
        }
    }
    Ok(vars)
}

/// The text of a configuration file, or why it cannot be read.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn read_config(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| e.to_string())
}

/// Parses the command line (without the program name) with the process's variables
/// and files: at start, and again for a HUP with `--config` (`serve.rs`).
#[inline(never)]
#[cfg_attr(feature = "cold-size", optimize(size))]
fn parse(argv: &[String]) -> Result<Command, args::ArgsError> {
    let outside = |vars| args::Outside {
        vars,
        hosts: &hosts,
        is_dir: &is_dir,
        read: &read_config,
    };
    steerd_vars().and_then(|vars| args::parse_in(argv, &outside(vars)))
}

/// Runs the command line (without the program name) and returns the exit status.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub fn run(argv: &[String]) -> i32 {
    let command = match parse(argv) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    match dispatch(command, argv) {
        Ok(status) => status,
        Err(f) => {
            eprintln!("{f}");
            f.status
        }
    }
}

fn dispatch(command: Command, argv: &[String]) -> Result<i32, Failure> {
    match command {
        Command::Help(text) => {
            print!("{text}");
            Ok(0)
        }
        Command::Version => {
            println!("steerd {}", env!("CARGO_PKG_VERSION"));
            Ok(0)
        }
        Command::Bpf(cmd) => bpf::main(cmd),
        Command::Topo { roots, json } => topo::main(&roots, json),
        Command::Check {
            serve,
            explain,
            explain_host,
            explain_addr,
            ..
        } if explain.is_some() || explain_addr.is_some() => explain::main(
            &serve,
            explain.as_deref(),
            explain_host.as_deref(),
            explain_addr,
        ),
        Command::Check { serve, json, .. } => check::main(serve, json),
        Command::Serve(args) => serve::main(args, argv),
        Command::Bench(command) => crate::bench::main(command).map_err(|usage| Failure {
            stage: "bench",
            message: usage.to_string(),
            status: 2,
        }),
        Command::Probe(args) => probe::main(&args),
    }
}
