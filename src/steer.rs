//! Stage 4: Plan to a checked steering program (classic BPF, assembled by asm-bpf).
//!
//! Input: a [`Plan`] and the [`Topology`] it was made from. Output: a [`SteerProgram`]
//! (bpf_asm source text and the bytecode assembled from it), or `None` for the `hash`
//! policy (no program: the kernel's own 4-tuple hash), or a [`SteerError`].
//!
//! The kernel side is described in `docs/kernel-steering.md`. The
//! program runs in `reuseport_select_sock()` for each SYN and returns a listener index;
//! an index at or above the group size falls back to the kernel's hash. It never loads
//! packet bytes: the kernel has pulled `skb->data` past the TCP header and a SYN has no
//! payload, so any packet load aborts the program, which returns 0 and sends every
//! connection to listener 0.
//!
//! Policies:
//! - `cpu`: `ld #cpu`, then a balanced binary decision tree over the plan's CPU -> index
//!   map. Adjacent CPUs with the same index, or with indexes rising one per CPU, share a
//!   leaf (`ret #k`, or `add #d; ret a`), so a SYN runs O(log segments) instructions.
//! - `numa`: the same tree from CPU to the node whose workers serve it, and in each leaf a
//!   spread over that node's contiguous listener range: `#rxhash % count + first`. When
//!   nobody computed the hash (`skb->hash` is 0), `#rand` replaces it, so a missing hash
//!   cannot pile every connection onto the node's first listener.
//! - CPUs outside the map (offline when the plan was made) get the group size: the hash.
//!
//! One path makes the bytecode: the text below is assembled by `asm_bpf::assemble`, the
//! kernel-exact checker must accept it, and the interpreter must return the plan's index
//! for every mapped CPU (and the fallback for ids that are not mapped) before it is used.

use crate::config::SteerPolicy;
use crate::cpuset::CpuSet;
use crate::plan::Plan;
use crate::topology::Topology;
use asm_bpf::interp::{self, Context};
use asm_bpf::Insn;
use core::fmt;
use std::fmt::Write;

/// The kernel's limit on classic program length (`BPF_MAXINSNS`).
pub(crate) const MAX_INSNS: usize = 4096;

/// A steering program ready to attach.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SteerProgram {
    /// bpf_asm source.
    pub text: String,
    /// The bytecode assembled from `text`, checked and verified.
    pub insns: Vec<Insn>,
    /// The most instructions one run executes.
    pub longest_path: usize,
}

/// Why no program could be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SteerError {
    /// The program would exceed `BPF_MAXINSNS`.
    TooLong {
        /// Its length.
        insns: usize,
        /// The policy it was made for (the advice depends on it).
        policy: SteerPolicy,
    },
    /// asm-bpf refused the generated source (a bug in this module).
    Assemble(String),
    /// The kernel-exact checker refused the program.
    Checker(String),
    /// The interpreter disagrees with the plan for one input.
    Mismatch {
        /// The CPU id given to `#cpu`.
        cpu: u32,
        /// The `#rxhash` given.
        rxhash: u32,
        /// What the program returned.
        got: u32,
        /// What the plan says.
        want: u32,
    },
}

impl fmt::Display for SteerError {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SteerError::TooLong { insns, policy } => {
                let advice = match policy {
                    SteerPolicy::Cpu => "--steer numa or hash",
                    _ => "--steer hash",
                };
                write!(
                    f,
                    "program needs {insns} instructions, more than the kernel's {MAX_INSNS}; \
                     use {advice}"
                )
            }
            SteerError::Assemble(e) => write!(f, "generated program does not assemble: {e}"),
            SteerError::Checker(e) => write!(f, "checker refused the program: {e}"),
            SteerError::Mismatch {
                cpu,
                rxhash,
                got,
                want,
            } => write!(
                f,
                "interpreter returned {got} for cpu {cpu} rxhash {rxhash}, the plan says {want}"
            ),
        }
    }
}

/// Builds, assembles, checks and verifies the plan's program; `None` for `hash`.
pub fn program(plan: &Plan, topo: &Topology) -> Result<Option<SteerProgram>, SteerError> {
    program_for(plan, &topo.possible)
}

/// [`program`] for a plan made without a topology (the bench reference responder):
/// the program is verified on every CPU id up to the highest of `possible` and the map.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn program_for(
    plan: &Plan,
    possible: &CpuSet,
) -> Result<Option<SteerProgram>, SteerError> {
    let Some(tree) = decision_tree(plan) else {
        return Ok(None);
    };
    let insns_needed =
        1 + tree.size() + tree.spreads().iter().map(|l| l.block_size()).sum::<usize>();
    if insns_needed > MAX_INSNS {
        return Err(SteerError::TooLong {
            insns: insns_needed,
            policy: plan.steer,
        });
    }
    let text = source(&tree);
    let insns = asm_bpf::assemble(&text).map_err(|e| SteerError::Assemble(e.to_string()))?;
    asm_bpf::check::check(&insns).map_err(|e| SteerError::Checker(e.to_string()))?;
    verify(plan, possible, &insns)?;
    Ok(Some(SteerProgram {
        text,
        insns,
        longest_path: 1 + tree.longest_path(),
    }))
}

