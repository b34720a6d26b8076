//! Per-worker counters in a shared mapping made before fork; the master reads them for
//! `--metrics` (Prometheus text) and for the locality figure.
//!
//! Workers only ever `fetch_add` their own block with `Relaxed` ordering: the counters are
//! statistics, not synchronisation.

use core::sync::atomic::AtomicU64;

/// One worker's counters. `#[repr(C)]` and all-atomic so it can live in a `MAP_SHARED`
/// mapping that master and workers see.
#[repr(C)]
#[derive(Debug, Default)]
pub struct WorkerCounters {
    /// Connections accepted.
    pub accepted: AtomicU64,
    /// Accepted connections whose `SO_INCOMING_CPU` equals the worker's CPU.
    pub local: AtomicU64,
    /// Responses by status class: index 0 = 1xx ... 4 = 5xx.
    pub responses: [AtomicU64; 5],
    /// Response bytes written (head and body).
    pub bytes_sent: AtomicU64,
    /// Connections open now (incremented on accept, decremented on close).
    pub open: AtomicU64,
    /// Epoll events dropped because their token's generation was stale.
    pub stale_events: AtomicU64,
    /// Times accepting paused on EMFILE/ENFILE.
    pub accept_pauses: AtomicU64,
}
