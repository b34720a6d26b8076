//! gzip (RFC 1952) around deflate (RFC 1951) of our own: what `--compress gzip` sends.
//!
//! Stage: a foundation, pure computation; the serving runtime calls it a slice at a time.
//! Input: a file's bytes, in writes of any size. Output: one gzip member (header without
//! name or mtime, deflate blocks, CRC-32 and size), appended to the caller's `Vec` as it
//! becomes ready. It does not read files, decide what to compress, or decompress.
//!
//! One level, zlib's level 6 idea: LZ77 with hash chains and lazy matching (`lz77.rs`),
//! blocks of at most 16 K symbols each written stored, fixed or dynamic Huffman,
//! whichever is shortest (`block.rs`, `huffman.rs`), CRC-32 by table (`crc32.rs`).
//! The output depends only on the input's bytes, never on how they were split into
//! writes. Memory per encoder: 256 KiB in four boxed buffers (window 64 KiB, chain heads
//! 64 KiB, chain links 64 KiB, block symbols 64 KiB) and a few hundred bytes inline.
//! No input makes it panic, and it uses no `unsafe`.

mod bits;
mod block;
mod crc32;
mod huffman;
mod lz77;

pub use crc32::crc32;

/// RFC 1952 section 2.3: ID1 ID2, CM = 8 (deflate), no flags, MTIME 0, XFL 0, OS 3 (Unix).
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];

/// One gzip member being written.
pub struct GzipEncoder {
    matcher: lz77::Matcher,
    block: block::Block,
    crc: u32,
    /// The input's length modulo 2^32, as ISIZE carries it.
    size: u32,
    header_sent: bool,
}

impl GzipEncoder {
    /// A new gzip member (RFC 1952 header with no name, no mtime) at our one level.
    #[allow(clippy::new_without_default)]
    pub fn new() -> GzipEncoder {
        GzipEncoder {
            matcher: lz77::Matcher::new(),
            block: block::Block::new(),
            crc: 0,
            size: 0,
            header_sent: false,
        }
    }

    /// Compresses `input` (more may follow), appending whatever output is ready to `out`.
    /// Any slicing of the input gives the same output bytes as one call.
    pub fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        self.header(out);
        self.crc = crc32(self.crc, input);
        self.size = self.size.wrapping_add(input.len() as u32);
        self.matcher.write(input, &mut self.block, out);
    }

    /// Ends the deflate stream and writes the gzip trailer (CRC-32, ISIZE).
    pub fn finish(mut self, out: &mut Vec<u8>) {
        self.header(out);
        self.matcher.finish(&mut self.block, out);
        out.extend_from_slice(&self.crc.to_le_bytes());
        out.extend_from_slice(&self.size.to_le_bytes());
    }

    fn header(&mut self, out: &mut Vec<u8>) {
        if !self.header_sent {
            out.extend_from_slice(&HEADER);
            self.header_sent = true;
        }
    }
}

/// One-shot convenience: gzip(input) == new + write + finish.
pub fn gzip(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len() / 3 + 64);
    let mut e = GzipEncoder::new();
    e.write(input, &mut out);
    e.finish(&mut out);
    out
}

#[cfg(test)]
mod tests;
