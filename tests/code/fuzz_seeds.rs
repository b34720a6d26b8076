//! The fuzz targets' seed corpora (`fuzz/corpus/TARGET/`) through the targets' own
//! properties (`fuzz/props/TARGET.rs`, shared with `fuzz/fuzz_targets/`), as an ordinary
//! test: no libFuzzer, so it runs wherever the suite does, under user-mode QEMU on
//! 32-bit ARM, RISC-V and big-endian s390x too (`scripts/test-qemu.sh`).
//!
//! Input: every file of each corpus, in name order. Output: pass, or one failure naming
//! every seed whose properties did not hold and the panic each gave.

#[path = "../../fuzz/props/assemble.rs"]
mod assemble;
#[path = "../../fuzz/props/check_and_run.rs"]
mod check_and_run;
#[path = "../../fuzz/props/chunked.rs"]
pub(crate) mod chunked;
#[path = "../../fuzz/props/config_file.rs"]
mod config_file;
#[path = "../../fuzz/props/deflate.rs"]
mod deflate;
#[path = "../../fuzz/props/file_answer.rs"]
mod file_answer;
#[path = "../../fuzz/props/parse_request.rs"]
mod parse_request;
#[path = "../../fuzz/props/proxy_header.rs"]
mod proxy_header;
#[path = "../../fuzz/props/rules.rs"]
mod rules;
#[path = "../../fuzz/props/topology.rs"]
mod topology;
#[path = "../../fuzz/props/upstream_head.rs"]
mod upstream_head;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

/// Runs `holds` on every seed of `fuzz/corpus/target`; fails naming each seed that broke
/// a property. A corpus with no seed fails too (a renamed directory must not pass).
fn seeds(target: &str, holds: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("corpus entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no seeds in {}", dir.display());
    let mut broken = Vec::new();
    for file in &files {
        let data = std::fs::read(file).expect("seed");
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| holds(&data))) {
            let why = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            broken.push(format!("{}: {why}", file.display()));
        }
    }
    assert!(
        broken.is_empty(),
        "{target}: seeds that break its properties:\n{}",
        broken.join("\n")
    );
    println!("{target}: {} seeds hold", files.len());
}

#[test]
fn assemble_seeds_hold() {
    seeds("assemble", assemble::holds);
}

#[test]
fn check_and_run_seeds_hold() {
    seeds("check_and_run", check_and_run::holds);
}

#[test]
fn deflate_seeds_hold() {
    seeds("deflate", deflate::holds);
}

#[test]
fn config_file_seeds_hold() {
    seeds("config_file", config_file::holds);
}

#[test]
fn rules_seeds_hold() {
    seeds("rules", rules::holds);
}

#[test]
fn file_answer_seeds_hold() {
    seeds("file_answer", file_answer::holds);
}

#[test]
fn parse_request_seeds_hold() {
    seeds("parse_request", parse_request::holds);
}

#[test]
fn proxy_header_seeds_hold() {
    seeds("proxy_header", proxy_header::holds);
}

#[test]
fn topology_seeds_hold() {
    seeds("topology", topology::holds);
}

#[test]
fn chunked_seeds_hold() {
    seeds("chunked", chunked::holds);
}

#[test]
fn upstream_head_seeds_hold() {
    seeds("upstream_head", upstream_head::holds);
}
