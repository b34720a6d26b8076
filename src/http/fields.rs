//! The meaning of the few fields the server acts on, one function each.
//!
//! Input: a field value already checked byte by byte by `parse.rs` (no controls, OWS
//! trimmed). Output: the typed value or the [`ErrorKind`] to answer. Lists are split on
//! "," with OWS trimmed and empty elements ignored (RFC 9110 §5.6.1). Nothing here
//! allocates; lists are walked, never collected.

use super::error::ErrorKind;
use super::parse::trim_ows;
use super::scan::{all_in, class_end, folded_eq, plain_host};
use super::tables::{IP_LITERAL, REG_NAME, TOKEN};

/// The elements of a `#list` value: split on ",", OWS trimmed, empty ones skipped.
pub(crate) fn list_elements(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(trim_ows)
        .filter(|e| !e.is_empty())
}

/// RFC 9110 §8.6 `Content-Length = 1*DIGIT`, decimal (leading zeros are decimal, never
/// octal), overflow refused. No sign, no list, no inner whitespace.
pub(crate) fn content_length(value: &[u8]) -> Result<u64, ErrorKind> {
    if value.is_empty() {
        return Err(ErrorKind::BadContentLength);
    }
    let mut n: u64 = 0;
    for &b in value {
        if !b.is_ascii_digit() {
            return Err(ErrorKind::BadContentLength);
        }
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
            .ok_or(ErrorKind::BadContentLength)?;
    }
    Ok(n)
}

/// Transfer-Encoding lines seen so far (RFC 9112 §6.1): `chunked` must be the final
/// coding and appear once; any other coding is not implemented here.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Codings {
    present: bool,
    chunked: bool,
    other: bool,
}

impl Codings {
    /// Adds one Transfer-Encoding field line. Codings compare exactly, case-insensitively
    /// (`xchunked`, `chunked;x=1` and `\xa0chunked` are other codings, never chunked).
    pub(crate) fn add(&mut self, value: &[u8]) -> Result<(), ErrorKind> {
        self.present = true;
        for coding in list_elements(value) {
            if self.chunked {
                return Err(ErrorKind::BadTransferEncoding);
            }
            if coding.eq_ignore_ascii_case(b"chunked") {
                self.chunked = true;
            } else if coding.iter().all(|&b| TOKEN[b as usize]) {
                self.other = true;
            } else {
                return Err(ErrorKind::BadTransferEncoding);
            }
        }
        Ok(())
    }

    /// Whether any Transfer-Encoding line was seen.
    pub(crate) fn present(&self) -> bool {
        self.present
    }

    /// The verdict once every line is in: `Ok(true)` for a chunked body, `Ok(false)` for
    /// no Transfer-Encoding at all.
    pub(crate) fn chunked(&self) -> Result<bool, ErrorKind> {
        match (self.present, self.chunked, self.other) {
            (false, _, _) => Ok(false),
            (true, false, _) => Err(ErrorKind::BadTransferEncoding),
            (true, true, true) => Err(ErrorKind::UnsupportedCoding),
            (true, true, false) => Ok(true),
        }
    }
}

/// Connection options this server acts on (RFC 9112 §9.3, §9.6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ConnectionOptions {
    /// `close` was listed.
    pub(crate) close: bool,
    /// `keep-alive` was listed (meaningful for HTTP/1.0).
    pub(crate) keep_alive: bool,
}

impl ConnectionOptions {
    /// Adds one Connection field line; unknown options are ignored. A value that is
    /// exactly one of the two options (nearly every client's) is decided inline by one
    /// folded compare; any other value is walked as a list out of line.
    #[inline(always)]
    pub(crate) fn add(&mut self, value: &[u8]) {
        if self.add_option(value) {
            return;
        }
        self.add_list(value);
    }

    #[inline(never)]
    fn add_list(&mut self, value: &[u8]) {
        for option in list_elements(value) {
            self.add_option(option);
        }
    }

    /// Notes `option` if it is `close` or `keep-alive`; returns whether it was.
    #[inline(always)]
    fn add_option(&mut self, option: &[u8]) -> bool {
        match option.len() {
            5 if folded_eq(option, b"close") => self.close = true,
            10 if folded_eq(option, b"keep-alive") => self.keep_alive = true,
            _ => return false,
        }
        true
    }
}

/// RFC 9110 §10.1.1: true when the only expectation is `100-continue`. Any other
/// expectation is ignored (the 417 it MAY get is not worth a status of its own).
pub(crate) fn expects_continue(value: &[u8]) -> bool {
    value.eq_ignore_ascii_case(b"100-continue")
}

/// RFC 9112 §3.2 / RFC 3986 §3.2.2–3.2.3: `uri-host [ ":" port ]`, where uri-host is an
/// IP-literal in brackets or a non-empty reg-name (IPv4 addresses are reg-names
/// syntactically) and port is 1–5 digits up to 65535. No userinfo, path, list or escape.
///
/// The everyday host, letters, digits, "-" and "." without a port, is checked 16 bytes
/// at a time; another reg-name without a port without a branch per byte; anything else
/// (a port, an IP literal, an error) goes the long way.
///
/// A plain host with a port (`127.0.0.1:8080`, `localhost:3000`: the Host of every
/// server not on port 80) is split at its last ":" and checked the same fast way.
#[inline(always)]
pub(crate) fn valid_host(value: &[u8]) -> bool {
    plain_host(value)
        || plain_host_with_port(value)
        || (!value.is_empty() && all_in(value, &REG_NAME))
        || valid_host_or_port(value)
}

