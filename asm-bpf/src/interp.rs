//! Interpreter: a classic BPF program and a described packet in, the program's return
//! value out, with the semantics Linux gives a classic program after converting it to
//! eBPF.
//!
//! Stage: test oracle and `steerd bpf run`; the server never runs programs itself.
//! Input: a slice of [`Insn`] and a [`Context`]. Output: the u32 the kernel would return
//! (for a reuseport group, the index of the socket that receives the connection).
//!
//! Required reading: `net/core/filter.c` (`bpf_convert_filter`, `convert_bpf_extensions`,
//! `convert_bpf_ld_abs`, `bpf_skb_load_helper_*`, `bpf_internal_load_pointer_neg_helper`,
//! `__skb_get_nlattr*`), `kernel/bpf/core.c` (shift masking), and section 6 of the
//! asm-bpf spec. The rules that surprise:
//!
//! * A and X start at 0; all arithmetic wraps at 2^32; all comparisons are unsigned.
//! * An out-of-bounds packet load, or division/modulo by X = 0, ends the program and
//!   returns 0 (for reuseport: socket 0, not the hash fallback).
//! * Shifts by X use X & 31. Ancillary loads ignore the size bits.
//! * Packet offsets are signed: [`SKF_NET_OFF`]..0 reads [`Context::net`],
//!   [`SKF_LL_OFF`]..[`SKF_NET_OFF`] reads [`Context::link`], anything lower aborts.
//! * `ifidx`/`hatype` with no device end the program returning the current A.
//!
//! No-panic contract: `run` never panics and always terminates, on any input. Jumps only
//! go forward, so a run takes at most `prog.len()` steps. Bytecode the checker refuses
//! gets a documented result rather than a crash: an unknown opcode, a jump past the end,
//! a scratch index >= 16, a shift by a constant >= 32, a division by constant 0, or
//! running off the end all end the program returning 0; `ret x` returns X; scratch cells
//! start at 0 (the checker guarantees an accepted program never reads one unwritten).

use crate::check::is_ancillary;
use crate::insn::*;

/// Loopback's link type, `ARPHRD_LOOPBACK` (`include/uapi/linux/if_arp.h`).
pub(crate) const ARPHRD_LOOPBACK: u16 = 772;

/// Everything a classic program can observe about one packet.
///
/// The default is what a reuseport program sees for a TCP SYN over IPv4 loopback: no
/// payload, protocol 0x0800, packet type host, device `lo` (ifindex 1), queue 0, CPU 0,
/// no VLAN tag, and no network or link-layer header bytes modelled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Context {
    /// Bytes from `skb->data` on (for a reuseport lookup: the transport payload).
    /// Offsets in `packet.len()..len` read as 0.
    pub packet: Vec<u8>,
    /// `skb->len`: what `ld #len` returns, and the bound of non-negative packet loads.
    pub len: u32,
    /// Bytes from the network header to the end of the packet, read through
    /// `SKF_NET_OFF + o`. Empty: every such load aborts.
    pub net: Vec<u8>,
    /// Bytes from the link-layer header to the end of the packet, read through
    /// `SKF_LL_OFF + o`. `None`: no link-layer header was set, such loads abort.
    pub link: Option<Vec<u8>>,
    /// `skb->protocol` in host order (0x0800 IPv4, 0x86dd IPv6).
    pub protocol: u16,
    /// `skb->pkt_type` (0 host, 1 broadcast, 2 multicast, 3 other host, 4 outgoing).
    pub pkttype: u8,
    /// `skb->dev->ifindex`; `None` when the packet has no device.
    pub ifindex: Option<u32>,
    /// `skb->dev->type` (ARPHRD_*); unused when `ifindex` is `None`.
    pub hatype: u16,
    /// `skb->mark`.
    pub mark: u32,
    /// `skb->queue_mapping` (RX queue + 1 on a NIC, 0 on loopback).
    pub queue: u16,
    /// `skb->hash` as stored (0 when not computed).
    pub rxhash: u32,
    /// The CPU running the program.
    pub cpu: u32,
    /// `skb->vlan_tci`.
    pub vlan_tci: u16,
    /// Whether an accelerated VLAN tag is present.
    pub vlan_present: bool,
    /// `skb->vlan_proto` in host order.
    pub vlan_tpid: u16,
    /// Payload offset found by the flow dissector (0 when it failed).
    pub poff: u32,
    /// The value `ld #rand` returns in this run.
    pub rand: u32,
}

