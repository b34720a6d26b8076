//! SHA-256 and SHA-512 (FIPS 180-4), incremental: `update` any number of times, then
//! `finish`. Input: bytes. Output: the 32- or 64-byte digest. No allocation.
//!
//! Required reading: FIPS 180-4 §4.1.2, §4.1.3 (the functions), §4.2 (the constants:
//! the first bits of the fractional parts of the cube roots of the first 64 or 80
//! primes), §5.1 (padding), §5.3 (initial values: square roots of the first 8 primes),
//! §6.2, §6.4 (the compression). The constants below were computed from those
//! definitions (`scripts/crypt_tables.py`), and a unit test recomputes SHA-256's.
//!
//! The two share their block buffering and padding ([`Blocks`]); each has its own
//! compression function, written out as the standard gives it.

/// Input waiting for a whole block, and the message length so far.
#[derive(Clone)]
struct Blocks<const B: usize> {
    block: [u8; B],
    fill: usize,
    len: u128,
}

impl<const B: usize> Blocks<B> {
    const fn new() -> Self {
        Blocks {
            block: [0; B],
            fill: 0,
            len: 0,
        }
    }

    /// Feeds `data`, calling `compress` for each block it completes.
    fn feed(&mut self, mut data: &[u8], mut compress: impl FnMut(&[u8; B])) {
        self.len += data.len() as u128;
        if self.fill > 0 {
            let take = (B - self.fill).min(data.len());
            self.block[self.fill..self.fill + take].copy_from_slice(&data[..take]);
            self.fill += take;
            data = &data[take..];
            if self.fill < B {
                return;
            }
            compress(&self.block);
            self.fill = 0;
        }
        let mut blocks = data.chunks_exact(B);
        for b in &mut blocks {
            let mut whole = [0u8; B];
            whole.copy_from_slice(b);
            compress(&whole);
        }
        let rest = blocks.remainder();
        self.block[..rest.len()].copy_from_slice(rest);
        self.fill = rest.len();
    }

    /// Pads (a 1 bit, zeros, the bit length in the last `len_bytes` bytes, big-endian)
    /// and compresses the last block or two (§5.1).
    fn pad(&mut self, len_bytes: usize, mut compress: impl FnMut(&[u8; B])) {
        let bits = self.len.wrapping_mul(8).to_be_bytes();
        self.block[self.fill] = 0x80;
        self.block[self.fill + 1..].fill(0);
        if self.fill + 1 > B - len_bytes {
            compress(&self.block);
            self.block.fill(0);
        }
        self.block[B - len_bytes..].copy_from_slice(&bits[16 - len_bytes..]);
        compress(&self.block);
    }
}

/// One SHA-2 hash: its state type, block and digest sizes, length field, initial values
/// and compression; the rest is the same for both.
macro_rules! sha2 {
    ($name:ident, $doc:literal, $word:ty, $block:literal, $digest:literal, $len_bytes:literal,
     $init:expr, $compress:ident) => {
        #[doc = $doc]
        #[derive(Clone)]
        pub struct $name {
            state: [$word; 8],
            blocks: Blocks<$block>,
        }

        impl Default for $name {
            fn default() -> Self {
                $name::new()
            }
        }

        impl $name {
            /// An empty message.
            pub const fn new() -> $name {
                $name {
                    state: $init,
                    blocks: Blocks::new(),
                }
            }

            /// Appends `data` to the message. Out of line: SHA-crypt calls it from a
            /// dozen places, and a copy in each costs the appliance binary kilobytes.
            #[inline(never)]
            pub fn update(&mut self, data: &[u8]) {
                let state = &mut self.state;
                self.blocks.feed(data, |b| $compress(state, b));
            }

            /// The digest of the message.
            #[inline(never)]
            pub fn finish(mut self) -> [u8; $digest] {
                let state = &mut self.state;
                self.blocks.pad($len_bytes, |b| $compress(state, b));
                let mut out = [0u8; $digest];
                let word = core::mem::size_of::<$word>();
                for (o, w) in out.chunks_exact_mut(word).zip(self.state) {
                    o.copy_from_slice(&w.to_be_bytes());
                }
                out
            }
        }
    };
}

sha2!(
    Sha256,
    "SHA-256 in progress.",
    u32,
    64,
    32,
    8,
    H256,
    compress256
);
sha2!(
    Sha512,
    "SHA-512 in progress.",
    u64,
    128,
    64,
    16,
    H512,
    compress512
);

