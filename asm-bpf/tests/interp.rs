//! The interpreter, one opcode class at a time, against values worked out by hand from
//! the kernel's conversion (`bpf_convert_filter`); then the no-panic contract on random
//! and unchecked bytecode. `kernel_interp.rs` compares it with the kernel itself.

mod common;

use asm_bpf::check::check;
use asm_bpf::insn::*;
use asm_bpf::interp::{run, Context};
use asm_bpf::Insn;

fn s(code: u16, k: u32) -> Insn {
    Insn::stmt(code, k)
}
fn ld(k: u32) -> Insn {
    s(BPF_LD | BPF_IMM, k)
}
fn ldx(k: u32) -> Insn {
    s(BPF_LDX | BPF_W | BPF_IMM, k)
}
fn ret_a() -> Insn {
    s(BPF_RET | BPF_A, 0)
}
fn ret_k(k: u32) -> Insn {
    s(BPF_RET | BPF_K, k)
}

/// Runs a checker-accepted program (asserted, so every case is a real kernel program).
fn run_ok(prog: &[Insn], ctx: &Context) -> u32 {
    assert_eq!(check(prog), Ok(()), "{prog:?}");
    run(prog, ctx)
}

/// `prog` then `ret a`, on `ctx`.
fn a_after(prog: &[Insn], ctx: &Context) -> u32 {
    let mut p = prog.to_vec();
    p.push(ret_a());
    run_ok(&p, ctx)
}

fn packet() -> Context {
    Context::with_packet(vec![0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0])
}

#[test]
fn ld_imm_len_and_scratch() {
    let ctx = packet();
    assert_eq!(a_after(&[ld(42)], &ctx), 42);
    assert_eq!(a_after(&[s(BPF_LD | BPF_LEN, 99)], &ctx), 8);
    let st = [ld(7), s(BPF_ST, 3), ld(0), s(BPF_LD | BPF_MEM, 3)];
    assert_eq!(a_after(&st, &ctx), 7);
    let stx = [ldx(9), s(BPF_STX, 15), s(BPF_LD | BPF_MEM, 15)];
    assert_eq!(a_after(&stx, &ctx), 9);
}

#[test]
fn ld_abs_reads_big_endian_and_aborts_out_of_bounds() {
    let ctx = packet();
    let abs = |size: u16, k: u32| a_after(&[ld(5), s(BPF_LD | size | BPF_ABS, k)], &ctx);
    assert_eq!(abs(BPF_W, 0), 0x1234_5678);
    assert_eq!(abs(BPF_H, 1), 0x3456);
    assert_eq!(abs(BPF_B, 7), 0xf0);
    assert_eq!(abs(BPF_W, 4), 0x9abc_def0);
    // One byte past the end: the program ends with 0, not with A (5).
    assert_eq!(abs(BPF_W, 5), 0);
    assert_eq!(abs(BPF_H, 7), 0);
    assert_eq!(abs(BPF_B, 8), 0);
    assert_eq!(abs(BPF_W, 0x7fff_ffff), 0);
}

#[test]
fn ld_ind_adds_x_modulo_2_32() {
    let ctx = packet();
    let ind = |x: u32, size: u16, k: u32| a_after(&[ldx(x), s(BPF_LD | size | BPF_IND, k)], &ctx);
    assert_eq!(ind(2, BPF_H, 1), 0x789a);
    assert_eq!(ind(0xffff_ffff, BPF_B, 1), 0x12);
    // X + k = -1: a negative offset above SKF_NET_OFF with no network header: abort.
    assert_eq!(ind(0xffff_fffe, BPF_B, 1), 0);
    assert_eq!(ind(4, BPF_W, 1), 0);
}

#[test]
fn bytes_between_packet_and_len_read_as_zero() {
    let ctx = Context {
        len: 10,
        ..packet()
    };
    assert_eq!(a_after(&[s(BPF_LD | BPF_H | BPF_ABS, 7)], &ctx), 0xf000);
    assert_eq!(a_after(&[ld(1), s(BPF_LD | BPF_B | BPF_ABS, 10)], &ctx), 0);
}

