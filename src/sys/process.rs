//! Processes and their CPUs: `fork`, `_exit`, closing an inherited fd, the privilege
//! drop, and the affinity calls.
//!
//! Input: plain integers and fds. Output: `io::Result`s. Nothing here decides policy (the
//! master and the worker do) and nothing here imports from the rest of the crate.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::RawFd;

/// The kernel's affinity mask (`cpu_set_t`) as rustix holds it, named apart from the
/// crate's own `cpuset::CpuSet` (the sets steerd reasons about).
pub(crate) use rustix::thread::CpuSet as AffinityMask;

/// What `fork` returned, seen from one side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Forked {
    /// We are the new process.
    Child,
    /// We are the parent; this is the child's pid.
    Parent(rustix::process::Pid),
}

/// `fork()` — duplicate the calling process.
///
/// Only the calling thread exists in the child; call it from a single-threaded process
/// (the master is one) so no lock held by another thread is copied locked. The child must
/// not return into code that expects to be the parent: it runs the worker and ends with
/// [`exit_now`]. See fork(2).
pub(crate) fn fork() -> io::Result<Forked> {
    // SAFETY: fork takes no pointers; the only memory effect is the copy of the address
    // space, and the master calls it with no other thread running.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        p => match rustix::process::Pid::from_raw(p) {
            Some(pid) => Ok(Forked::Parent(pid)),
            None => Err(io::Error::other("fork returned a non-positive pid")),
        },
    }
}

/// `_exit(status)` — end the process now, without running atexit handlers or unwinding.
///
/// A forked worker uses it so that nothing copied from the parent (buffered stdio, a test
/// harness) runs twice. See _exit(2).
pub(crate) fn exit_now(status: i32) -> ! {
    // SAFETY: _exit takes an integer and never returns; it touches no Rust-owned memory.
    unsafe { libc::_exit(status) }
}

/// `close(fd)` in a forked child, for an fd whose `OwnedFd` lives in the parent's copied
/// state.
///
/// The child never drops that copied state (it ends in [`exit_now`]), so the fd number is
/// closed exactly once in this process. The caller must not use the fd afterwards.
/// See close(2).
pub(crate) fn close_inherited(fd: RawFd) {
    // SAFETY: the fd belongs to state the child copied at fork and never drops or uses
    // again (callers pass only other workers' listeners and the metrics socket).
    unsafe { libc::close(fd) };
}

/// `setgroups(groups)`, `setgid(gid)`, `setuid(uid)` — become another user, in the only
/// order that works (groups and gid need the privilege the uid change gives up).
///
/// glibc's wrappers apply each change to every thread of the process. See setgroups(2),
/// setuid(2); credentials(7).
pub(crate) fn become_user(uid: u32, gid: u32, groups: &[u32]) -> io::Result<()> {
    let gids: Vec<libc::gid_t> = groups.to_vec();
    // SAFETY: `gids` points to `gids.len()` initialised gid_t values that outlive the call.
    if unsafe { libc::setgroups(gids.len(), gids.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: setgid takes a plain integer.
    if unsafe { libc::setgid(gid) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: setuid takes a plain integer.
    if unsafe { libc::setuid(uid) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `sched_setaffinity(0, {cpu})` — run the calling thread on `cpu` only.
///
/// Per thread, not per process: a thread started later inherits the mask. The move happens
/// at the next scheduling point; callers that need to be on the CPU now check with
/// `sched_getcpu`. See sched_setaffinity(2).
pub(crate) fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    let mut set = AffinityMask::new();
    if cpu >= AffinityMask::MAX_CPU {
        return Err(io::Error::other(format!(
            "CPU {cpu} is beyond the affinity mask size"
        )));
    }
    set.set(cpu);
    pin_to_set(&set)
}

/// `sched_setaffinity(0, set)` — run the calling thread on any CPU of `set`.
/// See sched_setaffinity(2).
pub(crate) fn pin_to_set(set: &AffinityMask) -> io::Result<()> {
    rustix::thread::sched_setaffinity(None, set).map_err(io::Error::from)
}

/// `sched_getaffinity(0)` — the CPUs the calling thread may run on now.
/// See sched_getaffinity(2).
pub(crate) fn affinity() -> io::Result<AffinityMask> {
    rustix::thread::sched_getaffinity(None).map_err(io::Error::from)
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`, the unit of `/proc/PID/stat`'s times):
/// libc answers from the auxiliary vector the kernel gave the process, so this works in
/// a process whose privileges were dropped (rustix's `clock_ticks_per_second` may read
/// `/proc/self/auxv` there, which a non-dumpable process cannot read, and then panics).
/// 100 if it says nothing usable.
pub(crate) fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf takes a plain integer and reads no memory of ours.
    let n = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(n).ok().filter(|&n| n > 0).unwrap_or(100)
}