/// One SHA-2 compression function (§6.2.2, §6.4.2): the same steps for both sizes,
/// with their own word, round count and rotation amounts (§4.1.2, §4.1.3):
/// σ0 and σ1 of the message schedule (two rotations and a shift each), Σ0 and Σ1 of
/// the rounds (three rotations each).
macro_rules! compress {
    ($name:ident, $doc:literal, $word:ty, $block:literal, $k:ident,
     σ0 = ($a0:literal, $b0:literal, $c0:literal), σ1 = ($a1:literal, $b1:literal, $c1:literal),
     Σ0 = ($x0:literal, $y0:literal, $z0:literal), Σ1 = ($x1:literal, $y1:literal, $z1:literal)) => {
        #[doc = $doc]
        fn $name(h: &mut [$word; 8], block: &[u8; $block]) {
            const ROUNDS: usize = $k.len();
            const BYTES: usize = core::mem::size_of::<$word>();
            let mut w = [0 as $word; ROUNDS];
            for (wi, b) in w.iter_mut().zip(block.chunks_exact(BYTES)) {
                let mut word = [0u8; BYTES];
                word.copy_from_slice(b);
                *wi = <$word>::from_be_bytes(word);
            }
            for i in 16..ROUNDS {
                let (x, y) = (w[i - 15], w[i - 2]);
                let s0 = x.rotate_right($a0) ^ x.rotate_right($b0) ^ (x >> $c0);
                let s1 = y.rotate_right($a1) ^ y.rotate_right($b1) ^ (y >> $c1);
                w[i] = w[i - 16]
                    .wrapping_add(s0)
                    .wrapping_add(w[i - 7])
                    .wrapping_add(s1);
            }
            let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = *h;
            for (k, wi) in $k.iter().zip(w) {
                let big_s1 = e.rotate_right($x1) ^ e.rotate_right($y1) ^ e.rotate_right($z1);
                let ch = (e & f) ^ (!e & g);
                let t1 = hh
                    .wrapping_add(big_s1)
                    .wrapping_add(ch)
                    .wrapping_add(*k)
                    .wrapping_add(wi);
                let big_s0 = a.rotate_right($x0) ^ a.rotate_right($y0) ^ a.rotate_right($z0);
                let maj = (a & b) ^ (a & c) ^ (b & c);
                let t2 = big_s0.wrapping_add(maj);
                (hh, g, f, e, d, c, b, a) =
                    (g, f, e, d.wrapping_add(t1), c, b, a, t1.wrapping_add(t2));
            }
            for (x, v) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
                *x = x.wrapping_add(v);
            }
        }
    };
}

compress!(
    compress256,
    "The SHA-256 compression of one block into `h`.",
    u32,
    64,
    K256,
    σ0 = (7, 18, 3),
    σ1 = (17, 19, 10),
    Σ0 = (2, 13, 22),
    Σ1 = (6, 11, 25)
);
compress!(
    compress512,
    "The SHA-512 compression of one block into `h`.",
    u64,
    128,
    K512,
    σ0 = (1, 8, 7),
    σ1 = (19, 61, 6),
    Σ0 = (28, 34, 39),
    Σ1 = (14, 18, 41)
);

const K256: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

const H256: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

const K512: [u64; 80] = [
    0x428a2f98d728ae22,
    0x7137449123ef65cd,
    0xb5c0fbcfec4d3b2f,
    0xe9b5dba58189dbbc,
    0x3956c25bf348b538,
    0x59f111f1b605d019,
    0x923f82a4af194f9b,
    0xab1c5ed5da6d8118,
    0xd807aa98a3030242,
    0x12835b0145706fbe,
    0x243185be4ee4b28c,
    0x550c7dc3d5ffb4e2,
    0x72be5d74f27b896f,
    0x80deb1fe3b1696b1,
    0x9bdc06a725c71235,
    0xc19bf174cf692694,
    0xe49b69c19ef14ad2,
    0xefbe4786384f25e3,
    0x0fc19dc68b8cd5b5,
    0x240ca1cc77ac9c65,
    0x2de92c6f592b0275,
    0x4a7484aa6ea6e483,
    0x5cb0a9dcbd41fbd4,
    0x76f988da831153b5,
    0x983e5152ee66dfab,
    0xa831c66d2db43210,
    0xb00327c898fb213f,
    0xbf597fc7beef0ee4,
    0xc6e00bf33da88fc2,
    0xd5a79147930aa725,
    0x06ca6351e003826f,
    0x142929670a0e6e70,
    0x27b70a8546d22ffc,
    0x2e1b21385c26c926,
    0x4d2c6dfc5ac42aed,
    0x53380d139d95b3df,
    0x650a73548baf63de,
    0x766a0abb3c77b2a8,
    0x81c2c92e47edaee6,
    0x92722c851482353b,
    0xa2bfe8a14cf10364,
    0xa81a664bbc423001,
    0xc24b8b70d0f89791,
    0xc76c51a30654be30,
    0xd192e819d6ef5218,
    0xd69906245565a910,
    0xf40e35855771202a,
    0x106aa07032bbd1b8,
    0x19a4c116b8d2d0c8,
    0x1e376c085141ab53,
    0x2748774cdf8eeb99,
    0x34b0bcb5e19b48a8,
    0x391c0cb3c5c95a63,
    0x4ed8aa4ae3418acb,
    0x5b9cca4f7763e373,
    0x682e6ff3d6b2b8a3,
    0x748f82ee5defb2fc,
    0x78a5636f43172f60,
    0x84c87814a1f0ab72,
    0x8cc702081a6439ec,
    0x90befffa23631e28,
    0xa4506cebde82bde9,
    0xbef9a3f7b2c67915,
    0xc67178f2e372532b,
    0xca273eceea26619c,
    0xd186b8c721c0c207,
    0xeada7dd6cde0eb1e,
    0xf57d4f7fee6ed178,
    0x06f067aa72176fba,
    0x0a637dc5a2c898a6,
    0x113f9804bef90dae,
    0x1b710b35131c471b,
    0x28db77f523047d84,
    0x32caab7b40c72493,
    0x3c9ebe0a15c9bebc,
    0x431d67c49c100d4c,
    0x4cc5d4becb3e42b6,
    0x597f299cfc657e2a,
    0x5fcb6fab3ad6faec,
    0x6c44198c4a475817,
];

