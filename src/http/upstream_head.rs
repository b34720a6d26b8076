//! An upstream's response head (RFC 9112 §4, §5, §6.3), read as strictly as a client's
//! request: the upstream's answer is input too.
//!
//! Input: the bytes an upstream sent so far, and whether the request was HEAD. Output:
//! `Ok(None)` while the head is incomplete, a [`RespHead`] (status, head length, how the
//! body is framed, whether the connection may be reused), or the [`HeadError`] of the first
//! offending byte or field. [`end_to_end`] then walks the fields a relay forwards. Nothing
//! here allocates, panics on any input, or reads past the slice.
//!
//! Grammar, strict:
//!
//! - `status-line = HTTP-version SP status-code SP [ reason-phrase ] CRLF` with version
//!   `HTTP/1.D` and a status of 100 to 599. One leniency: the SP before an empty reason
//!   may be missing (`HTTP/1.1 204\r\n`, sent by small servers; it changes no framing).
//!   No empty line before the status line.
//! - field lines as in a request (`parse.rs`): a `tchar` name, a colon right after it, a
//!   value without controls; obs-fold, bare LF and bare CR are [`HeadError::BadField`].
//! - framing (RFC 9112 §6.3): no body for 1xx, 204, 304 and an answer to HEAD;
//!   `Transfer-Encoding` must be exactly `chunked` (another coding cannot be relayed
//!   faithfully once the relay re-frames), never with `Content-Length`, never in
//!   HTTP/1.0; repeated `Content-Length` lines must agree; no framing field means the body
//!   runs to the close. A `Connection` listing more than 16 names is a bad field.
//! - persistence: HTTP/1.1 without `Connection: close`, and a body not delimited by the
//!   close. HTTP/1.0 upstreams are never reused.

use super::fields::{content_length, Codings, ConnectionOptions};
use super::hop::{is_hop_by_hop, ConnectionTokens};
use super::parse::{field_lines, trim_ows};
use super::scan::{token_end, value_end};

/// Longest response head accepted (status line, fields, blank line).
pub const MAX_RESPONSE_HEAD: usize = 16 * 1024;

/// How a response body is delimited (RFC 9112 §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RespFraming {
    /// No body: 1xx, 204, 304, or an answer to HEAD.
    None,
    /// Exactly this many bytes (possibly 0).
    Length(u64),
    /// A chunked body.
    Chunked,
    /// The body runs until the upstream closes.
    UntilClose,
}

/// A parsed, valid response head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RespHead {
    /// The status code, 100 to 599.
    pub status: u16,
    /// Bytes of the buffer the head took, blank line included.
    pub head_len: usize,
    /// How the body that follows is delimited.
    pub framing: RespFraming,
    /// The upstream lets the connection be reused (HTTP/1.1 without `Connection: close`).
    pub keep_alive: bool,
}

/// Why a response head was refused (a relay answers 502).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadError {
    /// No complete head within [`MAX_RESPONSE_HEAD`] bytes.
    TooLarge,
    /// The status line is not `HTTP/1.D SP 3DIGIT SP reason CRLF`.
    BadStatusLine,
    /// A field line breaks the grammar (obs-fold, bad name, control byte, bare LF or CR),
    /// or `Connection` names too many fields.
    BadField,
    /// Ambiguous or unsupported framing: CL with TE, TE other than `chunked`, TE in
    /// HTTP/1.0, repeated CL lines that differ, a CL that is not a decimal number.
    BadFraming,
}

/// `Ok(None)` while the head is incomplete (no blank line yet and under the size limit).
pub fn parse(buf: &[u8], answers_head: bool) -> Result<Option<RespHead>, HeadError> {
    let window = buf.get(..MAX_RESPONSE_HEAD).unwrap_or(buf);
    let incomplete = || match buf.len() >= MAX_RESPONSE_HEAD {
        true => Err(HeadError::TooLarge),
        false => Ok(None),
    };
    let Some((status, minor, mut at)) = status_line(window)? else {
        return incomplete();
    };
    let mut seen = Framing::default();
    loop {
        match (window.get(at), window.get(at + 1)) {
            (None, _) | (Some(b'\r'), None) => return incomplete(),
            (Some(b'\r'), Some(b'\n')) => break,
            (Some(b'\r' | b'\n' | b' ' | b'\t'), _) => return Err(HeadError::BadField),
            _ => {}
        }
        let Some((name, value, next)) = field_line(window, at)? else {
            return incomplete();
        };
        seen.add(name, value)?;
        at = next;
    }
    let framing = seen.framing(status, minor, answers_head)?;
    Ok(Some(RespHead {
        status,
        head_len: at + 2,
        framing,
        keep_alive: minor >= 1 && !seen.close && framing != RespFraming::UntilClose,
    }))
}

