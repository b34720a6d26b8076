//! `steerd bpf check` and `steerd bpf run`: the kernel's verdict on a program, and its
//! return value for a described packet.
//!
//! Input: the arguments after `check`/`run`, and a program read from FILE or stdin (`-`
//! or no FILE) as bpf_asm source or bytecode in either bpf_asm output format
//! ([`super::bpf_input::load_program`]). Output:
//!
//! * `check`: `ok` on stdout and exit 0 if the kernel would accept the program; else
//!   exit 1 and `steerd: bpf: check: NAME: insn N: RULE` on stderr.
//! * `run`: the program's return value in decimal on stdout, exit 0. A program the
//!   kernel would refuse is not run: exit 1 with the rule on stderr, as for `check`.
//!
//! Unreadable or unparsable input exits 1; bad flags or flag values exit 2. This module
//! does not assemble or check anything itself: `asm_bpf` does.

use asm_bpf::interp::{self, Context};
use asm_bpf::{check::check as kernel_check, Insn};

const CHECK_USAGE: &str = "usage: steerd bpf check [FILE|-]\n";
const RUN_USAGE: &str = "usage: steerd bpf run [FILE|-] [--cpu N] [--queue Q] [--rxhash H] \
                         [--rand R] [--len L] [--payload HEX]\n";

/// `steerd bpf check [FILE|-]`; `args` are the arguments after `check`.
pub fn check(args: &[String]) -> i32 {
    let mut path = None;
    for a in args {
        if let Err(why) = positional(&mut path, a) {
            return usage("check", &why, CHECK_USAGE);
        }
    }
    match load_checked("check", path.as_deref()) {
        Ok(_) => {
            println!("ok");
            0
        }
        Err(status) => status,
    }
}

/// `steerd bpf run [FILE|-] [options]`; `args` are the arguments after `run`.
pub fn run(args: &[String]) -> i32 {
    let (path, ctx) = match run_args(args) {
        Ok(parsed) => parsed,
        Err(why) => return usage("run", &why, RUN_USAGE),
    };
    match load_checked("run", path.as_deref()) {
        Ok(prog) => {
            println!("{}", interp::run(&prog, &ctx));
            0
        }
        Err(status) => status,
    }
}

fn usage(sub: &str, why: &str, text: &str) -> i32 {
    eprint!("steerd: bpf: {sub}: {why}\n{text}");
    2
}

/// Records `a` as the one input path, or says why it cannot be one.
fn positional(path: &mut Option<String>, a: &str) -> Result<(), String> {
    if a.starts_with('-') && a != "-" {
        return Err(format!("unknown option `{a}`"));
    }
    if let Some(first) = path {
        return Err(format!("more than one input: `{first}` and `{a}`"));
    }
    *path = Some(a.to_string());
    Ok(())
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

/// Parses `run`'s arguments into the input path and the packet context.
fn run_args(args: &[String]) -> Result<(Option<String>, Context), String> {
    let mut path = None;
    let mut ctx = Context::default();
    let mut len = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        if !flag.starts_with("--") {
            positional(&mut path, a)?;
            continue;
        }
        let value = match inline.or_else(|| it.next().cloned()) {
            Some(v) => v,
            None => return Err(format!("{flag} needs a value")),
        };
        match flag {
            "--cpu" => ctx.cpu = number(flag, &value, u32::MAX.into())? as u32,
            "--queue" => ctx.queue = number(flag, &value, u16::MAX.into())? as u16,
            "--rxhash" => ctx.rxhash = number(flag, &value, u32::MAX.into())? as u32,
            "--rand" => ctx.rand = number(flag, &value, u32::MAX.into())? as u32,
            "--len" => len = Some(number(flag, &value, u32::MAX.into())? as u32),
            "--payload" => ctx.packet = hex(&value)?,
            _ => return Err(format!("unknown option `{flag}`")),
        }
    }
    let payload = u32::try_from(ctx.packet.len()).map_err(|_| "--payload: too long")?;
    ctx.len = match len {
        Some(l) if l < payload => {
            return Err(format!(
                "--len {l} is shorter than the payload ({payload} bytes)"
            ));
        }
        Some(l) => l,
        None => payload,
    };
    Ok((path, ctx))
}

/// A decimal or `0x` hexadecimal number no larger than `max`.
fn number(flag: &str, text: &str, max: u64) -> Result<u64, String> {
    let (digits, radix) = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => (hex, 16),
        None => (text, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(format!("{flag} {text}: not a number"));
    }
    match u64::from_str_radix(digits, radix) {
        Ok(v) if v <= max => Ok(v),
        _ => Err(format!("{flag} {text}: larger than {max}")),
    }
}

/// Bytes written as hex digit pairs (`0a1B..`), possibly empty.
fn hex(text: &str) -> Result<Vec<u8>, String> {
    let nibble = |c: u8| (c as char).to_digit(16);
    let digits = text.as_bytes();
    if digits.len() % 2 != 0 {
        return Err(format!(
            "--payload: odd number of hex digits ({})",
            digits.len()
        ));
    }
    digits
        .chunks(2)
        .map(|pair| match (nibble(pair[0]), nibble(pair[1])) {
            (Some(hi), Some(lo)) => Ok((hi * 16 + lo) as u8),
            _ => Err(format!(
                "--payload: `{}` is not a hex byte",
                pair.escape_ascii()
            )),
        })
        .collect()
}
