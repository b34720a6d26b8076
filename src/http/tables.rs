//! Byte classes as `const` 256-entry tables, each quoting the grammar it encodes.
//!
//! Input: one byte. Output: whether it belongs to the class. Tables are built at compile
//! time from the character lists in the RFCs, so the list in the source is the rule.
//! Bytes >= 0x80 are in a class only when the grammar says so (`obs-text`).

/// Builds a table holding exactly the bytes of `set`, the ASCII letters and digits when
/// `alnum` is true, and 0x80..=0xFF when `high` is true.
const fn class(set: &[u8], alnum: bool, high: bool) -> [bool; 256] {
    let mut t = [false; 256];
    let mut i = 0;
    while i < set.len() {
        t[set[i] as usize] = true;
        i += 1;
    }
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if alnum && c.is_ascii_alphanumeric() {
            t[b] = true;
        }
        if high && c >= 0x80 {
            t[b] = true;
        }
        b += 1;
    }
    t
}

/// RFC 9110 §5.6.2:
/// `tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`"
///        / "|" / "~" / DIGIT / ALPHA`. Methods, field names and codings are tokens.
pub(crate) const TOKEN: [bool; 256] = class(b"!#$%&'*+-.^_`|~", true, false);

/// RFC 9110 §5.5: `field-vchar = VCHAR / obs-text`, plus the SP and HTAB allowed inside
/// `field-content`. Excludes NUL, CR, LF, every other control byte and DEL.
pub(crate) const FIELD_VALUE: [bool; 256] = {
    let mut t = class(b" \t", false, true);
    let mut b = 0x21;
    while b < 0x7f {
        t[b] = true;
        b += 1;
    }
    t
};

/// RFC 3986 §3.3 and §3.4, the bytes of an origin-form target:
/// `pchar = unreserved / pct-encoded / sub-delims / ":" / "@"`, plus "/" and "?".
/// `unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~"`;
/// `sub-delims = "!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "="`;
/// "%" starts `pct-encoded`, checked when the path is decoded.
/// Strict: raw SP, controls, DEL, non-ASCII and `"#<>[\]^`{|}` are refused.
pub(crate) const TARGET: [bool; 256] = class(b"-._~!$&'()*+,;=:@/?%", true, false);

/// [`TARGET`] without "?": the bytes of the path part of a target.
// The grammar PATH_PLAIN is cut from and `scan.rs`'s path scan is documented against;
// no code reads it.
#[allow(dead_code)]
pub(crate) const PATH: [bool; 256] = class(b"-._~!$&'()*+,;=:@/%", true, false);

/// [`PATH`] without "/" and "%": the path bytes the target scan passes without a second
/// look (after a "/" it looks at the next byte, a "%" means the path must be decoded).
pub(crate) const PATH_PLAIN: [bool; 256] = class(b"-._~!$&'()*+,;=:@", true, false);

/// RFC 3986 §3.2.2 `reg-name = *( unreserved / pct-encoded / sub-delims )`, strict:
/// without "%" (no escapes in a host name) and without "," (a list separator: `a, b`).
/// "." and "-" are in `unreserved`.
pub(crate) const REG_NAME: [bool; 256] = class(b"-._~!$&'()*+;=", true, false);

/// RFC 3986 §3.2.2 `IP-literal = "[" ( IPv6address / IPvFuture ) "]"`: the bytes an
/// IPv6 address may hold (HEXDIG, ":" and "." for an embedded IPv4 tail).
/// IPvFuture ("v" ...) is refused.
pub(crate) const IP_LITERAL: [bool; 256] = class(b"0123456789abcdefABCDEF:.", false, false);

#[cfg(test)]
mod tests {
    use super::*;

    /// Naive oracle: each class by its definition, byte by byte.
    #[test]
    fn tables_match_the_grammar_written_out() {
        for b in 0u8..=255 {
            let tchar = b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
            assert_eq!(TOKEN[b as usize], tchar, "tchar {b:#x}");
            let vchar = (0x21..0x7f).contains(&b) || b >= 0x80 || b == b' ' || b == b'\t';
            assert_eq!(FIELD_VALUE[b as usize], vchar, "field value {b:#x}");
            let pchar = b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?%".contains(&b);
            assert_eq!(TARGET[b as usize], pchar, "target {b:#x}");
        }
        assert!(!TARGET[b' ' as usize] && !TARGET[b'#' as usize] && !TARGET[0x7f]);
    }
}
