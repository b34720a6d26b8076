//! Deflate blocks (RFC 1951 section 3.2): the matcher's symbols are kept here until the
//! block is full, then written as whichever of stored, fixed Huffman or dynamic Huffman
//! is shortest.
//!
//! Stage: between the matcher (`lz77.rs`) and the bit stream (`bits.rs`). Input:
//! literals and (length, distance) copies, and at flush time the block's raw bytes when
//! the window still holds them. Output: one or more complete blocks (a stored block
//! holds at most 65,535 bytes) appended to the caller's `Vec`.
//!
//! A block holds at most `SYMBOLS` symbols (zlib's level 6 size), so its sizes are
//! counted exactly before it is written: the dynamic header (code-length code, with the
//! run-length codes 16, 17 and 18 over the literal/length and distance lengths as one
//! sequence, which section 3.2.7 allows) plus the data, against the same data under the
//! fixed code, against the raw bytes.

use super::bits::Bits;
use super::huffman::{codes, lengths};

/// Symbols per block: 16 K - 1, as zlib's default memory level.
const SYMBOLS: usize = (1 << 14) - 1;
/// A copy's tag in a symbol; below it sit (distance - 1) << 8 and (length - 3).
const COPY: u32 = 1 << 31;
const END_OF_BLOCK: usize = 256;
/// The order in which the code-length code's lengths are sent (section 3.2.7).
const CL_ORDER: [u8; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// One block's symbols and which raw bytes they stand for.
pub(super) struct Block {
    syms: Box<[u32]>,
    n: usize,
    /// Raw bytes the symbols cover, and the window position just past them.
    raw_len: usize,
    raw_end: usize,
    bits: Bits,
}

/// A block's three codes: literal/length, distance and code-length, lengths and codes.
struct Codes {
    lit_len: [u8; 288],
    lit: [u16; 288],
    dist_len: [u8; 30],
    dist: [u16; 30],
}

impl Block {
    pub(super) fn new() -> Block {
        Block {
            syms: vec![0; SYMBOLS].into_boxed_slice(),
            n: 0,
            raw_len: 0,
            raw_end: 0,
            bits: Bits::new(),
        }
    }

    /// Records the literal `byte` at window position `at`; true when the block is full.
    pub(super) fn literal(&mut self, at: usize, byte: u8) -> bool {
        self.push(byte as u32, at + 1, 1)
    }

    /// Records a copy of `len` (3..=258) bytes from `dist` (1..=32768) back, starting at
    /// window position `at`; true when the block is full.
    pub(super) fn copy(&mut self, at: usize, dist: usize, len: usize) -> bool {
        let sym = COPY
            | ((dist.wrapping_sub(1) as u32 & 0x7fff) << 8)
            | (len.wrapping_sub(3) as u32 & 0xff);
        self.push(sym, at + len, len)
    }

    fn push(&mut self, sym: u32, end: usize, len: usize) -> bool {
        if let Some(s) = self.syms.get_mut(self.n) {
            *s = sym;
            self.n += 1;
        }
        self.raw_len += len;
        self.raw_end = end;
        self.n >= self.syms.len()
    }

    /// The window moved down by `by` bytes.
    pub(super) fn slid(&mut self, by: usize) {
        self.raw_end = self.raw_end.saturating_sub(by);
    }

    /// Writes the block (the last one when `last`), choosing its type by size; `window`
    /// holds its raw bytes unless a slide has dropped some of them.
    pub(super) fn flush(&mut self, window: &[u8], last: bool, out: &mut Vec<u8>) {
        let raw = self
            .raw_end
            .checked_sub(self.raw_len)
            .and_then(|start| window.get(start..self.raw_end));
        let syms = &self.syms[..self.n.min(self.syms.len())];
        let mut lit_freq = [0u32; 286];
        let mut dist_freq = [0u32; 30];
        let extra = frequencies(syms, &mut lit_freq, &mut dist_freq);
        let mut dynamic = Codes::new();
        lengths(&lit_freq, 15, &mut dynamic.lit_len[..286]);
        lengths(&dist_freq, 15, &mut dynamic.dist_len);
        let header = Header::new(&dynamic);
        let dynamic_bits = 3 + header.bits() + dynamic.cost(&lit_freq, &dist_freq) + extra;
        let fixed = Codes::fixed();
        let fixed_bits = 3 + fixed.cost(&lit_freq, &dist_freq) + extra;
        let stored_bits = raw.map_or(u64::MAX, |r| {
            8 * r.len() as u64 + 42 * (r.len() / 65535 + 1) as u64
        });
        let last = last as u32;
        match raw {
            Some(raw) if stored_bits <= dynamic_bits.min(fixed_bits) => self.stored(raw, last, out),
            _ if fixed_bits <= dynamic_bits => {
                self.bits.put(last | 1 << 1, 3, out);
                self.huffman(&fixed.finished(), out);
            }
            _ => {
                self.bits.put(last | 2 << 1, 3, out);
                header.write(&mut self.bits, out);
                self.huffman(&dynamic.finished(), out);
            }
        }
        self.n = 0;
        self.raw_len = 0;
        if last == 1 {
            self.bits.align(out);
        }
    }

    /// Stored blocks of at most 65,535 bytes each (section 3.2.4).
    fn stored(&mut self, raw: &[u8], last: u32, out: &mut Vec<u8>) {
        let mut chunks = raw.chunks(0xffff).peekable();
        loop {
            let chunk = chunks.next().unwrap_or(&[]);
            let final_bit = if chunks.peek().is_none() { last } else { 0 };
            self.bits.put(final_bit, 3, out);
            self.bits.align(out);
            let len = chunk.len() as u16;
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&(!len).to_le_bytes());
            out.extend_from_slice(chunk);
            if chunks.peek().is_none() {
                return;
            }
        }
    }

    /// The block's symbols and its end under `codes` (lengths and codes filled). Out of
    /// line: the fixed and the dynamic block share one copy.
    #[inline(never)]
    fn huffman(&mut self, c: &Codes, out: &mut Vec<u8>) {
        let bits = &mut self.bits;
        for &sym in &self.syms[..self.n.min(self.syms.len())] {
            if sym & COPY == 0 {
                let b = (sym & 0xff) as usize;
                bits.put(c.lit[b] as u32, c.lit_len[b] as u32, out);
                continue;
            }
            let (l, d) = (sym & 0xff, (sym >> 8) & 0x7fff);
            let lc = length_code(l);
            let at = 257 + lc as usize;
            bits.put(c.lit[at] as u32, c.lit_len[at] as u32, out);
            let (base, extra) = length_base(lc);
            bits.put(l - base, extra, out);
            let dc = dist_code(d) as usize;
            bits.put(c.dist[dc] as u32, c.dist_len[dc] as u32, out);
            let (base, extra) = dist_base(dc as u32);
            bits.put(d - base, extra, out);
        }
        let eob = END_OF_BLOCK;
        bits.put(c.lit[eob] as u32, c.lit_len[eob] as u32, out);
    }
}

