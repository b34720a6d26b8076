//! Fuzz target `assemble`: any bytes as bpf_asm source.
//!
//! Never panics. Whatever is accepted is valid bpf_asm output: 1..=4096 instructions
//! that both output formats print and read back unchanged, that the disassembler writes
//! as source assembling to the same bytes, and that `steerd bpf`'s loader reads back.

use asm_bpf::{assemble, assemble_bytes, dis, fmt};

/// The properties above, for one input (the fuzz target and tests/code/fuzz_seeds.rs call it).
pub(super) fn holds(data: &[u8]) {
    let prog = match assemble_bytes(data) {
        Ok(prog) => prog,
        Err(e) => {
            assert!(e.line >= 1 && e.column >= 1, "{e}");
            let _ = (e.to_string(), e.stdout_bytes());
            return;
        }
    };
    assert!(!prog.is_empty() && prog.len() <= 4096);
    let default = fmt::format_default(&prog);
    let c = fmt::format_c(&prog);
    assert_eq!(fmt::parse_bytecode(&default).as_ref(), Ok(&prog));
    assert_eq!(fmt::parse_bytecode(&c).as_ref(), Ok(&prog));
    assert_eq!(
        steerd::cmd::bpf_input::load_program(&default).ok().as_ref(),
        Some(&prog)
    );
    let text = dis::disassemble_exact(&prog).expect("bpf_asm output has a bpf_asm form");
    assert_eq!(assemble(&text).as_ref(), Ok(&prog), "{text}");
}
