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

    /// Instructions emitted so far.
    pub fn len(&self) -> usize {
        self.insns.len()
    }

    /// Whether nothing was emitted yet.
    pub fn is_empty(&self) -> bool {
        self.insns.is_empty()
    }

    /// Puts label `name` on the next instruction emitted.
    pub fn label(&mut self, name: &str) -> &mut Self {
        self.defs.push((name.to_string(), self.insns.len()));
        self
    }

    /// Emits any instruction as it is (no labels).
    pub fn insn(&mut self, insn: Insn) -> &mut Self {
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

    /// `ld #k`
    pub fn ld_imm(&mut self, k: u32) -> &mut Self {
        self.stmt(BPF_LD | BPF_IMM, k)
    }
    /// `ld #len`
    pub fn ld_len(&mut self) -> &mut Self {
        self.stmt(BPF_LD | BPF_W | BPF_LEN, 0)
    }
    /// `ld M[i]`
    pub fn ld_mem(&mut self, i: u32) -> &mut Self {
        self.stmt(BPF_LD | BPF_MEM, i)
    }
    /// `ld [k]`: 32-bit big-endian word at packet offset k.
    pub fn ld_abs(&mut self, k: u32) -> &mut Self {
        self.stmt(BPF_LD | BPF_W | BPF_ABS, k)
    }
    /// `ldh [k]`
    pub fn ldh_abs(&mut self, k: u32) -> &mut Self {
        self.stmt(BPF_LD | BPF_H | BPF_ABS, k)
    }
    /// `ldb [k]`
    pub fn ldb_abs(&mut self, k: u32) -> &mut Self {
        self.stmt(BPF_LD | BPF_B | BPF_ABS, k)
    }
    /// `ld [x + k]`
    pub fn ld_ind(&mut self, k: u32) -> &mut Self {
        self.stmt(BPF_LD | BPF_W | BPF_IND, k)
    }
    /// `ldh [x + k]`
    pub fn ldh_ind(&mut self, k: u32) -> &mut Self {
        self.stmt(BPF_LD | BPF_H | BPF_IND, k)
    }
    /// `ldb [x + k]`
    pub fn ldb_ind(&mut self, k: u32) -> &mut Self {
        self.stmt(BPF_LD | BPF_B | BPF_IND, k)
    }
    /// `ld #name`: the ancillary value `SKF_AD_*` offset `off` (e.g. [`SKF_AD_CPU`]).
    pub fn ld_ancillary(&mut self, off: u32) -> &mut Self {
        self.ld_abs(ancillary_k(off))
    }
    /// `ldx #k`
    pub fn ldx_imm(&mut self, k: u32) -> &mut Self {
        self.stmt(BPF_LDX | BPF_IMM, k)
    }
    /// `ldx #len`
    pub fn ldx_len(&mut self) -> &mut Self {
        self.stmt(BPF_LDX | BPF_W | BPF_LEN, 0)
    }
    /// `ldx M[i]`
    pub fn ldx_mem(&mut self, i: u32) -> &mut Self {
        self.stmt(BPF_LDX | BPF_MEM, i)
    }
    /// `ldxb 4*([k]&0xf)`
    pub fn ldx_msh(&mut self, k: u32) -> &mut Self {
        self.stmt(BPF_LDX | BPF_B | BPF_MSH, k)
    }
    /// `st M[i]`
    pub fn st(&mut self, i: u32) -> &mut Self {
        self.stmt(BPF_ST, i)
    }
    /// `stx M[i]`
    pub fn stx(&mut self, i: u32) -> &mut Self {
        self.stmt(BPF_STX, i)
    }
    /// A := A `op` k, with `op` one of `BPF_ADD` .. `BPF_XOR`.
    pub fn alu_k(&mut self, op: u16, k: u32) -> &mut Self {
        self.stmt(BPF_ALU | op | BPF_K, k)
    }
    /// A := A `op` X.
    pub fn alu_x(&mut self, op: u16) -> &mut Self {
        self.stmt(BPF_ALU | op | BPF_X, 0)
    }
    /// `add #k`
    pub fn add_k(&mut self, k: u32) -> &mut Self {
        self.alu_k(BPF_ADD, k)
    }
    /// `sub #k`
    pub fn sub_k(&mut self, k: u32) -> &mut Self {
        self.alu_k(BPF_SUB, k)
    }
    /// `mul #k`
    pub fn mul_k(&mut self, k: u32) -> &mut Self {
        self.alu_k(BPF_MUL, k)
    }
    /// `div #k`
    pub fn div_k(&mut self, k: u32) -> &mut Self {
        self.alu_k(BPF_DIV, k)
    }
    /// `mod #k`
    pub fn mod_k(&mut self, k: u32) -> &mut Self {
        self.alu_k(BPF_MOD, k)
    }
    /// `and #k`
    pub fn and_k(&mut self, k: u32) -> &mut Self {
        self.alu_k(BPF_AND, k)
    }
    /// `or #k`
    pub fn or_k(&mut self, k: u32) -> &mut Self {
        self.alu_k(BPF_OR, k)
    }
    /// `xor #k`
    pub fn xor_k(&mut self, k: u32) -> &mut Self {
        self.alu_k(BPF_XOR, k)
    }
    /// `lsh #k`
    pub fn lsh_k(&mut self, k: u32) -> &mut Self {
        self.alu_k(BPF_LSH, k)
    }
    /// `rsh #k`
    pub fn rsh_k(&mut self, k: u32) -> &mut Self {
        self.alu_k(BPF_RSH, k)
    }
    /// `neg`
    pub fn neg(&mut self) -> &mut Self {
        self.stmt(BPF_ALU | BPF_NEG, 0)
    }
    /// `tax`: X := A.
    pub fn tax(&mut self) -> &mut Self {
        self.stmt(BPF_MISC | BPF_TAX, 0)
    }
    /// `txa`: A := X.
    pub fn txa(&mut self) -> &mut Self {
        self.stmt(BPF_MISC | BPF_TXA, 0)
    }
    /// `ret #k`
    pub fn ret_k(&mut self, k: u32) -> &mut Self {
        self.stmt(BPF_RET | BPF_K, k)
    }
    /// `ret a`
    pub fn ret_a(&mut self) -> &mut Self {
        self.stmt(BPF_RET | BPF_A, 0)
    }
    /// `ja target` (must jump forward; [`NEXT`] is a distance of 0).
    pub fn ja(&mut self, target: &str) -> &mut Self {
        self.push(Insn::stmt(BPF_JMP | BPF_JA, 0), [target, NEXT, NEXT])
    }
    /// A conditional jump: `op` is `BPF_JEQ`, `BPF_JGT`, `BPF_JGE` or `BPF_JSET`, `src`
    /// is `BPF_K` (compare with k) or `BPF_X`. [`NEXT`] as a target falls through.
    pub fn jump(&mut self, op: u16, src: u16, k: u32, jt: &str, jf: &str) -> &mut Self {
        self.push(Insn::jump(BPF_JMP | op | src, k, 0, 0), [NEXT, jt, jf])
    }
    /// `jeq #k, jt, jf`
    pub fn jeq_k(&mut self, k: u32, jt: &str, jf: &str) -> &mut Self {
        self.jump(BPF_JEQ, BPF_K, k, jt, jf)
    }
    /// `jgt #k, jt, jf`
    pub fn jgt_k(&mut self, k: u32, jt: &str, jf: &str) -> &mut Self {
        self.jump(BPF_JGT, BPF_K, k, jt, jf)
    }
    /// `jge #k, jt, jf`
    pub fn jge_k(&mut self, k: u32, jt: &str, jf: &str) -> &mut Self {
        self.jump(BPF_JGE, BPF_K, k, jt, jf)
    }
    /// `jset #k, jt, jf`
    pub fn jset_k(&mut self, k: u32, jt: &str, jf: &str) -> &mut Self {
        self.jump(BPF_JSET, BPF_K, k, jt, jf)
    }
    /// `jeq x, jt, jf`
    pub fn jeq_x(&mut self, jt: &str, jf: &str) -> &mut Self {
        self.jump(BPF_JEQ, BPF_X, 0, jt, jf)
    }
    /// `jgt x, jt, jf`
    pub fn jgt_x(&mut self, jt: &str, jf: &str) -> &mut Self {
        self.jump(BPF_JGT, BPF_X, 0, jt, jf)
    }
    /// `jge x, jt, jf`
    pub fn jge_x(&mut self, jt: &str, jf: &str) -> &mut Self {
        self.jump(BPF_JGE, BPF_X, 0, jt, jf)
    }
    /// `jset x, jt, jf`
    pub fn jset_x(&mut self, jt: &str, jf: &str) -> &mut Self {
        self.jump(BPF_JSET, BPF_X, 0, jt, jf)
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

/// A jump slot's label, or none for [`NEXT`].
fn named(label: &str) -> Option<&[u8]> {
    (!label.is_empty()).then_some(label.as_bytes())
}