impl Default for Context {
    fn default() -> Context {
        Context {
            packet: Vec::new(),
            len: 0,
            net: Vec::new(),
            link: None,
            protocol: 0x0800,
            pkttype: 0,
            ifindex: Some(1),
            hatype: ARPHRD_LOOPBACK,
            mark: 0,
            queue: 0,
            rxhash: 0,
            cpu: 0,
            vlan_tci: 0,
            vlan_present: false,
            vlan_tpid: 0,
            poff: 0,
            rand: 0,
        }
    }
}

impl Context {
    /// The default context carrying `packet` as its data, with `len` set to match.
    pub fn with_packet(packet: Vec<u8>) -> Context {
        let len = u32::try_from(packet.len()).unwrap_or(u32::MAX);
        Context {
            packet,
            len,
            ..Context::default()
        }
    }
}

/// Registers and scratch memory of one run.
struct Machine {
    a: u32,
    x: u32,
    mem: [u32; BPF_MEMWORDS as usize],
}

/// What one instruction does to control flow.
enum Step {
    /// Go on at pc + 1 + skip.
    Next(usize),
    /// The program ends with this value.
    Return(u32),
}

/// Runs `prog` on `ctx` and returns what the kernel's run would return.
pub fn run(prog: &[Insn], ctx: &Context) -> u32 {
    let mut m = Machine {
        a: 0,
        x: 0,
        mem: [0; BPF_MEMWORDS as usize],
    };
    let mut pc = 0usize;
    while let Some(&insn) = prog.get(pc) {
        match step(&mut m, insn, ctx) {
            Step::Next(skip) => match skip.checked_add(1).and_then(|s| pc.checked_add(s)) {
                Some(next) => pc = next,
                None => return 0,
            },
            Step::Return(v) => return v,
        }
    }
    // Ran off the end, or jumped past it: only unchecked bytecode gets here.
    0
}

/// Executes one instruction.
fn step(m: &mut Machine, insn: Insn, ctx: &Context) -> Step {
    let k = insn.k;
    match insn.class() {
        BPF_LD => match load(m, insn, ctx) {
            Ok(v) => m.a = v,
            Err(end) => return end,
        },
        BPF_LDX => match load_x(m, insn, ctx) {
            Some(v) => m.x = v,
            None => return Step::Return(0),
        },
        BPF_ST | BPF_STX if insn.code & !0x07 == 0 => {
            let v = if insn.class() == BPF_ST { m.a } else { m.x };
            match m.mem.get_mut(k as usize) {
                Some(cell) => *cell = v,
                None => return Step::Return(0),
            }
        }
        BPF_ALU => match alu(insn, m.a, m.x) {
            Some(v) => m.a = v,
            None => return Step::Return(0),
        },
        BPF_JMP => return jump(insn, m.a, m.x),
        BPF_RET => return ret(insn, m.a, m.x),
        BPF_MISC if insn.code == BPF_MISC | BPF_TAX => m.x = m.a,
        BPF_MISC if insn.code == BPF_MISC | BPF_TXA => m.a = m.x,
        _ => return Step::Return(0),
    }
    Step::Next(0)
}

/// The value an LD-class instruction puts in A, or how the program ends instead.
fn load(m: &Machine, insn: Insn, ctx: &Context) -> Result<u32, Step> {
    let abort = Err(Step::Return(0));
    let size = match insn.code & 0x18 {
        BPF_W => 4,
        BPF_H => 2,
        BPF_B => 1,
        _ => return abort,
    };
    match insn.code {
        c if c == BPF_LD | BPF_IMM => Ok(insn.k),
        c if c == BPF_LD | BPF_LEN => Ok(ctx.len),
        c if c == BPF_LD | BPF_MEM => m.mem.get(insn.k as usize).copied().ok_or(Step::Return(0)),
        c if c & 0xe0 == BPF_ABS && c & 0xff00 == 0 && is_ancillary(insn.k) => {
            ancillary(insn.k - ancillary_k(0), m, ctx)
        }
        c if c & 0xe0 == BPF_ABS && c & 0xff00 == 0 => {
            packet_load(ctx, insn.k as i32, size).ok_or(Step::Return(0))
        }
        c if c & 0xe0 == BPF_IND && c & 0xff00 == 0 => {
            packet_load(ctx, m.x.wrapping_add(insn.k) as i32, size).ok_or(Step::Return(0))
        }
        _ => abort,
    }
}

