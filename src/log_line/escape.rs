//! Escaping of untrusted bytes (request-target, `Referer`, `User-Agent`) inside a log
//! line, so that no field can end early, forge a line or carry terminal controls.
//!
//! Input: the raw bytes, an output cursor and a budget of output bytes. Output: the
//! escaped bytes, cut before the first escape (or character) that would pass the budget.
//!
//! [`clf`] follows nginx's default `escape` for log variables (`ngx_http_log_escape` in
//! `src/http/modules/ngx_http_log_module.c`): the bytes `0x00..=0x1f`, `"` (0x22), `\`
//! (0x5c) and `0x7f..=0xff` become `\xHH` with upper-case hex; everything else is
//! written as is. So a quote inside a field is `\x22` and a backslash `\x5C`, which log
//! tools read as ordinary characters of the field.
//!
//! [`json`] writes a JSON string body (RFC 8259 §7): `"` and `\` as `\"` and `\\`, the
//! controls and DEL as `\u00XX`, valid UTF-8 as is, and each byte that is not part of
//! valid UTF-8 as `\u00XX` (the code point of the same value), so the line is always
//! valid JSON and the original bytes can be recovered.

use crate::http::response::Writer;

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Bytes nginx writes as `\xHH`: controls, `"`, `\`, DEL and everything above ASCII.
const CLF_ESCAPED: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = b < 0x20 || b == b'"' as usize || b == b'\\' as usize || b >= 0x7f;
        b += 1;
    }
    t
};

/// `src` escaped as nginx escapes log variables, at most `budget` output bytes.
pub fn clf(src: &[u8], out: &mut Writer<'_>, budget: usize) {
    let mut left = budget;
    let mut rest = src;
    loop {
        let run = rest.iter().position(|&b| CLF_ESCAPED[usize::from(b)]);
        let plain = run.unwrap_or(rest.len());
        out.put(&rest[..plain.min(left)]);
        if plain > left || run.is_none() {
            return;
        }
        left -= plain;
        if left < 4 {
            return;
        }
        let b = rest[plain];
        out.put(&[
            b'\\',
            b'x',
            HEX[usize::from(b >> 4)],
            HEX[usize::from(b & 15)],
        ]);
        left -= 4;
        rest = &rest[plain + 1..];
    }
}

/// `\u00XX` for one byte.
fn unicode_escape(b: u8, out: &mut Writer<'_>) {
    out.put(&[
        b'\\',
        b'u',
        b'0',
        b'0',
        HEX[usize::from(b >> 4)],
        HEX[usize::from(b & 15)],
    ]);
}

/// `src` as the body of a JSON string (no quotes), at most `budget` output bytes.
pub fn json(src: &[u8], out: &mut Writer<'_>, budget: usize) {
    let mut left = budget;
    for chunk in src.utf8_chunks() {
        for c in chunk.valid().chars() {
            let mut utf8 = [0u8; 4];
            let (bytes, cost): (&[u8], usize) = match c {
                '"' => (b"\\\"", 2),
                '\\' => (b"\\\\", 2),
                '\0'..='\x1f' | '\x7f' => (&[], 6),
                _ => {
                    let s = c.encode_utf8(&mut utf8);
                    (s.as_bytes(), s.len())
                }
            };
            if cost > left {
                return;
            }
            left -= cost;
            match bytes {
                [] => unicode_escape(c as u8, out),
                _ => {
                    out.put(bytes);
                }
            }
        }
        for &b in chunk.invalid() {
            if left < 6 {
                return;
            }
            left -= 6;
            unicode_escape(b, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(f: fn(&[u8], &mut Writer<'_>, usize), src: &[u8], budget: usize) -> String {
        let mut buf = [0u8; 256];
        let mut out = Writer::new(&mut buf);
        f(src, &mut out, budget);
        let n = out.written();
        String::from_utf8(buf[..n].to_vec()).unwrap()
    }

    /// nginx's rule written the plain way: the oracle for [`clf`].
    fn naive_clf(src: &[u8]) -> String {
        src.iter()
            .map(|&b| match b {
                0x20..=0x7e if b != b'"' && b != b'\\' => (b as char).to_string(),
                _ => format!("\\x{b:02X}"),
            })
            .collect()
    }

    #[test]
    fn clf_as_nginx_writes_it() {
        assert_eq!(run(clf, b"curl/8.5", 99), "curl/8.5");
        assert_eq!(
            run(clf, b"a \"q\" \\b\tc\x7f\xc3\xa9", 99),
            "a \\x22q\\x22 \\x5Cb\\x09c\\x7F\\xC3\\xA9"
        );
        assert_eq!(run(clf, b"'{}<>|", 99), "'{}<>|");
    }

    #[test]
    fn clf_matches_the_oracle_for_every_byte() {
        for b in 0..=255u8 {
            let src = [b'a', b, b'z'];
            assert_eq!(run(clf, &src, 99), naive_clf(&src), "{b:#x}");
        }
    }

    #[test]
    fn clf_budget_never_splits_an_escape() {
        let src = b"ab\"cd";
        // `ab\x22cd`: a cut may fall only where a whole source byte ends.
        let boundaries = [0, 1, 2, 6, 7, 8];
        for budget in 0..12 {
            let s = run(clf, src, budget);
            assert!(s.len() <= budget, "{budget}: {s}");
            assert!(naive_clf(src).starts_with(&s), "{budget}: {s}");
            assert!(boundaries.contains(&s.len()), "{budget}: {s}");
        }
        assert_eq!(run(clf, src, 5), "ab");
        assert_eq!(run(clf, src, 6), "ab\\x22");
    }

    #[test]
    fn json_is_valid_and_recoverable() {
        let src = b"a\"b\\c\n\x01\x7f caf\xc3\xa9 \xff\xfe end";
        let body = run(json, src, 256);
        assert_eq!(
            body,
            "a\\\"b\\\\c\\u000A\\u0001\\u007F caf\u{e9} \\u00FF\\u00FE end"
        );
        let v: serde_json::Value = serde_json::from_str(&format!("\"{body}\"")).unwrap();
        let back: Vec<u8> = v
            .as_str()
            .unwrap()
            .chars()
            .flat_map(|c| match c as u32 {
                0xff | 0xfe => vec![c as u8],
                _ => c.to_string().into_bytes(),
            })
            .collect();
        assert_eq!(back, src);
    }

    #[test]
    fn json_budget_cuts_at_a_character() {
        let src = "x\u{e9}\"".as_bytes();
        assert_eq!(run(json, src, 1), "x");
        assert_eq!(run(json, src, 2), "x");
        assert_eq!(run(json, src, 3), "x\u{e9}");
        assert_eq!(run(json, src, 4), "x\u{e9}");
        assert_eq!(run(json, src, 5), "x\u{e9}\\\"");
    }
}
