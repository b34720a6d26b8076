//! Label resolution, shared by the assembler and the builder (spec section 3.1).
//!
//! Input: the instructions with their numeric fields, the label defined on each one, and
//! the label named in each jump slot. Output: the instructions with `k`, `jt` and `jf`
//! filled in, or the first error in bpf_asm's order: every `k` slot (no range check,
//! the distance wraps to 32 bits), then every `jt` slot, then every `jf` slot
//! (distance 0..=255). The first definition of a name wins; names compare byte for byte.

use crate::Insn;
use std::collections::HashMap;

/// Which field of an instruction a label fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// The `ja` distance in `k`.
    K,
    /// The taken branch.
    Jt,
    /// The branch not taken.
    Jf,
}

/// The label names an instruction's jump slots refer to.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Targets<'n> {
    pub(crate) k: Option<&'n [u8]>,
    pub(crate) jt: Option<&'n [u8]>,
    pub(crate) jf: Option<&'n [u8]>,
}

/// Why resolution failed; `insn` is the 0-based index of the jumping instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ResolveError {
    NoSuchLabel {
        insn: usize,
        slot: Slot,
        name: String,
    },
    OutOfRange {
        insn: usize,
        slot: Slot,
        target: usize,
    },
}

/// Fills the jump fields of `insns` from `defs` (label name and the index of the
/// instruction it is on, in definition order) and `targets` (the labels each instruction
/// jumps to; same length as `insns`).
pub(crate) fn resolve<'n>(
    insns: &mut [Insn],
    defs: impl IntoIterator<Item = (&'n [u8], usize)>,
    targets: &[Targets<'_>],
) -> Result<(), ResolveError> {
    let mut defined: HashMap<&[u8], usize> = HashMap::new();
    for (name, i) in defs {
        defined.entry(name).or_insert(i);
    }
    let find = |insn: usize, slot: Slot, name: &[u8]| {
        defined
            .get(name)
            .copied()
            .ok_or_else(|| ResolveError::NoSuchLabel {
                insn,
                slot,
                name: String::from_utf8_lossy(name).into_owned(),
            })
    };
    for (i, t) in targets.iter().enumerate() {
        if let Some(name) = t.k {
            let target = find(i, Slot::K, name)?;
            insns[i].k = (target as u32).wrapping_sub(i as u32).wrapping_sub(1);
        }
    }
    for slot in [Slot::Jt, Slot::Jf] {
        for (i, t) in targets.iter().enumerate() {
            let name = if slot == Slot::Jt { t.jt } else { t.jf };
            if let Some(name) = name {
                let target = find(i, slot, name)?;
                let distance = short_distance(i, target).ok_or(ResolveError::OutOfRange {
                    insn: i,
                    slot,
                    target,
                })?;
                if slot == Slot::Jt {
                    insns[i].jt = distance;
                } else {
                    insns[i].jf = distance;
                }
            }
        }
    }
    Ok(())
}

/// `target - from - 1` if it fits a `jt`/`jf` field (0..=255).
fn short_distance(from: usize, target: usize) -> Option<u8> {
    target
        .checked_sub(from + 1)
        .and_then(|d| u8::try_from(d).ok())
}
