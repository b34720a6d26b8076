//! asm-bpf: a classic BPF toolchain exact to the Linux kernel's.
//!
//! Data flow: bpf_asm text --[`asm`]--> `Vec<Insn>` --[`check`]--> accepted program
//! --[`interp`]--> return value for a described context. [`fmt`] prints the two bpf_asm
//! output formats and reads them back; [`dis`] turns bytecode into source that assembles
//! to the same bytes; [`builder`] lets Rust code emit programs without text.
//!
//! The language, the kernel's `bpf_check_classic` rules and the interpreter semantics as
//! implemented are described in `docs/asm-bpf.md`. No dependencies, no `unsafe`.

pub mod asm;
pub mod builder;
pub mod check;
pub mod dis;
pub mod fmt;
pub mod insn;
pub mod interp;
mod lex;
mod names;
mod resolve;

pub use asm::{assemble, assemble_bytes, AsmError, AsmErrorKind};
pub use insn::Insn;
