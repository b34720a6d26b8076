//! Disassembler: bytecode to bpf_asm source that assembles back to the same bytes.
//!
//! Input: any instructions. Output: one line per instruction, `Ln:` in front of every
//! jump target (`n` is the target's index). Immediates print in hex from 10 up,
//! offsets and scratch indexes in decimal below 0x10000; ancillary loads print their
//! name (`ld #cpu`); `[x + k]` keeps the spaces around `+` (`[x+14]` would lex `+14`
//! as one number, spec 2.4).
//!
//! bpf_asm cannot write every bit pattern: it has no way to name a jump target outside
//! the program, and it always emits 0 in the fields an instruction does not use (jt/jf of
//! a non-jump, k of `tax`, `ret a`, `add x`, `ld #len`, ...) and only the opcodes of
//! spec 1.3. Such an instruction is printed as a `raw` line carrying its four fields and
//! a `;` comment saying why. A `raw` line does not assemble (the word `raw` is a label
//! with no `:`), so the text can never silently become a different program;
//! [`inexpressible`] lists those instructions and [`disassemble_exact`] refuses them.

use crate::fmt::format_c;
use crate::insn::*;
use crate::names::extension_name;
use core::fmt;
use std::fmt::Write as _;

/// An instruction bpf_asm cannot express, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisError {
    /// 0-based index of the instruction.
    pub(crate) insn: usize,
    /// Why no bpf_asm line assembles to it.
    pub(crate) reason: String,
}

impl fmt::Display for DisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "insn #{} has no bpf_asm form: {}",
            self.insn, self.reason
        )
    }
}

impl std::error::Error for DisError {}

/// What one instruction becomes: an operation and the instructions it jumps to.
struct Line {
    text: String,
    targets: [Option<usize>; 2],
}

/// The program as bpf_asm source; inexpressible instructions become `raw` lines.
pub fn disassemble(prog: &[Insn]) -> String {
    let lines: Vec<Result<Line, String>> = (0..prog.len()).map(|pc| decode(prog, pc)).collect();
    let mut is_target = vec![false; prog.len()];
    for line in lines.iter().flatten() {
        for t in line.targets.iter().flatten() {
            is_target[*t] = true;
        }
    }
    let mut out = String::new();
    for (pc, line) in lines.iter().enumerate() {
        if is_target[pc] {
            let _ = write!(out, "L{pc}:");
        }
        match line {
            Ok(l) => {
                let _ = writeln!(out, "\t{}", l.text);
            }
            Err(why) => {
                let raw = format_c(&prog[pc..=pc]);
                let raw = raw.trim_end().trim_end_matches(',');
                let _ = writeln!(out, "\traw {raw}\t; no bpf_asm form: {why}");
            }
        }
    }
    out
}

/// The program as bpf_asm source, or the first instruction that has no bpf_asm form.
pub fn disassemble_exact(prog: &[Insn]) -> Result<String, DisError> {
    match inexpressible(prog).into_iter().next() {
        Some(e) => Err(e),
        None => Ok(disassemble(prog)),
    }
}

/// Every instruction that has no bpf_asm form.
pub fn inexpressible(prog: &[Insn]) -> Vec<DisError> {
    (0..prog.len())
        .filter_map(|pc| {
            decode(prog, pc)
                .err()
                .map(|reason| DisError { insn: pc, reason })
        })
        .collect()
}

/// An immediate (`#k`): decimal below 10, else hex, as masks, ethertypes and return
/// values usually read best (bpf_dbg prints them in hex too).
fn imm(k: u32) -> String {
    if k < 10 {
        k.to_string()
    } else {
        format!("{k:#x}")
    }
}

/// A packet offset or scratch index: decimal below 0x10000, else hex (the negative
/// SKF_NET_OFF/SKF_LL_OFF ranges).
fn off(k: u32) -> String {
    if k < 0x10000 {
        k.to_string()
    } else {
        format!("{k:#x}")
    }
}

fn plain(text: String) -> Result<Line, String> {
    Ok(Line {
        text,
        targets: [None, None],
    })
}

