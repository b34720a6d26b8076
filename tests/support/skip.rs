//! A test that cannot run its check says so, visibly, and under CI it fails instead.
//!
//! `skip_or_fail(name, why)` prints `skipped NAME: WHY` and returns, so the caller can
//! `return`; when `CI=true` it panics instead, unless `STEERD_ALLOW_SKIP` (a
//! comma-separated list of test names that `.ci/run` builds from `.ci/allowed-skips`,
//! where each name has its lane and its reason) names the test: the test function
//! running on this thread, or the first word of `NAME`, which may name a part of a test
//! (`a_test (the --user part)`). A skip is never a silent pass on a CI machine.
//!
//! The line is written to the process's stderr itself, past the test harness's output
//! capture, so `cargo test` shows it among the results without `--nocapture`, and
//! appended to the file `STEERD_SKIP_LOG` names, where `scripts/test-summary.sh`
//! (`.ci/run`, `just test`, the QEMU suites) counts the skips and lists them by name.

use std::io::Write;

/// True when this run is under CI (`CI=true`, as `.ci/run` and most CI systems set it).
pub(crate) fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Says that the test `name` (or a part of it, see the module doc) cannot run its check
/// (`why`); panics under CI unless the test is on `STEERD_ALLOW_SKIP`.
pub(crate) fn skip_or_fail(name: &str, why: &str) {
    let first = name.split_whitespace().next().unwrap_or(name);
    let running = this_test();
    let allowed = std::env::var("STEERD_ALLOW_SKIP").is_ok_and(|list| {
        list.split(',')
            .any(|n| [first, &running].contains(&n.trim()))
    });
    if under_ci() && !allowed {
        panic!("{name} cannot run under CI: {why} (a skip is not a pass)");
    }
    let line = format!("skipped {name}: {why}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
    record(&line);
}

/// Appends the skip's line to the file `STEERD_SKIP_LOG` names, when set: the test
/// scripts count skips there, whatever other output the line met on stderr. One append
/// of one short line, so lines from parallel tests and processes never mix.
fn record(line: &str) {
    let Some(path) = std::env::var_os("STEERD_SKIP_LOG") else {
        return;
    };
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path);
    if let Ok(mut file) = file {
        let _ = file.write_all(line.as_bytes());
    }
}

/// The name of the test running on this thread (libtest names the thread after the test;
/// the last path segment is what `STEERD_ALLOW_SKIP` lists).
pub(crate) fn this_test() -> String {
    let thread = std::thread::current();
    let path = thread.name().unwrap_or("unnamed");
    path.rsplit("::").next().unwrap_or(path).to_string()
}