#[test]
fn negative_offsets_reach_network_and_link_headers() {
    let mut ip = vec![
        0x45, 0, 0, 40, 0, 0, 0, 0, 64, 6, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1,
    ];
    ip.extend([0x9c, 0x40, 0x1f, 0x90]);
    let ctx = Context {
        net: ip,
        ..Context::default()
    };
    let net = |k: i32| (SKF_NET_OFF + k) as u32;
    assert_eq!(a_after(&[s(BPF_LD | BPF_B | BPF_ABS, net(9))], &ctx), 6);
    assert_eq!(
        a_after(&[s(BPF_LD | BPF_W | BPF_ABS, net(12))], &ctx),
        0x7f00_0001
    );
    // The TCP source port: X = IP header length, then [x + SKF_NET_OFF].
    let port = [
        s(BPF_LDX | BPF_B | BPF_MSH, net(0)),
        s(BPF_LD | BPF_H | BPF_IND, net(0)),
    ];
    assert_eq!(a_after(&port, &ctx), 40000);
    assert_eq!(
        a_after(&[ld(3), s(BPF_LD | BPF_W | BPF_ABS, net(21))], &ctx),
        0
    );
    // No link-layer header, then one.
    let ll = s(BPF_LD | BPF_H | BPF_ABS, (SKF_LL_OFF + 12) as u32);
    assert_eq!(a_after(&[ld(3), ll], &ctx), 0);
    let mut eth = vec![0; 12];
    eth.extend([0x08, 0x00]);
    let with_link = Context {
        link: Some(eth),
        ..Context::default()
    };
    assert_eq!(a_after(&[ll], &with_link), 0x0800);
    // Below SKF_LL_OFF: abort.
    assert_eq!(
        a_after(
            &[ld(3), ldx(0xffdf_ffff), s(BPF_LD | BPF_B | BPF_IND, 0)],
            &ctx
        ),
        0
    );
}

#[test]
fn ldx_forms_and_msh_leave_a_alone() {
    let ctx = packet();
    let x_after = |prog: &[Insn]| {
        let mut p = prog.to_vec();
        p.extend([s(BPF_MISC | BPF_TXA, 0), ret_a()]);
        run_ok(&p, &ctx)
    };
    assert_eq!(x_after(&[ldx(77)]), 77);
    assert_eq!(x_after(&[s(BPF_LDX | BPF_W | BPF_LEN, 0)]), 8);
    assert_eq!(x_after(&[ld(5), s(BPF_ST, 0), s(BPF_LDX | BPF_MEM, 0)]), 5);
    // P[1] = 0x34: (0x4) * 4 = 16.
    assert_eq!(x_after(&[s(BPF_LDX | BPF_B | BPF_MSH, 1)]), 16);
    assert_eq!(a_after(&[ld(5), s(BPF_LDX | BPF_B | BPF_MSH, 1)], &ctx), 5);
    assert_eq!(a_after(&[ld(5), s(BPF_LDX | BPF_B | BPF_MSH, 8)], &ctx), 0);
}

#[test]
fn alu_with_k_and_with_x() {
    let ctx = Context::default();
    let alu = |a: u32, op: u16, v: u32| {
        let k_refused = (matches!(op, BPF_DIV | BPF_MOD) && v == 0)
            || (matches!(op, BPF_LSH | BPF_RSH) && v >= 32);
        let with_k = (!k_refused).then(|| a_after(&[ld(a), s(BPF_ALU | op | BPF_K, v)], &ctx));
        let with_x = a_after(&[ld(a), ldx(v), s(BPF_ALU | op | BPF_X, 0)], &ctx);
        if let Some(k) = with_k {
            assert_eq!(k, with_x, "op {op:#x} a {a} v {v}: k and x differ");
        }
        with_x
    };
    assert_eq!(alu(u32::MAX, BPF_ADD, 2), 1);
    assert_eq!(alu(1, BPF_SUB, 2), u32::MAX);
    assert_eq!(alu(0x1_0001, BPF_MUL, 0x1_0001), 0x2_0001);
    assert_eq!(alu(7, BPF_DIV, 2), 3);
    assert_eq!(alu(u32::MAX, BPF_DIV, u32::MAX), 1);
    assert_eq!(alu(7, BPF_MOD, 4), 3);
    assert_eq!(alu(0b1100, BPF_OR, 0b1010), 0b1110);
    assert_eq!(alu(0b1100, BPF_AND, 0b1010), 0b1000);
    assert_eq!(alu(0b1100, BPF_XOR, 0b1010), 0b0110);
    assert_eq!(alu(1, BPF_LSH, 31), 0x8000_0000);
    assert_eq!(alu(0x8000_0000, BPF_RSH, 31), 1);
    // Shifts by X use X & 31.
    assert_eq!(alu(1, BPF_LSH, 33), 2);
    assert_eq!(alu(4, BPF_RSH, 32), 4);
    // Division and modulo by X = 0 end the program with 0.
    assert_eq!(alu(7, BPF_DIV, 0), 0);
    assert_eq!(alu(7, BPF_MOD, 0), 0);
    assert_eq!(
        a_after(&[ld(5), s(BPF_ALU | BPF_NEG, 0)], &ctx),
        5u32.wrapping_neg()
    );
    assert_eq!(a_after(&[ld(0), s(BPF_ALU | BPF_NEG, 9)], &ctx), 0);
}

