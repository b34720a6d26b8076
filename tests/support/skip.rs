//! A test that cannot run its check says so, and under CI it fails instead.
//!
//! `skip_or_fail(name, why)` prints `skipped NAME: WHY` and returns, so the caller can
//! `return`; when `CI=true` it panics instead, unless `STEERD_ALLOW_SKIP` (a
//! comma-separated list of test names that `.ci/run` sets, each with its reason there)
//! names the test. A skip is never a silent pass on a CI machine.

/// True when this run is under CI (`CI=true`, as `.ci/run` and most CI systems set it).
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Says that the test `name` cannot run its check (`why`); panics under CI unless the
/// test is on `STEERD_ALLOW_SKIP`.
pub fn skip_or_fail(name: &str, why: &str) {
    let allowed = std::env::var("STEERD_ALLOW_SKIP")
        .is_ok_and(|list| list.split(',').any(|n| n.trim() == name));
    if under_ci() && !allowed {
        panic!("{name} cannot run under CI: {why} (a skip is not a pass)");
    }
    eprintln!("skipped {name}: {why}");
}
