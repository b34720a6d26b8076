//! The token-level head parser: request line and field lines, strict profile.
//!
//! Input: the bytes received so far and a caller-owned [`Fields`] list (an `ArrayVec`:
//! making one costs nothing, so no slot array is initialised per request). Output:
//! `Status::Partial` (every byte seen so far is valid, the head is not complete),
//! `Status::Complete(Head)` with slices into the buffer and the slots filled, or the
//! [`ErrorKind`] of the first offending byte. The parser is stateless: call it again on
//! the longer buffer (after [`crate::http::find_head_end`] says a head may be there).
//!
//! Grammar (RFC 9112 §2.1, §3, §5), strict: `method SP request-target SP HTTP/D.D CRLF`,
//! exactly one SP between tokens, then `field-name ":" OWS field-value OWS CRLF` lines,
//! then CRLF. Refused: bare LF, bare CR, obs-fold, whitespace before a colon, non-token
//! name bytes, controls in values, HTTP/0.9. Empty lines before the request line are
//! skipped (RFC 9112 §2.2). What the fields mean is `request.rs`'s business; this layer
//! only checks bytes. It never allocates, panics, or reads past the slice.
//!
//! Fast paths: `GET ` and `HEAD ` as 4/5-byte compares, `HTTP/1.x\r\n` as one 10-byte
//! pattern, 16-byte (SSE2 or SWAR) scanning of values, table walks of the target and
//! names with one bounds check per 8 bytes (`scan.rs`).

use super::error::ErrorKind;
use super::scan::{target_end, token_end, value_end, word};
use arrayvec::ArrayVec;

/// Longest request-target accepted; longer gives 414. RFC 9112 §3 asks for request
/// lines of at least 8000 octets.
pub(crate) const MAX_TARGET: usize = 8192;
/// Longest head accepted (request line, fields, blank line); longer gives 431.
pub(crate) const MAX_HEAD: usize = 16 * 1024;
/// Most field lines accepted; more gives 431.
pub const MAX_FIELDS: usize = 100;
/// Longest method token; a longer one is not a method we know (RFC 9112 §3: 501).
pub(crate) const MAX_METHOD: usize = 32;

/// The field lines of one head, in order: `N` slots at most (and never more than
/// [`MAX_FIELDS`] lines are accepted, whatever `N`).
pub type Fields<'b, const N: usize> = ArrayVec<Header<'b>, N>;

/// Result of a parse that may need more bytes (`Partial` is not an error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status<T> {
    /// The head is complete and valid.
    Complete(T),
    /// Every byte so far is valid; the head is not complete yet.
    Partial,
}

/// One field line: name and value (OWS trimmed), both slices of the receive buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header<'b> {
    /// The field name as sent (compare case-insensitively).
    pub name: &'b [u8],
    /// The field value without leading or trailing SP/HTAB.
    pub value: &'b [u8],
}

/// A syntactically valid head: slices into the buffer, fields in the first `fields` slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head<'b> {
    /// The method token, case-sensitive (RFC 9110 §9.1).
    pub method: &'b [u8],
    /// The method is `GET` (known from the request line's fast path, so the semantic
    /// layer need not compare the token again).
    pub(crate) get: bool,
    /// The request-target, every byte in [`super::tables::TARGET`].
    pub target: &'b [u8],
    /// Bytes of `target` before its first "?" (all of it when there is none).
    pub(crate) path_len: usize,
    /// Those bytes hold no "%", "//" or "/.": as a path they need neither decoding nor
    /// dot-segment removal (noted during the target scan, so the path is read once).
    pub(crate) plain_path: bool,
    /// The minor version digit (`HTTP/1.x`).
    pub minor: u8,
    /// How many slots hold field lines.
    pub fields: usize,
    /// Bytes consumed, up to and including the blank line.
    pub len: usize,
}

