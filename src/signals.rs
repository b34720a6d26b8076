//! What each signal means to steerd, written once for the master and the workers (as
//! nginx: TERM/INT stop now, QUIT stops gracefully, HUP reloads, USR1 reopens the log;
//! USR2 upgrades the binary when sent to the master and retires a worker when the master
//! sends it to one; WINCH, from the master to a retiring worker, closes that worker's idle
//! connections at once, see [`close_idle_count`]). Every other signal whose default
//! would end the process is ignored.
//!
//! Input: the delivery counters of `sys::signal` (handlers only count). Output: the stop
//! asked for, and whether a signal arrived since it was last acted on. It sends nothing
//! and decides nothing about workers: `master.rs` and `worker.rs` act on the answers.

use crate::sys;
use rustix::process::Signal;

/// The signals master and workers count.
pub(crate) const COUNTED: [libc::c_int; 8] = [
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGHUP,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGCHLD,
    libc::SIGWINCH,
];

/// The counted signals that cross an in-place upgrade's `execve` ignored rather than with
/// their default action (which would end the master, or do nothing, for WINCH): one sent
/// before the new image installs its handlers is dropped. TERM, INT and QUIT keep their
/// default, so an image that hangs can still be stopped; CHLD too, as ignoring it would
/// have the kernel reap the workers the new image takes over.
pub(crate) const DROPPED_ACROSS_EXEC: &[libc::c_int] =
    &[libc::SIGHUP, libc::SIGUSR1, libc::SIGUSR2, libc::SIGWINCH];

/// Signals whose default action ends a process and that steerd does not use: ignored by
/// master and workers, so a stray one never stops the server. (The faults, SEGV, BUS,
/// ILL, FPE, ABRT, TRAP, SYS, keep their default: ignoring a real fault would loop.)
pub(crate) fn ignored() -> Vec<libc::c_int> {
    let mut v = vec![
        libc::SIGALRM,
        libc::SIGVTALRM,
        libc::SIGPROF,
        libc::SIGIO,
        libc::SIGPWR,
        libc::SIGSTKFLT,
        libc::SIGXCPU,
        libc::SIGXFSZ,
        libc::SIGPIPE,
    ];
    v.extend(libc::SIGRTMIN()..=libc::SIGRTMAX());
    v
}

/// Counts the signals of [`COUNTED`] and ignores those of [`ignored`].
pub(crate) fn install() -> std::io::Result<()> {
    sys::count_signals(&COUNTED)?;
    sys::ignore_signals(&ignored());
    Ok(())
}

/// A worker told to retire (USR2 from the master: a successor serves on its listener).
pub(crate) fn retire_requested() -> bool {
    sys::signal_count(libc::SIGUSR2) > 0
}

/// WINCH deliveries so far. A retiring worker told to close its idle connections now
/// (WINCH from the master: more generations of its slot retire at once than the master
/// keeps waiting for) acts on one that came after it last looked while serving; a
/// serving worker ignores them (a terminal's resize sends WINCH too).
pub(crate) fn close_idle_count() -> u32 {
    sys::signal_count(libc::SIGWINCH)
}

/// Which stop was asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// TERM or INT: close every connection now.
    Fast,
    /// QUIT: stop accepting, finish what is in flight.
    Graceful,
}

impl Stop {
    /// The signal that asks a worker for this stop.
    pub(crate) fn signal(self) -> Signal {
        match self {
            Stop::Fast => Signal::TERM,
            Stop::Graceful => Signal::QUIT,
        }
    }

    /// The word used in the log line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Stop::Fast => "fast",
            Stop::Graceful => "graceful",
        }
    }
}

/// TERM or INT: fast; QUIT: graceful; fast wins when both came.
pub(crate) fn requested_stop() -> Option<Stop> {
    if sys::signal_count(libc::SIGTERM) > 0 || sys::signal_count(libc::SIGINT) > 0 {
        Some(Stop::Fast)
    } else if sys::signal_count(libc::SIGQUIT) > 0 {
        Some(Stop::Graceful)
    } else {
        None
    }
}

/// True once per new count of `sig` (HUP, USR1): compares with `seen` and updates it.
pub(crate) fn arrived(sig: libc::c_int, seen: &mut u32) -> bool {
    let count = sys::signal_count(sig);
    if count == *seen {
        return false;
    }
    *seen = count;
    true
}
