//! Checker: a classic BPF program in, the kernel's verdict out.
//!
//! Stage: after assembly, before a program is handed to `setsockopt`. Input: a slice of
//! [`Insn`]. Output: `Ok(())` exactly when Linux would accept the program through
//! `SO_ATTACH_FILTER` or `SO_ATTACH_REUSEPORT_CBPF`, otherwise the first rule broken and
//! where. It does not run the program, and it does not model the later, size-related
//! refusals of the attach paths (see "Not checked" below).
//!
//! Required reading: `net/core/filter.c` (`bpf_check_basics_ok`, `chk_code_allowed`,
//! `bpf_check_classic`, `check_load_and_stores`), `include/linux/filter.h`
//! (`bpf_anc_helper`), and section 5 of the asm-bpf spec. Rules are applied in the
//! kernel's order, so the error reported is the one the kernel tripped on first:
//!
//! 1. length 1..=4096 ([`CheckError::Length`]);
//! 2. for each instruction in order: the opcode is one of the 49 the kernel knows, then
//!    the per-opcode rule (division by constant 0, shift by 32 or more, scratch index,
//!    jump target, ancillary offset);
//! 3. the last instruction is `ret #k` or `ret a`;
//! 4. no scratch cell is read before a write on every path, with the kernel's
//!    conservative data flow (a `ret` does not reset it, see [`scratch_flow`]).
//!
//! Both attach paths share this rule set (`__get_filter` then `bpf_prepare_filter`), so
//! there is no per-path parameter. Not checked, because they are not classic rules:
//! the size of the program after conversion to eBPF against `net.core.optmem_max`
//! (ENOMEM), and eBPF jump offsets beyond ±32767 after conversion (EINVAL), which only
//! programs of thousands of instructions with very long `ja` can reach.

use crate::insn::*;
use core::fmt;

/// Why the kernel refuses a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckError {
    /// The program is empty or longer than [`BPF_MAXINSNS`] (`bpf_check_basics_ok`).
    Length {
        /// The refused length.
        len: usize,
    },
    /// Instruction `pc` breaks `rule`.
    Insn {
        /// Index of the offending instruction, from 0.
        pc: usize,
        /// The rule broken.
        rule: Rule,
    },
}

/// One per-instruction rule of `bpf_check_classic` and `check_load_and_stores`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// The full 16-bit code is not one `chk_code_allowed` knows.
    UnknownOpcode(u16),
    /// `ret x` (0x0e): bpf_asm emits it, the kernel has never accepted it.
    RetX,
    /// `div #0` or `mod #0`.
    DivisionByZero,
    /// `lsh #k` or `rsh #k` with k >= 32.
    ShiftTooFar(u32),
    /// `ld/ldx/st/stx M[k]` with k >= 16.
    ScratchIndex(u32),
    /// A jump whose target lies past the last instruction.
    JumpOutOfRange,
    /// An absolute load at k >= SKF_AD_OFF that is not one of the 16 ancillary offsets.
    UnknownAncillary(u32),
    /// The last instruction is not `ret #k` or `ret a`.
    LastNotRet,
    /// `ld/ldx M[k]` reachable on some path where M[k] was not written.
    ReadBeforeWrite(u32),
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Rule::UnknownOpcode(code) => write!(f, "unknown opcode {code:#06x}"),
            Rule::RetX => f.write_str("ret x is not allowed (opcode 0x000e)"),
            Rule::DivisionByZero => f.write_str("division or modulo by constant 0"),
            Rule::ShiftTooFar(k) => write!(f, "shift by {k}, must be below 32"),
            Rule::ScratchIndex(k) => write!(f, "scratch index M[{k}] out of range 0..15"),
            Rule::JumpOutOfRange => f.write_str("jump out of range"),
            Rule::UnknownAncillary(k) => write!(f, "unknown ancillary offset {k:#010x}"),
            Rule::LastNotRet => f.write_str("last instruction must be ret #k or ret a"),
            Rule::ReadBeforeWrite(k) => write!(f, "M[{k}] may be read before it is written"),
        }
    }
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::Length { len } => {
                write!(f, "program length {len} is outside 1..={BPF_MAXINSNS}")
            }
            CheckError::Insn { pc, rule } => write!(f, "insn {pc}: {rule}"),
        }
    }
}

impl std::error::Error for CheckError {}

/// The kernel's verdict on `prog`: `Ok` if `SO_ATTACH_FILTER` and
/// `SO_ATTACH_REUSEPORT_CBPF` accept it, else the first rule broken.
pub fn check(prog: &[Insn]) -> Result<(), CheckError> {
    if prog.is_empty() || prog.len() > BPF_MAXINSNS {
        return Err(CheckError::Length { len: prog.len() });
    }
    for (pc, insn) in prog.iter().enumerate() {
        insn_rule(prog.len(), pc, *insn).map_err(|rule| CheckError::Insn { pc, rule })?;
    }
    let last = prog.len() - 1;
    if !matches!(prog[last].code, RET_K | RET_A) {
        return Err(CheckError::Insn {
            pc: last,
            rule: Rule::LastNotRet,
        });
    }
    scratch_flow(prog)
}

const RET_K: u16 = BPF_RET | BPF_K;
const RET_A: u16 = BPF_RET | BPF_A;
const RET_X: u16 = BPF_RET | BPF_X;

