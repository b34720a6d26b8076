//! The field lines the server acts on, recognised while the head is tokenized.
//!
//! Stage: a [`FieldSink`] that `parse.rs` calls once per field line, so the semantic
//! layer needs no second walk over the slots. Input: a field name and its value (both
//! already valid tokens and bytes). Output: [`KnownFields`], the raw values as [`Span`]s
//! of the receive buffer, Content-Length, the transfer codings, the connection options
//! and where the `Accept-Encoding` lines are,
//! and the first framing or repetition error. What they add up to (the body framing,
//! Host syntax, ranges, validators) is decided later by the caller.
//!
//! Errors wait: a framing error (always closing) is kept and the field lines after it
//! are not looked at, a repeated single-valued field is kept as the first such error;
//! `request.rs` reports them only once the head is complete, so a syntax error later in
//! the head, or the head being incomplete, still takes precedence.

use super::error::ErrorKind;
use super::fields::{content_length, Codings, ConnectionOptions};
use super::parse::{word, FieldSink};

/// Where a raw value lies in the receive buffer. `start` 0 means absent: nothing the
/// parser keeps starts at offset 0 (the method is there), and every kept byte lies in
/// the first [`super::MAX_HEAD`] bytes, so `u16` offsets suffice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    start: u16,
    len: u16,
}

impl Span {
    /// The span of `part`, a slice of the buffer that starts at address `base`.
    #[inline(always)]
    pub(crate) fn of(base: usize, part: &[u8]) -> Span {
        let start = part.as_ptr() as usize - base;
        if start + part.len() > usize::from(u16::MAX) {
            // Unreachable for a head within MAX_HEAD; absent rather than a panic.
            return Span::default();
        }
        // Both fit: checked just above.
        Span {
            start: start as u16,
            len: part.len() as u16,
        }
    }

    /// The bytes of `buf` this span names, if present.
    #[inline(always)]
    pub(crate) fn get(self, buf: &[u8]) -> Option<&[u8]> {
        let start = usize::from(self.start);
        if start == 0 {
            return None;
        }
        buf.get(start..start + usize::from(self.len))
    }

    pub(crate) fn present(self) -> bool {
        self.start != 0
    }
}

/// The single-valued fields the server reads raw, in the order of [`KnownFields::raw`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Raw {
    Host,
    Range,
    IfRange,
    IfMatch,
    IfNoneMatch,
    IfModifiedSince,
    IfUnmodifiedSince,
    Expect,
}

/// How many [`Raw`] fields there are.
pub(crate) const RAW: usize = 8;

/// The field names the server acts on.
#[derive(Clone, Copy)]
enum Known {
    /// Read raw, at most once.
    Once(Raw),
    Connection,
    ContentLength,
    TransferEncoding,
    AcceptEncoding,
}

impl Known {
    /// Which known field `name` is (case-insensitive, RFC 9110 §5.1). Length and first
    /// letter pick the one candidate, so most names cost two compares. `b | 0x20` equals
    /// a lowercase letter or "-" only for that letter in either case or "-" itself among
    /// `tchar` bytes, which is all a parsed name holds.
    #[inline(always)]
    fn of(name: &[u8]) -> Option<Known> {
        let first = *name.first()? | 0x20;
        let (known, spelled): (Known, &[u8]) = match (name.len(), first) {
            (4, b'h') => (Known::Once(Raw::Host), b"host"),
            (5, b'r') => (Known::Once(Raw::Range), b"range"),
            (6, b'e') => (Known::Once(Raw::Expect), b"expect"),
            // "if-range" and "if-match": the fourth letter decides.
            (8, b'i') if name[3] | 0x20 == b'r' => (Known::Once(Raw::IfRange), b"if-range"),
            (8, b'i') => (Known::Once(Raw::IfMatch), b"if-match"),
            (10, b'c') => (Known::Connection, b"connection"),
            (13, b'i') => (Known::Once(Raw::IfNoneMatch), b"if-none-match"),
            (14, b'c') => (Known::ContentLength, b"content-length"),
            (15, b'a') => (Known::AcceptEncoding, b"accept-encoding"),
            (17, b't') => (Known::TransferEncoding, b"transfer-encoding"),
            (17, b'i') => (Known::Once(Raw::IfModifiedSince), b"if-modified-since"),
            (19, b'i') => (Known::Once(Raw::IfUnmodifiedSince), b"if-unmodified-since"),
            _ => return None,
        };
        folded_eq(name, spelled).then_some(known)
    }
}