/// The value an LDX-class instruction puts in X; `None` aborts the program.
fn load_x(m: &Machine, insn: Insn, ctx: &Context) -> Option<u32> {
    match insn.code {
        c if c == BPF_LDX | BPF_W | BPF_IMM => Some(insn.k),
        c if c == BPF_LDX | BPF_W | BPF_LEN => Some(ctx.len),
        c if c == BPF_LDX | BPF_W | BPF_MEM => m.mem.get(insn.k as usize).copied(),
        // X := 4 * (P[k] & 0xf), with the offset rules of any byte load.
        c if c == BPF_LDX | BPF_B | BPF_MSH => {
            packet_load(ctx, insn.k as i32, 1).map(|b| (b & 0xf) << 2)
        }
        _ => None,
    }
}

/// Reads `size` bytes big-endian at signed offset `off`, as `bpf_skb_load_helper_*` and
/// `bpf_internal_load_pointer_neg_helper` do; `None` when out of range.
fn packet_load(ctx: &Context, off: i32, size: usize) -> Option<u32> {
    let (bytes, start, limit): (&[u8], i64, i64) = if off >= 0 {
        (&ctx.packet, i64::from(off), i64::from(ctx.len))
    } else if off >= SKF_NET_OFF {
        let bytes: &[u8] = &ctx.net;
        (bytes, i64::from(off - SKF_NET_OFF), bytes.len() as i64)
    } else if off >= SKF_LL_OFF {
        let bytes: &[u8] = ctx.link.as_deref()?;
        (bytes, i64::from(off - SKF_LL_OFF), bytes.len() as i64)
    } else {
        return None;
    };
    if start + size as i64 > limit {
        return None;
    }
    let mut v = 0u32;
    for i in 0..size {
        let byte = usize::try_from(start)
            .ok()
            .and_then(|s| s.checked_add(i))
            .and_then(|at| bytes.get(at))
            .copied()
            .unwrap_or(0);
        v = (v << 8) | u32::from(byte);
    }
    Some(v)
}

/// An ancillary load (`convert_bpf_extensions`) at `SKF_AD_OFF + off`, whatever its size.
fn ancillary(off: u32, m: &Machine, ctx: &Context) -> Result<u32, Step> {
    Ok(match off {
        SKF_AD_PROTOCOL => u32::from(ctx.protocol),
        SKF_AD_PKTTYPE => u32::from(ctx.pkttype & 7),
        // No device: the converted code exits with A as the result.
        SKF_AD_IFINDEX => ctx.ifindex.ok_or(Step::Return(m.a))?,
        SKF_AD_HATYPE => match ctx.ifindex {
            Some(_) => u32::from(ctx.hatype),
            None => return Err(Step::Return(m.a)),
        },
        SKF_AD_NLATTR => nlattr(&ctx.packet, ctx.len, m.a, m.x),
        SKF_AD_NLATTR_NEST => nlattr_nest(&ctx.packet, ctx.len, m.a, m.x),
        SKF_AD_MARK => ctx.mark,
        SKF_AD_QUEUE => u32::from(ctx.queue),
        SKF_AD_RXHASH => ctx.rxhash,
        SKF_AD_CPU => ctx.cpu,
        SKF_AD_ALU_XOR_X => m.a ^ m.x,
        SKF_AD_VLAN_TAG => u32::from(ctx.vlan_tci),
        SKF_AD_VLAN_TAG_PRESENT => u32::from(ctx.vlan_present),
        SKF_AD_PAY_OFFSET => ctx.poff,
        SKF_AD_RANDOM => ctx.rand,
        SKF_AD_VLAN_TPID => u32::from(ctx.vlan_tpid),
        _ => return Err(Step::Return(0)),
    })
}

/// `__skb_get_nlattr`: offset of the first netlink attribute of type `x` in the
/// attribute stream starting at packet offset `a`, or 0.
fn nlattr(packet: &[u8], len: u32, a: u32, x: u32) -> u32 {
    if len < 4 || a > len - 4 {
        return 0;
    }
    let attrs = Attrs::new(packet, len, a, len - a);
    nla_find(attrs, x).unwrap_or(0)
}

/// `__skb_get_nlattr_nest`: the same search inside the nested attribute at offset `a`.
fn nlattr_nest(packet: &[u8], len: u32, a: u32, x: u32) -> u32 {
    if len < 4 || a > len - 4 {
        return 0;
    }
    let nla_len = u32::from(Attrs::u16_at(packet, a));
    if nla_len > len - a || nla_len < 4 {
        return 0;
    }
    nla_find(Attrs::new(packet, len, a + 4, nla_len - 4), x).unwrap_or(0)
}

