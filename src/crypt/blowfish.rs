//! Blowfish (Schneier, 1993) as bcrypt uses it: the cipher's rounds and the expensive
//! key schedule, EksBlowfish (Provos and Mazières, 1999, §4).
//!
//! Input: a key (the password and its NUL, used cyclically), a 16-byte salt, a cost.
//! Output: a keyed [`State`] that encrypts 64-bit blocks. No allocation (the state is
//! 4168 bytes, on the caller's stack). Only encryption is here: bcrypt never decrypts.

mod pi;

/// P-array and S-boxes.
#[derive(Clone)]
pub(crate) struct State {
    p: [u32; 18],
    s: [[u32; 256]; 4],
}

impl State {
    /// The initial state: π's digits.
    pub(crate) fn initial() -> State {
        State {
            p: pi::P_INIT,
            s: [pi::S0_INIT, pi::S1_INIT, pi::S2_INIT, pi::S3_INIT],
        }
    }

    #[inline(always)]
    fn f(&self, x: u32) -> u32 {
        let [a, b, c, d] = x.to_be_bytes();
        let h = self.s[0][usize::from(a)].wrapping_add(self.s[1][usize::from(b)]);
        (h ^ self.s[2][usize::from(c)]).wrapping_add(self.s[3][usize::from(d)])
    }

    /// Encrypts the block `(l, r)`: sixteen rounds, two per step, no swaps.
    #[inline]
    pub(crate) fn encrypt(&self, mut l: u32, mut r: u32) -> (u32, u32) {
        for i in (0..16).step_by(2) {
            l ^= self.p[i];
            r ^= self.f(l);
            r ^= self.p[i + 1];
            l ^= self.f(r);
        }
        l ^= self.p[16];
        r ^= self.p[17];
        (r, l)
    }

    /// ExpandKey(state, salt, key): the P-array mixed with the key, then every P and S
    /// entry replaced, two at a time, by encryptions that chain through the salt's
    /// words (all zero for the schedule's unsalted rounds).
    fn expand(&mut self, salt: &[u32; 4], key: &[u8]) {
        let mut at = 0;
        for p in self.p.iter_mut() {
            *p ^= next_word(key, &mut at);
        }
        let (mut l, mut r) = (0u32, 0u32);
        let mut k = 0;
        for i in (0..18).step_by(2) {
            (l, r) = self.encrypt(l ^ salt[k], r ^ salt[k + 1]);
            k ^= 2;
            self.p[i] = l;
            self.p[i + 1] = r;
        }
        for b in 0..4 {
            for i in (0..256).step_by(2) {
                (l, r) = self.encrypt(l ^ salt[k], r ^ salt[k + 1]);
                k ^= 2;
                self.s[b][i] = l;
                self.s[b][i + 1] = r;
            }
        }
    }

    /// EksBlowfishSetup(cost, salt, key): one salted expansion, then `2^cost` rounds of
    /// an expansion with the key and one with the salt, both unsalted.
    pub(crate) fn eks(cost: u32, salt: &[u8; 16], key: &[u8]) -> State {
        let mut st = State::initial();
        let words = salt_words(salt);
        st.expand(&words, key);
        for _ in 0..1u64 << cost {
            st.expand(&[0; 4], key);
            st.expand(&[0; 4], salt);
        }
        st
    }
}

/// The salt as four big-endian words.
fn salt_words(salt: &[u8; 16]) -> [u32; 4] {
    let mut at = 0;
    [(); 4].map(|()| next_word(salt, &mut at))
}