#[test]
fn jumps_compare_unsigned() {
    let ctx = Context::default();
    // A = a; if (A op v) ret 1 else ret 2; both with k and with x.
    let cond = |a: u32, op: u16, v: u32| {
        let k = run_ok(
            &[
                ld(a),
                Insn::jump(BPF_JMP | op | BPF_K, v, 0, 1),
                ret_k(1),
                ret_k(2),
            ],
            &ctx,
        );
        let x = run_ok(
            &[
                ld(a),
                ldx(v),
                Insn::jump(BPF_JMP | op | BPF_X, 0, 0, 1),
                ret_k(1),
                ret_k(2),
            ],
            &ctx,
        );
        assert_eq!(k, x, "op {op:#x}");
        k == 1
    };
    assert!(cond(3, BPF_JEQ, 3));
    assert!(!cond(3, BPF_JEQ, 4));
    assert!(cond(u32::MAX, BPF_JGT, 1));
    assert!(!cond(1, BPF_JGT, u32::MAX));
    assert!(!cond(1, BPF_JGT, 1));
    assert!(cond(1, BPF_JGE, 1));
    assert!(!cond(0, BPF_JGE, 0x8000_0000));
    assert!(cond(0b110, BPF_JSET, 0b011));
    assert!(!cond(0b100, BPF_JSET, 0b011));
    // ja skips k instructions; jt/jf of a taken jump skip as many.
    let ja = [s(BPF_JMP | BPF_JA, 2), ret_k(1), ret_k(2), ret_k(3)];
    assert_eq!(run_ok(&ja, &ctx), 3);
    let far = [
        ld(1),
        Insn::jump(BPF_JMP | BPF_JEQ | BPF_K, 1, 2, 0),
        ret_k(1),
        ret_k(2),
        ret_k(3),
    ];
    assert_eq!(run_ok(&far, &ctx), 3);
}

#[test]
fn ret_and_register_transfers() {
    let ctx = Context::default();
    assert_eq!(run_ok(&[ret_k(0xdead_beef)], &ctx), 0xdead_beef);
    assert_eq!(run_ok(&[ret_a()], &ctx), 0, "A starts at 0");
    assert_eq!(
        a_after(&[s(BPF_MISC | BPF_TXA, 0)], &ctx),
        0,
        "X starts at 0"
    );
    let swap = [
        ld(4),
        s(BPF_MISC | BPF_TAX, 0),
        ld(1),
        s(BPF_ALU | BPF_ADD | BPF_X, 0),
    ];
    assert_eq!(a_after(&swap, &ctx), 5);
}

#[test]
fn every_ancillary_load_ignores_the_size() {
    let ctx = Context {
        protocol: 0x86dd,
        pkttype: 3,
        ifindex: Some(0x0102_0304),
        hatype: 1,
        mark: 0xaabb_ccdd,
        queue: 0x1234,
        rxhash: 0xfeed_f00d,
        cpu: 0x1_0001,
        vlan_tci: 0x0fff,
        vlan_present: true,
        vlan_tpid: 0x88a8,
        poff: 54,
        rand: 0xdead_beef,
        ..Context::default()
    };
    let cases = [
        (SKF_AD_PROTOCOL, 0x86dd),
        (SKF_AD_PKTTYPE, 3),
        (SKF_AD_IFINDEX, 0x0102_0304),
        (SKF_AD_HATYPE, 1),
        (SKF_AD_MARK, 0xaabb_ccdd),
        (SKF_AD_QUEUE, 0x1234),
        (SKF_AD_RXHASH, 0xfeed_f00d),
        (SKF_AD_CPU, 0x1_0001),
        (SKF_AD_VLAN_TAG, 0x0fff),
        (SKF_AD_VLAN_TAG_PRESENT, 1),
        (SKF_AD_PAY_OFFSET, 54),
        (SKF_AD_RANDOM, 0xdead_beef),
        (SKF_AD_VLAN_TPID, 0x88a8),
    ];
    for (off, want) in cases {
        for size in [BPF_W, BPF_H, BPF_B] {
            let got = a_after(&[s(BPF_LD | size | BPF_ABS, ancillary_k(off))], &ctx);
            assert_eq!(got, want, "SKF_AD {off} size {size:#x}");
        }
    }
    let xor = [
        ld(0b1100),
        ldx(0b1010),
        s(BPF_LD | BPF_B | BPF_ABS, ancillary_k(SKF_AD_ALU_XOR_X)),
    ];
    assert_eq!(a_after(&xor, &ctx), 0b0110);
}

