//! What `serve` would refuse, found before anything is bound: the served root, the pages
//! the site options name, the access log, `--user`. `check` and `serve` both run it, so
//! `check` refuses first whatever `serve` would.
//!
//! Input: validated [`ServeArgs`] (their syntax is already checked). Output: one
//! [`Failure`] per problem, each printed as one line. It reads and opens, but changes
//! nothing: the access log is opened for appending only if it exists (otherwise its
//! directory is checked for writing), and nothing is created; a syslog socket must
//! accept a connection. With `--user`, the log is checked again as that user
//! (`log_check.rs`), since the workers open it as that user.

use super::Failure;
use crate::args::ServeArgs;
use crate::config::LogTarget;
use crate::files::{self, Lookup, Probe, PATH_MAX};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use std::path::Path;

/// Every problem found, in the order root, pages, access log, user.
pub fn problems(args: &ServeArgs) -> Vec<Failure> {
    let mut found = Vec::new();
    match open_root(&args.root) {
        Ok(root) => pages(args, &root, &mut found),
        Err(e) => found.push(Failure::new("root", e)),
    }
    let log = &args.logging.access_log;
    let log_checked = crate::access_log::dest::check(log);
    if let Err(e) = &log_checked {
        let why = match log {
            LogTarget::Syslog(_) => format!("cannot be connected to: {e}"),
            _ => format!("cannot be opened for appending: {e}"),
        };
        found.push(log_failure(log, why));
    }
    if let Some(spec) = &args.user {
        match crate::user::lookup(spec) {
            Err(e) => found.push(Failure::new("user", e)),
            Ok(id) if log_checked.is_ok() => {
                if let Err(e) = super::log_check::as_user(log, &id) {
                    let why = format!("cannot be opened as uid {}: {e}", id.uid);
                    found.push(log_failure(log, why));
                }
            }
            Ok(_) => {}
        }
    }
    found
}

/// `access-log: PATH: why`.
fn log_failure(log: &LogTarget, why: String) -> Failure {
    match log {
        LogTarget::File(p) | LogTarget::Syslog(p) => {
            Failure::new("access-log", format!("{}: {why}", p.display()))
        }
        LogTarget::Off | LogTarget::Stdout => Failure::new("access-log", why),
    }
}

/// The root must be a directory this process can read.
fn open_root(root: &Path) -> Result<OwnedFd, String> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    rustix::fs::open(root, flags, Mode::empty())
        .map_err(|e| format!("{}: {}", root.display(), std::io::Error::from(e)))
}

/// Each `--error-page` and the `--fallback` must be a regular file under the root.
fn pages(args: &ServeArgs, root: &OwnedFd, found: &mut Vec<Failure>) {
    let mut scratch = [0u8; PATH_MAX + 1];
    let opts = files::FileOptions::of(&args.site.rules()).plain();
    for (flag, path) in args.site.pages() {
        let why = match files::probe(root.as_fd(), path.as_bytes(), &mut scratch, &opts) {
            Probe::File(_) => continue,
            Probe::Other(Lookup::Status(404)) => "no such file under ROOT",
            Probe::Other(Lookup::Status(403)) => "refused (permissions, or a symlink leaving ROOT)",
            Probe::Other(_) => "not a regular file",
        };
        found.push(Failure::new("site", format!("{flag} {path}: {why}")));
    }
}
