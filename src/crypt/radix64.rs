//! The 64-character alphabets of crypt strings, and their two bit orders.
//!
//! - SHA-crypt (and MD5-crypt before it) write `./0-9A-Za-z`, taking 24 bits at a time
//!   and emitting their 6-bit groups least significant first ([`put_crypt`]).
//! - bcrypt writes `./A-Za-z0-9`, in the byte order and bit order of RFC 4648 base64
//!   without padding ([`encode_bcrypt`], [`decode_bcrypt`]).
//!
//! Input: bytes or crypt text. Output: text into a caller's buffer, or bytes; no
//! allocation. A character outside the alphabet is a decoding error.

/// SHA-crypt's alphabet.
pub(crate) const CRYPT: &[u8; 64] =
    b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// bcrypt's alphabet.
pub(crate) const BCRYPT: &[u8; 64] =
    b"./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// True when every byte of `text` is in `alphabet`.
pub(crate) fn all_in(alphabet: &[u8; 64], text: &[u8]) -> bool {
    text.iter().all(|b| alphabet.contains(b))
}

/// Appends to `out` at `*at` the `n` characters of the 24 bits `b2 b1 b0` (b2 the most
/// significant byte), least significant 6 bits first: glibc's `b64_from_24bit`.
pub(crate) fn put_crypt(out: &mut [u8], at: &mut usize, (b2, b1, b0): (u8, u8, u8), n: usize) {
    let mut w = (u32::from(b2) << 16) | (u32::from(b1) << 8) | u32::from(b0);
    for _ in 0..n {
        if let Some(slot) = out.get_mut(*at) {
            *slot = CRYPT[(w & 0x3f) as usize];
        }
        *at += 1;
        w >>= 6;
    }
}

/// Encodes `bytes` in bcrypt's alphabet into `out`; returns the characters written
/// (`ceil(4 * len / 3)`), or `None` when `out` is too short.
pub(crate) fn encode_bcrypt(bytes: &[u8], out: &mut [u8]) -> Option<usize> {
    let need = (bytes.len() * 4).div_ceil(3);
    let out = out.get_mut(..need)?;
    let mut bits = 0u32;
    let mut held = 0;
    let mut at = 0;
    for &b in bytes {
        bits = (bits << 8) | u32::from(b);
        held += 8;
        while held >= 6 {
            held -= 6;
            out[at] = BCRYPT[((bits >> held) & 0x3f) as usize];
            at += 1;
        }
    }
    if held > 0 {
        out[at] = BCRYPT[((bits << (6 - held)) & 0x3f) as usize];
        at += 1;
    }
    Some(at)
}

/// Decodes bcrypt-alphabet `text` into `out`, filling it whole (bits past its end are
/// dropped, as bcrypt drops the last 4 bits of a 22-character salt). `None`: a
/// character outside the alphabet, or too few characters to fill `out`.
pub(crate) fn decode_bcrypt(text: &[u8], out: &mut [u8]) -> Option<()> {
    let mut bits = 0u32;
    let mut held = 0;
    let mut at = 0;
    for &c in text {
        if at == out.len() {
            break;
        }
        let v = BCRYPT.iter().position(|&a| a == c)? as u32;
        bits = (bits << 6) | v;
        held += 6;
        if held >= 8 {
            held -= 8;
            out[at] = (bits >> held) as u8;
            at += 1;
        }
    }
    (at == out.len()).then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bcrypt_round_trips_and_matches_base64_bit_order() {
        // "Man" is "TWFu" in RFC 4648 base64; bcrypt's alphabet is base64's shifted by
        // two places ('.' and '/' first), so the same bits give "RUDs".
        let mut out = [0u8; 8];
        let n = encode_bcrypt(b"Man", &mut out).unwrap();
        assert_eq!(&out[..n], b"RUDs");
        let mut back = [0u8; 3];
        decode_bcrypt(b"RUDs", &mut back).unwrap();
        assert_eq!(&back, b"Man");
        for len in 0..40usize {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let mut text = [0u8; 64];
            let n = encode_bcrypt(&bytes, &mut text).unwrap();
            assert_eq!(n, (len * 4).div_ceil(3));
            assert!(all_in(BCRYPT, &text[..n]));
            let mut again = vec![0u8; len];
            decode_bcrypt(&text[..n], &mut again).unwrap();
            assert_eq!(again, bytes);
        }
        assert!(decode_bcrypt(b"RU$s", &mut [0u8; 3]).is_none());
        assert!(decode_bcrypt(b"RU", &mut [0u8; 3]).is_none());
        assert!(encode_bcrypt(b"Man", &mut [0u8; 3]).is_none());
    }

    #[test]
    fn crypt_groups_are_least_significant_first() {
        let mut out = [0u8; 4];
        let mut at = 0;
        put_crypt(&mut out, &mut at, (0, 0, 1), 4);
        assert_eq!(&out, b"/...");
        assert_eq!(at, 4);
        let mut at = 0;
        put_crypt(&mut out, &mut at, (0xff, 0xff, 0xff), 2);
        assert_eq!(&out[..2], b"zz");
    }
}
