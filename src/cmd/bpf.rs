//! `steerd bpf asm|dis|check|run`: the asm-bpf toolchain on the command line.
//!
//! Input: the parsed `bpf` arguments (`args/bpf.rs`), and a program read from FILE or stdin (`-` or no
//! FILE). Output: `asm` prints exactly what the kernel's `tools/bpf/bpf_asm` prints on
//! stdout and exits as it does (0, or 1 on any error, with `unknown character 'C'` on
//! stdout for a lexer error as bpf_asm does); the message goes to stderr as
//! `steerd: bpf: asm: FILE:LINE:COLUMN: <bpf_asm's message>`. `dis` prints bpf_asm source.
//! `check` and `run` live in [`super::bpf_exec`]. Usage errors are refused in stage 1
//! (exit 2).

use super::bpf_input::{failed, input_name, load_program, read_input, InputError};
use super::Failure;
use crate::args::bpf::Bpf;
use asm_bpf::{dis, fmt};
use std::io::Write;

/// Runs a parsed `steerd bpf` command: its exit status, or the failure to print.
pub(crate) fn main(cmd: Bpf) -> Result<i32, Failure> {
    match cmd {
        Bpf::Asm { c_format, input } => asm(c_format, input.as_deref()),
        Bpf::Dis { input } => dis(input.as_deref()),
        Bpf::Check { input } => super::bpf_exec::check(input.as_deref()),
        Bpf::Run { input, packet } => super::bpf_exec::run(input.as_deref(), packet),
    }
}

/// FILE or stdin that could not be read: `cannot read NAME: why`.
struct Unreadable<'a> {
    name: &'a str,
    error: std::io::Error,
}

impl core::fmt::Display for Unreadable<'_> {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "cannot read {}: {}", self.name, self.error)
    }
}

/// Reads FILE or stdin.
fn read(path: Option<&str>) -> Result<Vec<u8>, Unreadable<'_>> {
    read_input(path).map_err(|error| Unreadable {
        name: input_name(path),
        error,
    })
}

#[cfg_attr(feature = "cold-size", optimize(size))]
fn write_stdout(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes).and_then(|()| out.flush());
}

/// `steerd bpf asm [-c] [FILE|-]`
fn asm(c_format: bool, path: Option<&str>) -> Result<i32, Failure> {
    let src = read(path).map_err(|why| failed("asm", why))?;
    match asm_bpf::assemble_bytes(&src) {
        Ok(prog) => {
            let text = match c_format {
                true => fmt::format_c(&prog),
                false => fmt::format_default(&prog),
            };
            write_stdout(text.as_bytes());
            Ok(0)
        }
        Err(e) => {
            write_stdout(&e.stdout_bytes());
            Err(failed("asm", format!("{}:{e}", input_name(path))))
        }
    }
}

/// `steerd bpf dis [FILE|-]`: also accepts source, which it prints normalised.
fn dis(path: Option<&str>) -> Result<i32, Failure> {
    let name = input_name(path);
    let bytes = read(path).map_err(|why| failed("dis", format!("{name}: {why}")))?;
    let text = String::from_utf8(bytes).map_err(|_| InputError::NotText);
    let prog = text
        .and_then(|t| load_program(&t))
        .map_err(|why| failed("dis", format!("{name}: {why}")))?;
    write_stdout(dis::disassemble(&prog).as_bytes());
    let problems = dis::inexpressible(&prog);
    for p in &problems {
        eprintln!("steerd: bpf: dis: {p} (written as a `raw` line, which does not assemble)");
    }
    Ok(i32::from(!problems.is_empty()))
}
