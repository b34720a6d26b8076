//! What `serve` would refuse, found before anything is bound: the served root, the pages
//! the site options name, the access log, `--user`. `check` and `serve` both run it, so
//! `check` refuses first whatever `serve` would.
//!
//! Input: validated [`ServeArgs`] (their syntax is already checked). Output: one
//! [`Failure`] per problem, each printed as one line. It reads and opens, but changes
//! nothing: the access log is opened for appending only if it exists (otherwise its
//! directory is checked for writing), and nothing is created.

use super::Failure;
use crate::args::ServeArgs;
use crate::files::{self, Lookup, Probe, PATH_MAX};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Access, Mode, OFlags};
use rustix::io::Errno;
use std::path::Path;

/// Every problem found, in the order root, pages, access log, user.
pub fn problems(args: &ServeArgs) -> Vec<Failure> {
    let mut found = Vec::new();
    match open_root(&args.root) {
        Ok(root) => pages(args, &root, &mut found),
        Err(e) => found.push(Failure::new("root", e)),
    }
    if let Some(log) = &args.access_log {
        if let Err(e) = appendable(log) {
            let why = format!("{}: cannot be opened for appending: {e}", log.display());
            found.push(Failure::new("access-log", why));
        }
    }
    if let Some(spec) = &args.user {
        if let Err(e) = crate::user::lookup(spec) {
            found.push(Failure::new("user", e));
        }
    }
    found
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

/// Whether `log` can be opened for appending, without creating it.
fn appendable(log: &Path) -> Result<(), std::io::Error> {
    let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::CLOEXEC | OFlags::NOCTTY;
    match rustix::fs::open(log, flags, Mode::empty()) {
        Ok(_) => Ok(()),
        Err(Errno::NOENT) => {
            let dir = match log.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            rustix::fs::access(dir, Access::WRITE_OK | Access::EXEC_OK).map_err(Into::into)
        }
        Err(e) => Err(e.into()),
    }
}
