//! Signals as counters: handlers that only count deliveries (as nginx's
//! `ngx_signal_handler` only sets flags), and the signal mask around `fork`.
//!
//! Input: signal numbers. Output: delivery counts. What a signal means (stop, drain,
//! reload, reopen) is decided by `signals.rs`, not here; nothing here imports from the
//! rest of the crate.
#![allow(unsafe_code)]

use core::sync::atomic::{AtomicU32, Ordering};
use std::io;

/// Highest signal number the flags track (Linux has 64 signals).
const MAX_SIGNAL: usize = 65;

/// One delivery counter per signal number, bumped by [`on_signal`].
static SIGNAL_COUNTS: [AtomicU32; MAX_SIGNAL] = [const { AtomicU32::new(0) }; MAX_SIGNAL];

/// The handler: counts the delivery and returns. Only an atomic add, which is
/// async-signal-safe and leaves `errno` alone.
extern "C" fn on_signal(sig: libc::c_int) {
    if let Some(count) = usize::try_from(sig).ok().and_then(|s| SIGNAL_COUNTS.get(s)) {
        count.fetch_add(1, Ordering::Relaxed);
    }
}

/// `sigaction(sig, {on_signal, no SA_RESTART})` — make each of `signals` only bump its
/// counter, read later with [`signal_count`].
///
/// `SA_RESTART` is left off on purpose so a signal interrupts a blocking `poll`/`epoll_wait`
/// with `EINTR` and the caller looks at the counters at once. See sigaction(2).
pub(crate) fn count_signals(signals: &[libc::c_int]) -> io::Result<()> {
    for &sig in signals {
        // SAFETY: an all-zero sigaction is a valid value (empty mask, no flags), and every
        // field we then set is a plain integer or a function pointer of the right type.
        let mut action: libc::sigaction = unsafe { core::mem::zeroed() };
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: `action` is a live, initialised sigaction; the old action is not asked for.
        let rc = unsafe { libc::sigaction(sig, &action, core::ptr::null_mut()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `sigaction(sig, SIG_IGN)` for each of `signals` — a signal whose default action would
/// end the process and that nothing here uses must never stop the server.
///
/// An ignored disposition survives `fork` and `execve`. Numbers the C library reserves for
/// itself (glibc's first two real-time signals) are refused with `EINVAL` and skipped.
/// See sigaction(2), signal(7).
pub(crate) fn ignore_signals(signals: &[libc::c_int]) {
    for &sig in signals {
        // SAFETY: an all-zero sigaction is a valid value (empty mask, no flags); the
        // handler field then holds SIG_IGN, a plain integer constant.
        let mut action: libc::sigaction = unsafe { core::mem::zeroed() };
        action.sa_sigaction = libc::SIG_IGN;
        // SAFETY: `action` is a live, initialised sigaction; the old action is not asked for.
        let _ = unsafe { libc::sigaction(sig, &action, core::ptr::null_mut()) };
    }
}

/// How many times `sig` has been delivered since start (or since [`reset_signal_counts`]).
pub(crate) fn signal_count(sig: libc::c_int) -> u32 {
    usize::try_from(sig)
        .ok()
        .and_then(|s| SIGNAL_COUNTS.get(s))
        .map_or(0, |c| c.load(Ordering::Relaxed))
}

/// Zeroes every counter: a freshly forked worker must not act on the master's signals.
pub(crate) fn reset_signal_counts() {
    for count in &SIGNAL_COUNTS {
        count.store(0, Ordering::Relaxed);
    }
}

/// `sigprocmask(SIG_BLOCK | SIG_SETMASK, set)` — block `signals` (when `block`) or unblock
/// them, for the calling thread.
///
/// The master blocks the counted signals around `fork`, so a signal meant for the master
/// cannot land in the child between the fork and [`reset_signal_counts`]; the child
/// unblocks them once its counters are clean. See sigprocmask(2).
pub(crate) fn mask_signals(signals: &[libc::c_int], block: bool) -> io::Result<()> {
    let how = if block {
        libc::SIG_BLOCK
    } else {
        libc::SIG_UNBLOCK
    };
    set_mask(how, signals)
}

/// `sigprocmask(SIG_SETMASK, {})` — unblock every signal of the calling thread: a forked
/// child that execs passes its mask on (execve(2): "the signal mask is preserved"), and
/// the new program expects none blocked.
pub(crate) fn unblock_all_signals() -> io::Result<()> {
    set_mask(libc::SIG_SETMASK, &[])
}

/// `sigaction(sig, SIG_DFL)` for every signal but `ignored` (`SIG_IGN`), then
/// `sigprocmask(SIG_SETMASK, {})` — the signal state a program expects at its start, for a
/// process about to `execve`.
///
/// execve(2) keeps the mask and every ignored disposition (only caught signals go back to
/// their default), so without this a program started from the master would begin with
/// the counted signals blocked and the unused ones ignored: one that is not steerd could
/// then not be stopped by TERM. `ignored` stays ignored across the exec on purpose: a
/// signal whose default would end the process (HUP, USR1, USR2) arriving before the new
/// program installs its handlers is then dropped instead. KILL and STOP cannot be changed
/// and the C library's own real-time signals are refused (`EINVAL`): both are skipped.
/// See sigaction(2), signal(7).
pub(crate) fn reset_for_exec(ignored: &[libc::c_int]) -> io::Result<()> {
    for sig in 1..=libc::SIGRTMAX() {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        // SAFETY: an all-zero sigaction is a valid value (empty mask, no flags); the
        // handler field then holds SIG_DFL, a plain integer constant.
        let mut action: libc::sigaction = unsafe { core::mem::zeroed() };
        action.sa_sigaction = match ignored.contains(&sig) {
            true => libc::SIG_IGN,
            false => libc::SIG_DFL,
        };
        // SAFETY: `action` is a live, initialised sigaction; the old action is not asked for.
        let _ = unsafe { libc::sigaction(sig, &action, core::ptr::null_mut()) };
    }
    unblock_all_signals()
}

/// `pthread_sigmask(how, {signals})`.
fn set_mask(how: libc::c_int, signals: &[libc::c_int]) -> io::Result<()> {
    // SAFETY: an all-zero sigset_t is valid storage; sigemptyset then initialises it.
    let mut set: libc::sigset_t = unsafe { core::mem::zeroed() };
    // SAFETY: `set` is a live sigset_t owned by this frame.
    unsafe { libc::sigemptyset(&mut set) };
    for &sig in signals {
        // SAFETY: `set` was initialised by sigemptyset above; sig is a plain integer.
        if unsafe { libc::sigaddset(&mut set, sig) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    // SAFETY: `set` is initialised; the old mask is not asked for (null).
    let rc = unsafe { libc::pthread_sigmask(how, &set, core::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In a forked child (the test harness's own signal state stays as it is): a blocked
    /// and an ignored signal are neither after the reset.
    #[test]
    fn reset_for_exec_leaves_nothing_blocked_or_ignored() {
        use super::super::process::{exit_now, fork, Forked};
        match fork().expect("fork") {
            Forked::Child => {
                ignore_signals(&[libc::SIGPIPE]);
                let ok = mask_signals(&[libc::SIGTERM, libc::SIGHUP], true).is_ok()
                    && reset_for_exec(&[libc::SIGHUP]).is_ok()
                    && !blocked(libc::SIGTERM)
                    && !blocked(libc::SIGHUP)
                    && disposition(libc::SIGPIPE) == libc::SIG_DFL
                    && disposition(libc::SIGTERM) == libc::SIG_DFL
                    && disposition(libc::SIGHUP) == libc::SIG_IGN;
                exit_now(i32::from(!ok));
            }
            Forked::Parent(pid) => {
                let (_, status) =
                    rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty())
                        .expect("waitpid")
                        .expect("status");
                assert_eq!(status.exit_status(), Some(0), "{status:?}");
            }
        }
    }

    fn blocked(sig: libc::c_int) -> bool {
        // SAFETY: all-zero is valid storage for a sigset_t that pthread_sigmask fills.
        let mut set: libc::sigset_t = unsafe { core::mem::zeroed() };
        // SAFETY: a null new set only reads the mask into `set`, a live local.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, core::ptr::null(), &mut set) };
        // SAFETY: `set` was filled just above.
        unsafe { libc::sigismember(&set, sig) == 1 }
    }

    fn disposition(sig: libc::c_int) -> libc::sighandler_t {
        // SAFETY: all-zero is a valid sigaction for sigaction to overwrite.
        let mut old: libc::sigaction = unsafe { core::mem::zeroed() };
        // SAFETY: a null new action only reads the current one into `old`, a live local.
        unsafe { libc::sigaction(sig, core::ptr::null(), &mut old) };
        old.sa_sigaction
    }

    #[test]
    fn counted_signal_is_seen() {
        count_signals(&[libc::SIGUSR2]).expect("sigaction");
        let before = signal_count(libc::SIGUSR2);
        rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::USR2)
            .expect("kill");
        // Delivery to the process may land on any thread; wait a bounded time for it.
        for _ in 0..200 {
            if signal_count(libc::SIGUSR2) > before {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        panic!("SIGUSR2 was not counted");
    }
}
