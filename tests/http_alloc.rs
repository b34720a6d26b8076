//! The parser never allocates: a counting global allocator watches every parse of every
//! vector (valid and invalid, whole and split at every byte) plus the generated limit
//! cases, and the count must stay zero.

mod http_support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use steerd::http::{find_head_end, parse_request, Header, Status, MAX_FIELDS};

/// Counts allocations made by a thread while its `WATCHING` flag is set.
struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static WATCHING: Cell<bool> = const { Cell::new(false) };
}

fn note() {
    if WATCHING.with(Cell::get) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

#[allow(unsafe_code)]
// SAFETY: every method forwards to `System` unchanged; counting touches only an atomic
// and a const-initialised thread-local, neither of which allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Parses `buf` with stack buffers only; returns a summary so the work is not optimised out.
fn parse_quietly(buf: &[u8]) -> usize {
    let mut slots = [Header::EMPTY; MAX_FIELDS];
    let mut path = [0u8; 8192];
    let found = find_head_end(buf, 0).unwrap_or(0);
    match parse_request(buf, &mut slots, &mut path) {
        Ok(Status::Complete(r)) => r.head_len + r.path.len() + found,
        Ok(Status::Partial) => 1,
        Err(e) => usize::from(e.status()) + usize::from(e.must_close()) + e.reason().len(),
    }
}

#[test]
fn parsing_never_allocates() {
    let mut inputs: Vec<Vec<u8>> = http_support::all_cases()
        .into_iter()
        .map(|c| c.input)
        .collect();
    let mut long = b"GET /".to_vec();
    long.resize(9000, b'a');
    inputs.push(long);
    let mut many = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
    for i in 0..120 {
        many.extend_from_slice(format!("X-{i}: {}\r\n", "v".repeat(150)).as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    inputs.push(many);

    WATCHING.with(|w| w.set(true));
    let mut total = 0usize;
    for input in &inputs {
        // Every prefix of the vectors; the two big generated heads at a coarser step.
        let step = if input.len() > 1000 { 97 } else { 1 };
        for k in (0..=input.len()).step_by(step).chain([input.len()]) {
            total = total.wrapping_add(parse_quietly(&input[..k]));
        }
    }
    WATCHING.with(|w| w.set(false));
    let allocations = ALLOCATIONS.load(Ordering::Relaxed);
    assert!(total > 0);
    assert_eq!(allocations, 0, "the parser allocated {allocations} times");

    // The counter works: an allocation made while watching is seen.
    WATCHING.with(|w| w.set(true));
    let boxed = std::hint::black_box(Box::new(7u64));
    WATCHING.with(|w| w.set(false));
    drop(boxed);
    assert_eq!(
        ALLOCATIONS.load(Ordering::Relaxed),
        1,
        "the counting allocator missed an allocation"
    );
}
