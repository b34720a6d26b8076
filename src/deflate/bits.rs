//! The bit stream deflate writes: values packed from the low bit of each byte up (RFC
//! 1951 section 3.1.1).
//!
//! Stage: the encoder's last step. Input: values and their widths (at most 24 bits).
//! Output: whole bytes appended to the caller's `Vec`; up to 31 bits wait here until
//! more come or `align` pads them to a byte.

/// Bits not yet written out, the oldest in the low bits of `acc`.
pub(super) struct Bits {
    acc: u64,
    n: u32,
}

impl Bits {
    pub(super) fn new() -> Bits {
        Bits { acc: 0, n: 0 }
    }

    /// Appends the low `count` bits of `value`; whole 32-bit words go to `out`.
    pub(super) fn put(&mut self, value: u32, count: u32, out: &mut Vec<u8>) {
        let mask = (1u64 << count) - 1;
        self.acc |= (value as u64 & mask) << self.n;
        self.n += count;
        if self.n >= 32 {
            out.extend_from_slice(&(self.acc as u32).to_le_bytes());
            self.acc >>= 32;
            self.n -= 32;
        }
    }

    /// Pads with zero bits to a byte boundary and writes every pending byte.
    pub(super) fn align(&mut self, out: &mut Vec<u8>) {
        while self.n > 0 {
            out.push(self.acc as u8);
            self.acc >>= 8;
            self.n = self.n.saturating_sub(8);
        }
        self.acc = 0;
    }
}
