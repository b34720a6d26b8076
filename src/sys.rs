//! Raw system calls rustix lacks: the bottom layer, and the only place allowed `unsafe`
//! (besides the one SSE2 step in `http/scan.rs`).
//!
//! Input: plain values and borrowed fds. Output: `io::Result`s. Every wrapper carries the
//! same doc shape (the call, the kernel quirk that matters, the man page) and every
//! `unsafe` block a `SAFETY:` line with the invariant it relies on. Nothing here decides
//! policy (the callers do) and nothing here imports from the rest of the crate.
//!
//! By concern: [`process`] (fork, `_exit`, affinity, privilege drop), [`signal`] (handlers
//! that only count, the mask around fork), [`mem`] (the shared counter mapping, the
//! connection arena), [`socket`] (`TCP_DEFER_ACCEPT`, the reuseport BPF attach),
//! [`handover`] (descriptors passed across `execve`: adopting, placing, exec), [`file_read`]
//! (reads that never wait for the disk). The calls
//! are re-exported here so callers write `sys::fork`.

pub(crate) mod file_read;
pub(crate) mod handover;
pub(crate) mod mem;
pub(crate) mod process;
pub(crate) mod signal;
pub(crate) mod socket;

pub(crate) use file_read::{pread_nowait, will_need};
pub(crate) use mem::{base_pages_only, release_spare, SharedBlocks, SharedZeroed, ZeroedArena};
pub(crate) use process::{
    affinity, become_user, close_inherited, exit_now, fork, pin_to_cpu, pin_to_set, AffinityMask,
    Forked,
};
pub(crate) use signal::{
    count_signals, ignore_signals, mask_signals, reset_for_exec, reset_signal_counts, signal_count,
};
pub use socket::{attach_reuseport_cbpf, set_tcp_defer_accept};
