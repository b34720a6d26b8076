//! Raw system calls rustix lacks. The only module allowed `unsafe`.
//!
//! Input: plain values and borrowed fds. Output: `io::Result`s. Every wrapper carries the
//! same doc shape (the call, the kernel quirk that matters, the man page) and every
//! `unsafe` block a `SAFETY:` line with the invariant it relies on. Nothing here decides
//! policy: the callers (master, worker, listen, stats) do.
//!
//! What lives here: `fork` and `_exit`, the signal flags (handlers that only count, as
//! nginx's `ngx_signal_handler` only sets flags), the signal mask around `fork`, the
//! `MAP_SHARED | MAP_ANONYMOUS` counters mapping, `TCP_DEFER_ACCEPT`, closing an
//! inherited fd in a child, and the `setgroups`/`setgid`/`setuid` privilege drop.
#![allow(unsafe_code)]

use crate::cpuset::CpuId;
use crate::stats::{PageCounters, WorkerCounters};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, Ordering};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};

/// What `fork` returned, seen from one side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forked {
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
pub fn fork() -> io::Result<Forked> {
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
pub fn exit_now(status: i32) -> ! {
    // SAFETY: _exit takes an integer and never returns; it touches no Rust-owned memory.
    unsafe { libc::_exit(status) }
}

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
pub fn count_signals(signals: &[libc::c_int]) -> io::Result<()> {
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
pub fn ignore_signals(signals: &[libc::c_int]) {
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
pub fn signal_count(sig: libc::c_int) -> u32 {
    usize::try_from(sig)
        .ok()
        .and_then(|s| SIGNAL_COUNTS.get(s))
        .map_or(0, |c| c.load(Ordering::Relaxed))
}

/// Zeroes every counter: a freshly forked worker must not act on the master's signals.
pub fn reset_signal_counts() {
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
pub fn mask_signals(signals: &[libc::c_int], block: bool) -> io::Result<()> {
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
    let how = if block {
        libc::SIG_BLOCK
    } else {
        libc::SIG_UNBLOCK
    };
    // SAFETY: `set` is initialised; the old mask is not asked for (null).
    let rc = unsafe { libc::pthread_sigmask(how, &set, core::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// `close(fd)` in a forked child, for an fd whose `OwnedFd` lives in the parent's copied
/// state.
///
/// The child never drops that copied state (it ends in [`exit_now`]), so the fd number is
/// closed exactly once in this process. The caller must not use the fd afterwards.
/// See close(2).
pub fn close_inherited(fd: RawFd) {
    // SAFETY: the fd belongs to state the child copied at fork and never drops or uses
    // again (callers pass only other workers' listeners and the metrics socket).
    unsafe { libc::close(fd) };
}

/// `setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, secs)` — wake the listener only when
/// data has arrived on a new connection.
///
/// The kernel turns seconds into a count of SYN-ACK retransmissions, so the wait is
/// rounded; a connection that has sent nothing by then is queued for `accept` anyway.
/// See tcp(7).
pub fn set_tcp_defer_accept(fd: BorrowedFd<'_>, secs: u32) -> io::Result<()> {
    let value = libc::c_int::try_from(secs).unwrap_or(libc::c_int::MAX);
    // SAFETY: `value` lives across the call and the length passed is its exact size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_DEFER_ACCEPT,
            (&value as *const libc::c_int).cast(),
            core::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `setgroups(groups)`, `setgid(gid)`, `setuid(uid)` — become another user, in the only
/// order that works (groups and gid need the privilege the uid change gives up).
///
/// glibc's wrappers apply each change to every thread of the process. See setgroups(2),
/// setuid(2); credentials(7).
pub fn become_user(uid: u32, gid: u32, groups: &[u32]) -> io::Result<()> {
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

/// `say!("worker {i} ...")`: one `steerd: ...` line on stderr through [`log_line`].
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::sys::log_line(&format!($($arg)*))
    };
}

/// `write(2, "steerd: " + line + "\n")` in one call, so lines from the master and its
/// workers sharing one stderr pipe never interleave (a pipe write of at most `PIPE_BUF`
/// bytes is atomic, pipe(7)). Errors are ignored: there is nowhere else to report them.
pub fn log_line(line: &str) {
    use std::io::Write;
    let mut buf = Vec::with_capacity(line.len() + 9);
    buf.extend_from_slice(b"steerd: ");
    buf.extend_from_slice(line.as_bytes());
    buf.push(b'\n');
    let _ = std::io::stderr().lock().write_all(&buf);
}

/// `sched_setaffinity(0, {cpu})` — run the calling thread on `cpu` only.
///
/// Per thread, not per process: a thread started later inherits the mask. The move happens
/// at the next scheduling point; callers that need to be on the CPU now check with
/// `sched_getcpu`. See sched_setaffinity(2).
pub fn pin_to_cpu(cpu: CpuId) -> io::Result<()> {
    let mut set = rustix::thread::CpuSet::new();
    if cpu.get() >= rustix::thread::CpuSet::MAX_CPU {
        return Err(io::Error::other(format!(
            "CPU {cpu} is beyond the affinity mask size"
        )));
    }
    set.set(cpu.get());
    pin_to_set(&set)
}

/// `sched_setaffinity(0, set)` — run the calling thread on any CPU of `set`.
/// See sched_setaffinity(2).
pub fn pin_to_set(set: &rustix::thread::CpuSet) -> io::Result<()> {
    rustix::thread::sched_setaffinity(None, set).map_err(io::Error::from)
}

/// `sched_getaffinity(0)` — the CPUs the calling thread may run on now.
/// See sched_getaffinity(2).
pub fn affinity() -> io::Result<rustix::thread::CpuSet> {
    rustix::thread::sched_getaffinity(None).map_err(io::Error::from)
}

/// Per-worker counters in one `MAP_SHARED | MAP_ANONYMOUS` mapping, made before fork so
/// the master and every worker see the same pages; one [`PageCounters`] block per worker.
///
/// Zero-filled pages are a valid `[PageCounters]` because every field of
/// `WorkerCounters` is an atomic integer and the rest is padding (see `stats.rs`, which
/// asserts that).
pub struct SharedCounters {
    ptr: NonNull<PageCounters>,
    len: usize,
}

impl SharedCounters {
    /// `mmap(NULL, n * 4096, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS, -1, 0)` —
    /// `n` zeroed counter blocks shared across `fork`.
    ///
    /// Pages are first touched by whoever writes them first: the worker, after pinning,
    /// so each block lands on its worker's node. See mmap(2).
    pub fn new(n: usize) -> io::Result<SharedCounters> {
        let bytes = Self::bytes(n).ok_or_else(|| io::Error::other("counter mapping too large"))?;
        // SAFETY: a fresh anonymous mapping at an address the kernel picks aliases no
        // existing Rust memory.
        let addr = unsafe {
            rustix::mm::mmap_anonymous(
                core::ptr::null_mut(),
                bytes,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::SHARED,
            )
        }?;
        let ptr = NonNull::new(addr.cast::<PageCounters>())
            .ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(SharedCounters { ptr, len: n })
    }

    fn bytes(n: usize) -> Option<usize> {
        n.max(1).checked_mul(core::mem::size_of::<PageCounters>())
    }

    fn pages(&self) -> &[PageCounters] {
        // SAFETY: `ptr` is page-aligned (mmap), so aligned for PageCounters; the mapping
        // holds `len` blocks and lives until drop; zero bytes are valid atomics; and the
        // blocks are only accessed through atomics (shared mutation across processes).
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// Worker `index`'s counters; `None` past the last worker.
    pub fn get(&self, index: usize) -> Option<&WorkerCounters> {
        self.pages().get(index).map(|p| &p.counters)
    }

    /// Every worker's counters, in plan order.
    pub fn iter(&self) -> impl Iterator<Item = &WorkerCounters> + Clone {
        self.pages().iter().map(|p| &p.counters)
    }

    /// Number of blocks.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are no blocks.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for SharedCounters {
    fn drop(&mut self) {
        let bytes = Self::bytes(self.len).unwrap_or(0);
        // SAFETY: the mapping was made by `new` with this exact length and no reference
        // from `get`/`iter` outlives `self`.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), bytes) };
    }
}

/// `setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, {len, prog})` — attach a classic
/// BPF program that picks the listener index for each new connection of `fd`'s reuseport
/// group.
///
/// Attach once, after every member has called `listen()`: the program belongs to the group
/// and a socket that carries its own program before `bind` makes a separate group
/// (`EADDRINUSE`). An index past the group's size falls back to the hash. Old kernels and
/// gVisor answer `ENOPROTOOPT` or `EINVAL`. See socket(7), `net/core/sock_reuseport.c`.
pub fn attach_reuseport_cbpf(fd: BorrowedFd, prog: &[asm_bpf::Insn]) -> io::Result<()> {
    let len = u16::try_from(prog.len())
        .map_err(|_| io::Error::other("BPF program longer than 65535 instructions"))?;
    let fprog = libc::sock_fprog {
        len,
        filter: prog.as_ptr().cast::<libc::sock_filter>().cast_mut(),
    };
    // SAFETY: `asm_bpf::Insn` is `#[repr(C)]` with the layout of `struct sock_filter`, the
    // pointer covers `len` instructions borrowed for the call, and the kernel only reads
    // them (it copies the program).
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_REUSEPORT_CBPF,
            (&fprog as *const libc::sock_fprog).cast(),
            core::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A copy of some bytes placed so that they end exactly where a `PROT_NONE` page begins:
/// any read one byte past the end faults. Used by parser tests (picohttpparser's guard
/// page trick) and nowhere on the serving path.
pub struct GuardedBuf {
    map: *mut core::ffi::c_void,
    map_len: usize,
    start: usize,
    len: usize,
}

impl GuardedBuf {
    /// `mmap` readable pages plus one more, copy `bytes` to the end of the readable part,
    /// then `mprotect(PROT_NONE)` the last page (mmap(2), mprotect(2)).
    pub fn new(bytes: &[u8]) -> rustix::io::Result<Self> {
        use rustix::mm::{mmap_anonymous, mprotect, MapFlags, MprotectFlags, ProtFlags};
        let page = rustix::param::page_size();
        let readable = bytes.len().div_ceil(page).max(1) * page;
        let map_len = readable + page;
        // SAFETY: a fresh anonymous private mapping at an address the kernel picks
        // (null hint) cannot alias any Rust object.
        let map = unsafe {
            mmap_anonymous(
                core::ptr::null_mut(),
                map_len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE,
            )?
        };
        let guarded = Self {
            map,
            map_len,
            start: readable - bytes.len(),
            len: bytes.len(),
        };
        // SAFETY: `map` is `map_len` bytes of our own mapping, readable and writable;
        // `start + len == readable <= map_len`, so the range written lies inside it.
        let dest = unsafe {
            core::slice::from_raw_parts_mut(map.cast::<u8>().add(guarded.start), bytes.len())
        };
        dest.copy_from_slice(bytes);
        // SAFETY: `map + readable` is page-aligned and the page after it belongs to our
        // mapping; no Rust reference points into that page.
        unsafe {
            mprotect(
                map.cast::<u8>().add(readable).cast(),
                page,
                MprotectFlags::empty(),
            )?
        };
        Ok(guarded)
    }

    /// The bytes, ending right before the guard page.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `start..start + len` lies in the readable part of our live mapping,
        // initialised by `new`, and nothing writes to it while `self` is borrowed.
        unsafe { core::slice::from_raw_parts(self.map.cast::<u8>().add(self.start), self.len) }
    }
}

impl Drop for GuardedBuf {
    fn drop(&mut self) {
        // SAFETY: `map`/`map_len` are exactly the mapping made in `new`, and no slice
        // from `as_slice` outlives `self`.
        let _ = unsafe { rustix::mm::munmap(self.map, self.map_len) };
    }
}

/// Bit `i` set when byte `i` of `bytes` is a control (below 0x20) or DEL: the header
/// value scanner's inner step (`http/scan.rs`), 16 bytes with four SSE2 operations.
/// Bytes >= 0x80 (obs-text) are never flagged: `max_epu8` compares unsigned.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn sse2_controls(bytes: &[u8; 16]) -> u32 {
    use core::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of the x86-64 baseline, enabled for every x86_64 target, so
    // these instructions exist; `_mm_loadu_si128` reads exactly the 16 bytes `bytes`
    // borrows and allows any alignment.
    unsafe {
        let v = _mm_loadu_si128(bytes.as_ptr().cast());
        let printable = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x20)), v);
        let del = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f));
        (!_mm_movemask_epi8(printable) | _mm_movemask_epi8(del)) as u32 & 0xffff
    }
}

/// A private anonymous mapping of zero bytes: the serve loop's connection arena.
///
/// Unlike `vec![0; n]` its creation can fail with an error instead of aborting the
/// process, and `MAP_NORESERVE` keeps a large `--max-conns` from being refused by the
/// kernel's overcommit heuristic: pages become resident (on the toucher's node) only when
/// a connection first writes them.
pub struct ZeroedArena {
    ptr: NonNull<u8>,
    len: usize,
}

impl ZeroedArena {
    /// `mmap(NULL, len, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE)` —
    /// `len` zero bytes, nothing resident yet. See mmap(2).
    pub fn new(len: usize) -> io::Result<ZeroedArena> {
        let len = len.max(1);
        // SAFETY: a fresh anonymous mapping at an address the kernel picks aliases no
        // existing Rust memory.
        let addr = unsafe {
            rustix::mm::mmap_anonymous(
                core::ptr::null_mut(),
                len,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::PRIVATE | rustix::mm::MapFlags::NORESERVE,
            )
        }?;
        let ptr = NonNull::new(addr.cast::<u8>())
            .ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(ZeroedArena { ptr, len })
    }

    /// The whole arena.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `ptr..ptr+len` is our live, readable and writable mapping, zero-filled
        // by the kernel (so initialised), and `&mut self` makes this the only reference.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for ZeroedArena {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by `new` with this exact length and no slice from
        // `as_mut_slice` outlives `self`.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

// SAFETY: the arena owns its mapping exclusively (no aliasing pointer exists elsewhere),
// so moving it to another thread moves sole ownership, as with a Vec<u8>.
unsafe impl Send for ZeroedArena {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_counters_survive_fork() {
        let shared = SharedCounters::new(3).expect("mmap");
        assert_eq!(shared.len(), 3);
        let a = shared.get(0).expect("block 0") as *const WorkerCounters as usize;
        let b = shared.get(1).expect("block 1") as *const WorkerCounters as usize;
        assert_eq!(b - a, 4096, "one page per worker");
        assert!(shared.get(3).is_none());
        match fork().expect("fork") {
            Forked::Child => {
                shared
                    .get(2)
                    .expect("block")
                    .accepted
                    .fetch_add(7, Ordering::Relaxed);
                exit_now(0);
            }
            Forked::Parent(pid) => {
                let status =
                    rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty())
                        .expect("waitpid")
                        .expect("a status")
                        .1;
                assert_eq!(status.exit_status(), Some(0));
            }
        }
        assert_eq!(
            shared
                .get(2)
                .expect("block")
                .accepted
                .load(Ordering::Relaxed),
            7
        );
        assert_eq!(
            shared
                .get(0)
                .expect("block")
                .accepted
                .load(Ordering::Relaxed),
            0
        );
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

pub mod handover;
