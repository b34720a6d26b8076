//! Builder: classic BPF programs from Rust, with symbolic labels, no text.
//!
//! Input: calls such as `b.ld_ancillary(SKF_AD_CPU)`, `b.jeq_k(3, "hit", NEXT)`,
//! `b.label("hit")`, `b.ret_a()`. Output: [`Builder::build`] resolves the labels with the
//! assembler's own resolution ([`crate::resolve`]: same order, same 0..=255 limit for
//! jt/jf) and returns the instructions, or the first [`BuildError`].
//!
//! Stricter than bpf_asm where bpf_asm's leniency only produces programs the kernel
//! refuses or a reader misreads: a label defined twice, a label with no instruction after
//! it, an empty program and a `ja` that does not jump forward are errors here. It does
//! not run the kernel's checker; `crate::check` does that.
//!
//! ```
//! use asm_bpf::builder::{Builder, NEXT};
//! use asm_bpf::insn::SKF_AD_CPU;
//!
//! let mut b = Builder::new();
//! b.ld_ancillary(SKF_AD_CPU)
//!     .jge_k(4, "fallback", NEXT)
//!     .ret_a()
//!     .label("fallback")
//!     .ret_k(u32::MAX);
//! let prog = b.build().unwrap();
//! assert_eq!(asm_bpf::fmt::format_default(&prog),
//!            "4,32 0 0 4294963236,53 1 0 4,22 0 0 0,6 0 0 4294967295,\n");
//! ```

use crate::insn::*;
use crate::resolve::{self, ResolveError, Slot, Targets};
use core::fmt;
use std::collections::HashSet;

/// The jump target "the next instruction" (a jt/jf or `ja` distance of 0).
pub const NEXT: &str = "";

/// Why a builder program could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// No instruction was emitted.
    Empty,
    /// More than [`BPF_MAXINSNS`] instructions.
    TooManyInsns(usize),
    /// The same label was defined twice.
    DuplicateLabel(String),
    /// A label was defined after the last instruction.
    DanglingLabel(String),
    /// A jump names a label that was never defined.
    NoSuchLabel {
        /// The jumping instruction.
        insn: usize,
        /// The missing label.
        label: String,
    },
    /// A jt/jf distance outside 0..=255.
    JumpOutOfRange {
        /// The jumping instruction.
        insn: usize,
        /// The instruction the label is on.
        target: usize,
    },
    /// A `ja` whose label is not after it.
    BackwardJump {
        /// The jumping instruction.
        insn: usize,
        /// The instruction the label is on.
        target: usize,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Empty => write!(f, "the program has no instruction"),
            BuildError::TooManyInsns(n) => {
                write!(f, "{n} instructions, at most {BPF_MAXINSNS} allowed")
            }
            BuildError::DuplicateLabel(l) => write!(f, "label '{l}' defined twice"),
            BuildError::DanglingLabel(l) => write!(f, "label '{l}' has no instruction after it"),
            BuildError::NoSuchLabel { insn, label } => {
                write!(f, "insn #{insn} jumps to undefined label '{label}'")
            }
            BuildError::JumpOutOfRange { insn, target } => {
                write!(
                    f,
                    "insn #{insn} jumps to insn #{target}, which is out of range"
                )
            }
            BuildError::BackwardJump { insn, target } => {
                write!(
                    f,
                    "insn #{insn}: ja to insn #{target} does not jump forward"
                )
            }
        }
    }
}

impl std::error::Error for BuildError {}

/// A program under construction. Every emitting method returns `&mut Self` to chain.
#[derive(Clone, Debug, Default)]
pub struct Builder {
    insns: Vec<Insn>,
    /// Label names and the index of the instruction they are on, in definition order.
    defs: Vec<(String, usize)>,
    /// Label names for the k (ja), jt and jf slots of each instruction; "" is none.
    targets: Vec<[String; 3]>,
}

impl Builder {
    /// An empty program.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Puts label `name` on the next instruction emitted.
    pub fn label(&mut self, name: &str) -> &mut Self {
        self.defs.push((name.to_string(), self.insns.len()));
        self
    }

    /// Emits any instruction as it is (no labels).
    pub(crate) fn insn(&mut self, insn: Insn) -> &mut Self {
        self.push(insn, [NEXT; 3])
    }

