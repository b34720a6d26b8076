//! Escaping of untrusted bytes (request-target, `Referer`, `User-Agent`) inside a log
//! line, so that no field can end early, forge a line or carry terminal controls.
//!
//! Input: the raw bytes, an output cursor and a budget of output bytes. Output: the
//! escaped bytes, cut before the first escape (or character) that would pass the budget.
//!
//! [`clf`] escapes as the access-log interface specifies: the bytes `0x00..=0x1f` and
//! `0x7f..=0xff` become `\xHH` with upper-case hex, as nginx's `ngx_http_log_escape`
//! (`src/http/modules/ngx_http_log_module.c`) writes them; `"` becomes `\"` and `\`
//! becomes `\\`, as Apache writes them (nginx would write `\x22` and `\x5C`). Log tools
//! (goaccess, AWStats) read both forms; the backslash is escaped too so that a field
//! ending in `\` cannot swallow its closing quote.
//!
//! [`json`] writes a JSON string body (RFC 8259 §7): `"` as `\"`, `\` as `\\\\` (two
//! backslashes once decoded), the controls and DEL as `\u00XX`, valid UTF-8 as is, and
//! each byte that is not part of valid UTF-8 as `\\xHH` (upper-case hex), so that the
//! decoded string holds the four characters `\xHH`. Valid text cannot produce that: its
//! own backslashes decode as two (`\\`), so in the decoded string a single backslash
//! followed by `x` always stands for a raw byte, and the original bytes can be recovered
//! (a raw `0xE9` decodes to `\xE9`, the UTF-8 `é` to `é`). The line is always valid JSON.

use crate::http::response::Writer;

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Bytes written escaped in a quoted field: controls, `"`, `\`, DEL and everything
/// above ASCII.
const CLF_ESCAPED: [bool; 256] = clf_table(false);

/// Bytes written escaped in a bare field (the user): those, and the space that would
/// end the field.
const CLF_BARE_ESCAPED: [bool; 256] = clf_table(true);

const fn clf_table(space: bool) -> [bool; 256] {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = b < 0x20 || b == b'"' as usize || b == b'\\' as usize || b >= 0x7f;
        t[b] = t[b] || (space && b == b' ' as usize);
        b += 1;
    }
    t
}

/// `src` escaped for a quoted CLF field, at most `budget` output bytes.
pub(crate) fn clf(src: &[u8], out: &mut Writer<'_>, budget: usize) {
    escaped(src, &CLF_ESCAPED, out, budget);
}

/// `src` escaped for a bare CLF field (the user, between spaces): a space is `\x20`.
pub(crate) fn clf_bare(src: &[u8], out: &mut Writer<'_>, budget: usize) {
    escaped(src, &CLF_BARE_ESCAPED, out, budget);
}

/// `src` with the bytes `table` marks written as `\"`, `\\` or `\xHH`.
fn escaped(src: &[u8], table: &[bool; 256], out: &mut Writer<'_>, budget: usize) {
    let mut left = budget;
    let mut rest = src;
    loop {
        let run = rest.iter().position(|&b| table[usize::from(b)]);
        let plain = run.unwrap_or(rest.len());
        out.put(&rest[..plain.min(left)]);
        if plain > left || run.is_none() {
            return;
        }
        left -= plain;
        let b = rest[plain];
        let hex = [
            b'\\',
            b'x',
            HEX[usize::from(b >> 4)],
            HEX[usize::from(b & 15)],
        ];
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            _ => &hex,
        };
        if left < esc.len() {
            return;
        }
        out.put(esc);
        left -= esc.len();
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
pub(crate) fn json(src: &[u8], out: &mut Writer<'_>, budget: usize) {
    let mut left = budget;
    for chunk in src.utf8_chunks() {
        for c in chunk.valid().chars() {
            let mut utf8 = [0u8; 4];
            let (bytes, cost): (&[u8], usize) = match c {
                '"' => (b"\\\"", 2),
                // Doubled in the decoded string, so `\x` there always means a raw byte.
                '\\' => (b"\\\\\\\\", 4),
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
            if left < 5 {
                return;
            }
            left -= 5;
            out.put(&[
                b'\\',
                b'\\',
                b'x',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 15)],
            ]);
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
                b'"' => "\\\"".to_string(),
                b'\\' => "\\\\".to_string(),
                0x20..=0x7e => (b as char).to_string(),
                _ => format!("\\x{b:02X}"),
            })
            .collect()
    }

    #[test]
    fn clf_as_specified() {
        assert_eq!(run(clf, b"curl/8.5", 99), "curl/8.5");
        assert_eq!(
            run(clf, b"a \"q\" \\b\tc\x7f\xc3\xa9", 99),
            "a \\\"q\\\" \\\\b\\x09c\\x7F\\xC3\\xA9"
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
        // `ab\"cd`: a cut may fall only where a whole source byte ends.
        let boundaries = [0, 1, 2, 4, 5, 6];
        for budget in 0..12 {
            let s = run(clf, src, budget);
            assert!(s.len() <= budget, "{budget}: {s}");
            assert!(naive_clf(src).starts_with(&s), "{budget}: {s}");
            assert!(boundaries.contains(&s.len()), "{budget}: {s}");
        }
        assert_eq!(run(clf, src, 3), "ab");
        assert_eq!(run(clf, src, 4), "ab\\\"");
    }

    /// The decoded JSON string back to bytes: `\\` is one backslash, `\xHH` one raw byte.
    fn unescape_raw(text: &str) -> Vec<u8> {
        let b = text.as_bytes();
        let mut back = Vec::new();
        let mut i = 0;
        while i < b.len() {
            match (b[i], b.get(i + 1)) {
                (b'\\', Some(b'\\')) => {
                    back.push(b'\\');
                    i += 2;
                }
                (b'\\', Some(b'x')) => {
                    let hex = std::str::from_utf8(&b[i + 2..i + 4]).unwrap();
                    back.push(u8::from_str_radix(hex, 16).unwrap());
                    i += 4;
                }
                (c, _) => {
                    back.push(c);
                    i += 1;
                }
            }
        }
        back
    }

    fn decoded(body: &str) -> String {
        let v: serde_json::Value = serde_json::from_str(&format!("\"{body}\"")).unwrap();
        v.as_str().unwrap().to_string()
    }

    #[test]
    fn json_is_valid_and_recoverable() {
        let src = b"a\"b\\c\n\x01\x7f caf\xc3\xa9 \xff\xfe \\xE9 end";
        let body = run(json, src, 256);
        assert_eq!(
            body,
            "a\\\"b\\\\\\\\c\\u000A\\u0001\\u007F caf\u{e9} \\\\xFF\\\\xFE \\\\\\\\xE9 end"
        );
        let text = decoded(&body);
        // Controls decode to themselves; the rest is recovered from the escapes.
        assert_eq!(unescape_raw(&text), src);
    }

    #[test]
    fn json_raw_byte_differs_from_its_character() {
        let raw = decoded(&run(json, b"caf\xe9", 64));
        let text = decoded(&run(json, "caf\u{e9}".as_bytes(), 64));
        let lookalike = decoded(&run(json, b"caf\\xE9", 64));
        assert_eq!(raw, "caf\\xE9");
        assert_eq!(text, "caf\u{e9}");
        assert_eq!(lookalike, "caf\\\\xE9");
        assert_ne!(raw, text);
        assert_ne!(raw, lookalike);
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
