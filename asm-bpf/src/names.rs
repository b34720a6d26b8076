//! The words of the bpf_asm language: mnemonics and ancillary (extension) names.
//!
//! Input: nothing; these are tables. Output: the spellings the lexer recognises and the
//! disassembler prints, kept in one place so both sides agree. Source of the spellings:
//! `tools/bpf/bpf_exp.l` (spec section 2.1 and 2.6); the offsets are `linux/filter.h`'s.

use crate::insn::*;

/// A bpf_asm mnemonic, after the lexer's aliases (`ja` is `jmp`, `jne` is `jneq`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Ldb,
    Ldh,
    Ld,
    Ldi,
    Ldx,
    Ldxi,
    Ldxb,
    St,
    Stx,
    Jmp,
    Jeq,
    Jneq,
    Jlt,
    Jle,
    Jgt,
    Jge,
    Jset,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Neg,
    And,
    Xor,
    Or,
    Lsh,
    Rsh,
    Ret,
    Tax,
    Txa,
}

/// Every mnemonic spelling, lowercase. Matching is case-insensitive.
pub(crate) const MNEMONICS: &[(&str, Op)] = &[
    ("ldb", Op::Ldb),
    ("ldh", Op::Ldh),
    ("ld", Op::Ld),
    ("ldi", Op::Ldi),
    ("ldx", Op::Ldx),
    ("ldxi", Op::Ldxi),
    ("ldxb", Op::Ldxb),
    ("st", Op::St),
    ("stx", Op::Stx),
    ("jmp", Op::Jmp),
    ("ja", Op::Jmp),
    ("jeq", Op::Jeq),
    ("jneq", Op::Jneq),
    ("jne", Op::Jneq),
    ("jlt", Op::Jlt),
    ("jle", Op::Jle),
    ("jgt", Op::Jgt),
    ("jge", Op::Jge),
    ("jset", Op::Jset),
    ("add", Op::Add),
    ("sub", Op::Sub),
    ("mul", Op::Mul),
    ("div", Op::Div),
    ("mod", Op::Mod),
    ("neg", Op::Neg),
    ("and", Op::And),
    ("xor", Op::Xor),
    ("or", Op::Or),
    ("lsh", Op::Lsh),
    ("rsh", Op::Rsh),
    ("ret", Op::Ret),
    ("tax", Op::Tax),
    ("txa", Op::Txa),
];

/// Ancillary names and their `SKF_AD_*` offsets, lowercase. Where two names share an
/// offset the first is the one the disassembler prints. `SKF_AD_ALU_XOR_X` has no name.
pub(crate) const EXTENSIONS: &[(&str, u32)] = &[
    ("proto", SKF_AD_PROTOCOL),
    ("type", SKF_AD_PKTTYPE),
    ("poff", SKF_AD_PAY_OFFSET),
    ("ifidx", SKF_AD_IFINDEX),
    ("nla", SKF_AD_NLATTR),
    ("nlan", SKF_AD_NLATTR_NEST),
    ("mark", SKF_AD_MARK),
    ("queue", SKF_AD_QUEUE),
    ("hatype", SKF_AD_HATYPE),
    ("rxhash", SKF_AD_RXHASH),
    ("cpu", SKF_AD_CPU),
    ("vlan_tci", SKF_AD_VLAN_TAG),
    ("vlan_avail", SKF_AD_VLAN_TAG_PRESENT),
    ("vlan_pr", SKF_AD_VLAN_TAG_PRESENT),
    ("vlan_tpid", SKF_AD_VLAN_TPID),
    ("rand", SKF_AD_RANDOM),
];

/// The name of the ancillary load whose `k` is `k`, if it has one.
pub(crate) fn extension_name(k: u32) -> Option<&'static str> {
    EXTENSIONS
        .iter()
        .find(|&&(_, off)| ancillary_k(off) == k)
        .map(|&(name, _)| name)
}
