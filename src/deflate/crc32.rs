//! CRC-32 as gzip's trailer carries it (RFC 1952 section 8: the IEEE 802.3 polynomial,
//! reflected, initial and final XOR with all ones).
//!
//! Stage: beside the encoder. Input: bytes and the CRC so far. Output: the CRC of both.
//! One byte per step through a 256-entry table made at compile time by a `const fn` (1 KiB
//! of read-only data); slicing-by-4 would be faster but costs 3 KiB more, and the
//! matcher, not the CRC, bounds the encoder's speed.

/// The reflected IEEE polynomial x^32 + x^26 + ... + 1.
const POLY: u32 = 0xEDB8_8320;

/// `TABLE[b]`: the CRC register after shifting byte `b` through it, eight bits at a time.
static TABLE: [u32; 256] = table();

const fn table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut b = 0;
    while b < 256 {
        let mut c = b as u32;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 1 == 1 { (c >> 1) ^ POLY } else { c >> 1 };
            bit += 1;
        }
        t[b] = c;
        b += 1;
    }
    t
}

/// CRC-32 of `bytes`, continuing from `crc` (0 to start): `crc32(crc32(0, a), b)` is
/// `crc32(0, ab)`.
pub fn crc32(crc: u32, bytes: &[u8]) -> u32 {
    let mut c = !crc;
    for &b in bytes {
        c = TABLE[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

#[cfg(test)]
mod tests {
    use super::crc32;

    /// Known vectors: the RFC 3720 / zlib check value of "123456789", and others from
    /// `python3 -c 'import zlib; print(hex(zlib.crc32(b"...")))'`.
    #[test]
    fn crc32_matches_known_vectors() {
        assert_eq!(crc32(0, b""), 0);
        assert_eq!(crc32(0, b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(0, b"a"), 0xE8B7_BE43);
        assert_eq!(
            crc32(0, b"The quick brown fox jumps over the lazy dog"),
            0x414F_A339
        );
        assert_eq!(crc32(0, &[0u8; 32]), 0x190A_55AD);
    }

    #[test]
    fn crc32_continues_across_pieces() {
        let text = b"The quick brown fox jumps over the lazy dog";
        for cut in 0..=text.len() {
            let (a, b) = text.split_at(cut);
            assert_eq!(crc32(crc32(0, a), b), crc32(0, text));
        }
    }
}
