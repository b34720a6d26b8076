//! What `serve` would refuse, found before anything is bound: the served root, the pages
//! the site options name, the access log, `--user`. `check` and `serve` both run it, so
//! `check` refuses first whatever `serve` would.
//!
//! Input: validated [`ServeArgs`] (their syntax is already checked). Output: one
//! [`Failure`] per problem, each printed as one line. It reads and opens, but changes
//! nothing: the access log is opened for appending only if it exists (otherwise its
//! directory is checked for writing), and nothing is created. The root and log checks
//! are `crate::preflight`'s (the master repeats them before a reload); when the server
//! starts as root with `--user`, they are made once more as that user, since the workers
//! will open both as it.

use super::Failure;
use crate::args::ServeArgs;
use crate::files::{self, Lookup, Probe, PATH_MAX};
use crate::preflight;
use rustix::fd::{AsFd, OwnedFd};

/// Every problem found, in the order root, pages, access log, user.
pub fn problems(args: &ServeArgs) -> Vec<Failure> {
    let mut found = Vec::new();
    let failure = |p: preflight::Problem| Failure::new(p.stage, p.message);
    match preflight::root(&args.root) {
        Ok(root) => pages(args, &root, &mut found),
        Err(p) => found.push(failure(p)),
    }
    if let Some(log) = &args.access_log {
        found.extend(preflight::access_log(log).err().map(failure));
    }
    match args.user.as_ref().map(crate::user::lookup) {
        Some(Err(e)) => found.push(Failure::new("user", e)),
        Some(Ok(id)) if found.is_empty() && rustix::process::geteuid().is_root() => {
            let log = args.access_log.as_deref();
            let as_user = preflight::as_user(&id, || preflight::worker_files(&args.root, log));
            found.extend(as_user.err().map(failure));
        }
        _ => {}
    }
    found
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