/// Counts symbols into the two alphabets (the end of block included) and returns the
/// extra bits their lengths and distances carry, the same under every code.
fn frequencies(syms: &[u32], lit: &mut [u32; 286], dist: &mut [u32; 30]) -> u64 {
    let mut extra = 0u64;
    for &sym in syms {
        if sym & COPY == 0 {
            lit[(sym & 0xff) as usize] += 1;
            continue;
        }
        let lc = length_code(sym & 0xff);
        let dc = dist_code((sym >> 8) & 0x7fff);
        lit[257 + lc as usize] += 1;
        dist[dc as usize] += 1;
        extra += (length_base(lc).1 + dist_base(dc).1) as u64;
    }
    lit[END_OF_BLOCK] = 1;
    extra
}

/// The length code's index (0..=28, code 257 + index) for a length less 3 (0..=255).
fn length_code(l: u32) -> u32 {
    match l {
        0..=7 => l,
        255.. => 28,
        _ => {
            let k = 31 - l.leading_zeros();
            4 * (k - 1) + ((l >> (k - 2)) & 3)
        }
    }
}

/// The first length less 3 of length code index `i`, and its extra bits (section 3.2.5).
fn length_base(i: u32) -> (u32, u32) {
    match i {
        0..=7 => (i, 0),
        28.. => (255, 0),
        _ => {
            let e = (i - 4) / 4;
            ((4 + (i & 3)) << e, e)
        }
    }
}

/// The distance code (0..=29) for a distance less 1 (0..=32767).
fn dist_code(d: u32) -> u32 {
    if d < 4 {
        return d;
    }
    let k = 31 - d.leading_zeros();
    2 * k + ((d >> (k - 1)) & 1)
}

/// The first distance less 1 of distance code `c`, and its extra bits.
fn dist_base(c: u32) -> (u32, u32) {
    if c < 2 {
        return (c, 0);
    }
    let e = c / 2 - 1;
    ((2 + (c & 1)) << e, e)
}

impl Codes {
    fn new() -> Codes {
        Codes {
            lit_len: [0; 288],
            lit: [0; 288],
            dist_len: [0; 30],
            dist: [0; 30],
        }
    }

    /// The fixed code of section 3.2.6.
    fn fixed() -> Codes {
        let mut c = Codes::new();
        for (s, l) in c.lit_len.iter_mut().enumerate() {
            *l = match s {
                0..=143 => 8,
                144..=255 => 9,
                256..=279 => 7,
                _ => 8,
            };
        }
        c.dist_len = [5; 30];
        c
    }

    /// The codes for the lengths.
    fn finished(mut self) -> Codes {
        codes(&self.lit_len, &mut self.lit);
        codes(&self.dist_len, &mut self.dist);
        self
    }

    /// Bits of the symbols' codes alone (no extra bits, no header).
    fn cost(&self, lit: &[u32; 286], dist: &[u32; 30]) -> u64 {
        weighted(lit, &self.lit_len) + weighted(dist, &self.dist_len)
    }
}