/// What the program must return, from the plan alone (the oracle the interpreter's
/// answers are compared with): the mapped index for `cpu`; under `numa`, the spread of
/// `rxhash` (or `rand` when the hash is 0) over the mapped worker's node range.
pub fn expected(plan: &Plan, cpu: u32, rxhash: u32, rand: u32) -> u32 {
    let fallback = plan.workers.len() as u32;
    let Some(id) = usize::try_from(cpu)
        .ok()
        .and_then(crate::cpuset::CpuId::new)
    else {
        return fallback;
    };
    let index = plan.index_for(id);
    if plan.steer != SteerPolicy::Numa || index == fallback {
        return index;
    }
    let node = plan.workers[index as usize].node;
    let ranges = plan.node_ranges();
    let Some((_, range)) = ranges.iter().find(|(n, _)| *n == node) else {
        return index;
    };
    let hash = if rxhash == 0 { rand } else { rxhash };
    u32::from(range.start) + hash % range.len() as u32
}

/// The CPU ids and hashes every program is verified on: every id up to the highest
/// possible or mapped CPU + 2, then ids no machine has.
fn probes(plan: &Plan, possible: &CpuSet) -> Vec<(u32, u32, u32)> {
    let mapped = plan.cpu_map.last().map_or(0, |(c, _)| c.get());
    let possible = possible.iter().last().map_or(0, |c| c.get());
    let max = mapped.max(possible) as u32;
    let mut cpus: Vec<u32> = (0..=max + 2).collect();
    cpus.extend([4095, 8191, 8192, 65535, u32::MAX]);
    let hashes: &[(u32, u32)] = match plan.steer {
        SteerPolicy::Numa => &[
            (1, 0),
            (2, 0),
            (3, 0),
            (0x9e37_79b9, 0),
            (u32::MAX, 0),
            (0, 5),
            (0, 6),
        ],
        _ => &[(0, 0)],
    };
    cpus.iter()
        .flat_map(|&c| hashes.iter().map(move |&(h, r)| (c, h, r)))
        .collect()
}

fn verify(plan: &Plan, possible: &CpuSet, insns: &[Insn]) -> Result<(), SteerError> {
    for (cpu, rxhash, rand) in probes(plan, possible) {
        let ctx = Context {
            cpu,
            rxhash,
            rand,
            ..Context::default()
        };
        let got = interp::run(insns, &ctx);
        let want = expected(plan, cpu, rxhash, rand);
        if got != want {
            return Err(SteerError::Mismatch {
                cpu,
                rxhash,
                got,
                want,
            });
        }
    }
    Ok(())
}

/// What a range of CPU ids returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leaf {
    /// `ret #k`
    Const(u32),
    /// `cpu + d`: `add #d` (or `sub #-d`), `ret a`.
    Linear(i64),
    /// `(rxhash or rand) % count + first`.
    Spread {
        /// First listener of the node's range.
        first: u32,
        /// Listeners in the range (at least 2).
        count: u32,
    },
}

impl Leaf {
    /// Instructions at the leaf's place in the tree. A spread is one `ja` to its node's
    /// shared block (emitted once after the tree), so a map whose nodes alternate CPU by
    /// CPU costs one instruction per segment, not one spread block per segment.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn size(self) -> usize {
        match self {
            Leaf::Const(_) => 1,
            Leaf::Linear(0) => 1,
            Leaf::Linear(_) => 2,
            Leaf::Spread { .. } => 1,
        }
    }

    /// Instructions of a spread's shared block (0 for the other leaves).
    fn block_size(self) -> usize {
        match self {
            Leaf::Spread { first: 0, .. } => 5,
            Leaf::Spread { .. } => 6,
            _ => 0,
        }
    }
}

/// The CPU id ranges of a program: each runs from `start` to the next segment's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// First CPU id of the range.
    pub(crate) start: u32,
    /// What the range returns.
    pub(crate) leaf: Leaf,
}

