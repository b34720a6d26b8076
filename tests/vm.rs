//! The static binary on real kernels with the topologies steerd is for: emulated
//! multi-socket NUMA guests booted by `scripts/vm/run.sh` (QEMU, TCG), one guest per
//! layout, every check for that layout in one boot.
//!
//! Input: the static binary from `scripts/static.sh` (or `STEERD_STATIC_BIN`,
//! `STEERD_STATIC_BIN_ARM64`). Output: pass, or a failure naming the check and the
//! guest's lines. Each test skips with one printed line when QEMU, the binary or a
//! guest kernel is missing, or when `STEERD_VM=0`. Timing inside a guest means nothing
//! (its vCPUs are threads on two host cores): only behaviour is checked.

mod vm {
    pub mod harness;
    pub mod layout;
}

use std::time::Duration;
use vm::harness::{boot, Guest};
use vm::layout::{Layout, ARM64_KUNPENG, X86_KUNPENG, X86_NUMA4_SMT32, X86_XEON};

/// The guest side: each section starts with a `== NAME` line.
const SNIPPET: &str = r#"
echo "== sys"; sys_layout
echo "== version"; steerd --version
"#;

fn run(test: &str, layout: &Layout, timeout_secs: u64) -> Option<Guest> {
    boot(test, layout, SNIPPET, Duration::from_secs(timeout_secs))
}

fn check_all(guest: &Guest, layout: &Layout) {
    assert_eq!(guest.status, 0, "guest snippet failed:\n{}", guest.stderr);
    layout.check_sys(guest.section("sys"));
    let version = guest.section("version");
    assert!(
        version.len() == 1 && version[0].starts_with("steerd "),
        "steerd --version in the guest printed {version:?}"
    );
}

#[test]
fn x86_kunpeng920_2x2() {
    if let Some(guest) = run("x86_kunpeng920_2x2", &X86_KUNPENG, 120) {
        check_all(&guest, &X86_KUNPENG);
    }
}

#[test]
fn x86_xeon_2s_smt() {
    if let Some(guest) = run("x86_xeon_2s_smt", &X86_XEON, 120) {
        check_all(&guest, &X86_XEON);
    }
}

#[test]
fn x86_numa4_smt32() {
    if let Some(guest) = run("x86_numa4_smt32", &X86_NUMA4_SMT32, 240) {
        check_all(&guest, &X86_NUMA4_SMT32);
    }
}

#[test]
fn arm64_kunpeng920_clusters() {
    if let Some(guest) = run("arm64_kunpeng920_clusters", &ARM64_KUNPENG, 240) {
        check_all(&guest, &ARM64_KUNPENG);
    }
}