/// Told about each field line the moment it is tokenized, so a caller that gives field
/// names meaning (`request.rs`) needs no second walk over the slots. Errors it finds
/// must wait until the head is complete: a syntax error later in the head, or the head
/// being incomplete, takes precedence.
pub(crate) trait FieldSink<'b> {
    /// One valid field line: its name and its value with OWS trimmed.
    fn field(&mut self, name: &'b [u8], value: &'b [u8]);
}

/// The token layer alone: field lines are only stored in the slots.
impl<'b> FieldSink<'b> for () {
    #[inline(always)]
    fn field(&mut self, _: &'b [u8], _: &'b [u8]) {}
}

/// Parses a request head from `buf`, filling `slots` (cleared first) with its field
/// lines.
#[inline]
pub fn parse_head<'b, const N: usize>(
    buf: &'b [u8],
    slots: &mut Fields<'b, N>,
) -> Result<Status<Head<'b>>, ErrorKind> {
    parse_head_into(buf, slots, &mut ())
}

/// [`parse_head`], also handing each field line to `sink` as it is tokenized.
#[inline]
pub(crate) fn parse_head_into<'b, S: FieldSink<'b>, const N: usize>(
    buf: &'b [u8],
    slots: &mut Fields<'b, N>,
    sink: &mut S,
) -> Result<Status<Head<'b>>, ErrorKind> {
    let status = parse_within(buf, slots, sink)?;
    match status {
        Status::Complete(head) if head.len > MAX_HEAD => Err(ErrorKind::HeadTooLarge),
        Status::Partial if buf.len() >= MAX_HEAD => Err(ErrorKind::HeadTooLarge),
        _ => Ok(status),
    }
}

/// Unwraps a byte or returns `Partial` from the enclosing function.
macro_rules! byte {
    ($buf:expr, $at:expr) => {
        match $buf.get($at) {
            Some(&b) => b,
            None => return Ok(Status::Partial),
        }
    };
}

#[inline(always)]
fn parse_within<'b, S: FieldSink<'b>, const N: usize>(
    buf: &'b [u8],
    slots: &mut Fields<'b, N>,
    sink: &mut S,
) -> Result<Status<Head<'b>>, ErrorKind> {
    slots.clear();
    // Empty lines before the request line are rare: look for them only when the first
    // byte says there are some.
    let mut at = 0;
    if let Some(b'\r' | b'\n') = buf.first() {
        let Some(after) = skip_empty_lines(buf)? else {
            return Ok(Status::Partial);
        };
        at = after;
    }
    let Some(((method, get), after_method)) = method(buf, at)? else {
        return Ok(Status::Partial);
    };
    at = after_method;
    let Some(((target, path_len, plain_path), after_target)) = target(buf, at)? else {
        return Ok(Status::Partial);
    };
    at = after_target;
    let Some((minor, after_version)) = version(buf, at)? else {
        return Ok(Status::Partial);
    };
    at = after_version;
    // The slots' length is the field count; fewer slots than MAX_FIELDS lower the limit.
    let limit = if N < MAX_FIELDS { N } else { MAX_FIELDS };
    loop {
        // One compare for the usual case, a field name's first byte (above SP).
        let first = byte!(buf, at);
        if first <= b' ' {
            match first {
                b'\r' => {
                    if byte!(buf, at + 1) != b'\n' {
                        return Err(ErrorKind::BareLineEnd);
                    }
                    let len = at + 2;
                    return Ok(Status::Complete(Head {
                        method,
                        get,
                        target,
                        path_len,
                        plain_path,
                        minor,
                        fields: slots.len(),
                        len,
                    }));
                }
                b'\n' => return Err(ErrorKind::BareLineEnd),
                b' ' | b'\t' => return Err(ErrorKind::ObsFold),
                _ => {}
            }
        }
        if slots.len() >= limit {
            return Err(ErrorKind::TooManyFields);
        }
        let Some((header, next)) = field_line(buf, at)? else {
            return Ok(Status::Partial);
        };
        slots.push(header);
        sink.field(header.name, header.value);
        at = next;
    }
}

