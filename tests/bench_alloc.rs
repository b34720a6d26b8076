//! The load generator allocates nothing per request: a counting global allocator watches
//! whole `steerd::bench::load::run` calls against a reference responder in another
//! process, a short run and a run three times longer, keep-alive and close. Each run
//! completes hundreds to thousands of requests with the same few dozen allocations, after
//! an uncounted first run.
//! One test only, so no other test thread allocates while it counts: a binary of its own
//! (the counting allocator is the whole process's, and it counts every thread), not a
//! module of `tests/tests.rs` or `tests/alloc/`.

mod support;

use std::time::Duration;
use support::alloc::{allocations, watch_every_thread, Counting};
use support::responder::responder;

use steerd::bench::load;
use steerd::bench::spec::{LoadSpec, Target};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// (requests, allocations) of one run.
fn measure(spec: &LoadSpec) -> (u64, u64) {
    let before = allocations();
    let report = load::run(spec).expect("load run");
    let after = allocations();
    assert_eq!(report.merged.error_total(), 0, "{:?}", report.merged.errors);
    (report.merged.requests, after - before)
}

#[test]
fn allocations_do_not_grow_with_requests() {
    // The load generator's threads allocate too: count every thread.
    watch_every_thread(true);
    for close in [false, true] {
        let extra: &[&str] = if close { &["--close"] } else { &[] };
        let r = responder(extra);
        let addr = format!("127.0.0.1:{}", r.port);
        let mut spec = LoadSpec::new(Target::parse(&format!("http://{addr}/")).unwrap());
        spec.conns = 4;
        spec.threads = 2;
        spec.close = close;
        // A first run, not counted: the process's first run took 31 to 52 allocations
        // where every later one takes a steady 27 (keep-alive), what is set up once per
        // process, which would otherwise be charged to the short run.
        spec.duration = Duration::from_millis(100);
        measure(&spec);
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
        // Growth with the count is the defect; a run may also take a few fewer.
        assert!(long_allocs <= short_allocs + 8, "{runs}");
    }
}