/// One instruction to its line, or the reason it has none.
fn decode(prog: &[Insn], pc: usize) -> Result<Line, String> {
    let i = prog[pc];
    if i.class() == BPF_JMP {
        return decode_jump(prog, pc);
    }
    if i.jt != 0 || i.jf != 0 {
        return Err(format!("jt {} jf {} on a non-jump instruction", i.jt, i.jf));
    }
    if let Some(text) = statement_with_k(i) {
        return plain(text);
    }
    let text = match i.code {
        0x0c | 0x1c | 0x2c | 0x3c | 0x4c | 0x5c | 0x6c | 0x7c | 0x9c | 0xac => {
            format!("{} x", alu_name(i.code))
        }
        0x84 => "neg".into(),
        0x80 => "ld #len".into(),
        0x81 => "ldx #len".into(),
        0x16 => "ret a".into(),
        0x0e => "ret x".into(),
        0x07 => "tax".into(),
        0x87 => "txa".into(),
        _ => return Err(format!("opcode {:#06x} is not one bpf_asm emits", i.code)),
    };
    if i.k != 0 {
        return Err(format!(
            "k is {:#x}, bpf_asm always emits 0 for `{text}`",
            i.k
        ));
    }
    plain(text)
}

/// Instructions whose k is free: loads, stores, ALU with k, `ret #k`.
fn statement_with_k(i: Insn) -> Option<String> {
    let k = i.k;
    let ld = match i.code & 0x18 {
        BPF_H => "ldh",
        BPF_B => "ldb",
        _ => "ld",
    };
    Some(match i.code {
        0x00 => format!("ld #{}", imm(k)),
        0x01 => format!("ldx #{}", imm(k)),
        0x20 | 0x28 | 0x30 => match extension_name(k) {
            Some(name) => format!("{ld} #{name}"),
            None => format!("{ld} [{}]", off(k)),
        },
        0x40 | 0x48 | 0x50 => format!("{ld} [x + {}]", off(k)),
        0x60 => format!("ld M[{}]", off(k)),
        0x61 => format!("ldx M[{}]", off(k)),
        0xb1 => format!("ldxb 4*([{}]&0xf)", off(k)),
        0x02 => format!("st M[{}]", off(k)),
        0x03 => format!("stx M[{}]", off(k)),
        0x06 => format!("ret #{}", imm(k)),
        0x04 | 0x14 | 0x24 | 0x34 | 0x44 | 0x54 | 0x64 | 0x74 | 0x94 | 0xa4 => {
            format!("{} #{}", alu_name(i.code), imm(k))
        }
        _ => return None,
    })
}

fn alu_name(code: u16) -> &'static str {
    match code & 0xf0 {
        BPF_ADD => "add",
        BPF_SUB => "sub",
        BPF_MUL => "mul",
        BPF_DIV => "div",
        BPF_OR => "or",
        BPF_AND => "and",
        BPF_LSH => "lsh",
        BPF_RSH => "rsh",
        BPF_MOD => "mod",
        _ => "xor",
    }
}

/// `ja` and the conditional jumps.
fn decode_jump(prog: &[Insn], pc: usize) -> Result<Line, String> {
    let i = prog[pc];
    let target = |skip: u32, field: &str| {
        let t = (pc as u32).wrapping_add(1).wrapping_add(skip) as usize;
        if t < prog.len() {
            Ok(t)
        } else {
            Err(format!("{field} {skip} jumps past the end of the program"))
        }
    };
    if i.code == BPF_JMP | BPF_JA {
        if i.jt != 0 || i.jf != 0 {
            return Err(format!("jt {} jf {} on `ja`", i.jt, i.jf));
        }
        let t = target(i.k, "k")?;
        return Ok(Line {
            text: format!("ja L{t}"),
            targets: [Some(t), None],
        });
    }
    let (name, negated) = match i.code & !BPF_X {
        0x15 => ("jeq", Some("jne")),
        0x25 => ("jgt", Some("jle")),
        0x35 => ("jge", Some("jlt")),
        0x45 => ("jset", None),
        _ => return Err(format!("opcode {:#06x} is not one bpf_asm emits", i.code)),
    };
    let operand = if i.code & BPF_X != 0 {
        if i.k != 0 {
            return Err(format!("k is {:#x} on a jump that compares with x", i.k));
        }
        "x".to_string()
    } else {
        format!("#{}", imm(i.k))
    };
    let jt = target(i.jt.into(), "jt")?;
    let jf = target(i.jf.into(), "jf")?;
    let (text, targets) = match negated {
        _ if i.jf == 0 => (format!("{name} {operand}, L{jt}"), [Some(jt), None]),
        Some(neg) if i.jt == 0 => (format!("{neg} {operand}, L{jf}"), [None, Some(jf)]),
        _ => (
            format!("{name} {operand}, L{jt}, L{jf}"),
            [Some(jt), Some(jf)],
        ),
    };
    Ok(Line { text, targets })
}
