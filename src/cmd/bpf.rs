//! `steerd bpf asm|check|run|dis`: the asm-bpf toolchain on the command line.

use asm_bpf::Insn;

/// Runs `steerd bpf ...` and returns the exit status.
pub fn main(_args: &[String]) -> i32 {
    eprintln!("steerd: bpf: not built yet");
    2
}

/// Reads a program given as bpf_asm source or as bytecode in either bpf_asm output format.
pub fn load_program(_text: &str) -> Result<Vec<Insn>, String> {
    Err("not built yet".into())
}
