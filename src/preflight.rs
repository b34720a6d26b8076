//! What a new worker will open, checked before a reload starts any: the root (a
//! directory that can be read) and the access log (`access_log::dest::check`: appendable
//! or creatable, nothing created). Without this, a HUP with a log the workers cannot open
//! left no worker serving, the new ones restarting in a loop.
//!
//! Input: the root path and the log target. Output: the first [`Problem`], printed as
//! one line. The master runs it as the user the workers run as (it dropped privileges
//! after binding). The same checks before anything is bound are `cmd/preflight.rs` (with
//! the error pages, and the log once more as `--user`), which takes its root check from
//! here.

use crate::access_log::dest;
use crate::config::LogTarget;
use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};
use std::path::Path;

/// A check that failed: the stage to name and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// `root` or `access-log`.
    pub stage: &'static str,
    /// What failed and why.
    pub message: String,
}

impl core::fmt::Display for Problem {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.stage, self.message)
    }
}

/// The root must be a directory this process can read; its descriptor, for checks of
/// what lies under it.
pub fn root(root: &Path) -> Result<OwnedFd, String> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    rustix::fs::open(root, flags, Mode::empty())
        .map_err(|e| format!("{}: {}", root.display(), std::io::Error::from(e)))
}

/// What a worker opens: the root, then the access log.
pub fn worker_files(root_dir: &Path, log: &LogTarget) -> Result<(), Problem> {
    root(root_dir).map_err(|message| Problem {
        stage: "root",
        message,
    })?;
    dest::check(log).map_err(|e| Problem {
        stage: "access-log",
        message: match log {
            LogTarget::File(p) | LogTarget::Syslog(p) => format!("{}: {e}", p.display()),
            LogTarget::Off | LogTarget::Stdout => e.to_string(),
        },
    })
}