/// Skips CRLF pairs before the request line; a lone CR or LF is refused.
/// `None`: the buffer ends inside them.
#[cold]
fn skip_empty_lines(buf: &[u8]) -> Result<Option<usize>, ErrorKind> {
    let mut at = 0;
    loop {
        match buf.get(at) {
            Some(b'\r') => match buf.get(at + 1) {
                Some(b'\n') => at += 2,
                Some(_) => return Err(ErrorKind::BareLineEnd),
                None => return Ok(None),
            },
            Some(b'\n') => return Err(ErrorKind::BareLineEnd),
            Some(_) => return Ok(Some(at)),
            None => return Ok(None),
        }
    }
}

type Step<T> = Result<Option<(T, usize)>, ErrorKind>;

/// `method = token`, then exactly one SP. Returns the method, whether it is `GET`, and
/// the offset after the SP.
#[inline(always)]
fn method(buf: &[u8], start: usize) -> Step<(&[u8], bool)> {
    let rest = &buf[start..];
    if rest.starts_with(b"GET ") {
        return Ok(Some(((&rest[..3], true), start + 4)));
    }
    if rest.starts_with(b"HEAD ") {
        return Ok(Some(((&rest[..4], false), start + 5)));
    }
    let Some(end) = token_end(buf, start) else {
        if buf.len() - start > MAX_METHOD {
            return Err(ErrorKind::UnknownMethod);
        }
        return Ok(None);
    };
    if end - start > MAX_METHOD {
        return Err(ErrorKind::UnknownMethod);
    }
    match buf[end] {
        b' ' if end > start => Ok(Some(((&buf[start..end], false), end + 1))),
        b' ' | b'\t' | b'\r' | b'\n' => Err(ErrorKind::BadRequestLine),
        _ => Err(ErrorKind::BadMethod),
    }
}

/// `request-target`, then exactly one SP. CR or LF right after it means HTTP/0.9.
#[inline(always)]
fn target(buf: &[u8], start: usize) -> Step<(&[u8], usize, bool)> {
    let Some((end, path_end, plain)) = target_end(buf, start) else {
        if buf.len() - start > MAX_TARGET {
            return Err(ErrorKind::TargetTooLong);
        }
        return Ok(None);
    };
    if end - start > MAX_TARGET {
        return Err(ErrorKind::TargetTooLong);
    }
    match buf[end] {
        b' ' if end > start => Ok(Some(((&buf[start..end], path_end - start, plain), end + 1))),
        b' ' | b'\t' => Err(ErrorKind::BadRequestLine),
        b'\r' | b'\n' if end > start => Err(ErrorKind::Http09),
        b'\r' | b'\n' => Err(ErrorKind::BadRequestLine),
        _ => Err(ErrorKind::BadTarget),
    }
}

/// `HTTP-version = "HTTP/" DIGIT "." DIGIT` (case-sensitive), then CRLF.
/// Returns the minor digit and the offset after the CRLF.
#[inline(always)]
fn version(buf: &[u8], start: usize) -> Step<u8> {
    // `HTTP/1.D\r\n` as two words: the eight bytes but the digit, then the digit and CRLF.
    if let Some(line) = buf.get(start..start + 10) {
        let head = u64::from_le_bytes(word(line, 0));
        let tail = u16::from_le_bytes(word(line, 8));
        let minor = line[7].wrapping_sub(b'0');
        if head & 0x00ff_ffff_ffff_ffff == u64::from_le_bytes(*b"HTTP/1.\0")
            && tail == u16::from_le_bytes(*b"\r\n")
            && minor <= 9
        {
            return Ok(Some((minor, start + 10)));
        }
    }
    if let Some(b' ' | b'\t') = buf.get(start) {
        return Err(ErrorKind::BadRequestLine);
    }
    for (i, &want) in b"HTTP/".iter().enumerate() {
        if byte_or_none(buf, start + i).is_some_and(|b| b != want) {
            return Err(ErrorKind::BadVersion);
        }
    }
    let digits = [start + 5, start + 7];
    for at in digits {
        if byte_or_none(buf, at).is_some_and(|b| !b.is_ascii_digit()) {
            return Err(ErrorKind::BadVersion);
        }
    }
    if byte_or_none(buf, start + 6).is_some_and(|b| b != b'.') {
        return Err(ErrorKind::BadVersion);
    }
    match byte_or_none(buf, start + 8) {
        None => return Ok(None),
        Some(b'\r') => {}
        Some(b'\n') => return Err(ErrorKind::BareLineEnd),
        Some(_) => return Err(ErrorKind::BadVersion),
    }
    match byte_or_none(buf, start + 9) {
        None => Ok(None),
        Some(b'\n') if buf[start + 5] != b'1' => Err(ErrorKind::UnsupportedVersion),
        Some(b'\n') => Ok(Some((buf[start + 7] - b'0', start + 10))),
        Some(_) => Err(ErrorKind::BareLineEnd),
    }
}

