//! What a worker will need, checked by the master before it binds (and before a HUP
//! replaces running workers): the `--user` exists, and the root and the access log can be
//! opened *as that user*, exactly as a worker opens them.
//!
//! Input: the unresolved `--user`, the root path, the access log path. Output: the
//! resolved [`Identity`], or one [`Problem`] naming what failed and why. Without this a
//! log path the workers cannot open left the port bound and workers restarting forever,
//! and a HUP with such a path left no worker serving.
//!
//! How: a child is forked, becomes the user (when the master is still root), opens the
//! root and the log with the same calls a worker makes (`worker::open_root`,
//! `AccessLog::open`: so `/dev/stdout` in a container is tried as the user too) and
//! reports over a pipe. The master's own credentials never change here. It does not
//! become the user for good (the master does that after binding).

use crate::access_log::AccessLog;
use crate::config::UserSpec;
use crate::sys::{self, Forked};
use crate::user::{self, Identity};
use std::io::Read;
use std::path::Path;

/// A check that failed: the stage to name and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// `user`, `root` or `access-log`.
    pub stage: &'static str,
    /// What failed and why.
    pub message: String,
}

impl core::fmt::Display for Problem {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.stage, self.message)
    }
}

/// Resolves `--user` from `/etc/passwd` and `/etc/group`.
pub fn resolve_user(spec: &UserSpec) -> Result<Identity, Problem> {
    let problem = |message: String| Problem {
        stage: "user",
        message,
    };
    let passwd = std::fs::read_to_string("/etc/passwd")
        .map_err(|e| problem(format!("reading /etc/passwd: {e}")))?;
    let group = std::fs::read_to_string("/etc/group").unwrap_or_default();
    user::resolve(spec, &passwd, &group).map_err(|e| problem(e.to_string()))
}

/// Opens `root` and `log` in a child that first becomes `who` (when given and the master
/// is root); the first failure, as the worker would meet it.
pub fn check_as(who: Option<&Identity>, root: &Path, log: Option<&Path>) -> Result<(), Problem> {
    let (rd, wr) =
        rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| Problem {
            stage: "master",
            message: format!("pipe: {e}"),
        })?;
    let forked = sys::fork().map_err(|e| Problem {
        stage: "master",
        message: format!("fork: {e}"),
    })?;
    let child = match forked {
        Forked::Child => {
            drop(rd);
            let verdict = open_all(who, root, log);
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
            stage: stage_name(stage),
            message: message.to_string(),
        }),
        None => Err(Problem {
            stage: "master",
            message: "the check of the worker's files ended without an answer".into(),
        }),
    }
}

fn stage_name(s: &str) -> &'static str {
    match s {
        "user" => "user",
        "root" => "root",
        _ => "access-log",
    }
}

/// In the child: `STAGE\tmessage` for the first failure, or empty.
fn open_all(who: Option<&Identity>, root: &Path, log: Option<&Path>) -> String {
    let as_whom = match who {
        Some(id) => {
            let root_now = rustix::process::geteuid().is_root();
            if root_now {
                if let Err(e) = sys::become_user(id.uid, id.gid, &id.groups) {
                    return format!("user\tbecoming uid {} gid {}: {e}", id.uid, id.gid);
                }
            }
            format!(" (as uid {})", id.uid)
        }
        None => String::new(),
    };
    if let Err(e) = crate::worker::open_root(root) {
        return format!(
            "root\t{}: {}{as_whom}",
            root.display(),
            crate::say::plain(&e)
        );
    }
    if let Some(path) = log {
        if let Err(e) = AccessLog::open(Some(path.to_path_buf())) {
            return format!(
                "access-log\t{}: {}{as_whom}",
                path.display(),
                crate::say::plain(&e)
            );
        }
    }
    String::new()
}
