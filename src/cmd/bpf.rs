//! `steerd bpf asm|dis|check|run`: the asm-bpf toolchain on the command line.
//!
//! Input: the arguments after `bpf`, and a program read from FILE or stdin (`-` or no
//! FILE). Output: `asm` prints exactly what the kernel's `tools/bpf/bpf_asm` prints on
//! stdout and exits as it does (0, or 1 on any error, with `unknown character 'C'` on
//! stdout for a lexer error as bpf_asm does); the message goes to stderr as
//! `steerd: bpf: asm: FILE:LINE:COLUMN: <bpf_asm's message>`. `dis` prints bpf_asm source.
//! `check` and `run` live in [`super::bpf_exec`]. Usage errors exit 2.

use super::bpf_input::{input_name, load_program, read_input};
use asm_bpf::{dis, fmt};
use std::io::Write;

/// The usage text, printed for `--help` and after a usage error.
pub const USAGE: &str = "\
usage: steerd bpf asm [-c] [FILE|-]   assemble bpf_asm source; print as bpf_asm does (-c: C format)
       steerd bpf dis [FILE|-]        bytecode (either bpf_asm output format) to bpf_asm source
       steerd bpf check [FILE|-]      would the kernel accept this program?
       steerd bpf run [FILE|-] [--cpu N] [--queue Q] [--rxhash H] [--rand R] [--len L] [--payload HEX]
";

/// Runs `steerd bpf ...` and returns the exit status.
pub fn main(args: &[String]) -> i32 {
    let Some((sub, rest)) = args.split_first() else {
        return usage_error("no subcommand");
    };
    match sub.as_str() {
        "asm" => asm(rest),
        "dis" => dis(rest),
        "check" => super::bpf_exec::check(rest),
        "run" => super::bpf_exec::run(rest),
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            0
        }
        other => usage_error(&format!("unknown subcommand `{other}`")),
    }
}

fn usage_error(why: &str) -> i32 {
    eprint!("steerd: bpf: {why}\n{USAGE}");
    2
}

/// The parsed arguments of `asm` and `dis`: flags allowed and the one input.
struct Input {
    c_format: bool,
    path: Option<String>,
}

fn parse_input_args(args: &[String], allow_c: bool) -> Result<Input, String> {
    let mut input = Input {
        c_format: false,
        path: None,
    };
    for a in args {
        match a.as_str() {
            "-c" if allow_c => input.c_format = true,
            flag if flag.starts_with('-') && flag != "-" => {
                return Err(format!("unknown option `{flag}`"))
            }
            _ => set_path(&mut input, a)?,
        }
    }
    Ok(input)
}

fn set_path(input: &mut Input, a: &str) -> Result<(), String> {
    if input.path.is_some() {
        return Err(format!("more than one input: `{a}`"));
    }
    input.path = Some(a.to_string());
    Ok(())
}

impl Input {
    /// The name used in messages.
    fn name(&self) -> &str {
        input_name(self.path.as_deref())
    }

    fn read(&self) -> Result<Vec<u8>, String> {
        read_input(self.path.as_deref()).map_err(|e| format!("cannot read {}: {e}", self.name()))
    }
}

fn write_stdout(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes).and_then(|()| out.flush());
}

/// `steerd bpf asm [-c] [FILE|-]`
fn asm(args: &[String]) -> i32 {
    let input = match parse_input_args(args, true) {
        Ok(i) => i,
        Err(why) => return usage_error(&format!("asm: {why}")),
    };
    let src = match input.read() {
        Ok(s) => s,
        Err(why) => {
            eprintln!("steerd: bpf: asm: {why}");
            return 1;
        }
    };
    match asm_bpf::assemble_bytes(&src) {
        Ok(prog) => {
            let text = match input.c_format {
                true => fmt::format_c(&prog),
                false => fmt::format_default(&prog),
            };
            write_stdout(text.as_bytes());
            0
        }
        Err(e) => {
            write_stdout(&e.stdout_bytes());
            eprintln!("steerd: bpf: asm: {}:{e}", input.name());
            1
        }
    }
}

/// `steerd bpf dis [FILE|-]`: also accepts source, which it prints normalised.
fn dis(args: &[String]) -> i32 {
    let input = match parse_input_args(args, false) {
        Ok(i) => i,
        Err(why) => return usage_error(&format!("dis: {why}")),
    };
    let prog = input.read().and_then(|bytes| {
        let text = String::from_utf8(bytes).map_err(|_| "input is not UTF-8 text".to_string())?;
        load_program(&text)
    });
    let prog = match prog {
        Ok(p) => p,
        Err(why) => {
            eprintln!("steerd: bpf: dis: {}: {why}", input.name());
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
