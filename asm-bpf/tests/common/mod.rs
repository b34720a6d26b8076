//! Shared by the asm-bpf tests: a seeded generator with no dependencies, the checker
//! vectors (the data file plus the programs too long to write on one line), and a
//! generator of almost-valid random programs for the checker and interpreter tests, and
//! the readers of the assembler's vector files in `tests/data/`.
#![allow(dead_code)]

use asm_bpf::check::ALLOWED_OPCODES;
use asm_bpf::insn::*;
use asm_bpf::Insn;
use std::path::{Path, PathBuf};

/// xorshift64*: deterministic, good enough to spread test cases.
pub(crate) struct Rng(pub u64);

#[allow(dead_code)]
impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// One element of `items`.
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// True with probability `num / den`.
    pub(crate) fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    /// A k value that is often small, sometimes an edge, sometimes anything.
    pub(crate) fn k(&mut self) -> u32 {
        match self.below(4) {
            0 => self.below(16) as u32,
            1 => *self.pick(&[0, 1, 0xffff, 0x10000, 0xffff_ffff, 0xffff_f000, 0xfff0_0000]),
            2 => 0xffff_f000 + 4 * self.below(17) as u32,
            _ => self.next() as u32,
        }
    }
}

/// One checker test case.
pub(crate) struct Vector {
    /// What the case shows (the data file's last column).
    pub name: String,
    /// The program.
    pub prog: Vec<Insn>,
    /// `None` if the kernel accepts it, else the checker's exact message.
    pub expect: Option<String>,
}

/// Every checker vector: `tests/data/check_vectors.txt`, then [`long_vectors`].
pub(crate) fn check_vectors() -> Vec<Vector> {
    let text = include_str!("../data/check_vectors.txt");
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split(" | ").collect();
        assert_eq!(cols.len(), 3, "check_vectors.txt line {}: 3 columns", i + 1);
        let prog = asm_bpf::fmt::parse_bytecode(cols[1])
            .unwrap_or_else(|e| panic!("check_vectors.txt line {}: {e}", i + 1));
        out.push(Vector {
            name: format!("line {}: {}", i + 1, cols[2]),
            prog,
            expect: (cols[0] != "ok").then(|| cols[0].to_string()),
        });
    }
    out.extend(long_vectors());
    out
}

fn ret_k(k: u32) -> Insn {
    Insn::stmt(BPF_RET | BPF_K, k)
}

fn vector(name: &str, prog: Vec<Insn>, expect: Option<&str>) -> Vector {
    Vector {
        name: name.to_string(),
        prog,
        expect: expect.map(str::to_string),
    }
}

/// Programs at the limits, and one using every allowed opcode.
pub(crate) fn long_vectors() -> Vec<Vector> {
    let rets = |n: usize| vec![ret_k(0); n];
    let with_first = |first: Insn, n: usize| {
        let mut p = rets(n);
        p[0] = first;
        p
    };
    let ja = |k: u32| Insn::stmt(BPF_JMP | BPF_JA, k);
    let jeq = |jt: u8| Insn::jump(BPF_JMP | BPF_JEQ | BPF_K, 0, jt, 0);
    let mut late_read = rets(4096);
    late_read[0] = Insn::stmt(BPF_ST, 15);
    late_read[4094] = Insn::stmt(BPF_LD | BPF_MEM, 15);
    let mut unwritten = late_read.clone();
    unwritten[0] = Insn::stmt(BPF_ST, 14);
    vec![
        vector("4096 instructions", rets(4096), None),
        vector(
            "4097 instructions",
            rets(4097),
            Some("program length 4097 is outside 1..=4096"),
        ),
        vector(
            "ja over 4094 to the last of 4096",
            with_first(ja(4094), 4096),
            None,
        ),
        vector(
            "ja 4095 in 4096",
            with_first(ja(4095), 4096),
            Some("insn 0: jump out of range"),
        ),
        vector("jt 255 to the last of 257", with_first(jeq(255), 257), None),
        vector(
            "jt 255 in 256",
            with_first(jeq(255), 256),
            Some("insn 0: jump out of range"),
        ),
        vector("M[15] written at 0, read at 4094", late_read, None),
        vector(
            "M[15] never written, read at 4094",
            unwritten,
            Some("insn 4094: M[15] may be read before it is written"),
        ),
        vector("every allowed opcode", every_opcode(), None),
    ]
}