/// `HTTP/1.D SP 3DIGIT (SP reason)? CRLF`: the status, the minor version, and the offset
/// after the CRLF; `None` when the buffer ends first.
fn status_line(buf: &[u8]) -> Result<Option<(u16, u8, usize)>, HeadError> {
    const SHAPE: &[u8; 13] = b"HTTP/1.0 000 ";
    for (i, (&got, &want)) in buf.iter().zip(SHAPE.iter()).enumerate() {
        let fits = match i {
            7 | 9..=11 => got.is_ascii_digit(),
            _ => got == want,
        };
        // The SP after the status may be the CR of an empty reason.
        if !(fits || i == 12 && got == b'\r') {
            return Err(HeadError::BadStatusLine);
        }
    }
    let Some(&[_, _, _, _, _, _, _, minor, _, h, t, u, sep]) = buf.get(..13) else {
        return Ok(None);
    };
    let status = u16::from(h - b'0') * 100 + u16::from(t - b'0') * 10 + u16::from(u - b'0');
    if !(100..=599).contains(&status) {
        return Err(HeadError::BadStatusLine);
    }
    let reason_from = if sep == b'\r' { 12 } else { 13 };
    let cr = match value_end(buf, reason_from) {
        Ok(Some(cr)) => cr,
        Ok(None) => return Ok(None),
        Err(_) => return Err(HeadError::BadStatusLine),
    };
    match buf.get(cr + 1) {
        None => Ok(None),
        Some(b'\n') => Ok(Some((status, minor - b'0', cr + 2))),
        Some(_) => Err(HeadError::BadStatusLine),
    }
}

/// A field line's name, its value with OWS trimmed, and the offset of the next line.
type FieldLine<'a> = (&'a [u8], &'a [u8], usize);

/// One field line starting at `at` (a byte that is not CR, LF, SP or HTAB): its name, its
/// value with OWS trimmed, and the offset of the next line; `None` when the buffer ends.
fn field_line(buf: &[u8], at: usize) -> Result<Option<FieldLine<'_>>, HeadError> {
    let Some(colon) = token_end(buf, at) else {
        return Ok(None);
    };
    if colon == at || buf.get(colon) != Some(&b':') {
        return Err(HeadError::BadField);
    }
    let cr = match value_end(buf, colon + 1) {
        Ok(Some(cr)) => cr,
        Ok(None) => return Ok(None),
        Err(_) => return Err(HeadError::BadField),
    };
    match buf.get(cr + 1) {
        None => Ok(None),
        Some(b'\n') => Ok(Some((
            &buf[at..colon],
            trim_ows(&buf[colon + 1..cr]),
            cr + 2,
        ))),
        Some(_) => Err(HeadError::BadField),
    }
}

/// The framing fields of one head, gathered line by line.
#[derive(Default)]
struct Framing<'a> {
    length: Option<u64>,
    codings: Codings,
    close: bool,
    /// Counted as `end_to_end` will collect them, so it never meets too many.
    named: ConnectionTokens<'a>,
}

impl<'a> Framing<'a> {
    fn add(&mut self, name: &[u8], value: &'a [u8]) -> Result<(), HeadError> {
        if name.eq_ignore_ascii_case(b"content-length") {
            let n = content_length(value).map_err(|_| HeadError::BadFraming)?;
            if self.length.is_some_and(|m| m != n) {
                return Err(HeadError::BadFraming);
            }
            self.length = Some(n);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            self.codings.add(value).map_err(|_| HeadError::BadFraming)?;
        } else if name.eq_ignore_ascii_case(b"connection") {
            let mut options = ConnectionOptions::default();
            options.add(value);
            self.close |= options.close;
            self.named.add(value).map_err(|_| HeadError::BadField)?;
        }
        Ok(())
    }

    /// RFC 9112 §6.3, in its order, strict.
    fn framing(
        &self,
        status: u16,
        minor: u8,
        answers_head: bool,
    ) -> Result<RespFraming, HeadError> {
        let chunked = self.codings.chunked().map_err(|_| HeadError::BadFraming)?;
        if self.codings.present() && (self.length.is_some() || minor == 0) {
            return Err(HeadError::BadFraming);
        }
        Ok(match () {
            _ if answers_head || status < 200 || status == 204 || status == 304 => {
                RespFraming::None
            }
            _ if chunked => RespFraming::Chunked,
            _ => self
                .length
                .map_or(RespFraming::UntilClose, RespFraming::Length),
        })
    }
}

/// Each end-to-end field of a parsed head, in order, as (name, value): hop-by-hop fields
/// removed (RFC 9110 §7.6.1: Connection, the fields Connection names, Keep-Alive, TE,
/// Trailer, Transfer-Encoding, Upgrade, every Proxy-* field), and Content-Length (the
/// relay frames the body itself). With `keep_upgrade` the Upgrade field is kept (a 101
/// answer to an upgrade request).
pub fn end_to_end<'a>(
    buf: &'a [u8],
    head: &RespHead,
    keep_upgrade: bool,
) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
    let head_bytes = buf.get(..head.head_len).unwrap_or_default();
    // The status line may hold a colon in its reason: fields start after its LF.
    let fields = memchr::memchr(b'\n', head_bytes).map_or(&b""[..], |lf| &head_bytes[lf + 1..]);
    let mut named = ConnectionTokens::new();
    for (name, value) in field_lines(fields) {
        if name.eq_ignore_ascii_case(b"connection") {
            // `parse` refused a head whose Connection fields list too many names.
            let _ = named.add(value);
        }
    }
    field_lines(fields).filter(move |&(name, _)| {
        if keep_upgrade && name.eq_ignore_ascii_case(b"upgrade") {
            return true;
        }
        !is_hop_by_hop(name) && !named.names(name) && !name.eq_ignore_ascii_case(b"content-length")
    })
}

#[cfg(test)]
#[path = "upstream_head_tests.rs"]
mod tests;
