//! The builder emits exactly what the assembler makes of the same program, and refuses
//! what it promises to refuse.

use asm_bpf::builder::{BuildError, Builder, NEXT};
use asm_bpf::insn::*;
use asm_bpf::{assemble, Insn};

fn asm(src: &str) -> Vec<Insn> {
    assemble(src).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

#[test]
fn cpu_steering_program_matches_its_source() {
    let mut b = Builder::new();
    b.ld_ancillary(SKF_AD_CPU)
        .jge_k(4, "fallback", NEXT)
        .ret_a()
        .label("fallback")
        .ld_ancillary(SKF_AD_RXHASH)
        .mod_k(4)
        .ret_a();
    let src = "ld #cpu\njge #4, fallback\nret a\nfallback: ld #rxhash\nmod #4\nret a";
    assert_eq!(b.build(), Ok(asm(src)));
}

#[test]
fn every_builder_method_matches_the_assembler() {
    let mut b = Builder::new();
    b.ld_imm(1)
        .ld_len()
        .ld_mem(2)
        .ld_abs(3)
        .ldh_abs(4)
        .ldb_abs(5);
    b.ld_ind(6)
        .ldh_ind(7)
        .ldb_ind(8)
        .ld_ancillary(SKF_AD_RANDOM);
    b.ldx_imm(9)
        .ldx_len()
        .ldx_mem(10)
        .ldx_msh(14)
        .st(11)
        .stx(12);
    b.add_k(1)
        .sub_k(2)
        .mul_k(3)
        .div_k(4)
        .mod_k(5)
        .and_k(6)
        .or_k(7)
        .xor_k(8);
    b.lsh_k(9).rsh_k(10).neg().tax().txa();
    for op in [
        BPF_ADD, BPF_SUB, BPF_MUL, BPF_DIV, BPF_MOD, BPF_AND, BPF_OR, BPF_XOR,
    ] {
        b.alu_x(op);
    }
    b.alu_x(BPF_LSH).alu_x(BPF_RSH);
    b.ja("j1")
        .label("j1")
        .jeq_k(1, "j2", NEXT)
        .label("j2")
        .jgt_k(2, NEXT, "j3");
    b.label("j3")
        .jge_k(3, "j4", "j5")
        .label("j4")
        .jset_k(4, "j5", "j5");
    b.label("j5")
        .jeq_x("j6", NEXT)
        .label("j6")
        .jgt_x(NEXT, "j7")
        .label("j7");
    b.jge_x("j8", "end")
        .label("j8")
        .jset_x("end", NEXT)
        .label("end")
        .ret_k(7)
        .ret_a();
    let src = "
        ld #1\n ld #len\n ld M[2]\n ld [3]\n ldh [4]\n ldb [5]
        ld [x + 6]\n ldh [x + 7]\n ldb [x + 8]\n ld #rand
        ldx #9\n ldx #len\n ldx M[10]\n ldxb 4*([14]&0xf)\n st M[11]\n stx M[12]
        add #1\n sub #2\n mul #3\n div #4\n mod #5\n and #6\n or #7\n xor #8
        lsh #9\n rsh #10\n neg\n tax\n txa
        add x\n sub x\n mul x\n div x\n mod x\n and x\n or x\n xor x\n lsh x\n rsh x
        ja j1\n j1: jeq #1, j2\n j2: jle #2, j3
        j3: jge #3, j4, j5\n j4: jset #4, j5, j5
        j5: jeq x, j6\n j6: jle x, j7\n j7: jge x, j8, end\n j8: jset x, end
        end: ret #7\n ret a";
    assert_eq!(b.build(), Ok(asm(src)));
}

#[test]
fn jump_ranges_are_checked_as_the_assembler_checks_them() {
    let mut b = Builder::new();
    b.jeq_k(1, "far", NEXT);
    for _ in 0..256 {
        b.ld_imm(0);
    }
    b.label("far").ret_a();
    assert_eq!(
        b.build(),
        Err(BuildError::JumpOutOfRange {
            insn: 0,
            target: 257
        })
    );
    let mut b = Builder::new();
    b.jeq_k(1, "nowhere", NEXT).ret_a();
    let e = b.build().unwrap_err();
    assert_eq!(e.to_string(), "insn #0 jumps to undefined label 'nowhere'");
}

#[test]
fn what_bpf_asm_lets_through_the_builder_refuses() {
    assert_eq!(Builder::new().build(), Err(BuildError::Empty));
    let mut b = Builder::new();
    b.label("x").ret_a().label("x").ret_a();
    assert_eq!(b.build(), Err(BuildError::DuplicateLabel("x".into())));
    let mut b = Builder::new();
    b.ret_a().label("end");
    assert_eq!(b.build(), Err(BuildError::DanglingLabel("end".into())));
    let mut b = Builder::new();
    b.label("top").ld_imm(1).ja("top");
    assert_eq!(
        b.build(),
        Err(BuildError::BackwardJump { insn: 1, target: 0 })
    );
    let mut b = Builder::new();
    for _ in 0..=BPF_MAXINSNS {
        b.ret_a();
    }
    assert_eq!(b.build(), Err(BuildError::TooManyInsns(4097)));
}