/// Piecewise description of CPU id -> leaf over all of u32, merged where possible.
pub fn segments(plan: &Plan) -> Vec<Segment> {
    let fallback = Leaf::Const(plan.workers.len() as u32);
    let ranges = plan.node_ranges();
    let mut b = SegmentBuilder {
        segs: Vec::new(),
        next: 0,
    };
    for &(cpu, index) in &plan.cpu_map {
        let cpu = cpu.get() as u32;
        if u64::from(cpu) > b.next {
            b.push(b.next as u32, fallback);
        }
        let leaf = match plan.steer {
            SteerPolicy::Numa => {
                let node = plan.workers[usize::from(index)].node;
                match ranges.iter().find(|(n, _)| *n == node) {
                    Some((_, r)) if r.len() > 1 => Leaf::Spread {
                        first: u32::from(r.start),
                        count: r.len() as u32,
                    },
                    Some((_, r)) => Leaf::Const(u32::from(r.start)),
                    None => Leaf::Const(u32::from(index)),
                }
            }
            _ => Leaf::Const(u32::from(index)),
        };
        b.point(cpu, leaf);
    }
    if b.next <= u64::from(u32::MAX) {
        b.push(b.next as u32, fallback);
    }
    b.segs
}

struct SegmentBuilder {
    segs: Vec<Segment>,
    /// The first CPU id not yet covered.
    next: u64,
}

impl SegmentBuilder {
    fn push(&mut self, start: u32, leaf: Leaf) {
        if self.segs.last().map(|s| s.leaf) != Some(leaf) {
            self.segs.push(Segment { start, leaf });
        }
        self.next = u64::from(start) + 1;
    }

    /// Adds CPU `cpu` returning `leaf`, extending the last segment when it can: an equal
    /// leaf, or a one-CPU `Const(v)` followed by `v + 1` (which becomes `Linear`).
    fn point(&mut self, cpu: u32, leaf: Leaf) {
        let contiguous = self.next == u64::from(cpu);
        if let (true, Some(last), Leaf::Const(v)) = (contiguous, self.segs.last_mut(), leaf) {
            let single = u64::from(last.start) + 1 == u64::from(cpu);
            let as_linear = i64::from(v) - i64::from(cpu);
            match last.leaf {
                Leaf::Const(lv) if single && u64::from(lv) + 1 == u64::from(v) => {
                    last.leaf = Leaf::Linear(as_linear);
                    self.next = u64::from(cpu) + 1;
                    return;
                }
                Leaf::Linear(d) if d == as_linear => {
                    self.next = u64::from(cpu) + 1;
                    return;
                }
                _ => {}
            }
        }
        self.push(cpu, leaf);
    }
}

/// A balanced binary decision tree over segments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tree {
    /// One segment's code.
    Leaf(Leaf),
    /// `jge #at`: CPUs below `at` go to `below`, the rest to `above`.
    Split {
        /// The first CPU id of `above`.
        at: u32,
        /// Subtree for ids below `at`.
        below: Box<Tree>,
        /// Subtree for ids at or above `at`.
        above: Box<Tree>,
    },
}

/// Longest conditional jump (`jt`/`jf` are 8 bits).
const MAX_JUMP: usize = 255;

impl Tree {
    /// The tree over `segs` (not empty), split at the middle segment.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn build(segs: &[Segment]) -> Tree {
        if segs.len() <= 1 {
            return Tree::Leaf(segs.first().map_or(Leaf::Const(0), |s| s.leaf));
        }
        let mid = segs.len() / 2;
        Tree::Split {
            at: segs[mid].start,
            below: Box::new(Tree::build(&segs[..mid])),
            above: Box::new(Tree::build(&segs[mid..])),
        }
    }

    /// Instructions emitted for this subtree.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn size(&self) -> usize {
        match self {
            Tree::Leaf(l) => l.size(),
            Tree::Split { below, above, .. } => {
                let b = below.size();
                1 + usize::from(b > MAX_JUMP) + b + above.size()
            }
        }
    }

    /// The most instructions one run through this subtree executes.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn longest_path(&self) -> usize {
        match self {
            Tree::Leaf(l @ Leaf::Spread { .. }) => l.size() + l.block_size(),
            Tree::Leaf(l) => l.size(),
            Tree::Split { below, above, .. } => {
                let trampoline = usize::from(below.size() > MAX_JUMP);
                1 + (below.longest_path() + trampoline).max(above.longest_path())
            }
        }
    }

    /// The distinct spread leaves, in the order the tree is emitted: one shared block
    /// each.
    pub(crate) fn spreads(&self) -> Vec<Leaf> {
        let mut out = Vec::new();
        self.collect_spreads(&mut out);
        out
    }

    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn collect_spreads(&self, out: &mut Vec<Leaf>) {
        match self {
            Tree::Leaf(l @ Leaf::Spread { .. }) if !out.contains(l) => out.push(*l),
            Tree::Leaf(_) => {}
            Tree::Split { below, above, .. } => {
                below.collect_spreads(out);
                above.collect_spreads(out);
            }
        }
    }

    /// What the tree returns for `cpu`, `rxhash` and `rand`, evaluated directly (the
    /// reference for the emitted code, independent of asm-bpf).
    pub fn eval(&self, cpu: u32, rxhash: u32, rand: u32) -> u32 {
        match self {
            Tree::Leaf(Leaf::Const(v)) => *v,
            Tree::Leaf(Leaf::Linear(d)) => (i64::from(cpu) + d) as u32,
            Tree::Leaf(Leaf::Spread { first, count }) => {
                let h = if rxhash == 0 { rand } else { rxhash };
                h % count + first
            }
            Tree::Split { at, below, above } if cpu >= *at => above.eval(cpu, rxhash, rand),
            Tree::Split { below, .. } => below.eval(cpu, rxhash, rand),
        }
    }
}

