//! The access log must be one the workers can open: checked as `--user` before anything
//! is bound.
//!
//! Input: where the log goes and the identity the workers will run as. Output: `Ok`, or
//! the error the check gave. `steerd check` and `serve` already checked the log as the
//! invoking user (`cmd/preflight.rs`); the master drops privileges only after binding,
//! so this runs the same check ([`crate::access_log::dest::check`]: nothing is created)
//! in a short-lived child that first becomes the workers' user. A log only root could
//! write is then refused at start instead of by every worker, over and over, once the
//! server looked up. Standard output is inherited, never opened by path: nothing to check.

use crate::access_log::dest;
use crate::config::LogTarget;
use crate::sys::{self, Forked};
use crate::user::Identity;
use rustix::process::WaitOptions;
use std::io;

/// Runs [`dest::check`] for `target` as `id`, in a child; its exit status carries the errno.
pub fn check_as(target: &LogTarget, id: &Identity) -> io::Result<()> {
    if matches!(target, LogTarget::Off | LogTarget::Stdout) {
        return Ok(());
    }
    let pid = match sys::fork()? {
        Forked::Child => {
            let checked =
                sys::become_user(id.uid, id.gid, &id.groups).and_then(|()| dest::check(target));
            sys::exit_now(match checked {
                Ok(()) => 0,
                Err(e) => e.raw_os_error().unwrap_or(libc::EIO),
            })
        }
        Forked::Parent(pid) => pid,
    };
    let status = loop {
        match rustix::process::waitpid(Some(pid), WaitOptions::empty()) {
            Ok(Some((_, status))) => break status,
            Ok(None) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    };
    match status.exit_status() {
        Some(0) => Ok(()),
        Some(errno) => Err(io::Error::from_raw_os_error(errno)),
        None => Err(io::Error::other("the check of the access log died")),
    }
}
