//! The per-worker serving loop: accept on the worker's own listener, drive every
//! connection's state machine from epoll readiness, enforce the timeouts.
//!
//! Input: the worker's listener (already pinned, already steered), a [`LoopConfig`], the
//! worker's shared [`WorkerCounters`], and a control callback polled at least once per
//! loop turn (signals only set flags; this loop reads them). Output: served connections,
//! counted. It does not fork, pin or bind: the master and `worker.rs` did that.

use crate::cpuset::CpuId;
use crate::stats::WorkerCounters;
use core::fmt;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::time::Duration;

/// What the worker should do next, as told by its signal flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Keep serving.
    Run,
    /// Stop accepting; finish responses in flight (up to the shutdown timeout); exit.
    StopGraceful,
    /// Close everything now and exit.
    StopNow,
    /// Reopen the access log, then keep serving.
    ReopenLog,
}

/// Everything the loop needs, fixed at start.
#[derive(Debug)]
pub struct LoopConfig {
    /// The CPU this worker is pinned to (for the locality counter).
    pub cpu: CpuId,
    /// The served root directory, opened once (`O_PATH | O_DIRECTORY`).
    pub root: OwnedFd,
    /// Connection slots (the table is allocated once, after pinning).
    pub max_conns: u32,
    /// Deadline for a complete request head (then 408 and close).
    pub header_timeout: Duration,
    /// Idle keep-alive time.
    pub keepalive_timeout: Duration,
    /// Longest send stall.
    pub send_timeout: Duration,
    /// Grace period for [`Control::StopGraceful`].
    pub shutdown_timeout: Duration,
    /// Access log path, if logging is on.
    pub access_log: Option<PathBuf>,
}

/// Why the loop could not run.
#[derive(Debug)]
pub enum LoopError {
    /// A bring-up step failed (epoll creation, table allocation, ...).
    Setup(&'static str, std::io::Error),
}

impl fmt::Display for LoopError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoopError::Setup(step, e) => write!(f, "{step}: {e}"),
        }
    }
}

/// Serves connections from `listener` until `control` says stop.
pub fn run(
    _listener: BorrowedFd<'_>,
    _cfg: LoopConfig,
    _counters: &WorkerCounters,
    _control: &mut dyn FnMut() -> Control,
) -> Result<(), LoopError> {
    Err(LoopError::Setup(
        "serve loop",
        std::io::Error::new(std::io::ErrorKind::Unsupported, "not built yet"),
    ))
}
