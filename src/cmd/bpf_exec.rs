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

use super::bpf_input::{failed, input_name, load_program, read_text};
use super::Failure;
use crate::args::bpf::Packet;
use asm_bpf::interp::{self, Context};
use asm_bpf::{check::check as kernel_check, Insn};

/// `steerd bpf check [FILE|-]`.
pub(crate) fn check(input: Option<&str>) -> Result<i32, Failure> {
    load_checked("check", input)?;
    println!("ok");
    Ok(0)
}

/// `steerd bpf run [FILE|-] [options]`.
pub(crate) fn run(input: Option<&str>, packet: Packet) -> Result<i32, Failure> {
    let ctx = Context {
        packet: packet.payload,
        len: packet.len,
        queue: packet.queue,
        rxhash: packet.rxhash,
        cpu: packet.cpu,
        rand: packet.rand,
        ..Context::default()
    };
    let prog = load_checked("run", input)?;
    println!("{}", interp::run(&prog, &ctx));
    Ok(0)
}

/// Reads, loads and checks the program; a failure names the input and the step.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn load_checked(sub: &str, path: Option<&str>) -> Result<Vec<Insn>, Failure> {
    let name = input_name(path);
    let fail = |why: &dyn core::fmt::Display| failed(sub, format!("{name}: {why}"));
    let text = read_text(path).map_err(|e| fail(&e))?;
    let prog = load_program(&text).map_err(|e| fail(&e))?;
    kernel_check(&prog).map_err(|e| fail(&e))?;
    Ok(prog)
}
