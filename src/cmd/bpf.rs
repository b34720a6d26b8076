//! `steerd bpf asm|dis|check|run`: the asm-bpf toolchain on the command line.
//!
//! Input: the parsed `bpf` arguments (`args/bpf.rs`), and a program read from FILE or stdin (`-` or no
//! FILE). Output: `asm` prints exactly what the kernel's `tools/bpf/bpf_asm` prints on
//! stdout and exits as it does (0, or 1 on any error, with `unknown character 'C'` on
//! stdout for a lexer error as bpf_asm does); the message goes to stderr as
//! `steerd: bpf: asm: FILE:LINE:COLUMN: <bpf_asm's message>`. `dis` prints bpf_asm source.
//! `check` and `run` live in [`super::bpf_exec`]. Usage errors are refused in stage 1
//! (exit 2).

use super::bpf_input::{input_name, load_program, read_input};
use crate::args::bpf::Bpf;
use asm_bpf::{dis, fmt};
use std::io::Write;

/// Runs a parsed `steerd bpf` command and returns the exit status.
pub fn main(cmd: Bpf) -> i32 {
    match cmd {
        Bpf::Asm { c_format, input } => asm(c_format, input.as_deref()),
        Bpf::Dis { input } => dis(input.as_deref()),
        Bpf::Check { input } => super::bpf_exec::check(input.as_deref()),
        Bpf::Run { input, packet } => super::bpf_exec::run(input.as_deref(), packet),
    }
}

/// Reads FILE or stdin, or says why not.
fn read(path: Option<&str>) -> Result<Vec<u8>, String> {
    read_input(path).map_err(|e| format!("cannot read {}: {e}", input_name(path)))
}

fn write_stdout(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes).and_then(|()| out.flush());
}

/// `steerd bpf asm [-c] [FILE|-]`
fn asm(c_format: bool, path: Option<&str>) -> i32 {
    let src = match read(path) {
        Ok(s) => s,
        Err(why) => {
            eprintln!("steerd: bpf: asm: {why}");
            return 1;
        }
    };
    match asm_bpf::assemble_bytes(&src) {
        Ok(prog) => {
            let text = match c_format {
                true => fmt::format_c(&prog),
                false => fmt::format_default(&prog),
            };
            write_stdout(text.as_bytes());
            0
        }
        Err(e) => {
            write_stdout(&e.stdout_bytes());
            eprintln!("steerd: bpf: asm: {}:{e}", input_name(path));
            1
        }
    }
}

/// `steerd bpf dis [FILE|-]`: also accepts source, which it prints normalised.
fn dis(path: Option<&str>) -> i32 {
    let prog = read(path).and_then(|bytes| {
        let text = String::from_utf8(bytes).map_err(|_| "input is not UTF-8 text".to_string())?;
        load_program(&text)
    });
    let prog = match prog {
        Ok(p) => p,
        Err(why) => {
            eprintln!("steerd: bpf: dis: {}: {why}", input_name(path));
            return 1;
        }
    };
    write_stdout(dis::disassemble(&prog).as_bytes());
    let problems = dis::inexpressible(&prog);
    for p in &problems {
        eprintln!("steerd: bpf: dis: {p} (written as a `raw` line, which does not assemble)");
    }
    i32::from(!problems.is_empty())
}
