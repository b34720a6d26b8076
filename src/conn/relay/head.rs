//! The response head steerd sends for an upstream's: the status line with the
//! upstream's reason, the end-to-end fields (`http::upstream_head::end_to_end`: hop-by-hop
//! ones and `Content-Length` removed), the operator's lines ([`OwnLines`]), then steerd's
//! own framing and `Connection` fields.
//!
//! The operator's lines, as on a file's answer: `--cors`'s origin lines on every answer
//! (steerd's own errors included), and then the upstream's `Access-Control-Allow-Origin`
//! is dropped (who may read is the operator's to say; the upstream's other
//! `Access-Control-*` fields, which only it can know, pass); `--header`'s lines on a
//! 2xx or 3xx answer, each replacing the upstream's fields of its name (one value, the
//! operator's: a security field such as `Content-Security-Policy` is not doubled).
//!
//! Input: the upstream's parsed head and its bytes, how the body goes to the client.
//! Output: the head's bytes in a caller's buffer, or `None` when they do not fit. Also
//! steerd's own answers when no head came ([`own_answer`]): 502 and 504 are written here,
//! not by `http::response`, whose status table the file path reads.

use crate::http::response::HTML;
use crate::http::upstream_head::{self, RespHead};
use crate::site::rules::Out;

/// How the client's body is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ClientFraming {
    /// No body of ours: the upstream's `Content-Length` (an answer to HEAD, a 304) kept.
    Given,
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// To the close.
    Close,
    /// None: a 101 answer to an upgrade, its `Upgrade` field kept; the connection is a
    /// tunnel after it.
    Upgrade,
}

/// The operator's lines a relayed answer carries.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct OwnLines<'a> {
    /// `--cors`'s origin lines for the request (empty without `--cors`).
    cors: &'a [u8],
    /// `--header`'s lines.
    headers: &'a [u8],
}

impl<'a> OwnLines<'a> {
    /// The lines kept as `--cors`'s (`cors_len` bytes) then `--header`'s.
    pub(super) fn split(lines: &'a [u8], cors_len: usize) -> OwnLines<'a> {
        let (cors, headers) = lines.split_at(cors_len.min(lines.len()));
        OwnLines { cors, headers }
    }

    /// Whether the upstream's field `name` gives way to a line of the operator's on an
    /// answer with `status`.
    fn replaces(&self, name: &[u8], status: u16) -> bool {
        let cors =
            !self.cors.is_empty() && name.eq_ignore_ascii_case(b"access-control-allow-origin");
        cors || (200..400).contains(&status)
            && names(self.headers).any(|n| n.eq_ignore_ascii_case(name))
    }
}

/// The field names of CRLF-terminated `Name: value` lines.
fn names(lines: &[u8]) -> impl Iterator<Item = &[u8]> {
    let named = lines
        .split(|&b| b == b'\n')
        .filter_map(|l| memchr::memchr(b':', l).map(|i| &l[..i]));
    named.filter(|n| !n.is_empty())
}

/// Writes the client's response head for the upstream's `head` (in `up`) into `out`: its
/// status line with the upstream's reason, the end-to-end fields, the operator's `lines`,
/// steerd's framing and `Connection` fields. `None` when it does not fit.
pub(super) fn client_head(
    up: &[u8],
    head: &RespHead,
    framing: ClientFraming,
    close: bool,
    minor: u8,
    lines: OwnLines<'_>,
    out: &mut [u8],
) -> Option<usize> {
    let mut w = Out::new(out);
    let status = head.status;
    w.put(if minor == 0 {
        b"HTTP/1.0 "
    } else {
        b"HTTP/1.1 "
    })?;
    w.put(&[
        b'0' + (status / 100) as u8,
        b'0' + (status / 10 % 10) as u8,
        b'0' + (status % 10) as u8,
    ])?;
    w.put(b" ")?;
    // An upstream's empty reason stays empty (RFC 9112 §4: the phrase is optional).
    w.put(upstream_reason(up).unwrap_or_default())?;
    w.put(b"\r\n")?;
    let upgrade = framing == ClientFraming::Upgrade;
    for (name, value) in upstream_head::end_to_end(up, head, upgrade) {
        if !lines.replaces(name, status) {
            w.all(&[name, b": ", value, b"\r\n"])?;
        }
    }
    w.put(lines.cors)?;
    if (200..400).contains(&status) {
        w.put(lines.headers)?;
    }
    let mut digits = [0u8; 20];
    match framing {
        ClientFraming::Given => {
            if let Some(v) = content_length(up, head) {
                w.all(&[b"Content-Length: ", v, b"\r\n"])?;
            }
        }
        ClientFraming::Length(n) => {
            w.all(&[b"Content-Length: ", decimal(n, &mut digits), b"\r\n"])?;
        }
        ClientFraming::Chunked => w.put(b"Transfer-Encoding: chunked\r\n")?,
        ClientFraming::Close | ClientFraming::Upgrade => {}
    }
    match (close, minor) {
        _ if upgrade => w.put(b"Connection: upgrade\r\n")?,
        (true, _) => w.put(b"Connection: close\r\n")?,
        (false, 0) => w.put(b"Connection: keep-alive\r\n")?,
        (false, _) => {}
    }
    w.put(b"\r\n")?;
    Some(w.len())
}

/// The reason phrase of the upstream's status line (the parser checked its bytes).
fn upstream_reason(up: &[u8]) -> Option<&[u8]> {
    let line = &up[..memchr::memchr(b'\r', up)?];
    let reason = line.get(13..)?;
    (!reason.is_empty()).then_some(reason)
}

/// The upstream's `Content-Length` value, for an answer without a body of ours.
fn content_length<'a>(up: &'a [u8], head: &RespHead) -> Option<&'a [u8]> {
    let lines = up.get(..head.head_len)?.split(|&b| b == b'\n').skip(1);
    lines
        .filter_map(|l| {
            let (name, value) = l.split_at(memchr::memchr(b':', l)?);
            name.eq_ignore_ascii_case(b"content-length")
                .then(|| value[1..].trim_ascii())
        })
        .next()
}

