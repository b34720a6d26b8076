//! The load generator allocates nothing per request: a counting global allocator watches
//! whole `steerd::bench::load::run` calls against a reference responder in another
//! process, a short run and a run three times longer, keep-alive and close. Each run
//! completes hundreds to thousands of requests with the same few dozen allocations.
//! One test only, so no other test thread allocates while it counts.

mod bench_support;

use bench_support::responder;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use steerd::bench::load;
use steerd::bench::spec::{LoadSpec, Target};

/// Counts every allocation in the process.
struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

#[allow(unsafe_code)]
// SAFETY: every method forwards to `System` unchanged; counting touches only an atomic,
// which does not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// (requests, allocations) of one run.
fn measure(spec: &LoadSpec) -> (u64, usize) {
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    let report = load::run(spec).expect("load run");
    let after = ALLOCATIONS.load(Ordering::SeqCst);
    assert_eq!(report.merged.error_total(), 0, "{:?}", report.merged.errors);
    (report.merged.requests, after - before)
}

#[test]
fn allocations_do_not_grow_with_requests() {
    for close in [false, true] {
        let extra: &[&str] = if close { &["--close"] } else { &[] };
        let r = responder(extra);
        let addr = format!("127.0.0.1:{}", r.port);
        let mut spec = LoadSpec::new(Target::parse(&format!("http://{addr}/")).unwrap());
        spec.conns = 4;
        spec.threads = 2;
        spec.close = close;
        spec.duration = Duration::from_millis(300);
        let (short_reqs, short_allocs) = measure(&spec);
        spec.duration = Duration::from_millis(900);
        let (long_reqs, long_allocs) = measure(&spec);
        drop(r);
        // Hundreds to thousands of requests per run, and the same few dozen allocations
        // (threads, buffers, histograms) whatever the count: nothing per request.
        let runs = format!(
            "close={close}: {short_allocs} allocations for {short_reqs} requests, \
             {long_allocs} for {long_reqs}"
        );
        assert!(short_reqs.min(long_reqs) >= 100, "{runs}");
        assert!(short_allocs.max(long_allocs) <= 64, "{runs}");
        assert!(short_allocs.abs_diff(long_allocs) <= 8, "{runs}");
    }
}
