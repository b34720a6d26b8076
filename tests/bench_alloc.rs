//! The load generator allocates nothing per request: a counting global allocator watches
//! whole `steerd::bench::load::run` calls against a reference responder in another
//! process, a short run and a run four times longer, keep-alive and close. The longer
//! run completes thousands more requests; its allocation count must not grow with them.
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
        spec.duration = Duration::from_millis(150);
        let (short_reqs, short_allocs) = measure(&spec);
        spec.duration = Duration::from_millis(600);
        let (long_reqs, long_allocs) = measure(&spec);
        drop(r);
        assert!(
            long_reqs > short_reqs + 500,
            "close={close}: {short_reqs} then {long_reqs} requests"
        );
        // The same setup (threads, buffers, histograms) each time; nothing per request.
        assert!(
            long_allocs <= short_allocs + 8,
            "close={close}: {short_allocs} allocations for {short_reqs} requests, \
             {long_allocs} for {long_reqs}"
        );
    }
}
