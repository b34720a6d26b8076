//! A test that cannot run its check says so, visibly, and under CI it fails instead.
//!
//! `skip_or_fail(name, why)` prints `skipped NAME: WHY` and returns, so the caller can
//! `return`; when `CI=true` it panics instead, unless `STEERD_ALLOW_SKIP` (a
//! comma-separated list of test names that `.ci/run` sets, each with its reason there)
//! names the test. A skip is never a silent pass on a CI machine.
//!
//! [`partly`] is for a check the runs CI makes are known to leave out (the steering
//! assertions under user-mode QEMU, which refuses the program, or a part that needs root):
//! the same line, never a failure.
//!
//! The line is written to the process's stderr itself, past the test harness's output
//! capture, so `cargo test` shows it among the results without `--nocapture`; the
//! summary line of `scripts/test-summary.sh` (`.ci/run`, `just test`, the QEMU suites)
//! counts the skips and lists them by name.

use std::io::Write;

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
    partly(name, why);
}

/// Says that `name` (a test, or a part of one) did not run its check (`why`), in the same
/// visible line as [`skip_or_fail`], without failing under CI.
pub fn partly(name: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "skipped {name}: {why}");
}

/// The name of the test running on this thread (libtest names the thread after the test;
/// the last path segment is what `STEERD_ALLOW_SKIP` lists).
pub fn this_test() -> String {
    let thread = std::thread::current();
    let path = thread.name().unwrap_or("unnamed");
    path.rsplit("::").next().unwrap_or(path).to_string()
}
