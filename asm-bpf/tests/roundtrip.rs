//! Property tests with seeded random programs (a small xorshift generator, no crates):
//! every opcode bpf_asm can emit, with random fields where bpf_asm leaves them free and
//! random in-range jump targets, must survive disassemble -> assemble and both output
//! formats -> parse unchanged. Random bit patterns that bpf_asm cannot express must be
//! reported as such, and their text must not assemble.

use asm_bpf::{assemble, dis, fmt, Insn};
use common::Rng;

mod common;

/// Opcodes whose k bpf_asm lets the source choose.
const K_FREE: &[u16] = &[
    0x00, 0x01, 0x20, 0x28, 0x30, 0x40, 0x48, 0x50, 0x60, 0x61, 0xb1, 0x02, 0x03, 0x04, 0x14, 0x24,
    0x34, 0x44, 0x54, 0x64, 0x74, 0x94, 0xa4, 0x06,
];
/// Opcodes bpf_asm always emits with k = 0.
const K_ZERO: &[u16] = &[
    0x80, 0x81, 0x0c, 0x1c, 0x2c, 0x3c, 0x4c, 0x5c, 0x6c, 0x7c, 0x9c, 0xac, 0x84, 0x16, 0x0e, 0x07,
    0x87,
];
/// Conditional jumps with k, and with x (k = 0).
const JUMP_K: &[u16] = &[0x15, 0x25, 0x35, 0x45];
const JUMP_X: &[u16] = &[0x1d, 0x2d, 0x3d, 0x4d];

/// A random program bpf_asm can express; the last instruction is a `ret` so every jump
/// has somewhere to land.
fn expressible(rng: &mut Rng) -> Vec<Insn> {
    let len = 1 + rng.below(40) as usize;
    (0..len)
        .map(|pc| {
            let room = (len - pc - 1) as u64;
            let jump_dist = |rng: &mut Rng| rng.below(room.min(256)) as u8;
            match rng.below(if room == 0 { 2 } else { 5 }) {
                0 => Insn::stmt(K_FREE[rng.below(K_FREE.len() as u64) as usize], rng.k()),
                1 => Insn::stmt(K_ZERO[rng.below(K_ZERO.len() as u64) as usize], 0),
                2 => {
                    // ja, forward or (bpf_asm allows it) backward within the program
                    let target = rng.below(len as u64) as u32;
                    Insn::stmt(0x05, target.wrapping_sub(pc as u32 + 1))
                }
                3 => {
                    let code = JUMP_K[rng.below(4) as usize];
                    Insn::jump(code, rng.k(), jump_dist(rng), jump_dist(rng))
                }
                _ => {
                    let code = JUMP_X[rng.below(4) as usize];
                    Insn::jump(code, 0, jump_dist(rng), jump_dist(rng))
                }
            }
        })
        .collect()
}

#[test]
fn every_expressible_program_survives_disassembly_and_both_formats() {
    let mut rng = Rng(0x5eed_0001);
    let mut seen = std::collections::HashSet::new();
    for case in 0..2000 {
        let prog = expressible(&mut rng);
        seen.extend(prog.iter().map(|i| i.code));
        let text = dis::disassemble_exact(&prog).unwrap_or_else(|e| panic!("case {case}: {e}"));
        let again = assemble(&text).unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        assert_eq!(again, prog, "case {case}:\n{text}");
        assert_eq!(
            fmt::parse_bytecode(&fmt::format_default(&prog)),
            Ok(prog.clone())
        );
        assert_eq!(fmt::parse_bytecode(&fmt::format_c(&prog)), Ok(prog.clone()));
    }
    let all = K_FREE.len() + K_ZERO.len() + 1 + JUMP_K.len() + JUMP_X.len();
    assert_eq!(seen.len(), all, "every encodable opcode was generated");
}

#[test]
fn mutated_bit_patterns_are_either_exact_or_refused() {
    let mut rng = Rng(0x5eed_0002);
    let (mut exact, mut raw) = (0, 0);
    for case in 0..2000 {
        let mut prog = expressible(&mut rng);
        if rng.below(2) == 0 {
            // one random field of one instruction gets random bits
            let at = rng.below(prog.len() as u64) as usize;
            let i = &mut prog[at];
            match rng.below(4) {
                0 => i.code = [rng.next() as u16, rng.below(0x100) as u16][rng.below(2) as usize],
                1 => i.jt = rng.next() as u8,
                2 => i.jf = rng.next() as u8,
                _ => i.k = rng.k(),
            }
        }
        let text = dis::disassemble(&prog);
        match dis::inexpressible(&prog).is_empty() {
            true => {
                exact += 1;
                assert_eq!(assemble(&text).as_ref(), Ok(&prog), "case {case}:\n{text}");
            }
            false => {
                raw += 1;
                assert!(
                    assemble(&text).is_err(),
                    "case {case}: raw text assembled\n{text}"
                );
                assert!(dis::disassemble_exact(&prog).is_err());
            }
        }
        assert_eq!(
            fmt::parse_bytecode(&fmt::format_default(&prog)),
            Ok(prog.clone())
        );
        assert_eq!(fmt::parse_bytecode(&fmt::format_c(&prog)), Ok(prog.clone()));
    }
    assert!(
        exact > 100 && raw > 100,
        "both kinds exercised: {exact} exact, {raw} raw"
    );
}
