//! Bounds on latency and ordering under load, which hold on a quiet machine and say
//! nothing about correctness on a loaded one (a CI machine beside other work, an
//! emulator): checked only when benchmarking, never in the suite.
//!
//! `latency_bound(test, holds, what)` asserts `holds` when `STEERD_LATENCY_BOUNDS=1`
//! (`scripts/latency-bounds.sh` sets it and runs each such test alone, several times);
//! otherwise it prints what was measured and whether the bound held, and the test goes on
//! to pass or fail on what does not depend on the machine's load (nothing lost, the
//! refusals, the counters).

/// True when the bounds are asserted (`STEERD_LATENCY_BOUNDS=1`).
pub(crate) fn asserted() -> bool {
    std::env::var("STEERD_LATENCY_BOUNDS").as_deref() == Ok("1")
}

/// Asserts `holds` when benchmarking; otherwise says what was measured.
pub(crate) fn latency_bound(test: &str, holds: bool, what: &str) {
    if asserted() {
        assert!(holds, "{test}: latency bound: {what}");
    } else {
        let verdict = if holds { "held" } else { "missed" };
        eprintln!(
            "{test}: latency bound {verdict}, not asserted in the suite \
             (scripts/latency-bounds.sh asserts it): {what}"
        );
    }
}