#[test]
fn no_device_ends_ifidx_and_hatype_with_current_a() {
    let ctx = Context {
        ifindex: None,
        ..Context::default()
    };
    for off in [SKF_AD_IFINDEX, SKF_AD_HATYPE] {
        let prog = [
            ld(9),
            s(BPF_LD | BPF_W | BPF_ABS, ancillary_k(off)),
            ret_k(1),
        ];
        assert_eq!(run_ok(&prog, &ctx), 9);
    }
}

#[test]
fn netlink_attribute_search() {
    // Two attributes (host byte order): len 8 type 1, then len 6 type 0x4002 (nested
    // flag set, padded to 8), then a nest of len 12 holding len 8 type 7.
    let mut p = Vec::new();
    for (len, ty) in [(8u16, 1u16), (6, 0x4002)] {
        p.extend(len.to_ne_bytes());
        p.extend(ty.to_ne_bytes());
        p.extend([0; 4]);
    }
    for (len, ty) in [(12u16, 3u16), (8, 7)] {
        p.extend(len.to_ne_bytes());
        p.extend(ty.to_ne_bytes());
    }
    p.extend([0; 4]);
    let ctx = Context::with_packet(p);
    let find = |a: u32, x: u32, off: u32| {
        a_after(
            &[ld(a), ldx(x), s(BPF_LD | BPF_W | BPF_ABS, ancillary_k(off))],
            &ctx,
        )
    };
    assert_eq!(find(0, 1, SKF_AD_NLATTR), 0);
    assert_eq!(find(0, 2, SKF_AD_NLATTR), 8);
    assert_eq!(find(0, 3, SKF_AD_NLATTR), 16);
    assert_eq!(find(0, 9, SKF_AD_NLATTR), 0);
    assert_eq!(find(8, 3, SKF_AD_NLATTR), 16);
    assert_eq!(find(16, 7, SKF_AD_NLATTR_NEST), 20);
    assert_eq!(find(16, 8, SKF_AD_NLATTR_NEST), 0);
    assert_eq!(find(u32::MAX, 1, SKF_AD_NLATTR), 0);
}

#[test]
fn default_context_is_a_loopback_syn() {
    let ctx = Context::default();
    assert_eq!(run_ok(&[s(BPF_LD | BPF_W | BPF_ABS, 0), ret_k(7)], &ctx), 0);
    assert_eq!(a_after(&[s(BPF_LD | BPF_LEN, 0)], &ctx), 0);
    let proto = s(BPF_LD | BPF_H | BPF_ABS, ancillary_k(SKF_AD_PROTOCOL));
    assert_eq!(a_after(&[proto], &ctx), 0x0800);
}

#[test]
fn unchecked_bytecode_gets_documented_results() {
    let ctx = Context::default();
    // Unknown opcode, running off the end, a jump past the end, M[16], div #0, lsh #32:
    // all end with 0.
    let zero_cases: [&[Insn]; 7] = [
        &[ld(3), s(0x21, 0), ret_a()],
        &[ld(3)],
        &[ld(3), s(BPF_JMP | BPF_JA, u32::MAX), ret_a()],
        &[
            ld(3),
            Insn::jump(BPF_JMP | BPF_JEQ | BPF_K, 3, 200, 0),
            ret_a(),
        ],
        &[ld(3), s(BPF_ST, 16), ret_a()],
        &[ld(3), s(BPF_ALU | BPF_DIV | BPF_K, 0), ret_a()],
        &[ld(3), s(BPF_ALU | BPF_LSH | BPF_K, 32), ret_a()],
    ];
    for prog in zero_cases {
        assert!(check(prog).is_err());
        assert_eq!(run(prog, &ctx), 0, "{prog:?}");
    }
    assert_eq!(run(&[ldx(6), s(BPF_RET | BPF_X, 0)], &ctx), 6);
    assert_eq!(run(&[], &ctx), 0);
}

#[test]
fn random_programs_never_panic_the_interpreter() {
    let mut rng = common::Rng(11);
    for i in 0..20_000 {
        let prog = common::random_program(&mut rng);
        let len = rng.below(20) as usize;
        let mut ctx = Context::with_packet((0..len).map(|_| rng.next() as u8).collect());
        ctx.cpu = rng.next() as u32;
        ctx.len = if i % 7 == 0 {
            rng.next() as u32
        } else {
            ctx.len
        };
        ctx.net = (0..rng.below(40)).map(|_| rng.next() as u8).collect();
        let _ = run(&prog, &ctx);
    }
}
