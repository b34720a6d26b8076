//! The field lines the server acts on, recognised while the head is tokenized.
//!
//! Stage: a [`FieldSink`] that `parse.rs` calls once per field line, so the semantic
//! layer needs no second walk over the slots. Input: a field name and its value (both
//! already valid tokens and bytes). Output: [`KnownFields`], the Host value, the other
//! raw values as [`Span`]s of the receive buffer, Content-Length, the transfer codings,
//! the connection options and where the `Accept-Encoding` lines are, and the first
//! framing or repetition error. What they add up to (the body framing, Host syntax,
//! ranges, validators) is decided later by the caller.
//!
//! Errors wait: a framing error (always closing) is kept and the field lines after it
//! are not looked at, a repeated single-valued field is kept as the first such error;
//! `request.rs` reports them only once the head is complete, so a syntax error later in
//! the head, or the head being incomplete, still takes precedence.

use super::error::ErrorKind;
use super::fields::{content_length, expects_continue, Codings, ConnectionOptions};
use super::parse::FieldSink;
use super::scan::folded_eq;

/// Where a raw value lies in the receive buffer: its offset in the low 16 bits, its
/// length in the high 16, so a span is built, copied and stored as one word. Offset 0
/// means absent: nothing the parser keeps starts at offset 0 (the method is there), and
/// every kept byte lies in the first [`super::MAX_HEAD`] bytes, so 16 bits suffice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span(u32);

impl Span {
    /// The span of `part`, a slice of the buffer that starts at address `base`.
    #[inline(always)]
    pub(crate) fn of(base: usize, part: &[u8]) -> Span {
        let start = part.as_ptr() as usize - base;
        if start + part.len() > usize::from(u16::MAX) {
            // Unreachable for a head within MAX_HEAD; absent rather than a panic.
            return Span::default();
        }
        // Both fit in 16 bits: checked just above.
        Span(start as u32 | (part.len() as u32) << 16)
    }

    /// The bytes of `buf` this span names, if present.
    #[inline(always)]
    pub(crate) fn get(self, buf: &[u8]) -> Option<&[u8]> {
        let start = (self.0 & 0xffff) as usize;
        if start == 0 {
            return None;
        }
        buf.get(start..start + (self.0 >> 16) as usize)
    }

    pub(crate) fn present(self) -> bool {
        self.0 & 0xffff != 0
    }
}

/// The single-valued fields the server reads raw, in the order of [`KnownFields::raw`]
/// (Host, read by every request, is kept as a slice: [`KnownFields::host`]). `Range` to
/// `IfUnmodifiedSince` stay together: `Request::conditional` reads them as one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Raw {
    Range,
    IfRange,
    IfMatch,
    IfNoneMatch,
    IfModifiedSince,
    IfUnmodifiedSince,
    Expect,
}

/// How many [`Raw`] fields there are.
pub(crate) const RAW: usize = 7;

/// The fields the server acts on, gathered while the head is tokenized.
pub(crate) struct KnownFields<'b> {
    /// Address of the receive buffer, for [`Span::of`].
    base: usize,
    /// The Host value: a slice, not a [`Span`], since every request's is checked and
    /// kept (a span would be made at its line and read back at the end).
    pub(crate) host: Option<&'b [u8]>,
    /// The raw single-valued fields, indexed by [`Raw`].
    pub(crate) raw: [Span; RAW],
    pub(crate) content_length: Option<u64>,
    pub(crate) codings: Codings,
    pub(crate) connection: ConnectionOptions,
    /// The `Expect` line asks for `100-continue` (a second line is an error anyway).
    pub(crate) expect_continue: bool,
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

/// The field names [`KnownFields`] acts on, lowercase; each is an arm of its dispatch.
const KNOWN: [&[u8]; 12] = [
    b"host",
    b"range",
    b"expect",
    b"if-range",
    b"if-match",
    b"connection",
    b"if-none-match",
    b"content-length",
    b"accept-encoding",
    b"transfer-encoding",
    b"if-modified-since",
    b"if-unmodified-since",
];

/// Indexed by name length modulo 32: bit `c & 31` is set for the first letter `c` of
/// each known name of that length, so a letter in either case finds its bit. One test
/// turns away most other names before the dispatch proper; a name it lets through by a
/// collision (a name of 36 bytes indexes the entry of 4) is only compared, and the
/// dispatch matches the exact length.
const FIRST_LETTERS: [u32; 32] = {
    let mut t = [0; 32];
    let mut i = 0;
    while i < KNOWN.len() {
        t[KNOWN[i].len()] |= 1 << (KNOWN[i][0] & 31);
        i += 1;
    }
    t
};

