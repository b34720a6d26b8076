//! The checker against its vectors: every rule has accepted and refused programs in
//! `tests/data/check_vectors.txt` (plus the long ones in `common`), and the checker must
//! give the listed verdict with the exact message. `kernel_checker.rs` runs the same
//! programs through the kernel.

mod common;

use asm_bpf::check::{check, opcode_allowed, CheckError, Rule, ALLOWED_OPCODES};
use asm_bpf::insn::*;
use asm_bpf::Insn;

#[test]
fn every_vector_gets_its_verdict_and_message() {
    let vectors = common::check_vectors();
    assert!(vectors.len() > 90, "only {} vectors", vectors.len());
    let mut failures = Vec::new();
    for v in &vectors {
        let got = check(&v.prog).err().map(|e| e.to_string());
        if got != v.expect {
            failures.push(format!(
                "{}: expected {:?}, got {:?}",
                v.name, v.expect, got
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_rule_has_an_accepted_and_a_refused_vector() {
    let vectors = common::check_vectors();
    let refused = |needle: &str| {
        vectors
            .iter()
            .any(|v| v.expect.as_deref().is_some_and(|e| e.contains(needle)))
    };
    for needle in [
        "program length",
        "unknown opcode",
        "ret x",
        "division or modulo",
        "shift by",
        "scratch index",
        "jump out of range",
        "unknown ancillary",
        "last instruction",
        "may be read before",
    ] {
        assert!(refused(needle), "no refused vector for {needle:?}");
    }
    assert!(vectors.iter().filter(|v| v.expect.is_none()).count() > 40);
}

#[test]
fn opcode_table_has_49_distinct_entries_without_ret_x() {
    let mut codes = ALLOWED_OPCODES.to_vec();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), 49);
    assert!(!opcode_allowed(BPF_RET | BPF_X));
    assert!((0x100..=u16::MAX).all(|c| !opcode_allowed(c)));
}

#[test]
fn error_reports_rule_and_instruction() {
    let prog = [
        Insn::stmt(BPF_LD | BPF_IMM, 1),
        Insn::stmt(BPF_ALU | BPF_DIV | BPF_K, 0),
    ];
    assert_eq!(
        check(&prog),
        Err(CheckError::Insn {
            pc: 1,
            rule: Rule::DivisionByZero
        })
    );
    assert_eq!(
        check(&[]).unwrap_err().to_string(),
        "program length 0 is outside 1..=4096"
    );
}

#[test]
fn random_programs_never_panic_the_checker() {
    let mut rng = common::Rng(7);
    let mut accepted = 0;
    for _ in 0..20_000 {
        let prog = common::random_program(&mut rng);
        accepted += usize::from(check(&prog).is_ok());
    }
    // The generator is meant to sit at the boundary: both verdicts must be common.
    assert!((2_000..18_000).contains(&accepted), "{accepted} accepted");
}
