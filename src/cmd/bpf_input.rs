//! The program input shared by every `steerd bpf` subcommand: FILE or stdin (`-` or no
//! FILE), as bpf_asm source or as bytecode in either bpf_asm output format.
//!
//! Input: an optional path, then the text read. Output: the bytes, the name used in
//! messages, or the instructions; or an [`InputError`] that says which step failed, and
//! the [`Failure`] of a subcommand. It prints nothing and decides no exit status: the
//! subcommands (`bpf.rs`, `bpf_exec.rs`) do.

use super::Failure;
use asm_bpf::{fmt, Insn};
use core::fmt::{Display, Formatter};
use std::io::Read;

/// Why a program could not be had from its input.
#[derive(Debug)]
pub enum InputError {
    /// FILE or stdin could not be read.
    Unreadable(std::io::Error),
    /// The bytes are not UTF-8 text.
    NotText,
    /// Bytecode that does not parse.
    Bytecode(fmt::BytecodeError),
    /// bpf_asm source that does not assemble.
    Source(asm_bpf::AsmError),
}

impl Display for InputError {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut Formatter<'_>) -> core::fmt::Result {
        match self {
            InputError::Unreadable(e) => write!(f, "cannot read: {e}"),
            InputError::NotText => f.write_str("input is not UTF-8 text"),
            InputError::Bytecode(e) => write!(f, "bytecode: {e}"),
            InputError::Source(e) => write!(f, "bpf_asm source: {e}"),
        }
    }
}

/// A failure of `steerd bpf SUB` (stage `bpf`, exit status 1).
pub(super) fn failed(sub: &str, why: impl Display) -> Failure {
    Failure::new("bpf", format!("{sub}: {why}"))
}

/// Reads a program given as bpf_asm source or as bytecode in either bpf_asm output format.
pub fn load_program(text: &str) -> Result<Vec<Insn>, InputError> {
    if fmt::looks_like_bytecode(text) {
        fmt::parse_bytecode(text).map_err(InputError::Bytecode)
    } else {
        asm_bpf::assemble(text).map_err(InputError::Source)
    }
}

/// The text of FILE or stdin.
pub(super) fn read_text(path: Option<&str>) -> Result<String, InputError> {
    let bytes = read_input(path).map_err(InputError::Unreadable)?;
    String::from_utf8(bytes).map_err(|_| InputError::NotText)
}

/// The name of an input path in messages: `<stdin>` for none or `-`.
pub(super) fn input_name(path: Option<&str>) -> &str {
    match path {
        None | Some("-") => "<stdin>",
        Some(p) => p,
    }
}

/// Reads FILE, or stdin for none or `-`.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(super) fn read_input(path: Option<&str>) -> std::io::Result<Vec<u8>> {
    match path {
        None | Some("-") => {
            let mut buf = Vec::new();
            std::io::stdin().read_to_end(&mut buf).map(|_| buf)
        }
        Some(p) => std::fs::read(p),
    }
}