    fn push(&mut self, insn: Insn, targets: [&str; 3]) -> &mut Self {
        self.insns.push(insn);
        self.targets.push(targets.map(str::to_string));
        self
    }

    fn stmt(&mut self, code: u16, k: u32) -> &mut Self {
        self.insn(Insn::stmt(code, k))
    }

    /// A := A `op` X.
    pub fn alu_x(&mut self, op: u16) -> &mut Self {
        self.stmt(BPF_ALU | op | BPF_X, 0)
    }

    /// `ja target` (must jump forward; [`NEXT`] is a distance of 0).
    pub fn ja(&mut self, target: &str) -> &mut Self {
        self.push(Insn::stmt(BPF_JMP | BPF_JA, 0), [target, NEXT, NEXT])
    }

    /// A conditional jump: `op` is `BPF_JEQ`, `BPF_JGT`, `BPF_JGE` or `BPF_JSET`, `src`
    /// is `BPF_K` (compare with k) or `BPF_X`. [`NEXT`] as a target falls through.
    pub(crate) fn jump(&mut self, op: u16, src: u16, k: u32, jt: &str, jf: &str) -> &mut Self {
        self.push(Insn::jump(BPF_JMP | op | src, k, 0, 0), [NEXT, jt, jf])
    }

    /// Resolves the labels and returns the program.
    pub fn build(&self) -> Result<Vec<Insn>, BuildError> {
        self.check_shape()?;
        let targets: Vec<Targets<'_>> = (self.targets.iter())
            .map(|[k, jt, jf]| Targets {
                k: named(k),
                jt: named(jt),
                jf: named(jf),
            })
            .collect();
        let defs = self.defs.iter().map(|(n, i)| (n.as_bytes(), *i));
        let mut insns = self.insns.clone();
        resolve::resolve(&mut insns, defs, &targets).map_err(|e| match e {
            ResolveError::NoSuchLabel { insn, name, .. } => {
                BuildError::NoSuchLabel { insn, label: name }
            }
            ResolveError::OutOfRange { insn, target, .. } => {
                BuildError::JumpOutOfRange { insn, target }
            }
        })?;
        self.check_forward(&insns)?;
        Ok(insns)
    }

    /// The checks bpf_asm's grammar makes, or that it skips and we do not.
    fn check_shape(&self) -> Result<(), BuildError> {
        if self.insns.is_empty() {
            return Err(BuildError::Empty);
        }
        if self.insns.len() > BPF_MAXINSNS {
            return Err(BuildError::TooManyInsns(self.insns.len()));
        }
        let mut seen = HashSet::new();
        for (name, at) in &self.defs {
            if !seen.insert(name) {
                return Err(BuildError::DuplicateLabel(name.clone()));
            }
            if *at == self.insns.len() {
                return Err(BuildError::DanglingLabel(name.clone()));
            }
        }
        Ok(())
    }

    /// A resolved `ja` whose target is not after it wrapped around: refuse it.
    fn check_forward(&self, insns: &[Insn]) -> Result<(), BuildError> {
        for (pc, t) in self.targets.iter().enumerate() {
            let target = (pc as u32).wrapping_add(1).wrapping_add(insns[pc].k) as usize;
            if !t[Slot::K as usize].is_empty() && target <= pc {
                return Err(BuildError::BackwardJump { insn: pc, target });
            }
        }
        Ok(())
    }
}