/// `name:port` where `name` passes [`plain_host`] and `port` [`valid_port`]; `false`
/// leaves the answer to the table walk. A ":" can only start a port (reg-name has none),
/// and a port has at most 5 digits, so the colon is among the last 6 bytes.
#[inline(always)]
fn plain_host_with_port(value: &[u8]) -> bool {
    let from = value.len().saturating_sub(6);
    match value[from..].iter().rposition(|&b| b == b':') {
        Some(i) => plain_host(&value[..from + i]) && valid_port(&value[from + i + 1..]),
        None => false,
    }
}

/// [`valid_host`] in full: IP literal or reg-name, then an optional port.
#[inline(never)]
fn valid_host_or_port(value: &[u8]) -> bool {
    let port = match value.first() {
        Some(b'[') => {
            let close = class_end(value, 1, &IP_LITERAL);
            match close {
                Some(c) if c > 1 && value[c] == b']' => &value[c + 1..],
                _ => return false,
            }
        }
        Some(_) => match class_end(value, 0, &REG_NAME) {
            Some(0) => return false,
            Some(end) => &value[end..],
            None => b"",
        },
        None => return false,
    };
    match port {
        [] => true,
        [b':', digits @ ..] => valid_port(digits),
        _ => false,
    }
}

/// 1 to 5 decimal digits, at most 65535 (one pass).
fn valid_port(digits: &[u8]) -> bool {
    if digits.is_empty() || digits.len() > 5 {
        return false;
    }
    let mut n = 0u32;
    for &d in digits {
        let v = d.wrapping_sub(b'0');
        if v > 9 {
            return false;
        }
        n = n * 10 + u32::from(v);
    }
    n <= 65535
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_length_is_plain_decimal() {
        assert_eq!(content_length(b"0"), Ok(0));
        assert_eq!(content_length(b"010"), Ok(10));
        assert_eq!(content_length(b"18446744073709551615"), Ok(u64::MAX));
        for bad in [
            &b""[..],
            b"+10",
            b"-48",
            b"0x10",
            b"1_0",
            b"1Z",
            b"4 2",
            b"5, 5",
            b"18446744073709551616",
        ] {
            assert_eq!(
                content_length(bad),
                Err(ErrorKind::BadContentLength),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn hosts() {
        for good in [
            &b"a"[..],
            b"example.com",
            b"example.com:80",
            b"[::1]",
            b"[::1]:8080",
            b"127.0.0.1:65535",
        ] {
            assert!(valid_host(good), "{good:?}");
        }
        for bad in [
            &b""[..],
            b"user@h",
            b"h/path",
            b"a, b",
            b"a,b",
            b"h:",
            b"h:65536",
            b"h:1:2",
            b"[::1",
            b"[]",
            b"[v1.x]",
            b":80",
            b"h%41",
        ] {
            assert!(!valid_host(bad), "{bad:?}");
        }
    }

    /// The fast paths never decide otherwise than the long way, on hosts built from
    /// pieces that sit near every boundary (plain names of 3 to 17 bytes, other reg-name
    /// bytes, colons, ports of 0 to 6 digits, values above 65535).
    #[test]
    fn the_fast_host_paths_agree_with_the_long_way() {
        let names: [&[u8]; 9] = [
            b"abc",
            b"abcd",
            b"127.0.0.1",
            b"localhost",
            b"www.example.com.",
            b"www.example.com.x",
            b"a_b.example",
            b"[::1]",
            b"",
        ];
        let ports: [&[u8]; 9] = [
            b"", b":", b":0", b":80", b":8080", b":65535", b":65536", b":123456", b":8a",
        ];
        for name in names {
            for port in ports {
                for extra in [&b""[..], b":1", b"x"] {
                    let v = [name, extra, port].concat();
                    assert_eq!(valid_host(&v), valid_host_or_port(&v), "{v:?}");
                }
            }
        }
    }

    #[test]
    fn codings() {
        let verdict = |lines: &[&[u8]]| {
            let mut c = Codings::default();
            for l in lines {
                c.add(l)?;
            }
            c.chunked()
        };
        assert_eq!(verdict(&[b"chunked"]), Ok(true));
        assert_eq!(verdict(&[b"Chunked"]), Ok(true));
        assert_eq!(verdict(&[b",chunked"]), Ok(true));
        assert_eq!(
            verdict(&[b"gzip, chunked"]),
            Err(ErrorKind::UnsupportedCoding)
        );
        assert_eq!(
            verdict(&[b"chunked, gzip"]),
            Err(ErrorKind::BadTransferEncoding)
        );
        assert_eq!(
            verdict(&[b"chunked", b"chunked"]),
            Err(ErrorKind::BadTransferEncoding)
        );
        assert_eq!(verdict(&[b"xchunked"]), Err(ErrorKind::BadTransferEncoding));
        assert_eq!(verdict(&[b"identity"]), Err(ErrorKind::BadTransferEncoding));
        assert_eq!(
            verdict(&[b"\xa0chunked\xa0"]),
            Err(ErrorKind::BadTransferEncoding)
        );
        assert_eq!(verdict(&[b""]), Err(ErrorKind::BadTransferEncoding));
    }
}
