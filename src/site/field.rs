//! Header fields the operator adds to responses: `--header 'Name: value'` and the values of
//! `--cache-control PATTERN=VALUE`.
//!
//! Input: command-line text. Output: a validated line, `Name: value` plus CRLF, ready to
//! be copied into a response head, or the reason it is refused. Validation follows RFC
//! 9110 §5.1 (`field-name = token`) and §5.5 (`field-value = *field-content`: visible
//! bytes, SP and HTAB inside, no CR, LF, NUL or other control byte), with the value's
//! leading and trailing whitespace removed (§5.5). A refused line never reaches a head,
//! so a value can never split one response into two.
//!
//! Names steerd writes itself, or that would change how the message is framed or read,
//! are refused rather than sent twice: see [`OWN_FIELDS`].

use crate::http::tables::{FIELD_VALUE, TOKEN};

/// Fields steerd writes (or that frame the message); `--header` may not add them.
/// `Cache-Control` has `--cache-control`; `Content-Type` has `--mime`.
pub(crate) const OWN_FIELDS: [&str; 17] = [
    "accept-ranges",
    "cache-control",
    "connection",
    "content-encoding",
    "content-length",
    "content-range",
    "content-type",
    "date",
    "etag",
    "keep-alive",
    "last-modified",
    "location",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// One validated `Name: value` line, CRLF included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HeaderLine {
    line: Box<[u8]>,
}

impl HeaderLine {
    /// Validates `Name: value` (`--header`).
    pub(crate) fn parse(text: &str) -> Result<HeaderLine, &'static str> {
        let (name, value) = text.split_once(':').ok_or("expected 'Name: value'")?;
        if name.is_empty() || !name.bytes().all(|b| TOKEN[usize::from(b)]) {
            return Err("the name is not a field name (RFC 9110 token)");
        }
        if OWN_FIELDS.iter().any(|f| f.eq_ignore_ascii_case(name)) {
            return Err("steerd writes this field itself");
        }
        let value = field_value(value)?;
        let line = [name.as_bytes(), b": ", value.as_bytes(), b"\r\n"].concat();
        Ok(HeaderLine { line: line.into() })
    }

    /// `Cache-Control: value` for a `--cache-control` value.
    pub(crate) fn cache_control(value: &str) -> Result<HeaderLine, &'static str> {
        let value = field_value(value)?;
        if value.is_empty() {
            return Err("the value is empty");
        }
        let line = [b"Cache-Control: ", value.as_bytes(), b"\r\n"].concat();
        Ok(HeaderLine { line: line.into() })
    }

    /// The line as sent, CRLF included.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.line
    }
}

/// A field value with its surrounding whitespace removed, if every byte may appear in
/// one.
pub(crate) fn field_value(text: &str) -> Result<&str, &'static str> {
    let value = text.trim_matches([' ', '\t']);
    if value.bytes().all(|b| FIELD_VALUE[usize::from(b)]) {
        Ok(value)
    } else {
        Err("the value holds a control character (CR, LF, NUL, ...)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_lines_are_normalised() {
        let l = HeaderLine::parse("X-Frame-Options:DENY").unwrap();
        assert_eq!(l.as_bytes(), b"X-Frame-Options: DENY\r\n");
        let l = HeaderLine::parse("Strict-Transport-Security:  max-age=63072000 \t").unwrap();
        assert_eq!(
            l.as_bytes(),
            b"Strict-Transport-Security: max-age=63072000\r\n"
        );
        let l = HeaderLine::parse("X-Empty:").unwrap();
        assert_eq!(l.as_bytes(), b"X-Empty: \r\n");
        let l = HeaderLine::parse("Link: </a.css>; rel=preload, <b: c>").unwrap();
        assert_eq!(l.as_bytes(), b"Link: </a.css>; rel=preload, <b: c>\r\n");
        let l = HeaderLine::parse("X-Utf8: caf\u{e9}").unwrap();
        assert_eq!(l.as_bytes(), "X-Utf8: caf\u{e9}\r\n".as_bytes());
    }

    #[test]
    fn bad_lines_are_refused() {
        for bad in [
            "NoColon",
            ": value",
            "Bad Name: x",
            "Bad\tName: x",
            "X(y): z",
            " X: y",
            "X-Split: a\r\nSet-Cookie: b",
            "X-Lf: a\nb",
            "X-Nul: a\0b",
            "X-Del: a\u{7f}",
            "Content-Length: 5",
            "transfer-encoding: chunked",
            "CONNECTION: close",
            "Cache-Control: no-store",
            "Server: other",
        ] {
            assert!(HeaderLine::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn cache_control_values() {
        let l = HeaderLine::cache_control(" public, max-age=31536000, immutable").unwrap();
        assert_eq!(
            l.as_bytes(),
            b"Cache-Control: public, max-age=31536000, immutable\r\n"
        );
        assert!(HeaderLine::cache_control("").is_err());
        assert!(HeaderLine::cache_control("  ").is_err());
        assert!(HeaderLine::cache_control("no-cache\r\nX: y").is_err());
    }
}
