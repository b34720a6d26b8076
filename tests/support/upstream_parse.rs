//! The test upstream's own request reader: strict, small, independent of steerd's
//! parser, because what steerd forwards is what the tests examine.
//!
//! Input: a stream and the bytes already received on it. Output: one [`Received`]: the
//! peer closed between requests, a request (head bytes, body decoded, framing, whether
//! the connection persists), or the raw bytes of something that is not a request a
//! well-behaved relay would send. Accepted, RFC 9112 without leniency: one SP between
//! request-line parts, `HTTP/1.0` or `HTTP/1.1`, every line ending in CRLF, `tchar` names
//! with the colon right after, no control byte in a value but HTAB, at most one
//! Content-Length (digits) or one Transfer-Encoding line listing `chunked` alone (as a
//! list: `, chunked` is `chunked`), never both; a chunked body
//! with bare hex sizes, no extensions and no trailer fields (a relay that re-frames has
//! no reason to send either).

use std::io::Read;

use super::upstream::Seen;

/// Longest head read; longer is unparsed.
const MAX_HEAD: usize = 64 * 1024;
/// Largest body read.
const MAX_BODY: usize = 256 << 20;

/// What one read of a request gave.
pub(crate) enum Received {
    /// The peer closed (or the read failed) before the first byte of a request.
    Closed,
    /// The bytes of something that is not a valid request (head and what came after).
    Unparsed(Vec<u8>),
    /// A request, and whether the connection persists after it.
    Request(Seen, bool),
}

/// How the body of a parsed head is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    None,
    Length(usize),
    Chunked,
}

/// Reads one request from `s`; `buf` holds bytes received and not yet used, before and
/// after.
pub(crate) fn read_request(s: &mut impl Read, buf: &mut Vec<u8>) -> Received {
    let head_len = loop {
        if let Some(i) = find(buf, b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > MAX_HEAD || !fill(s, buf) {
            return match buf.is_empty() {
                true => Received::Closed,
                false => Received::Unparsed(std::mem::take(buf)),
            };
        }
    };
    let Some((framing, keep_alive)) = parse_head(&buf[..head_len]) else {
        return Received::Unparsed(std::mem::take(buf));
    };
    let mut at = head_len;
    let body = match framing {
        Framing::None => Some(Vec::new()),
        Framing::Length(n) => take_exact(s, buf, &mut at, n),
        Framing::Chunked => dechunk(s, buf, &mut at),
    };
    let Some(body) = body else {
        return Received::Unparsed(std::mem::take(buf));
    };
    let head = buf[..head_len].to_vec();
    buf.drain(..at);
    let chunked = framing == Framing::Chunked;
    Received::Request(
        Seen {
            head,
            body,
            chunked,
        },
        keep_alive,
    )
}

/// Reads more bytes into `buf`; `false` at the end of the stream or on an error.
fn fill(s: &mut impl Read, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 16 * 1024];
    match s.read(&mut chunk) {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The `n` bytes of the stream from `at` in `buf` (reading more as needed), or `None`
/// if it ends before; `at` moves past them.
fn take_exact(s: &mut impl Read, buf: &mut Vec<u8>, at: &mut usize, n: usize) -> Option<Vec<u8>> {
    if n > MAX_BODY {
        return None;
    }
    while buf.len() < *at + n {
        if !fill(s, buf) {
            return None;
        }
    }
    *at += n;
    Some(buf[*at - n..*at].to_vec())
}

/// A chunked body from `at`: `HEX CRLF data CRLF` ... `0 CRLF CRLF`.
fn dechunk(s: &mut impl Read, buf: &mut Vec<u8>, at: &mut usize) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line = take_line(s, buf, at)?;
        if line.is_empty() || line.len() > 16 || !line.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        let size = usize::from_str_radix(std::str::from_utf8(&line).ok()?, 16).ok()?;
        if size == 0 {
            return take_line(s, buf, at)?.is_empty().then_some(body);
        }
        if body.len() + size > MAX_BODY {
            return None;
        }
        let data = take_exact(s, buf, at, size + 2)?;
        if !data.ends_with(b"\r\n") {
            return None;
        }
        body.extend_from_slice(&data[..size]);
    }
}