/// The plan's tree, or `None` when the policy is `hash`.
pub fn decision_tree(plan: &Plan) -> Option<Tree> {
    if plan.steer == SteerPolicy::Hash || plan.workers.is_empty() {
        return None;
    }
    Some(Tree::build(&segments(plan)))
}

/// bpf_asm source for the tree: `ld #cpu`, then the tree in preorder, then one block per
/// distinct spread (cBPF jumps only forward, so the shared blocks come last).
pub(crate) fn source(tree: &Tree) -> String {
    let mut e = Emitter::default();
    e.line(None, "ld #cpu");
    e.tree(tree);
    for (leaf, label) in std::mem::take(&mut e.blocks) {
        e.place(label);
        e.spread_block(leaf);
    }
    e.out
}

#[derive(Default)]
struct Emitter {
    out: String,
    labels: usize,
    pending: Option<String>,
    /// Each distinct spread leaf and the label of its shared block. A node has one
    /// spread, so this holds at most one entry per node and a linear search is enough.
    blocks: Vec<(Leaf, String)>,
}

impl Emitter {
    fn label(&mut self, kind: &str) -> String {
        self.labels += 1;
        format!("{kind}{}", self.labels)
    }

    /// Writes one instruction, carrying the label set by [`Emitter::place`] if any.
    fn line(&mut self, label: Option<&str>, insn: &str) {
        let label = label.map(str::to_string).or_else(|| self.pending.take());
        match label {
            Some(l) => {
                let _ = writeln!(self.out, "{l}: {insn}");
            }
            None => {
                let _ = writeln!(self.out, "    {insn}");
            }
        }
    }

    /// The next instruction written carries `label`.
    fn place(&mut self, label: String) {
        self.pending = Some(label);
    }

    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn tree(&mut self, tree: &Tree) {
        match tree {
            Tree::Leaf(leaf) => self.leaf(*leaf),
            Tree::Split { at, below, above } if below.size() <= MAX_JUMP => {
                let (hi, lo) = (self.label("ge"), self.label("lt"));
                self.line(None, &format!("jge #{at}, {hi}, {lo}"));
                self.place(lo);
                self.tree(below);
                self.place(hi);
                self.tree(above);
            }
            Tree::Split { at, below, above } => {
                // `below` is too far for an 8-bit jump: hop over a 32-bit `ja` to it.
                let (hi, hop, lo) = (self.label("ge"), self.label("hop"), self.label("lt"));
                self.line(None, &format!("jge #{at}, {hi}, {hop}"));
                self.place(hop);
                self.line(None, &format!("ja {lo}"));
                self.place(hi);
                self.tree(above);
                self.place(lo);
                self.tree(below);
            }
        }
    }

    fn leaf(&mut self, leaf: Leaf) {
        match leaf {
            Leaf::Const(v) => self.line(None, &format!("ret #{v}")),
            Leaf::Linear(d) => {
                if d > 0 {
                    self.line(None, &format!("add #{d}"));
                } else if d < 0 {
                    self.line(None, &format!("sub #{}", d.unsigned_abs()));
                }
                self.line(None, "ret a");
            }
            Leaf::Spread { .. } => {
                let label = match self.blocks.iter().find(|(l, _)| *l == leaf) {
                    Some((_, label)) => label.clone(),
                    None => {
                        let label = self.label("spread");
                        self.blocks.push((leaf, label.clone()));
                        label
                    }
                };
                self.line(None, &format!("ja {label}"));
            }
        }
    }

    /// `(rxhash or rand) % count + first`, returned.
    fn spread_block(&mut self, leaf: Leaf) {
        let Leaf::Spread { first, count } = leaf else {
            return;
        };
        let (rand, modulo) = (self.label("rand"), self.label("mod"));
        self.line(None, "ld #rxhash");
        self.line(None, &format!("jeq #0, {rand}, {modulo}"));
        self.place(rand);
        self.line(None, "ld #rand");
        self.place(modulo);
        self.line(None, &format!("mod #{count}"));
        if first > 0 {
            self.line(None, &format!("add #{first}"));
        }
        self.line(None, "ret a");
    }
}
