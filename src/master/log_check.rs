//! The access log must be one the workers can open: checked before anything is bound.
//!
//! Input: where the log goes and, with `--user`, the identity the workers will run as.
//! Output: `Ok`, or the error opening it gave. A file or the syslog socket is opened the
//! way a worker will open it; with `--user` that happens in a short-lived child that
//! first becomes that user (the master itself drops privileges only after binding), so a
//! log only root could write is refused at start instead of by every worker, over and
//! over, once the server looked up. Standard output is inherited, never opened by path,
//! so there is nothing to check.

use crate::access_log::Dest;
use crate::config::LogTarget;
use crate::sys::{self, Forked};
use crate::user::Identity;
use rustix::process::WaitOptions;
use std::io;

/// Opens `target` as the workers will (as `id` when given), then closes it again.
pub fn check(target: &LogTarget, id: Option<&Identity>) -> io::Result<()> {
    match (target, id) {
        (LogTarget::Off | LogTarget::Stdout, _) => Ok(()),
        (_, None) => Dest::open(target).map(drop),
        (_, Some(id)) => check_as(target, id),
    }
}

/// [`check`] in a child that becomes `id` first; its exit status carries the errno.
fn check_as(target: &LogTarget, id: &Identity) -> io::Result<()> {
    let pid = match sys::fork()? {
        Forked::Child => {
            let opened = sys::become_user(id.uid, id.gid, &id.groups)
                .and_then(|()| Dest::open(target).map(drop));
            sys::exit_now(match opened {
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