/// The line at `at` without its CRLF; `None` for a bare LF or CR or the end of the
/// stream. `at` moves past it.
fn take_line(s: &mut impl Read, buf: &mut Vec<u8>, at: &mut usize) -> Option<Vec<u8>> {
    loop {
        if let Some(lf) = buf[*at..].iter().position(|&b| b == b'\n') {
            let line = &buf[*at..*at + lf + 1];
            *at += lf + 1;
            let text = line.strip_suffix(b"\r\n")?;
            return (!text.contains(&b'\r')).then(|| text.to_vec());
        }
        if buf.len() - *at > MAX_HEAD || !fill(s, buf) {
            return None;
        }
    }
}

/// RFC 9110 §5.6.2 `tchar`.
fn tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Checks a head (ending in CRLF CRLF) and returns its framing and persistence.
fn parse_head(head: &[u8]) -> Option<(Framing, bool)> {
    let text = head.strip_suffix(b"\r\n\r\n")?;
    let all: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    let mut lines = Vec::with_capacity(all.len());
    for (i, line) in all.iter().enumerate() {
        // Every line but the last was split at an LF and must end in CR.
        lines.push(match i + 1 == all.len() {
            true => *line,
            false => line.strip_suffix(b"\r")?,
        });
    }
    let minor = request_line_ok(lines[0])?;
    let (mut length, mut chunked, mut close) = (None, false, minor == 0);
    for line in &lines[1..] {
        let (name, value) = field_ok(line)?;
        if name.eq_ignore_ascii_case(b"content-length") {
            let digits = std::str::from_utf8(value).ok()?;
            if length.is_some() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            length = Some(digits.parse::<usize>().ok()?);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            if chunked || !only_chunked(value) || minor == 0 {
                return None;
            }
            chunked = true;
        } else if name.eq_ignore_ascii_case(b"connection") {
            let value = String::from_utf8_lossy(value).to_ascii_lowercase();
            close |= value.split(',').any(|o| o.trim() == "close");
        }
    }
    let framing = match (length, chunked) {
        (Some(_), true) => return None,
        (Some(0) | None, false) => Framing::None,
        (Some(n), false) => Framing::Length(n),
        (None, true) => Framing::Chunked,
    };
    Some((framing, !close))
}

/// Whether a Transfer-Encoding value lists exactly one coding, `chunked` (RFC 9110
/// §5.6.1: elements split on ",", OWS trimmed, empty elements ignored, so `,chunked` is
/// `chunked`; `\xa0chunked` and `chunked;x` are other codings).
fn only_chunked(value: &[u8]) -> bool {
    let mut codings = value
        .split(|&b| b == b',')
        .map(|c| {
            let start = c
                .iter()
                .position(|&b| b != b' ' && b != b'\t')
                .unwrap_or(c.len());
            let end = c
                .iter()
                .rposition(|&b| b != b' ' && b != b'\t')
                .map_or(start, |e| e + 1);
            &c[start..end.max(start)]
        })
        .filter(|c| !c.is_empty());
    codings
        .next()
        .is_some_and(|c| c.eq_ignore_ascii_case(b"chunked"))
        && codings.next().is_none()
}

/// `method SP target SP HTTP/1.D`: the minor version when valid.
fn request_line_ok(line: &[u8]) -> Option<u8> {
    let parts: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
    let [method, target, version] = parts[..] else {
        return None;
    };
    let target_ok = !target.is_empty() && target.iter().all(|&b| b > b' ' && b < 0x7f);
    if method.is_empty() || !method.iter().all(|&b| tchar(b)) || !target_ok {
        return None;
    }
    match version {
        b"HTTP/1.1" => Some(1),
        b"HTTP/1.0" => Some(0),
        _ => None,
    }
}

/// `name ":" OWS value OWS`: the name and the trimmed value when valid.
fn field_ok(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let colon = line.iter().position(|&b| b == b':')?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    if name.is_empty() || !name.iter().all(|&b| tchar(b)) {
        return None;
    }
    if value.iter().any(|&b| (b < b' ' && b != b'\t') || b == 0x7f) {
        return None;
    }
    let start = value.iter().position(|&b| b != b' ' && b != b'\t');
    let end = value.iter().rposition(|&b| b != b' ' && b != b'\t');
    Some(match (start, end) {
        (Some(a), Some(b)) => (name, &value[a..=b]),
        _ => (name, &value[..0]),
    })
}
