//! The access log checked as the `--user` the workers will run as, before anything is
//! bound.
//!
//! Input: where the log goes and the identity `--user` resolved to. Output: `Ok`, or the
//! error the check gave. The invoking user's check (`access_log::dest::check`: an
//! existing file opens for appending, a missing one has a writable directory, the syslog
//! socket accepts a connection; nothing is created) is run again in a short-lived child
//! that first becomes that user, since the master drops privileges only after binding
//! and the workers then open the log as that user. A log only root could write is so
//! refused at start instead of by every worker, over and over. Standard output is
//! inherited, never opened by path: nothing to check. Without root there is no other
//! user to become: nothing to check either (`serve` would fail to drop privileges).

use crate::access_log::dest;
use crate::config::LogTarget;
use crate::sys::{self, Forked};
use crate::user::Identity;
use rustix::process::WaitOptions;
use std::io;

/// [`dest::check`] of `target` as `id`, in a child whose exit status carries the errno.
pub fn as_user(target: &LogTarget, id: &Identity) -> io::Result<()> {
    let me = rustix::process::geteuid();
    let nothing_to_check = matches!(target, LogTarget::Off | LogTarget::Stdout);
    if nothing_to_check || !me.is_root() || id.uid == me.as_raw() {
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
