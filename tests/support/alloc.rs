//! The counting global allocator of the zero-allocation tests: it forwards every call to
//! the system allocator and counts allocations (`alloc`, `alloc_zeroed`, `realloc`) made
//! on threads that are watched, or on every thread while [`watch_every_thread`] is on.
//!
//! A test installs it with
//! `#[global_allocator] static GLOBAL: support::alloc::Counting = support::alloc::Counting;`
//! and reads [`allocations`] before and after the work it watches.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The allocator; counts go to one process-wide counter.
pub(crate) struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static EVERY_THREAD: AtomicBool = AtomicBool::new(false);

thread_local! {
    static WATCHED: Cell<bool> = const { Cell::new(false) };
}

/// Counts (or stops counting) the allocations of the calling thread.
pub(crate) fn watch_this_thread(on: bool) {
    WATCHED.with(|w| w.set(on));
}

/// Counts (or stops counting) the allocations of every thread of the process.
pub(crate) fn watch_every_thread(on: bool) {
    EVERY_THREAD.store(on, Ordering::SeqCst);
}

/// Allocations counted so far.
pub(crate) fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::SeqCst)
}

fn note() {
    // `try_with`: a thread being torn down may allocate after its thread-locals are gone.
    let watched = WATCHED.try_with(Cell::get).unwrap_or(false);
    if watched || EVERY_THREAD.load(Ordering::Relaxed) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

#[allow(unsafe_code)]
// SAFETY: every method forwards to `System` unchanged; counting touches only atomics and a
// const-initialised thread-local, none of which allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: `ptr` came from this allocator with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}