/// The next four bytes of `data`, used cyclically, as a big-endian word.
fn next_word(data: &[u8], at: &mut usize) -> u32 {
    let mut w = 0u32;
    for _ in 0..4 {
        w = (w << 8) | u32::from(data.get(*at).copied().unwrap_or(0));
        *at += 1;
        if *at >= data.len() {
            *at = 0;
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    /// π's fraction to `digits` hexadecimal digits, by Machin's formula
    /// (π = 16·atan(1/5) − 4·atan(1/239)) in fixed point: a naive oracle for the tables.
    fn pi_hex_digits(digits: usize) -> Vec<u8> {
        // Little-endian base-2^32 fixed point with `limbs` fractional limbs, 3 guard limbs.
        let limbs = digits / 8 + 3;
        let atan_inv = |x: u32| -> Vec<u64> {
            // sum (-1)^k / ((2k+1) x^(2k+1)), as a number with `limbs` fractional limbs.
            let mut sum = vec![0u64; limbs + 1];
            let mut term = vec![0u64; limbs + 1];
            term[limbs] = 1;
            div_small(&mut term, u64::from(x));
            let x2 = u64::from(x) * u64::from(x);
            let mut k = 0u64;
            while term.iter().any(|&l| l != 0) {
                let mut t = term.clone();
                div_small(&mut t, 2 * k + 1);
                if k % 2 == 0 {
                    add(&mut sum, &t);
                } else {
                    sub(&mut sum, &t);
                }
                div_small(&mut term, x2);
                k += 1;
            }
            sum
        };
        let mut pi = atan_inv(5);
        mul_small(&mut pi, 4);
        sub(&mut pi, &atan_inv(239));
        mul_small(&mut pi, 4);
        // Fractional limbs, most significant first, as hex digits.
        let mut out = Vec::new();
        for limb in pi[..limbs].iter().rev() {
            for shift in (0..8).rev() {
                out.push(((limb >> (shift * 4)) & 0xf) as u8);
            }
        }
        out.truncate(digits);
        out
    }

    fn div_small(n: &mut [u64], d: u64) {
        let mut rem = 0u64;
        for limb in n.iter_mut().rev() {
            let cur = (rem << 32) | *limb;
            *limb = cur / d;
            rem = cur % d;
        }
    }

    fn mul_small(n: &mut [u64], m: u64) {
        let mut carry = 0u64;
        for limb in n.iter_mut() {
            let cur = *limb * m + carry;
            *limb = cur & 0xffff_ffff;
            carry = cur >> 32;
        }
    }

    fn add(a: &mut [u64], b: &[u64]) {
        let mut carry = 0u64;
        for (x, y) in a.iter_mut().zip(b) {
            let cur = *x + *y + carry;
            *x = cur & 0xffff_ffff;
            carry = cur >> 32;
        }
    }

    fn sub(a: &mut [u64], b: &[u64]) {
        let mut borrow = 0i64;
        for (x, y) in a.iter_mut().zip(b) {
            let mut cur = *x as i64 - *y as i64 - borrow;
            borrow = i64::from(cur < 0);
            if cur < 0 {
                cur += 1 << 32;
            }
            *x = cur as u64;
        }
    }

    #[test]
    fn the_tables_are_the_digits_of_pi() {
        let digits = pi_hex_digits(8 * (18 + 1024));
        let words: Vec<u32> = digits
            .chunks(8)
            .map(|c| c.iter().fold(0u32, |w, &d| (w << 4) | u32::from(d)))
            .collect();
        let st = State::initial();
        let table: Vec<u32> = st.p.iter().chain(st.s.iter().flatten()).copied().collect();
        assert_eq!(table.len(), words.len());
        for (i, (t, w)) in table.iter().zip(&words).enumerate() {
            assert_eq!(t, w, "word {i}");
        }
    }

    #[test]
    fn schneier_vectors() {
        // Eric Young's Blowfish vectors (ECB): key, plaintext, ciphertext.
        for (key, plain, cipher) in [
            (0u64, 0u64, 0x4EF9_9745_6198_DD78u64),
            (
                0xFFFF_FFFF_FFFF_FFFF,
                0xFFFF_FFFF_FFFF_FFFF,
                0x5186_6FD5_B85E_CB8A,
            ),
            (
                0x0123_4567_89AB_CDEF,
                0x1111_1111_1111_1111,
                0x61F9_C380_2281_B096,
            ),
            (
                0xFEDC_BA98_7654_3210,
                0x0123_4567_89AB_CDEF,
                0x0ACE_AB0F_C6A0_A28D,
            ),
        ] {
            let mut st = State::initial();
            st.expand(&[0; 4], &key.to_be_bytes());
            let (l, r) = st.encrypt((plain >> 32) as u32, plain as u32);
            assert_eq!(
                (u64::from(l) << 32) | u64::from(r),
                cipher,
                "key {key:016x}"
            );
        }
    }
}
