//! The program input shared by every `steerd bpf` subcommand: FILE or stdin (`-` or no
//! FILE), as bpf_asm source or as bytecode in either bpf_asm output format.
//!
//! Input: an optional path, then the text read. Output: the bytes, the name used in
//! messages, or the instructions. It prints nothing and decides no exit status: the
//! subcommands (`bpf.rs`, `bpf_exec.rs`) do.

use asm_bpf::{fmt, Insn};
use std::io::Read;

/// Reads a program given as bpf_asm source or as bytecode in either bpf_asm output format.
pub fn load_program(text: &str) -> Result<Vec<Insn>, String> {
    if fmt::looks_like_bytecode(text) {
        fmt::parse_bytecode(text).map_err(|e| format!("bytecode: {e}"))
    } else {
        asm_bpf::assemble(text).map_err(|e| format!("bpf_asm source: {e}"))
    }
}

/// The name of an input path in messages: `<stdin>` for none or `-`.
pub(super) fn input_name(path: Option<&str>) -> &str {
    match path {
        None | Some("-") => "<stdin>",
        Some(p) => p,
    }
}

/// Reads FILE, or stdin for none or `-`.
pub(super) fn read_input(path: Option<&str>) -> std::io::Result<Vec<u8>> {
    match path {
        None | Some("-") => {
            let mut buf = Vec::new();
            std::io::stdin().read_to_end(&mut buf).map(|_| buf)
        }
        Some(p) => std::fs::read(p),
    }
}
