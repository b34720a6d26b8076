//! What a worker will open, checked before it is needed: the root (a directory that can
//! be read) and the access log (appendable, or creatable in its directory), without
//! creating or changing anything; and the same checks made as another user.
//!
//! Input: the root and log paths; for [`as_user`], the resolved `--user`. Output: the
//! first [`Problem`], printed as one line. `cmd/preflight.rs` runs these before anything
//! is bound (as the `--user` the workers will run as, when the master starts as root);
//! the master runs them again before a HUP replaces running workers, so a reload that
//! could not work is refused instead of leaving workers restarting in a loop.
//!
//! [`as_user`]: a forked child becomes the user, runs the check and reports over a pipe;
//! the caller's credentials never change. The caller must be single-threaded (the
//! `serve` command and the master are), since the child allocates.

use crate::sys::{self, Forked};
use crate::user::Identity;
use rustix::fd::OwnedFd;
use rustix::fs::{Access, Mode, OFlags};
use rustix::io::Errno;
use std::io::Read;
use std::os::fd::AsFd;
use std::path::Path;

/// A check that failed: the stage to name and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// `root` or `access-log` (or `user` when becoming the user failed).
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
pub fn root(root: &Path) -> Result<OwnedFd, Problem> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    rustix::fs::open(root, flags, Mode::empty()).map_err(|e| Problem {
        stage: "root",
        message: format!("{}: {}", root.display(), std::io::Error::from(e)),
    })
}

/// The access log must open for appending, or (when it does not exist yet) its
/// directory must take a new file; nothing is created. `/dev/stdout` and `/dev/stderr`
/// are the process's own descriptors (`access_log.rs` duplicates them): they only need
/// to be open.
pub fn access_log(log: &Path) -> Result<(), Problem> {
    let problem = |e: std::io::Error| Problem {
        stage: "access-log",
        message: format!("{}: cannot be opened for appending: {e}", log.display()),
    };
    let own = match log.as_os_str().as_encoded_bytes() {
        b"/dev/stdout" => Some(rustix::io::fcntl_getfd(std::io::stdout().as_fd())),
        b"/dev/stderr" => Some(rustix::io::fcntl_getfd(std::io::stderr().as_fd())),
        _ => None,
    };
    if let Some(open) = own {
        return open.map(drop).map_err(|e| problem(e.into()));
    }
    let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::CLOEXEC | OFlags::NOCTTY;
    match rustix::fs::open(log, flags, Mode::empty()) {
        Ok(_) => Ok(()),
        Err(Errno::NOENT) => {
            let dir = match log.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            rustix::fs::access(dir, Access::WRITE_OK | Access::EXEC_OK)
                .map_err(|e| problem(e.into()))
        }
        Err(e) => Err(problem(e.into())),
    }
}

/// What a worker opens: the root, then the access log (if any).
pub fn worker_files(root_dir: &Path, log: Option<&Path>) -> Result<(), Problem> {
    root(root_dir)?;
    log.map_or(Ok(()), access_log)
}

/// Runs `check` in a child that first becomes `who`; the child's answer, with
/// ` (as uid N)` after a failure's message. A process that is not root cannot become
/// anyone else and runs `check` as itself.
pub fn as_user(who: &Identity, check: impl Fn() -> Result<(), Problem>) -> Result<(), Problem> {
    if !rustix::process::geteuid().is_root() {
        return check();
    }
    let failed = |message: String| Problem {
        stage: "user",
        message,
    };
    let (rd, wr) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| failed(format!("pipe: {e}")))?;
    let child = match sys::fork().map_err(|e| failed(format!("fork: {e}")))? {
        Forked::Child => {
            drop(rd);
            let verdict = match sys::become_user(who.uid, who.gid, &who.groups) {
                Err(e) => format!("user\tbecoming uid {} gid {}: {e}", who.uid, who.gid),
                Ok(()) => check().err().map_or_else(String::new, |p| {
                    format!("{}\t{} (as uid {})", p.stage, p.message, who.uid)
                }),
            };
            let _ = rustix::io::write(&wr, verdict.as_bytes());
            sys::exit_now(i32::from(!verdict.is_empty()));
        }
        Forked::Parent(pid) => pid,
    };
    drop(wr);
    let mut said = String::new();
    let _ = std::fs::File::from(rd).read_to_string(&mut said);
    let status = rustix::process::waitpid(Some(child), rustix::process::WaitOptions::empty());
    let clean = matches!(status, Ok(Some((_, s))) if s.exit_status() == Some(0));
    match said.split_once('\t') {
        None if clean => Ok(()),
        Some((stage, message)) => Err(Problem {
            stage: match stage {
                "root" => "root",
                "access-log" => "access-log",
                _ => "user",
            },
            message: message.to_string(),
        }),
        None => Err(failed(
            "the check as the workers' user ended without an answer".into(),
        )),
    }
}
