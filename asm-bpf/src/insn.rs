//! Classic BPF instruction encoding: `struct sock_filter` and the `linux/filter.h`
//! constants under their kernel names.
//!
//! Required reading: `include/uapi/linux/bpf_common.h`, `include/uapi/linux/filter.h`.
//! An [`Insn`] is `#[repr(C)]` with the kernel's field order, so a `&[Insn]` can be handed
//! to `setsockopt(SO_ATTACH_FILTER | SO_ATTACH_REUSEPORT_CBPF)` as a `sock_fprog` array.

/// One classic BPF instruction, laid out exactly as the kernel's `struct sock_filter`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Insn {
    /// Opcode: class | size/op | mode/src bits.
    pub code: u16,
    /// Forward skip when a conditional jump is taken.
    pub jt: u8,
    /// Forward skip when a conditional jump is not taken.
    pub jf: u8,
    /// Immediate, offset, scratch index or jump distance.
    pub k: u32,
}

impl Insn {
    /// An instruction with no jump offsets.
    pub const fn stmt(code: u16, k: u32) -> Insn {
        Insn {
            code,
            jt: 0,
            jf: 0,
            k,
        }
    }

    /// A conditional jump.
    pub const fn jump(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
        Insn { code, jt, jf, k }
    }

    /// `code & 0x07`: the instruction class.
    pub const fn class(self) -> u16 {
        self.code & 0x07
    }
}

// Instruction classes.
/// Load into A.
pub const BPF_LD: u16 = 0x00;
/// Load into X.
pub const BPF_LDX: u16 = 0x01;
/// Store A into scratch memory.
pub const BPF_ST: u16 = 0x02;
/// Store X into scratch memory.
pub const BPF_STX: u16 = 0x03;
/// Arithmetic on A.
pub const BPF_ALU: u16 = 0x04;
/// Jumps.
pub const BPF_JMP: u16 = 0x05;
/// Return.
pub const BPF_RET: u16 = 0x06;
/// Register transfers.
pub const BPF_MISC: u16 = 0x07;

// Load sizes.
/// 32-bit word.
pub const BPF_W: u16 = 0x00;
/// 16-bit half word.
pub const BPF_H: u16 = 0x08;
/// 8-bit byte.
pub const BPF_B: u16 = 0x10;

// Load modes.
/// Immediate.
pub const BPF_IMM: u16 = 0x00;
/// Absolute packet offset.
pub const BPF_ABS: u16 = 0x20;
/// Packet offset relative to X.
pub const BPF_IND: u16 = 0x40;
/// Scratch memory.
pub const BPF_MEM: u16 = 0x60;
/// Packet length.
pub const BPF_LEN: u16 = 0x80;
/// IP header length: `4 * ([k] & 0xf)`.
pub const BPF_MSH: u16 = 0xa0;

// ALU and jump operations.
/// A + operand.
pub const BPF_ADD: u16 = 0x00;
/// A - operand.
pub const BPF_SUB: u16 = 0x10;
/// A * operand.
pub const BPF_MUL: u16 = 0x20;
/// A / operand.
pub const BPF_DIV: u16 = 0x30;
/// A | operand.
pub const BPF_OR: u16 = 0x40;
/// A & operand.
pub const BPF_AND: u16 = 0x50;
/// A << operand.
pub const BPF_LSH: u16 = 0x60;
/// A >> operand.
pub const BPF_RSH: u16 = 0x70;
/// -A.
pub const BPF_NEG: u16 = 0x80;
/// A % operand.
pub const BPF_MOD: u16 = 0x90;
/// A ^ operand.
pub const BPF_XOR: u16 = 0xa0;
/// Unconditional jump.
pub const BPF_JA: u16 = 0x00;
/// Jump if A == operand.
pub const BPF_JEQ: u16 = 0x10;
/// Jump if A > operand.
pub const BPF_JGT: u16 = 0x20;
/// Jump if A >= operand.
pub const BPF_JGE: u16 = 0x30;
/// Jump if A & operand != 0.
pub const BPF_JSET: u16 = 0x40;

// Operand source.
/// Operand is `k`.
pub const BPF_K: u16 = 0x00;
/// Operand is X.
pub const BPF_X: u16 = 0x08;
/// Return value is A (RET class).
pub const BPF_A: u16 = 0x10;

// MISC operations.
/// X := A.
pub const BPF_TAX: u16 = 0x00;
/// A := X.
pub const BPF_TXA: u16 = 0x80;

/// Longest program the kernel accepts.
pub const BPF_MAXINSNS: usize = 4096;
/// Scratch memory words.
pub(crate) const BPF_MEMWORDS: u32 = 16;

// Ancillary data offsets (`SKF_AD_OFF + SKF_AD_*`).
/// Base of the ancillary area: -0x1000.
pub(crate) const SKF_AD_OFF: i32 = -0x1000;
/// skb->protocol.
pub const SKF_AD_PROTOCOL: u32 = 0;
/// skb->pkt_type.
pub const SKF_AD_PKTTYPE: u32 = 4;
/// skb->dev->ifindex.
pub const SKF_AD_IFINDEX: u32 = 8;
/// Netlink attribute lookup.
pub const SKF_AD_NLATTR: u32 = 12;
/// Nested netlink attribute lookup.
pub const SKF_AD_NLATTR_NEST: u32 = 16;
/// skb->mark.
pub const SKF_AD_MARK: u32 = 20;
/// skb->queue_mapping.
pub const SKF_AD_QUEUE: u32 = 24;
/// skb->dev->type.
pub const SKF_AD_HATYPE: u32 = 28;
/// skb->hash.
pub const SKF_AD_RXHASH: u32 = 32;
/// raw_smp_processor_id().
pub const SKF_AD_CPU: u32 = 36;
/// A ^= X.
pub const SKF_AD_ALU_XOR_X: u32 = 40;
/// VLAN TCI.
pub const SKF_AD_VLAN_TAG: u32 = 44;
/// VLAN tag present.
pub const SKF_AD_VLAN_TAG_PRESENT: u32 = 48;
/// Payload offset.
pub const SKF_AD_PAY_OFFSET: u32 = 52;
/// prandom_u32().
pub const SKF_AD_RANDOM: u32 = 56;
/// VLAN TPID.
pub const SKF_AD_VLAN_TPID: u32 = 60;
/// One past the last ancillary offset.
pub(crate) const SKF_AD_MAX: u32 = 64;
/// Network-layer base offset: -0x100000.
pub const SKF_NET_OFF: i32 = -0x100000;
/// Link-layer base offset: -0x200000.
pub const SKF_LL_OFF: i32 = -0x200000;

/// `k` of an ancillary load: `SKF_AD_OFF + off` as the kernel sees it (an unsigned word).
pub const fn ancillary_k(off: u32) -> u32 {
    (SKF_AD_OFF as u32).wrapping_add(off)
}
