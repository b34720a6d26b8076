//! Fuzz target `check_and_run`: arbitrary bytes become a packet context and a classic
//! BPF program. The checker must not panic; the interpreter must not panic (and must
//! give the same value twice) on every program, accepted by the checker or not.
//!
//! Input layout (every field optional: a short input leaves the rest at defaults):
//! byte 0 packet length P, byte 1 network-header length N, byte 2 flags (bit 0: no
//! device, bit 1: a link-layer header of N bytes, bit 2: VLAN tag present), then cpu,
//! rxhash, rand, mark, len as little-endian u32 and queue as u16, then P packet bytes,
//! N header bytes, then 8 bytes per instruction (code u16 LE, jt, jf, k u32 LE).

use asm_bpf::check::check;
use asm_bpf::interp::{run, Context};
use asm_bpf::Insn;

/// A cursor that yields zeros past the end of the input.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn take(&mut self, n: usize) -> &[u8] {
        let (head, tail) = self.0.split_at(n.min(self.0.len()));
        self.0 = tail;
        head
    }
    fn u8(&mut self) -> u8 {
        self.take(1).first().copied().unwrap_or(0)
    }
    fn u16(&mut self) -> u16 {
        u16::from(self.u8()) | u16::from(self.u8()) << 8
    }
    fn u32(&mut self) -> u32 {
        u32::from(self.u16()) | u32::from(self.u16()) << 16
    }
}

fn decode(data: &[u8]) -> (Vec<Insn>, Context) {
    let mut b = Bytes(data);
    let (p, n, flags) = (b.u8() as usize, b.u8() as usize, b.u8());
    let mut ctx = Context {
        cpu: b.u32(),
        rxhash: b.u32(),
        rand: b.u32(),
        mark: b.u32(),
        len: b.u32(),
        queue: b.u16(),
        vlan_present: flags & 4 != 0,
        ..Context::default()
    };
    ctx.packet = b.take(p).to_vec();
    let header = b.take(n).to_vec();
    if flags & 1 != 0 {
        ctx.ifindex = None;
    }
    if flags & 2 != 0 {
        ctx.link = Some(header.clone());
    }
    ctx.net = header;
    let prog =
        b.0.chunks(8)
            .map(|c| {
                let mut i = Bytes(c);
                Insn {
                    code: i.u16(),
                    jt: i.u8(),
                    jf: i.u8(),
                    k: i.u32(),
                }
            })
            .collect();
    (prog, ctx)
}

/// The properties above, for one input (the fuzz target and tests/code/fuzz_seeds.rs call it).
pub(super) fn holds(data: &[u8]) {
    let (prog, ctx) = decode(data);
    let _verdict = check(&prog);
    let first = run(&prog, &ctx);
    assert_eq!(first, run(&prog, &ctx), "the interpreter is deterministic");
}