/// A program the kernel accepts that contains each of the 49 allowed opcodes.
pub(crate) fn every_opcode() -> Vec<Insn> {
    let mut prog = vec![Insn::stmt(BPF_ST, 0)];
    for &code in ALLOWED_OPCODES.iter() {
        let k = match code {
            c if c & 0x07 == BPF_ALU => 1,
            c if c == BPF_LD | BPF_B | BPF_ABS => ancillary_k(SKF_AD_CPU),
            _ => 0,
        };
        prog.push(Insn::stmt(code, k));
    }
    prog.push(ret_k(0));
    prog
}

/// The number in environment variable `name`, or `default`: lets a randomized test be
/// replayed with another seed or widened without editing it.
pub(crate) fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A random program biased towards almost-valid ones: valid opcodes, jumps at the edge
/// of the program, scratch indexes around 16, ancillary offsets around the table,
/// divisions and shifts at their limits, mostly a final `ret`. Lengths are mostly
/// short, sometimes hundreds, rarely at the 4096 limit (and sometimes 0 or 4097).
pub(crate) fn random_program(rng: &mut Rng) -> Vec<Insn> {
    if rng.chance(1, 2) {
        return mutated_valid_program(rng);
    }
    let len = match rng.below(100) {
        0 => *rng.pick(&[0, 4095, 4096, 4097]),
        1..=9 => 13 + rng.below(300) as usize,
        _ => 1 + rng.below(12) as usize,
    };
    let mut prog: Vec<Insn> = (0..len).map(|pc| random_insn(rng, len, pc)).collect();
    if let Some(last) = prog.last_mut() {
        if rng.chance(8, 10) {
            *last = Insn::stmt(*rng.pick(&[BPF_RET | BPF_K, BPF_RET | BPF_A]), 0);
        }
    }
    prog
}

fn random_code(rng: &mut Rng) -> u16 {
    match rng.below(100) {
        0..=2 => BPF_RET | BPF_X,
        3..=6 => rng.below(256) as u16,
        7 => rng.next() as u16,
        // Scratch traffic, to exercise the data-flow rule.
        8..=27 => *rng.pick(&[BPF_ST, BPF_STX, BPF_LD | BPF_MEM, BPF_LDX | BPF_MEM]),
        // Jumps, to exercise targets and the data flow across them.
        28..=45 => *rng.pick(&[0x05, 0x15, 0x1d, 0x25, 0x2d, 0x35, 0x3d, 0x45, 0x4d]),
        _ => *rng.pick(&ALLOWED_OPCODES),
    }
}

fn random_insn(rng: &mut Rng, len: usize, pc: usize) -> Insn {
    let code = random_code(rng);
    let remaining = (len - pc - 1) as i64;
    let near_end = |rng: &mut Rng| (remaining + rng.below(4) as i64 - 2).max(0);
    let jump_field = |rng: &mut Rng| -> u8 {
        match rng.below(4) {
            0 => near_end(rng).min(255) as u8,
            1 => rng.next() as u8,
            _ => rng.below((remaining as u64).clamp(1, 256)) as u8,
        }
    };
    let k = match code {
        0x02 | 0x03 | 0x60 | 0x61 => match rng.below(10) {
            0 => rng.next() as u32,
            1 => 14 + rng.below(4) as u32,
            _ => rng.below(4) as u32,
        },
        0x34 | 0x94 => *rng.pick(&[0, 1, 7, u32::MAX]),
        0x64 | 0x74 => 29 + rng.below(6) as u32,
        0x05 => match rng.below(3) {
            0 => rng.below((remaining as u64).max(1)) as u32,
            1 => rng.next() as u32,
            _ => near_end(rng) as u32,
        },
        0x20 | 0x28 | 0x30 => match rng.below(4) {
            0 => ancillary_k(0)
                .wrapping_add(rng.below(72) as u32)
                .wrapping_sub(4),
            1 => *rng.pick(&[0xfff0_0009, 0xffe0_000c, 0xffff_ffff, 0xffff_efff]),
            2 => rng.next() as u32,
            _ => rng.below(64) as u32,
        },
        _ if rng.chance(1, 2) => rng.below(40) as u32,
        _ => rng.next() as u32,
    };
    let (jt, jf) = if code & 0x07 == BPF_JMP || rng.chance(1, 20) {
        (jump_field(rng), jump_field(rng))
    } else {
        (0, 0)
    };
    Insn { code, jt, jf, k }
}