impl<'b> FieldSink<'b> for KnownFields<'b> {
    /// Which known field `name` is (case-insensitive, RFC 9110 §5.1), and its value taken
    /// in. Most names are none: [`FIRST_LETTERS`] turns them away with one test and a
    /// branch the processor predicts (the `match` below compiles to a jump table, whose
    /// changing target per line cost about 4 ns of a 31 ns short request on the bench).
    /// In the `match`, length and first letter pick the one candidate, then one folded
    /// compare. `b | 0x20` equals a lowercase letter or "-" only for that letter in
    /// either case or "-" itself among `tchar` bytes, which is all a parsed name holds.
    #[inline(always)]
    fn field(&mut self, name: &'b [u8], value: &'b [u8]) {
        let Some(&first) = name.first() else {
            return;
        };
        let letters = FIRST_LETTERS[name.len() % 32];
        if letters >> (first & 31) & 1 == 0 {
            return;
        }
        let is = |spelled: &[u8]| folded_eq(name, spelled);
        match (name.len(), first | 0x20) {
            (4, b'h') if is(b"host") => self.host(value),
            (5, b'r') if is(b"range") => self.once(Raw::Range, value),
            (6, b'e') if is(b"expect") => self.expect(value),
            (8, b'i') if is(b"if-range") => self.once(Raw::IfRange, value),
            (8, b'i') if is(b"if-match") => self.once(Raw::IfMatch, value),
            (10, b'c') if is(b"connection") => self.connection.add(value),
            (13, b'i') if is(b"if-none-match") => self.once(Raw::IfNoneMatch, value),
            (14, b'c') if is(b"content-length") => self.framing(value, Self::content_length),
            (15, b'a') if is(b"accept-encoding") => self.accept_encoding(value),
            (17, b't') if is(b"transfer-encoding") => self.framing(value, Self::coding),
            (17, b'i') if is(b"if-modified-since") => self.once(Raw::IfModifiedSince, value),
            (19, b'i') if is(b"if-unmodified-since") => self.once(Raw::IfUnmodifiedSince, value),
            _ => {}
        }
    }
}

impl<'b> KnownFields<'b> {
    /// Nothing seen yet, for a head in `buf`.
    #[inline(always)]
    pub(crate) fn new(buf: &[u8]) -> KnownFields<'b> {
        KnownFields {
            base: buf.as_ptr() as usize,
            host: None,
            raw: [Span::default(); RAW],
            content_length: None,
            codings: Codings::default(),
            connection: ConnectionOptions::default(),
            expect_continue: false,
            accept: Span::default(),
            accept_lines: 0,
            framed: false,
            framing_error: None,
            repeated: None,
        }
    }

    /// A single-valued field read raw; a second line is kept as the first repetition.
    #[inline(always)]
    fn once(&mut self, raw: Raw, value: &[u8]) {
        let slot = &mut self.raw[raw as usize];
        if slot.present() {
            self.repeated.get_or_insert(ErrorKind::RepeatedField);
        } else {
            *slot = Span::of(self.base, value);
        }
    }

    /// The Host line; a second one makes the host unknowable (RFC 9112 §3.2: 400).
    #[inline(always)]
    fn host(&mut self, value: &'b [u8]) {
        if self.host.is_some() {
            self.repeated.get_or_insert(ErrorKind::BadHost);
        } else {
            self.host = Some(value);
        }
    }

    /// An `Expect` line: kept raw once, and whether it asks for `100-continue`.
    #[inline(always)]
    fn expect(&mut self, value: &[u8]) {
        self.once(Raw::Expect, value);
        self.expect_continue = expects_continue(value);
    }

    /// A Content-Length or Transfer-Encoding line: `add` it, keeping the first framing
    /// error; after one, later framing lines are not looked at.
    #[inline(always)]
    fn framing(&mut self, value: &[u8], add: fn(&mut Self, &[u8]) -> Result<(), ErrorKind>) {
        self.framed = true;
        if self.framing_error.is_none() {
            if let Err(kind) = add(self, value) {
                self.framing_error = Some(kind);
            }
        }
    }

    fn content_length(&mut self, value: &[u8]) -> Result<(), ErrorKind> {
        if self.content_length.is_some() {
            return Err(ErrorKind::BadContentLength);
        }
        self.content_length = Some(content_length(value)?);
        Ok(())
    }

    /// A Transfer-Encoding line: rare in a request, so out of the field loop whatever
    /// else calls `Codings::add` (with a second caller, the response head parser, LLVM
    /// inlined this into the loop instead, and a keep-alive GET cost 2 instructions more).
    #[inline(never)]
    fn coding(&mut self, value: &[u8]) -> Result<(), ErrorKind> {
        self.codings.add(value)
    }

    /// Where the first `Accept-Encoding` line is, and how many there were.
    #[inline(always)]
    fn accept_encoding(&mut self, value: &[u8]) {
        if self.accept_lines == 0 {
            self.accept = Span::of(self.base, value);
        }
        self.accept_lines = self.accept_lines.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every known name passes the first-letter filter in any case, and each is taken
    /// in by the dispatch (a name added to one but not the other fails here).
    #[test]
    fn known_names_pass_the_filter_and_the_dispatch() {
        let buf = b"GET / HTTP/1.1\r\nX: close\r\n";
        for name in KNOWN {
            let upper = name.to_ascii_uppercase();
            for spelled in [name, &upper[..]] {
                let letters = FIRST_LETTERS[spelled.len() % 32];
                assert_eq!(letters >> (spelled[0] & 31) & 1, 1, "{spelled:?}");
                let mut fields = KnownFields::new(buf);
                let before = format!("{:?}", Seen::of(&fields));
                fields.field(spelled, &buf[19..24]);
                assert_ne!(format!("{:?}", Seen::of(&fields)), before, "{spelled:?}");
            }
        }
    }

    /// What a test can see of [`KnownFields`] without it deriving `Debug`.
    #[derive(Debug)]
    #[allow(dead_code)]
    struct Seen {
        host: Option<Vec<u8>>,
        raw: [Span; RAW],
        content_length: Option<u64>,
        codings: bool,
        connection: ConnectionOptions,
        framed: bool,
        accept_lines: u8,
        expect: bool,
    }

    impl Seen {
        fn of(f: &KnownFields) -> Seen {
            Seen {
                host: f.host.map(<[u8]>::to_vec),
                raw: f.raw,
                content_length: f.content_length,
                codings: f.codings.present(),
                connection: f.connection,
                framed: f.framed,
                accept_lines: f.accept_lines,
                expect: f.expect_continue,
            }
        }
    }
}
