//! What each signal means to steerd, written once for the master and the workers (as
//! nginx: TERM/INT stop now, QUIT stops gracefully, HUP reloads, USR1 reopens the log).
//!
//! Input: the delivery counters of `sys::signal` (handlers only count). Output: the stop
//! asked for, and whether a signal arrived since it was last acted on. It sends nothing
//! and decides nothing about workers: `master.rs` and `worker.rs` act on the answers.

use crate::sys;
use rustix::process::Signal;

/// The signals master and workers count.
pub const COUNTED: [libc::c_int; 6] = [
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGHUP,
    libc::SIGUSR1,
    libc::SIGCHLD,
];

/// Which stop was asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// TERM or INT: close every connection now.
    Fast,
    /// QUIT: stop accepting, finish what is in flight.
    Graceful,
}

impl Stop {
    /// The signal that asks a worker for this stop.
    pub fn signal(self) -> Signal {
        match self {
            Stop::Fast => Signal::TERM,
            Stop::Graceful => Signal::QUIT,
        }
    }

    /// The word used in the log line.
    pub fn name(self) -> &'static str {
        match self {
            Stop::Fast => "fast",
            Stop::Graceful => "graceful",
        }
    }
}

/// TERM or INT: fast; QUIT: graceful; fast wins when both came.
pub fn requested_stop() -> Option<Stop> {
    if sys::signal_count(libc::SIGTERM) > 0 || sys::signal_count(libc::SIGINT) > 0 {
        Some(Stop::Fast)
    } else if sys::signal_count(libc::SIGQUIT) > 0 {
        Some(Stop::Graceful)
    } else {
        None
    }
}

/// True once per new count of `sig` (HUP, USR1): compares with `seen` and updates it.
pub fn arrived(sig: libc::c_int, seen: &mut u32) -> bool {
    let count = sys::signal_count(sig);
    if count == *seen {
        return false;
    }
    *seen = count;
    true
}