/// Sum of frequency times code length: a block holds at most 16 K symbols of at most
/// 15 bits each, so `u32` cannot overflow. Out of line: both codes of both block
/// kinds share one copy.
#[inline(never)]
fn weighted(freq: &[u32], lens: &[u8]) -> u64 {
    let mut sum = 0u32;
    for (&f, &l) in freq.iter().zip(lens) {
        sum = sum.wrapping_add(f.wrapping_mul(l as u32));
    }
    sum as u64
}

/// A dynamic block's header: the two codes' lengths, run-length coded, and the
/// code-length code that sends them (section 3.2.7).
struct Header {
    hlit: usize,
    hdist: usize,
    /// Code-length symbols (0..=18) with their extra bits' value in the high byte.
    runs: [u16; 286 + 30],
    n: usize,
    cl_len: [u8; 19],
    cl: [u16; 19],
    hclen: usize,
}

impl Header {
    fn new(c: &Codes) -> Header {
        let used = |lens: &[u8], min: usize| {
            lens.iter()
                .rposition(|&l| l > 0)
                .map_or(min, |p| (p + 1).max(min))
        };
        let hlit = used(&c.lit_len[..286], 257);
        let hdist = used(&c.dist_len, 1);
        let mut all = [0u8; 286 + 30];
        all[..hlit].copy_from_slice(&c.lit_len[..hlit]);
        all[hlit..hlit + hdist].copy_from_slice(&c.dist_len[..hdist]);
        let mut h = Header {
            hlit,
            hdist,
            runs: [0; 316],
            n: 0,
            cl_len: [0; 19],
            cl: [0; 19],
            hclen: 4,
        };
        h.run_length(&all[..hlit + hdist]);
        let mut freq = [0u32; 19];
        for &r in &h.runs[..h.n] {
            freq[(r & 0x1f) as usize] += 1;
        }
        lengths(&freq, 7, &mut h.cl_len);
        codes(&h.cl_len, &mut h.cl);
        h.hclen = CL_ORDER
            .iter()
            .rposition(|&s| h.cl_len[s as usize] > 0)
            .map_or(4, |p| (p + 1).max(4));
        h
    }

    /// Codes 16 (repeat the last length 3-6 times), 17 (3-10 zeros) and 18 (11-138 zeros).
    fn run_length(&mut self, lens: &[u8]) {
        let mut i = 0;
        while let Some(&v) = lens.get(i) {
            let mut run = lens[i..].iter().take_while(|&&l| l == v).count();
            i += run;
            if v != 0 {
                self.emit(v as u16);
                run -= 1;
            }
            while run >= 3 {
                let (sym, max, min) = match v {
                    0 if run >= 11 => (18, 138, 11),
                    0 => (17, 10, 3),
                    _ => (16, 6, 3),
                };
                let r = run.min(max);
                self.emit(sym | ((r - min) as u16) << 8);
                run -= r;
            }
            for _ in 0..run {
                self.emit(v as u16);
            }
        }
    }

    fn emit(&mut self, r: u16) {
        if let Some(slot) = self.runs.get_mut(self.n) {
            *slot = r;
            self.n += 1;
        }
    }

    /// The header's size after the block type: counts, code-length code, runs.
    fn bits(&self) -> u64 {
        let runs: u64 = self.runs[..self.n]
            .iter()
            .map(|&r| self.cl_len[(r & 0x1f) as usize] as u64 + extra_bits(r) as u64)
            .sum();
        14 + 3 * self.hclen as u64 + runs
    }

    fn write(&self, bits: &mut Bits, out: &mut Vec<u8>) {
        bits.put((self.hlit - 257) as u32, 5, out);
        bits.put((self.hdist - 1) as u32, 5, out);
        bits.put((self.hclen - 4) as u32, 4, out);
        for &s in &CL_ORDER[..self.hclen] {
            bits.put(self.cl_len[s as usize] as u32, 3, out);
        }
        for &r in &self.runs[..self.n] {
            let s = (r & 0x1f) as usize;
            bits.put(self.cl[s] as u32, self.cl_len[s] as u32, out);
            bits.put((r >> 8) as u32, extra_bits(r), out);
        }
    }
}

/// Extra bits after code-length symbol `r & 0x1f`: 2 after 16, 3 after 17, 7 after 18.
fn extra_bits(r: u16) -> u32 {
    match r & 0x1f {
        16 => 2,
        17 => 3,
        18 => 7,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::{dist_base, dist_code, length_base, length_code};

    /// Every length and distance maps to a code whose range holds it (section 3.2.5).
    #[test]
    fn length_and_distance_codes_cover_their_ranges() {
        for l in 0..=255u32 {
            let (base, extra) = length_base(length_code(l));
            assert!(l >= base && l - base < 1 << extra, "length {}", l + 3);
        }
        assert_eq!(
            (length_code(0), length_code(8), length_code(255)),
            (0, 8, 28)
        );
        for d in 0..32768u32 {
            let (base, extra) = dist_base(dist_code(d));
            assert!(d >= base && d - base < 1 << extra, "distance {}", d + 1);
        }
        assert_eq!((dist_code(4), dist_code(32767)), (4, 29));
    }
}