/// A run of netlink attributes (`struct nlattr { u16 nla_len; u16 nla_type; }`, host
/// byte order, each padded to 4 bytes) inside the packet.
#[derive(Clone, Copy)]
struct Attrs<'a> {
    packet: &'a [u8],
    start: u32,
    rem: u32,
}

impl<'a> Attrs<'a> {
    fn new(packet: &'a [u8], len: u32, start: u32, rem: u32) -> Attrs<'a> {
        // The packet is modelled as `len` bytes; bytes past `packet` read as 0.
        let rem = rem.min(len.saturating_sub(start));
        Attrs { packet, start, rem }
    }

    fn u16_at(packet: &[u8], at: u32) -> u16 {
        let byte = |i: u32| {
            let i = usize::try_from(i).unwrap_or(usize::MAX);
            packet.get(i).copied().unwrap_or(0)
        };
        u16::from_ne_bytes([byte(at), byte(at.saturating_add(1))])
    }
}

/// `nla_find`: walks `nla_ok` attributes and returns the packet offset of the first one
/// whose type (flags masked off) is `x`.
fn nla_find(mut attrs: Attrs<'_>, x: u32) -> Option<u32> {
    const NLA_TYPE_MASK: u16 = !(0x8000 | 0x4000);
    while attrs.rem >= 4 {
        let nla_len = u32::from(Attrs::u16_at(attrs.packet, attrs.start));
        let nla_type = Attrs::u16_at(attrs.packet, attrs.start + 2) & NLA_TYPE_MASK;
        if nla_len < 4 || nla_len > attrs.rem {
            return None;
        }
        if u32::from(nla_type) == x {
            return Some(attrs.start);
        }
        let step = (nla_len + 3) & !3;
        attrs.start = attrs.start.saturating_add(step);
        attrs.rem = attrs.rem.saturating_sub(step);
    }
    None
}

/// The new A of an ALU instruction; `None` aborts (division by X = 0, or an encoding
/// the checker refuses).
fn alu(insn: Insn, a: u32, x: u32) -> Option<u32> {
    if insn.code & !0xf8 != BPF_ALU || insn.code > 0xff {
        return None;
    }
    let v = if insn.code & BPF_X != 0 { x } else { insn.k };
    let shift = |v: u32| {
        if insn.code & BPF_X != 0 {
            Some(v & 31)
        } else {
            (v < 32).then_some(v)
        }
    };
    match insn.code & 0xf0 {
        BPF_ADD => Some(a.wrapping_add(v)),
        BPF_SUB => Some(a.wrapping_sub(v)),
        BPF_MUL => Some(a.wrapping_mul(v)),
        BPF_DIV => a.checked_div(v),
        BPF_MOD => a.checked_rem(v),
        BPF_OR => Some(a | v),
        BPF_AND => Some(a & v),
        BPF_XOR => Some(a ^ v),
        BPF_LSH => shift(v).map(|s| a << s),
        BPF_RSH => shift(v).map(|s| a >> s),
        BPF_NEG if insn.code & BPF_X == 0 => Some(a.wrapping_neg()),
        _ => None,
    }
}

/// Where a JMP-class instruction goes.
fn jump(insn: Insn, a: u32, x: u32) -> Step {
    if insn.code == BPF_JMP | BPF_JA {
        return Step::Next(insn.k as usize);
    }
    if insn.code > 0xff || insn.code & 0x07 != BPF_JMP {
        return Step::Return(0);
    }
    let v = if insn.code & BPF_X != 0 { x } else { insn.k };
    let taken = match insn.code & 0xf0 {
        BPF_JEQ => a == v,
        BPF_JGT => a > v,
        BPF_JGE => a >= v,
        BPF_JSET => a & v != 0,
        _ => return Step::Return(0),
    };
    Step::Next(usize::from(if taken { insn.jt } else { insn.jf }))
}

/// The value a RET-class instruction returns.
fn ret(insn: Insn, a: u32, x: u32) -> Step {
    Step::Return(match insn.code {
        c if c == BPF_RET | BPF_K => insn.k,
        c if c == BPF_RET | BPF_A => a,
        c if c == BPF_RET | BPF_X => x,
        _ => 0,
    })
}
