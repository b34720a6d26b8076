//! SipHash-2-4 (Aumasson and Bernstein, 2012) with a 128-bit tag: a keyed hash whose
//! output an observer cannot predict or steer without the key. The credential check
//! names a remembered `Authorization` value by its tag under a key drawn at random per
//! worker, so the table never holds a password, and a collision cannot be searched for.
//!
//! Input: a 16-byte key and a message. Output: 16 bytes (two little-endian words, as
//! the reference implementation writes them). Vectors: the reference implementation's
//! (`tests/data/crypt/siphash.txt`), both tag sizes.

/// The tag of `msg` under `key`: 16 bytes.
pub(crate) fn sip128(key: &[u8; 16], msg: &[u8]) -> [u8; 16] {
    let (a, b) = sip(key, msg, true);
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&a.to_le_bytes());
    out[8..].copy_from_slice(&b.to_le_bytes());
    out
}

/// SipHash-2-4 with the 64-bit tag (for the reference vectors of the shared rounds).
pub(crate) fn sip64(key: &[u8; 16], msg: &[u8]) -> u64 {
    sip(key, msg, false).0
}

fn word(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(w)
}

struct V([u64; 4]);

impl V {
    #[inline(always)]
    fn round(&mut self) {
        let v = &mut self.0;
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13) ^ v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16) ^ v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21) ^ v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17) ^ v[2];
        v[2] = v[2].rotate_left(32);
    }

    fn absorb(&mut self, m: u64) {
        self.0[3] ^= m;
        self.round();
        self.round();
        self.0[0] ^= m;
    }

    fn squeeze(&mut self) -> u64 {
        for _ in 0..4 {
            self.round();
        }
        self.0.iter().fold(0, |x, v| x ^ v)
    }
}

/// Both words of the tag (the second only when `wide`).
fn sip(key: &[u8; 16], msg: &[u8], wide: bool) -> (u64, u64) {
    let (k0, k1) = (word(&key[..8]), word(&key[8..]));
    let mut v = V([
        k0 ^ 0x736f_6d65_7073_6575,
        k1 ^ 0x646f_7261_6e64_6f6d,
        k0 ^ 0x6c79_6765_6e65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ]);
    if wide {
        v.0[1] ^= 0xee;
    }
    let mut words = msg.chunks_exact(8);
    for w in &mut words {
        v.absorb(word(w));
    }
    v.absorb(word(words.remainder()) | ((msg.len() as u64) << 56));
    v.0[2] ^= if wide { 0xee } else { 0xff };
    let first = v.squeeze();
    if !wide {
        return (first, 0);
    }
    v.0[1] ^= 0xdd;
    (first, v.squeeze())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_vectors() {
        let key: [u8; 16] = core::array::from_fn(|i| i as u8);
        let msg: Vec<u8> = (0..64).collect();
        let text = include_str!("../../tests/data/crypt/siphash.txt");
        let mut seen = 0;
        for line in text
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let f: Vec<&str> = line.split(' ').collect();
            let len: usize = f[1].parse().expect("length");
            let want: Vec<u8> = (0..f[2].len() / 2)
                .map(|i| u8::from_str_radix(&f[2][2 * i..2 * i + 2], 16).expect("hex"))
                .collect();
            let got = match f[0] {
                "64" => sip64(&key, &msg[..len]).to_le_bytes().to_vec(),
                _ => sip128(&key, &msg[..len]).to_vec(),
            };
            assert_eq!(got, want, "{line}");
            seen += 1;
        }
        assert!(seen >= 20, "{seen} vectors");
    }
}