/// `n` in decimal, in `digits`.
fn decimal(mut n: u64, digits: &mut [u8; 20]) -> &[u8] {
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &digits[at..];
        }
    }
}

/// steerd's own closing answer with `status` (head and page, as `http::response` writes
/// its error pages, with the request's `cors` lines) into `out`: its length and how much
/// of it is the head. Written here rather than through `http::response::write_head`,
/// whose code the file path runs.
pub(super) fn own_answer(
    status: u16,
    date: &[u8; 29],
    cors: &[u8],
    out: &mut [u8],
) -> (usize, usize) {
    let line: &[u8] = match status {
        400 => b"400 Bad Request",
        408 => b"408 Request Timeout",
        413 => b"413 Content Too Large",
        502 => b"502 Bad Gateway",
        503 => b"503 Service Unavailable",
        504 => b"504 Gateway Timeout",
        _ => b"500 Internal Server Error",
    };
    const PAGE: [&[u8]; 3] = [
        b"<html><head><title>",
        b"</title></head><body><h1>",
        b"</h1></body></html>\n",
    ];
    let page_len = PAGE.iter().map(|p| p.len()).sum::<usize>() + 2 * line.len();
    let mut digits = [0u8; 20];
    let mut w = Out::new(out);
    let head = w
        .all(&[b"HTTP/1.1 ", line, b"\r\nServer: steerd\r\nDate: ", date])
        .and_then(|()| w.all(&[b"\r\nContent-Type: ", HTML, b"\r\nContent-Length: "]))
        .and_then(|()| w.put(decimal(page_len as u64, &mut digits)))
        .and_then(|()| w.all(&[b"\r\n", cors, b"Connection: close\r\n\r\n"]))
        .map(|()| w.len());
    let Some(head) = head else {
        return (0, 0);
    };
    match w.all(&[PAGE[0], line, PAGE[1], line, PAGE[2]]) {
        Some(()) => (w.len(), head),
        None => (head, head),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UP: &[u8] = b"HTTP/1.1 200 OK\r\nAccess-Control-Allow-Origin: *\r\n\
        Access-Control-Allow-Methods: PUT\r\nx-frame-options: SAMEORIGIN\r\n\
        Content-Length: 2\r\n\r\nok";

    fn head_for(up: &[u8], cors: &[u8], headers: &[u8]) -> String {
        let head = upstream_head::parse(up, false).unwrap().unwrap();
        let lines = [cors, headers].concat();
        let lines = OwnLines::split(&lines, cors.len());
        let mut out = [0u8; 1024];
        let n = client_head(
            up,
            &head,
            ClientFraming::Length(2),
            false,
            1,
            lines,
            &mut out,
        );
        String::from_utf8(out[..n.unwrap()].to_vec()).unwrap()
    }

    #[test]
    fn the_operators_lines_replace_the_upstreams_of_their_names() {
        let cors = b"Access-Control-Allow-Origin: https://a.test\r\nVary: Origin\r\n";
        let text = head_for(UP, cors, b"X-Frame-Options: DENY\r\n");
        assert_eq!(
            text.matches("Access-Control-Allow-Origin").count(),
            1,
            "{text}"
        );
        assert!(text.contains("Access-Control-Allow-Origin: https://a.test\r\n"));
        assert!(
            text.contains("Access-Control-Allow-Methods: PUT\r\n"),
            "{text}"
        );
        assert!(!text.contains("SAMEORIGIN"), "{text}");
        assert!(text.contains("X-Frame-Options: DENY\r\n"));
        // Without lines the upstream's fields pass as they came.
        let plain = head_for(UP, b"", b"");
        assert!(
            plain.contains("Access-Control-Allow-Origin: *\r\n"),
            "{plain}"
        );
        assert!(plain.contains("x-frame-options: SAMEORIGIN\r\n"), "{plain}");
    }

    #[test]
    fn a_4xx_keeps_its_fields_and_gets_no_header_line() {
        let up = [b"HTTP/1.1 404 Not Found".as_slice(), &UP[15..]].concat();
        let text = head_for(&up, b"Vary: Origin\r\n", b"X-Frame-Options: DENY\r\n");
        assert!(text.contains("x-frame-options: SAMEORIGIN\r\n"), "{text}");
        assert!(!text.contains("DENY"), "{text}");
        assert!(text.contains("Vary: Origin\r\n"), "{text}");
    }

    #[test]
    fn steerds_own_answer_carries_the_origin_lines() {
        let date = *b"Mon, 07 Dec 2026 06:00:00 GMT";
        let mut out = [0u8; 1024];
        let (len, head) = own_answer(502, &date, b"Vary: Origin\r\n", &mut out);
        let text = String::from_utf8(out[..len].to_vec()).unwrap();
        assert!(
            text[..head].ends_with("Vary: Origin\r\nConnection: close\r\n\r\n"),
            "{text}"
        );
        assert!(text.starts_with("HTTP/1.1 502 Bad Gateway\r\n"));
    }
}