const H512: [u64; 8] = [
    0x6a09e667f3bcc908,
    0xbb67ae8584caa73b,
    0x3c6ef372fe94f82b,
    0xa54ff53a5f1d36f1,
    0x510e527fade682d1,
    0x9b05688c2b3e6c1f,
    0x1f83d9abfb41bd6b,
    0x5be0cd19137e2179,
];

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// `tests/data/crypt/sha2.txt`: `256|512 MESSAGE-SPEC DIGEST` per line; the message
    /// is `"text"`, or `"text"*N` for N repetitions.
    fn vectors() -> Vec<(u32, Vec<u8>, String)> {
        let text = include_str!("../../tests/data/crypt/sha2.txt");
        text.lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| {
                let (bits, rest) = l.split_once(' ').expect("bits");
                let (spec, digest) = rest.rsplit_once(' ').expect("digest");
                let (quoted, times) = match spec.rsplit_once('*') {
                    Some((q, n)) if q.ends_with('"') => (q, n.parse().expect("count")),
                    _ => (spec, 1),
                };
                let msg = quoted.trim_matches('"').as_bytes().repeat(times);
                (bits.parse().expect("256 or 512"), msg, digest.to_string())
            })
            .collect()
    }

    fn digest(bits: u32, msg: &[u8], piece: usize) -> String {
        match bits {
            256 => {
                let mut h = Sha256::new();
                msg.chunks(piece).for_each(|c| h.update(c));
                hex(&h.finish())
            }
            _ => {
                let mut h = Sha512::new();
                msg.chunks(piece).for_each(|c| h.update(c));
                hex(&h.finish())
            }
        }
    }

    #[test]
    fn fips_vectors_whole_and_in_pieces() {
        let v = vectors();
        assert!(v.len() >= 10, "{} vectors", v.len());
        for (bits, msg, want) in &v {
            let pieces: &[usize] = match msg.len() {
                0..=4096 => &[usize::MAX, 1, 3, 55, 56, 63, 64, 111, 112, 127, 128, 129],
                _ => &[usize::MAX, 4093],
            };
            for &piece in pieces {
                let piece = piece.min(msg.len()).max(1);
                assert_eq!(
                    &digest(*bits, msg, piece),
                    want,
                    "{bits} {} bytes",
                    msg.len()
                );
            }
        }
    }

    /// The largest `r` with `r^k <= x`.
    fn iroot(x: u128, k: u32) -> u128 {
        let (mut lo, mut hi) = (0u128, 1u128 << (128 / k));
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            match mid.checked_pow(k) {
                Some(p) if p <= x => lo = mid,
                _ => hi = mid - 1,
            }
        }
        lo
    }

    #[test]
    fn sha256_constants_are_the_roots_of_primes() {
        let primes: Vec<u128> = (2u128..)
            .filter(|n| (2..*n).take_while(|d| d * d <= *n).all(|d| n % d != 0))
            .take(64)
            .collect();
        for (i, p) in primes.iter().enumerate() {
            let cube = iroot(p << 96, 3) as u32;
            assert_eq!(K256[i], cube, "K256[{i}]");
            if i < 8 {
                assert_eq!(H256[i], iroot(p << 64, 2) as u32, "H256[{i}]");
            }
        }
        // SHA-512's first words extend SHA-256's (the same roots, more bits).
        for i in 0..8 {
            assert_eq!((H512[i] >> 32) as u32, H256[i]);
        }
        for i in 0..64 {
            assert_eq!((K512[i] >> 32) as u32, K256[i]);
        }
    }
}
