//! `.ci/allowed-skips`, the only skips a CI run accepts, stays true to the code: every
//! line names a lane `.ci/run` has, a test that exists, and a reason.
//!
//! Input: the file and the sources of the workspace. Output: a failing test naming the
//! line that is wrong (a misspelt or removed test would otherwise sit on the list and
//! allow nothing, or outlive the test it excused).

use std::path::{Path, PathBuf};

/// The lanes of `.ci/run` that read the list (its `allowed_skips` calls).
const LANES: &[&str] = &["x86_64", "subset"];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The text of every `.rs` file under `dir`, recursively.
fn sources(dir: &Path, out: &mut String) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push_str(&std::fs::read_to_string(&p).unwrap_or_default());
        }
    }
}

#[test]
fn every_allowed_skip_names_a_lane_a_test_and_a_reason() {
    let list =
        std::fs::read_to_string(repo().join(".ci/allowed-skips")).expect(".ci/allowed-skips");
    let mut code = String::new();
    for dir in ["src", "tests", "asm-bpf/src", "asm-bpf/tests"] {
        sources(&repo().join(dir), &mut code);
    }
    let run = std::fs::read_to_string(repo().join(".ci/run")).expect(".ci/run");
    let mut entries = 0;
    for (n, line) in list.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let at = format!(".ci/allowed-skips:{}: {line}", n + 1);
        assert!(fields.len() >= 3, "{at}: expected LANE TEST REASON");
        let (lane, test) = (fields[0], fields[1]);
        assert!(
            LANES.contains(&lane),
            "{at}: lane {lane:?} is not one of {LANES:?}"
        );
        assert!(
            run.contains(&format!("allowed_skips {lane}")),
            "{at}: .ci/run never reads lane {lane}"
        );
        assert!(
            code.contains(&format!("fn {test}(")),
            "{at}: no test fn {test}"
        );
        entries += 1;
    }
    assert!(entries > 0, ".ci/allowed-skips lists nothing");
}