/// Emitters of one instruction with a fixed code: `name(args) => code, k;`.
macro_rules! statements {
    ($($(#[$doc:meta])* $name:ident($($arg:ident),*) => $code:expr, $k:expr;)*) => {
        impl Builder {
            $(
                $(#[$doc])*
                pub fn $name(&mut self, $($arg: u32),*) -> &mut Self {
                    self.stmt($code, $k)
                }
            )*
        }
    };
}

statements! {
    /// `ld #k`
    ld_imm(k) => BPF_LD | BPF_IMM, k;
    /// `ld #len`
    ld_len() => BPF_LD | BPF_W | BPF_LEN, 0;
    /// `ld M[i]`
    ld_mem(i) => BPF_LD | BPF_MEM, i;
    /// `ld [k]`: the big-endian word at packet offset k.
    ld_abs(k) => BPF_LD | BPF_W | BPF_ABS, k;
    /// `ldh [k]`
    ldh_abs(k) => BPF_LD | BPF_H | BPF_ABS, k;
    /// `ldb [k]`
    ldb_abs(k) => BPF_LD | BPF_B | BPF_ABS, k;
    /// `ld [x + k]`
    ld_ind(k) => BPF_LD | BPF_W | BPF_IND, k;
    /// `ldh [x + k]`
    ldh_ind(k) => BPF_LD | BPF_H | BPF_IND, k;
    /// `ldb [x + k]`
    ldb_ind(k) => BPF_LD | BPF_B | BPF_IND, k;
    /// `ld #name`: the ancillary value at `SKF_AD_*` offset `off` (e.g. [`SKF_AD_CPU`]).
    ld_ancillary(off) => BPF_LD | BPF_W | BPF_ABS, ancillary_k(off);
    /// `ldx #k`
    ldx_imm(k) => BPF_LDX | BPF_IMM, k;
    /// `ldx #len`
    ldx_len() => BPF_LDX | BPF_W | BPF_LEN, 0;
    /// `ldx M[i]`
    ldx_mem(i) => BPF_LDX | BPF_MEM, i;
    /// `ldxb 4*([k]&0xf)`
    ldx_msh(k) => BPF_LDX | BPF_B | BPF_MSH, k;
    /// `st M[i]`
    st(i) => BPF_ST, i;
    /// `stx M[i]`
    stx(i) => BPF_STX, i;
    /// `add #k`
    add_k(k) => BPF_ALU | BPF_ADD | BPF_K, k;
    /// `sub #k`
    sub_k(k) => BPF_ALU | BPF_SUB | BPF_K, k;
    /// `mul #k`
    mul_k(k) => BPF_ALU | BPF_MUL | BPF_K, k;
    /// `div #k`
    div_k(k) => BPF_ALU | BPF_DIV | BPF_K, k;
    /// `mod #k`
    mod_k(k) => BPF_ALU | BPF_MOD | BPF_K, k;
    /// `and #k`
    and_k(k) => BPF_ALU | BPF_AND | BPF_K, k;
    /// `or #k`
    or_k(k) => BPF_ALU | BPF_OR | BPF_K, k;
    /// `xor #k`
    xor_k(k) => BPF_ALU | BPF_XOR | BPF_K, k;
    /// `lsh #k`
    lsh_k(k) => BPF_ALU | BPF_LSH | BPF_K, k;
    /// `rsh #k`
    rsh_k(k) => BPF_ALU | BPF_RSH | BPF_K, k;
    /// `neg`
    neg() => BPF_ALU | BPF_NEG, 0;
    /// `tax`: X := A.
    tax() => BPF_MISC | BPF_TAX, 0;
    /// `txa`: A := X.
    txa() => BPF_MISC | BPF_TXA, 0;
    /// `ret #k`
    ret_k(k) => BPF_RET | BPF_K, k;
    /// `ret a`
    ret_a() => BPF_RET | BPF_A, 0;
}

/// Conditional jumps on A compared with k (`name_k`) or with X (`name_x`).
macro_rules! conditional_jumps {
    ($($k_name:ident, $x_name:ident => $op:expr, $text:literal;)*) => {
        impl Builder {
            $(
                #[doc = concat!("`", $text, " #k, jt, jf`")]
                pub fn $k_name(&mut self, k: u32, jt: &str, jf: &str) -> &mut Self {
                    self.jump($op, BPF_K, k, jt, jf)
                }

                #[doc = concat!("`", $text, " x, jt, jf`")]
                pub fn $x_name(&mut self, jt: &str, jf: &str) -> &mut Self {
                    self.jump($op, BPF_X, 0, jt, jf)
                }
            )*
        }
    };
}

conditional_jumps! {
    jeq_k, jeq_x => BPF_JEQ, "jeq";
    jgt_k, jgt_x => BPF_JGT, "jgt";
    jge_k, jge_x => BPF_JGE, "jge";
    jset_k, jset_x => BPF_JSET, "jset";
}

/// A jump slot's label, or none for [`NEXT`].
fn named(label: &str) -> Option<&[u8]> {
    (!label.is_empty()).then_some(label.as_bytes())
}