/// A program built to pass every rule (long ones included), then changed in 0 to 2
/// places: one field moved to the edge of its rule, or one instruction replaced.
fn mutated_valid_program(rng: &mut Rng) -> Vec<Insn> {
    let len = match rng.below(10) {
        0 => 4000 + rng.below(97) as usize,
        1..=3 => 20 + rng.below(500) as usize,
        _ => 2 + rng.below(20) as usize,
    };
    let written = 1 + rng.below(16) as u32;
    let mut prog: Vec<Insn> = (0..len)
        .map(|pc| valid_insn(rng, len, pc, written))
        .collect();
    for cell in 0..written.min(len as u32 - 1) {
        prog[cell as usize] = Insn::stmt(BPF_ST, cell);
    }
    prog[len - 1] = Insn::stmt(BPF_RET | BPF_A, 0);
    for _ in 0..rng.below(3) {
        let pc = rng.below(len as u64) as usize;
        prog[pc] = if rng.chance(1, 2) {
            random_insn(rng, len, pc)
        } else {
            nudge(rng, prog[pc])
        };
    }
    prog
}

/// An instruction that passes its own rules at `pc` of `len`, reading only cells
/// below `written`.
fn valid_insn(rng: &mut Rng, len: usize, pc: usize, written: u32) -> Insn {
    let code = *rng.pick(&ALLOWED_OPCODES);
    let remaining = (len - pc - 1) as u64;
    let k = match code {
        0x02 | 0x03 => rng.below(16) as u32,
        0x60 | 0x61 => rng.below(u64::from(written)) as u32,
        0x34 | 0x94 => 1 + rng.below(100) as u32,
        0x64 | 0x74 => rng.below(32) as u32,
        0x05 if remaining == 0 => return Insn::stmt(BPF_RET | BPF_K, 0),
        0x05 => rng.below(remaining) as u32,
        0x20 | 0x28 | 0x30 if rng.chance(1, 2) => ancillary_k(4 * rng.below(16) as u32),
        _ => rng.next() as u32 % 1000,
    };
    if code & 0x07 == BPF_JMP && code != 0x05 {
        if remaining == 0 {
            return Insn::stmt(BPF_RET | BPF_K, 0);
        }
        let field = |rng: &mut Rng| rng.below(remaining.min(256)) as u8;
        return Insn::jump(code, k, field(rng), field(rng));
    }
    Insn::stmt(code, k)
}

/// Moves one field of `insn` by a little, or to a value at a rule's edge.
fn nudge(rng: &mut Rng, mut insn: Insn) -> Insn {
    let delta = rng.below(5) as i64 - 2;
    match rng.below(4) {
        0 => insn.k = (i64::from(insn.k) + delta) as u32,
        1 => insn.jt = (i64::from(insn.jt) + delta) as u8,
        2 => insn.jf = (i64::from(insn.jf) + delta) as u8,
        _ => {
            insn.k = *rng.pick(&[
                0,
                15,
                16,
                31,
                32,
                ancillary_k(60),
                ancillary_k(64),
                u32::MAX,
            ])
        }
    }
    insn
}

/// A path under `tests/data/`.
pub(crate) fn data(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(sub)
}

/// A data file's text.
pub(crate) fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The source escapes of the one-line vector files: \n \t \r \\ \xHH.
pub(crate) fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let (byte, len) = match b.get(i + 1) {
            Some(b'n') => (b'\n', 2),
            Some(b't') => (b'\t', 2),
            Some(b'r') => (b'\r', 2),
            Some(b'\\') => (b'\\', 2),
            Some(b'x') => (u8::from_str_radix(&s[i + 2..i + 4], 16).expect("\\xHH"), 4),
            _ => panic!("bad escape in {s:?}"),
        };
        out.push(byte);
        i += len;
    }
    out
}

/// The `SOURCE ==> EXPECTED` lines of a vector file.
pub(crate) fn cases(file: &str) -> Vec<(Vec<u8>, String)> {
    let text = read(&data(file));
    let cases: Vec<_> = text
        .lines()
        .filter(|l| !l.starts_with("//") && !l.trim().is_empty())
        .map(|l| {
            let (src, expected) = l.rsplit_once(" ==> ").expect("SOURCE ==> EXPECTED");
            (unescape(src), expected.to_string())
        })
        .collect();
    assert!(cases.len() > 50, "{file} has only {} cases", cases.len());
    cases
}

/// Says that the running test did not run its check (`why`), by the steerd tests' rule
/// (`tests/support/skip.rs`, included below): `skipped NAME: WHY` past the harness's
/// capture, and under CI (`CI=true`) a failure unless `.ci/allowed-skips` names the test.
pub(crate) fn skipped(why: &str) {
    skip::skip_or_fail(&skip::this_test(), why);
}

#[allow(dead_code)]
#[path = "../../../tests/support/skip.rs"]
mod skip;