/// `name | 0x20 == lower` for every byte, for two slices of the same length >= 4,
/// compared 8 (or 4) bytes at a time with overlapping words at the end.
#[inline(always)]
fn folded_eq(name: &[u8], lower: &[u8]) -> bool {
    let n = name.len();
    if n < 8 {
        let w = |s: &[u8], at: usize| u32::from_le_bytes(word::<4>(s, at));
        return (w(name, 0) | 0x2020_2020) == w(lower, 0)
            && (w(name, n - 4) | 0x2020_2020) == w(lower, n - 4);
    }
    let w = |s: &[u8], at: usize| u64::from_le_bytes(word::<8>(s, at));
    let same = |at| (w(name, at) | 0x2020_2020_2020_2020) == w(lower, at);
    let mut at = 0;
    while at + 8 < n {
        if !same(at) {
            return false;
        }
        at += 8;
    }
    same(n - 8)
}

/// The fields the server acts on, gathered while the head is tokenized.
pub(crate) struct KnownFields {
    /// Address of the receive buffer, for [`Span::of`].
    base: usize,
    /// The raw single-valued fields, indexed by [`Raw`].
    pub(crate) raw: [Span; RAW],
    pub(crate) content_length: Option<u64>,
    pub(crate) codings: Codings,
    pub(crate) connection: ConnectionOptions,
    /// The first `Accept-Encoding` line, read when the file layer asks.
    pub(crate) accept: Span,
    /// How many `Accept-Encoding` lines there were (saturating).
    pub(crate) accept_lines: u8,
    /// A Content-Length or Transfer-Encoding line was seen: the framing needs deciding.
    pub(crate) framed: bool,
    /// The first framing error (it closes); later field lines are then not looked at.
    pub(crate) framing_error: Option<ErrorKind>,
    /// The first repeated single-valued field, reported once framing is known.
    pub(crate) repeated: Option<ErrorKind>,
}

impl<'b> FieldSink<'b> for KnownFields {
    #[inline(always)]
    fn field(&mut self, name: &'b [u8], value: &'b [u8]) {
        if let Some(known) = Known::of(name) {
            if self.framing_error.is_none() {
                if let Err(kind) = self.add(known, value) {
                    self.framing_error = Some(kind);
                }
            }
        }
    }
}

impl KnownFields {
    /// Nothing seen yet, for a head in `buf`.
    #[inline(always)]
    pub(crate) fn new(buf: &[u8]) -> KnownFields {
        KnownFields {
            base: buf.as_ptr() as usize,
            raw: [Span::default(); RAW],
            content_length: None,
            codings: Codings::default(),
            connection: ConnectionOptions::default(),
            accept: Span::default(),
            accept_lines: 0,
            framed: false,
            framing_error: None,
            repeated: None,
        }
    }

    /// Framing errors come back at once; a repetition waits in `repeated`.
    #[inline(always)]
    fn add(&mut self, known: Known, value: &[u8]) -> Result<(), ErrorKind> {
        match known {
            Known::Once(raw) => {
                let slot = &mut self.raw[raw as usize];
                if slot.present() {
                    let kind = match raw {
                        Raw::Host => ErrorKind::BadHost,
                        _ => ErrorKind::RepeatedField,
                    };
                    self.repeated.get_or_insert(kind);
                } else {
                    *slot = Span::of(self.base, value);
                }
            }
            Known::Connection => self.connection.add(value),
            Known::ContentLength => {
                self.framed = true;
                if self.content_length.is_some() {
                    return Err(ErrorKind::BadContentLength);
                }
                self.content_length = Some(content_length(value)?);
            }
            Known::TransferEncoding => {
                self.framed = true;
                self.codings.add(value)?;
            }
            Known::AcceptEncoding => {
                if self.accept_lines == 0 {
                    self.accept = Span::of(self.base, value);
                }
                self.accept_lines = self.accept_lines.saturating_add(1);
            }
        }
        Ok(())
    }
}