/// Every opcode `chk_code_allowed` accepts (its `codes[]` table), as full 16-bit values.
pub const ALLOWED_OPCODES: [u16; 49] = [
    // ALU
    0x04, 0x0c, 0x14, 0x1c, 0x24, 0x2c, 0x34, 0x3c, 0x44, 0x4c, 0x54, 0x5c, 0x64, 0x6c, 0x74, 0x7c,
    0x84, 0x94, 0x9c, 0xa4, 0xac, //
    // LD
    0x00, 0x20, 0x28, 0x30, 0x40, 0x48, 0x50, 0x60, 0x80, //
    // LDX
    0x01, 0x61, 0x81, 0xb1, //
    // ST, STX
    0x02, 0x03, //
    // MISC
    0x07, 0x87, //
    // RET
    0x06, 0x16, //
    // JMP
    0x05, 0x15, 0x1d, 0x25, 0x2d, 0x35, 0x3d, 0x45, 0x4d,
];

/// `chk_code_allowed`: is `code` one of the opcodes the kernel knows?
pub fn opcode_allowed(code: u16) -> bool {
    ALLOWED_OPCODES.contains(&code)
}

/// Is `k` one of the 16 `SKF_AD_OFF + SKF_AD_*` values `bpf_anc_helper` recognises?
pub(crate) fn is_ancillary(k: u32) -> bool {
    let off = k.wrapping_sub(ancillary_k(0));
    k >= ancillary_k(0) && off < SKF_AD_MAX && off % 4 == 0
}

/// Is `code` one of the eight conditional jumps?
pub(crate) fn is_cond_jump(code: u16) -> bool {
    code & 0x07 == BPF_JMP && code != BPF_JMP | BPF_JA && opcode_allowed(code)
}

/// The per-instruction rules of `bpf_check_classic` for instruction `pc` of a program of
/// `len` instructions.
fn insn_rule(len: usize, pc: usize, insn: Insn) -> Result<(), Rule> {
    if insn.code == RET_X {
        return Err(Rule::RetX);
    }
    if !opcode_allowed(insn.code) {
        return Err(Rule::UnknownOpcode(insn.code));
    }
    let k = insn.k;
    // Instructions after pc: a target pc + 1 + d is inside iff d < after.
    let after = (len - pc - 1) as u64;
    const DIV_K: u16 = BPF_ALU | BPF_DIV | BPF_K;
    const MOD_K: u16 = BPF_ALU | BPF_MOD | BPF_K;
    const LSH_K: u16 = BPF_ALU | BPF_LSH | BPF_K;
    const RSH_K: u16 = BPF_ALU | BPF_RSH | BPF_K;
    const LD_MEM: u16 = BPF_LD | BPF_MEM;
    const LDX_MEM: u16 = BPF_LDX | BPF_MEM;
    const JA: u16 = BPF_JMP | BPF_JA;
    const LD_ABS_W: u16 = BPF_LD | BPF_W | BPF_ABS;
    const LD_ABS_H: u16 = BPF_LD | BPF_H | BPF_ABS;
    const LD_ABS_B: u16 = BPF_LD | BPF_B | BPF_ABS;
    match insn.code {
        DIV_K | MOD_K if k == 0 => Err(Rule::DivisionByZero),
        LSH_K | RSH_K if k >= 32 => Err(Rule::ShiftTooFar(k)),
        LD_MEM | LDX_MEM | BPF_ST | BPF_STX if k >= BPF_MEMWORDS => Err(Rule::ScratchIndex(k)),
        JA if u64::from(k) >= after => Err(Rule::JumpOutOfRange),
        c if is_cond_jump(c) && (u64::from(insn.jt) >= after || u64::from(insn.jf) >= after) => {
            Err(Rule::JumpOutOfRange)
        }
        LD_ABS_W | LD_ABS_H | LD_ABS_B if k >= ancillary_k(0) && !is_ancillary(k) => {
            Err(Rule::UnknownAncillary(k))
        }
        _ => Ok(()),
    }
}

/// `check_load_and_stores`: every `ld/ldx M[k]` must be preceded by a write to M[k] on
/// every path. Runs after the per-instruction rules, so indexes and targets are in range.
///
/// The kernel's data flow, reproduced bit for bit because it is conservative: `valid`
/// holds the cells written on the path being followed; each instruction first narrows
/// it by `masks[pc]` (the intersection over the jumps that land there); a jump narrows
/// its targets' masks and then sets `valid` to all cells. A `ret` leaves `valid` as it
/// is, so the cells known before a `ret` still limit the instruction after it although
/// control never falls through: some safe programs are refused, as by the kernel.
fn scratch_flow(prog: &[Insn]) -> Result<(), CheckError> {
    let mut masks = vec![u16::MAX; prog.len()];
    let mut valid: u16 = 0;
    for (pc, insn) in prog.iter().enumerate() {
        valid &= masks[pc];
        let cell = 1u16 << (insn.k & 15);
        match insn.code {
            BPF_ST | BPF_STX => valid |= cell,
            c if (c == BPF_LD | BPF_MEM || c == BPF_LDX | BPF_MEM) && valid & cell == 0 => {
                return Err(CheckError::Insn {
                    pc,
                    rule: Rule::ReadBeforeWrite(insn.k),
                });
            }
            c if c == BPF_JMP | BPF_JA => {
                masks[pc + 1 + insn.k as usize] &= valid;
                valid = u16::MAX;
            }
            c if is_cond_jump(c) => {
                masks[pc + 1 + usize::from(insn.jt)] &= valid;
                masks[pc + 1 + usize::from(insn.jf)] &= valid;
                valid = u16::MAX;
            }
            _ => {}
        }
    }
    Ok(())
}