/// The field lines of a head that [`parse_head`] accepted, as (name, value) with OWS
/// trimmed, for a caller that needs every line of one field again. Lines without a colon
/// (the request line, blank lines) are skipped; a request line's text before its first
/// colon holds a space, so it never equals a field name.
pub(crate) fn field_lines(head: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    head.split(|&b| b == b'\n').filter_map(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let colon = memchr::memchr(b':', line)?;
        Some((&line[..colon], trim_ows(&line[colon + 1..])))
    })
}

/// `value` without leading and trailing SP and HTAB. The value scan let no other byte
/// at or below SP through, so one compare per end decides (RFC 9112 §5.1 OWS).
#[inline(always)]
pub(crate) fn trim_ows(mut value: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = value {
        if *first > b' ' {
            break;
        }
        value = rest;
    }
    while let [rest @ .., last] = value {
        if *last > b' ' {
            break;
        }
        value = rest;
    }
    value
}

fn byte_or_none(buf: &[u8], at: usize) -> Option<u8> {
    buf.get(at).copied()
}

/// `field-name ":" OWS field-value OWS CRLF`, starting at a byte that is not CR, LF, SP
/// or HTAB. Returns the field and the offset of the next line.
#[inline(always)]
fn field_line(buf: &[u8], start: usize) -> Step<Header<'_>> {
    let Some(colon) = token_end(buf, start) else {
        return Ok(None);
    };
    match buf[colon] {
        b':' if colon > start => {}
        b' ' | b'\t' if colon > start => return Err(ErrorKind::SpaceBeforeColon),
        _ => return Err(ErrorKind::BadFieldName),
    }
    // The value is scanned from just after the colon; OWS comes off both ends after,
    // off the path from one line's start to the next. (Skipping the usual SP before the
    // scan instead puts a load and a compare on that path: fewer instructions, but
    // slower on the bench.)
    let Some(cr) = value_end(buf, colon + 1)? else {
        return Ok(None);
    };
    match buf.get(cr + 1) {
        None => return Ok(None),
        Some(b'\n') => {}
        Some(_) => return Err(ErrorKind::BareLineEnd),
    }
    Ok(Some((
        Header {
            name: &buf[start..colon],
            value: field_value(buf, colon + 1, cr),
        },
        cr + 2,
    )))
}

/// The value between `from` (just after the colon) and the CR at `cr`, OWS trimmed.
/// The usual value, one SP or none before it and no whitespace after, costs a compare
/// per end; anything else (more OWS, an empty or one-byte value) goes through
/// [`trim_ows`].
#[inline(always)]
fn field_value(buf: &[u8], from: usize, cr: usize) -> &[u8] {
    let value = &buf[from..cr];
    let rest = match value {
        [b' ', rest @ ..] => rest,
        _ => value,
    };
    if let [first, .., last] = rest {
        if *first > b' ' && *last > b' ' {
            return rest;
        }
    }
    trim_ows(value)
}
