//! `steerd bpf check` and `steerd bpf run`: the kernel's verdict on a program, and its
//! return value for a described packet.
//!
//! Input: the parsed `check`/`run` arguments (`args/bpf.rs`), and a program read from FILE or stdin (`-`
//! or no FILE) as bpf_asm source or bytecode in either bpf_asm output format
//! ([`super::bpf_input::load_program`]). Output:
//!
//! * `check`: `ok` on stdout and exit 0 if the kernel would accept the program; else
//!   exit 1 and `steerd: bpf: check: NAME: insn N: RULE` on stderr.
//! * `run`: the program's return value in decimal on stdout, exit 0. A program the
//!   kernel would refuse is not run: exit 1 with the rule on stderr, as for `check`.
//!
//! Unreadable or unparsable input exits 1 (bad flags were refused in stage 1). This module
//! does not assemble or check anything itself: `asm_bpf` does.

use crate::args::bpf::Packet;
use asm_bpf::interp::{self, Context};
use asm_bpf::{check::check as kernel_check, Insn};

/// `steerd bpf check [FILE|-]`.
pub fn check(input: Option<&str>) -> i32 {
    match load_checked("check", input) {
        Ok(_) => {
            println!("ok");
            0
        }
        Err(status) => status,
    }
}

/// `steerd bpf run [FILE|-] [options]`.
pub fn run(input: Option<&str>, packet: Packet) -> i32 {
    let ctx = Context {
        packet: packet.payload,
        len: packet.len,
        queue: packet.queue,
        rxhash: packet.rxhash,
        cpu: packet.cpu,
        rand: packet.rand,
        ..Context::default()
    };
    match load_checked("run", input) {
        Ok(prog) => {
            println!("{}", interp::run(&prog, &ctx));
            0
        }
        Err(status) => status,
    }
}

/// Reads, loads and checks the program; on failure prints why and gives the status.
fn load_checked(sub: &str, path: Option<&str>) -> Result<Vec<Insn>, i32> {
    let name = super::bpf_input::input_name(path);
    let fail = |why: String| {
        eprintln!("steerd: bpf: {sub}: {name}: {why}");
        1
    };
    let text = read_input(path).map_err(fail)?;
    let prog = super::bpf_input::load_program(&text).map_err(fail)?;
    kernel_check(&prog).map_err(|e| fail(e.to_string()))?;
    Ok(prog)
}

fn read_input(path: Option<&str>) -> Result<String, String> {
    let bytes = super::bpf_input::read_input(path).map_err(|e| format!("cannot read: {e}"))?;
    String::from_utf8(bytes).map_err(|_| "input is not UTF-8 text".to_string())
}
