//! The `Authorization: Basic` value (RFC 7617 §2; RFC 9110 §11.4, §11.6.2): the scheme,
//! case-insensitive, one or more spaces, and base64 (RFC 4648 §4) of `user:password`.
//!
//! Input: the field's value (the parser has trimmed its surrounding whitespace) and a
//! caller-owned buffer. Output: the user and the password as slices of that buffer, or
//! `None` for anything else. Accepted: padding present or left out (a padded value must
//! have its `=` at the end only). Refused: another scheme, parameters after the token,
//! characters outside the alphabet, no `:`, a control character in the user or the
//! password (RFC 7617 §2 excludes them; a NUL would also end the password early for
//! the C tools that made the hash). No allocation; never reads past its input.

/// Longest decoded `user:password` (the longest user and password, and the colon).
pub const DECODED_MAX: usize =
    super::htpasswd::USER_MAX + 1 + crate::crypt::sha_crypt::PASSWORD_MAX;

/// The scheme, as it is written before the token.
const SCHEME: &[u8] = b"basic";

/// The user and password of a `Basic` value, decoded into `buf`.
pub fn decode<'b>(value: &[u8], buf: &'b mut [u8; DECODED_MAX]) -> Option<(&'b [u8], &'b [u8])> {
    let scheme = value.get(..SCHEME.len())?;
    if !scheme.eq_ignore_ascii_case(SCHEME) {
        return None;
    }
    let rest = &value[SCHEME.len()..];
    let token = rest.trim_ascii_start();
    if token.len() == rest.len() || token.is_empty() {
        return None;
    }
    let n = base64(token, buf)?;
    let decoded = &buf[..n];
    let colon = memchr::memchr(b':', decoded)?;
    if decoded.iter().any(|&b| b < 0x20 || b == 0x7f) {
        return None;
    }
    Some((&decoded[..colon], &decoded[colon + 1..]))
}

/// RFC 4648 base64 into `out`: its length, or `None` (bad character, misplaced `=`, a
/// length no encoding has, or more than `out` holds).
fn base64(text: &[u8], out: &mut [u8]) -> Option<usize> {
    let body = text
        .strip_suffix(b"==")
        .or_else(|| text.strip_suffix(b"="))
        .unwrap_or(text);
    let padded = body.len() != text.len();
    if (padded && text.len() % 4 != 0) || body.len() % 4 == 1 {
        return None;
    }
    let mut bits = 0u32;
    let mut held = 0;
    let mut at = 0;
    for &c in body {
        let v = u32::from(VALUE[usize::from(c)]);
        if v == 0xff {
            return None;
        }
        bits = (bits << 6) | v;
        held += 6;
        if held >= 8 {
            held -= 8;
            *out.get_mut(at)? = (bits >> held) as u8;
            at += 1;
        }
    }
    Some(at)
}

/// The value of each base64 character; 0xff for every other byte.
const VALUE: [u8; 256] = {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 64 {
        t[alphabet[i] as usize] = i as u8;
        i += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(value: &str) -> Option<(String, String)> {
        let mut buf = [0u8; DECODED_MAX];
        decode(value.as_bytes(), &mut buf).map(|(u, p)| {
            (
                String::from_utf8_lossy(u).into_owned(),
                String::from_utf8_lossy(p).into_owned(),
            )
        })
    }

    fn some(u: &str, p: &str) -> Option<(String, String)> {
        Some((u.into(), p.into()))
    }

    #[test]
    fn rfc7617_examples_and_variants() {
        // RFC 7617 §2: "Aladdin" / "open sesame"; §2.1: "test" / "123£" in UTF-8.
        assert_eq!(
            pair("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="),
            some("Aladdin", "open sesame")
        );
        assert_eq!(pair("Basic dGVzdDoxMjPCow=="), some("test", "123£"));
        assert_eq!(pair("basic   dGVzdDoxMjPCow"), some("test", "123£"));
        assert_eq!(pair("BASIC YTo="), some("a", ""));
        assert_eq!(pair("Basic OmI="), some("", "b"));
        assert_eq!(pair("Basic YTpiOmM="), some("a", "b:c"));
    }

    #[test]
    fn everything_else_is_refused() {
        for bad in [
            "",
            "Basic",
            "Basic ",
            "BasicQWxhZGRpbjpvcGVuIHNlc2FtZQ==",
            "Bearer QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
            "Digest username=\"a\"",
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ== x",
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=",
            "Basic QWxhZGRp=bjpvcGVuIHNlc2FtZQ==",
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ===",
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZ",
            "Basic QWxh*GRpbjpvcGVuIHNlc2FtZQ==",
            "Basic YWxhZGRpbg==",
            "Basic YQA6Yg==",
            "Basic YTpiCg==",
        ] {
            assert_eq!(pair(bad), None, "{bad:?}");
        }
        let long = format!("Basic {}", "QUFB".repeat(DECODED_MAX / 3 + 1));
        assert_eq!(pair(&long), None);
        let fits = format!("Basic {}Ojo=", "QUFB".repeat((DECODED_MAX - 2) / 3));
        assert!(pair(&fits).is_some());
    }

    /// The decoder against a naive one (decode every character, then check).
    #[test]
    fn agrees_with_a_naive_decoder() {
        fn naive(text: &[u8]) -> Option<Vec<u8>> {
            let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            let first_pad = text.iter().position(|&c| c == b'=').unwrap_or(text.len());
            let (body, pad) = text.split_at(first_pad);
            if pad.len() > 2 || pad.iter().any(|&c| c != b'=') {
                return None;
            }
            if !pad.is_empty() && text.len() % 4 != 0 || body.len() % 4 == 1 {
                return None;
            }
            let vals: Option<Vec<u32>> = body
                .iter()
                .map(|c| alphabet.iter().position(|a| a == c).map(|v| v as u32))
                .collect();
            let vals = vals?;
            let mut out = Vec::new();
            for chunk in vals.chunks(4) {
                let mut w = 0u32;
                for (i, v) in chunk.iter().enumerate() {
                    w |= v << (18 - 6 * i);
                }
                let bytes = w.to_be_bytes();
                out.extend_from_slice(&bytes[1..chunk.len()]);
            }
            Some(out)
        }
        let chars = b"QWa0+/=*";
        let mut buf = [0u8; 64];
        for n in 0..8u32.pow(6) {
            let len = (n % 7) as usize;
            let text: Vec<u8> = (0..len)
                .map(|i| chars[((n >> (3 * i)) & 7) as usize])
                .collect();
            let got = base64(&text, &mut buf).map(|k| buf[..k].to_vec());
            assert_eq!(got, naive(&text), "{:?}", String::from_utf8_lossy(&text));
        }
    }
}
