//! The bench tools' failures, one variant per cause, each with its object (the file, the
//! CPU, the program, the address): [`BenchError`] for a run that failed (exit status 1)
//! and [`Usage`] for a command line whose objects turned out unusable (exit status 2).
//!
//! Both print the text after `steerd: bench: ` (the tool's name is added by the tool's
//! entry point, as `steerd: bench: ab: ...`). Nothing here runs anything.

use crate::cpuset::CpuId;
use crate::listen::ListenError;
use crate::steer::SteerError;
use core::fmt;
use rustix::io::Errno;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitStatus;

/// A bench run that failed: `steerd: bench: TOOL: ...`, exit status 1.
#[derive(Debug)]
pub enum BenchError {
    /// An output file (`--svg`, `--report`, a server's log) that could not be created or
    /// written: `PATH: why`.
    File(PathBuf, std::io::Error),
    /// A run without a response has no latency figure to draw.
    NoFigure,
    /// A load thread could not be pinned: `load: pinning a thread to CPU N: why`.
    LoadPin(CpuId, std::io::Error),
    /// A load thread's `epoll_create` failed.
    LoadEpoll(Errno),
    /// A thread of the tool (`load`, `responder`) panicked.
    Panicked(&'static str),
    /// A system call of the responder failed: `CALL: why`.
    Call(&'static str, Errno),
    /// The responder's threads could not learn where they may run.
    Affinity(std::io::Error),
    /// A responder thread could not be pinned: `pinning to CPU N: why`.
    Pin(CpuId, std::io::Error),
    /// The responder's listeners could not be made.
    Listen(ListenError),
    /// The responder's steering program could not be built.
    Steering(SteerError),
    /// The kernel refused the responder's steering program.
    Attach(std::io::Error),
    /// The listeners were made but none is there.
    NoListener,
    /// A listener could not be made blocking for `--close`.
    Blocking(SocketAddr, Errno),
    /// `--response FILE` is unusable: `--response "FILE": why`.
    Response(String, ResponseFault),
    /// A server command line (A or B) could not be started.
    Start(String, std::io::Error),
    /// A server exited before it accepted: its status and the end of its output.
    Exited {
        /// `argv[0]`.
        program: String,
        /// How it ended.
        status: ExitStatus,
        /// Where it was to accept.
        addr: SocketAddr,
        /// Its last lines.
        tail: String,
    },
    /// A server did not accept within 10 s.
    Silent(String, SocketAddr),
    /// `wrk` could not be started.
    WrkStart(std::io::Error),
    /// Waiting for `wrk` failed.
    WrkWait(std::io::Error),
    /// `wrk` printed what its report reader does not know.
    WrkOutput(String),
    /// `strace` could not be started.
    StraceStart(std::io::Error),
    /// `strace`'s counts could not be read.
    StraceRead(std::io::Error),
}

/// Why `--response FILE` is unusable.
#[derive(Debug)]
pub enum ResponseFault {
    /// It cannot be opened or read.
    Unreadable(std::io::Error),
    /// It holds more than 64 KiB.
    TooLarge,
    /// It is no HTTP/1.1 response head.
    NotResponse,
}

impl fmt::Display for ResponseFault {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResponseFault::Unreadable(e) => write!(f, "{e}"),
            ResponseFault::TooLarge => f.write_str("larger than 64 KiB"),
            ResponseFault::NotResponse => f.write_str(
                "not an HTTP/1.1 response (a status line and a head ending in an empty line)",
            ),
        }
    }
}

impl fmt::Display for BenchError {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use BenchError::*;
        match self {
            File(path, e) => write!(f, "{}: {e}", path.display()),
            NoFigure => f.write_str("no response, so no latency figure"),
            LoadPin(cpu, e) => write!(f, "load: pinning a thread to CPU {cpu}: {e}"),
            LoadEpoll(e) => write!(f, "load: epoll_create: {e}"),
            Panicked(tool) => write!(f, "a {tool} thread panicked"),
            Call(call, e) => write!(f, "{call}: {e}"),
            Affinity(e) => write!(f, "sched_getaffinity: {e}"),
            Pin(cpu, e) => write!(f, "pinning to CPU {cpu}: {e}"),
            Listen(e @ ListenError::Pin(..)) => write!(f, "{e}"),
            Listen(e) => write!(f, "listener on {e}"),
            Steering(e) => write!(f, "steering program: {e}"),
            Attach(e) => write!(f, "SO_ATTACH_REUSEPORT_CBPF: {e}"),
            NoListener => f.write_str("no listener"),
            Blocking(addr, e) => write!(f, "listener on {addr}: FIONBIO: {e}"),
            Response(path, why) => write!(f, "--response {path:?}: {why}"),
            Start(program, e) => write!(f, "starting {program:?}: {e}"),
            Exited {
                program,
                status,
                addr,
                tail,
            } => write!(
                f,
                "{program:?} exited ({status}) before accepting on {addr}; its output ends:\n{tail}"
            ),
            Silent(program, addr) => write!(f, "{program:?} did not accept on {addr} within 10 s"),
            WrkStart(e) => write!(f, "starting wrk (is it installed?): {e}"),
            WrkWait(e) => write!(f, "waiting for wrk: {e}"),
            WrkOutput(text) => write!(f, "wrk output not understood:\n{text}"),
            StraceStart(e) => write!(f, "starting strace: {e}"),
            StraceRead(e) => write!(f, "reading strace output: {e}"),
        }
    }
}

/// A command line whose objects are unusable (a URL that does not resolve, a file of
/// numbers that is none): `steerd: bench: TOOL: ...`, exit status 2.
#[derive(Debug)]
pub enum Usage {
    /// The URL of `load` or `ab` (the tool) names no address.
    Target(&'static str, super::spec::TargetError),
    /// A file of `stats` cannot be read.
    StatsUnreadable(String, std::io::Error),
    /// A line of a file of `stats` is no number.
    StatsNotNumber(String, String),
    /// A sample of `stats` (`A` or `B`) has no numbers.
    StatsEmpty(&'static str),
}

impl fmt::Display for Usage {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Usage::Target(tool, e) => write!(f, "{tool}: {e}"),
            Usage::StatsUnreadable(path, e) => write!(f, "stats: {path}: {e}"),
            Usage::StatsNotNumber(path, line) => {
                write!(f, "stats: {path}: {line:?} is not a number")
            }
            Usage::StatsEmpty(label) => write!(f, "stats: {label} has no numbers"),
        }
    }
}
