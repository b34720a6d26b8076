//! The semantic layer: a syntactically valid head becomes a [`Request`] the server and
//! the file layer consume without parsing again.
//!
//! Input: the receive buffer, caller-owned header slots (100 for the full limit) and a
//! caller-owned path buffer (at least as long as the longest target accepted, otherwise
//! a longer path gives 414). Output: `Status::Partial`, `Status::Complete(Request)`, or a
//! [`ParseError`] naming the status and whether to close.
//!
//! Decisions (RFC 9112 §3.2, §6, §9; RFC 9110 §7.2, §9, §10.1.1), each with vectors in
//! `tests/data/http/`:
//!
//! - framing: Transfer-Encoding with Content-Length, in HTTP/1.0, or not ending in one
//!   `chunked` is 400; another coding before `chunked` is 501; any repeated
//!   Content-Length is 400 (strict). All of these close. `Content-Length: 0` is no body.
//! - a body announced by Content-Length on GET or HEAD is returned as `Body::Length`: the
//!   server reads and discards exactly that many bytes. A chunked body on GET or HEAD is
//!   refused with 400 and close rather than decoded.
//! - Host: required once in HTTP/1.1, and valid whenever present; in absolute-form the
//!   target's authority is the host (§3.2.2). Only `http` and `https` schemes.
//! - persistence: HTTP/1.1 persists unless `Connection: close`; HTTP/1.0 only with
//!   `Connection: keep-alive` (and no `close`). `Expect: 100-continue` counts in 1.1 only.
//! - Range, If-None-Match, If-Modified-Since and If-Range are handed over raw; each must
//!   appear at most once (the file layer cannot merge lines without allocating).
//!   Accept-Encoding is read when the file layer asks (`Request::accept_encoding`), every
//!   line of it combined as one list (RFC 9110 §5.3).
//! - semantic refusals (unknown method, Host, target, path, repeated single fields) keep
//!   the connection when the request has no body and asked to persist; syntax, framing
//!   and limit errors always close.

use core::fmt;

use super::encoding::AcceptEncoding;
use super::error::{ErrorKind, ParseError};
use super::fields::valid_host;
use super::known::{KnownFields, Raw, Span, RAW};
use super::parse::{field_lines, parse_head_into, Fields, Status};
use super::path::normalize_rooted;

/// The methods this server recognises (RFC 9110 §9). GET and HEAD are served; the others
/// get 405 with `Allow: GET, HEAD`. Any other token is 501.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// RFC 9110 §9.3.1.
    Get,
    /// RFC 9110 §9.3.2.
    Head,
    /// RFC 9110 §9.3.3.
    Post,
    /// RFC 9110 §9.3.4.
    Put,
    /// RFC 9110 §9.3.5.
    Delete,
    /// RFC 9110 §9.3.6.
    Connect,
    /// RFC 9110 §9.3.7.
    Options,
    /// RFC 9110 §9.3.8.
    Trace,
    /// RFC 5789.
    Patch,
}

impl Method {
    const ALL: [Method; 9] = [
        Method::Get,
        Method::Head,
        Method::Post,
        Method::Put,
        Method::Delete,
        Method::Connect,
        Method::Options,
        Method::Trace,
        Method::Patch,
    ];

    /// The method for a token (case-sensitive, RFC 9110 §9.1), if known: GET inline,
    /// the others by a walk out of line. (A `match` on the byte strings measured slower
    /// on the bench than the walk.)
    #[inline(always)]
    #[cfg(test)]
    pub(crate) fn from_token(token: &[u8]) -> Option<Method> {
        if token == b"GET" {
            return Some(Method::Get);
        }
        Self::from_other_token(token)
    }

    #[inline(never)]
    fn from_other_token(token: &[u8]) -> Option<Method> {
        Self::ALL
            .into_iter()
            .find(|m| m.as_str().as_bytes() == token)
    }

    /// The method's token.
    pub const fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
            Method::Connect => "CONNECT",
            Method::Options => "OPTIONS",
            Method::Trace => "TRACE",
            Method::Patch => "PATCH",
        }
    }
}

/// How the request body is framed (RFC 9112 §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// No body (no framing field, or `Content-Length: 0`).
    None,
    /// Exactly this many bytes follow the head (never 0).
    Length(u64),
    /// A chunked body follows (never on GET or HEAD).
    Chunked,
}

/// A validated request head. Slices borrow the receive buffer (`'b`) and, for a path
/// that had to be decoded, the path buffer (`'p`). The raw field values but the host
/// are kept as offsets into the receive buffer and read through methods, which keeps
/// the value small to build and to move.
#[derive(Clone, Copy)]
pub struct Request<'b, 'p> {
    /// The receive buffer the head was parsed from.
    buf: &'b [u8],
    /// The decoded, normalised path (starts with "/"; `*` for `OPTIONS *`; empty for
    /// CONNECT's authority-form).
    pub path: &'p [u8],
    /// Body framing.
    pub body: Body,
    /// Bytes of the buffer the head took, blank line included; the body (if any) or the
    /// next pipelined request starts here.
    pub head_len: usize,
    /// How many header slots hold field lines.
    pub fields: usize,
    target: Span,
    /// Bytes of the target before its first "?" (all of it when there is none).
    path_len: u16,
    /// The host: the absolute-form authority when there is one, else the Host field.
    host: Option<&'b [u8]>,
    /// The raw single-valued fields but Host, indexed by [`Raw`].
    raw: [Span; RAW],
    /// The method.
    pub method: Method,
    /// The minor version: 0 or 1 (a higher 1.x is read as 1.1, RFC 9110 §6.2).
    pub minor: u8,
    /// Whether the connection may carry another request after this one.
    pub keep_alive: bool,
    /// `Expect: 100-continue` in an HTTP/1.1 request.
    pub expect_continue: bool,
    /// The first `Accept-Encoding` line.
    accept: Span,
    /// More than one `Accept-Encoding` line: the head is read again for all of them.
    accept_many: bool,
}

impl<'b> Request<'b, '_> {
    /// The request-target exactly as sent.
    pub(crate) fn target(&self) -> &'b [u8] {
        self.target.get(self.buf).unwrap_or_default()
    }

    /// The raw query after "?", if any, for the trailing-slash redirect.
    pub fn query(&self) -> Option<&'b [u8]> {
        self.target().get(usize::from(self.path_len) + 1..)
    }

    /// The host: the absolute-form authority, else the Host field (None only in 1.0).
    pub fn host(&self) -> Option<&'b [u8]> {
        self.host
    }

    /// Raw `Range` value.
    pub fn range(&self) -> Option<&'b [u8]> {
        self.raw(Raw::Range)
    }

    /// Raw `If-None-Match` value.
    pub fn if_none_match(&self) -> Option<&'b [u8]> {
        self.raw(Raw::IfNoneMatch)
    }

    /// Raw `If-Modified-Since` value.
    pub fn if_modified_since(&self) -> Option<&'b [u8]> {
        self.raw(Raw::IfModifiedSince)
    }

    /// Raw `If-Range` value.
    pub fn if_range(&self) -> Option<&'b [u8]> {
        self.raw(Raw::IfRange)
    }

    /// Raw `If-Match` value.
    pub fn if_match(&self) -> Option<&'b [u8]> {
        self.raw(Raw::IfMatch)
    }

    /// Raw `If-Unmodified-Since` value.
    pub fn if_unmodified_since(&self) -> Option<&'b [u8]> {
        self.raw(Raw::IfUnmodifiedSince)
    }

    /// What the `Accept-Encoding` lines accept, all of them combined (RFC 9110 §5.3).
    /// Read on demand, as the other raw fields are: one line from its span, several by
    /// walking the head's field lines again.
    pub(crate) fn accept_encoding(&self) -> AcceptEncoding {
        let mut accepted = AcceptEncoding::default();
        if !self.accept_many {
            if let Some(value) = self.accept.get(self.buf) {
                accepted.add(value);
            }
            return accepted;
        }
        let head = self.buf.get(..self.head_len).unwrap_or_default();
        for (name, value) in field_lines(head) {
            if name.eq_ignore_ascii_case(b"accept-encoding") {
                accepted.add(value);
            }
        }
        accepted
    }

    /// Whether `Range`, `If-Range` or any validator came (`If-Match`, `If-None-Match`,
    /// `If-Modified-Since`, `If-Unmodified-Since`): without them a file's answer is its
    /// full 200, decided without reading any of them.
    pub(crate) fn conditional(&self) -> bool {
        let (first, last) = (Raw::Range as usize, Raw::IfUnmodifiedSince as usize);
        self.raw[first..=last].iter().any(|s| s.present())
    }

    fn raw(&self, which: Raw) -> Option<&'b [u8]> {
        self.raw[which as usize].get(self.buf)
    }
}

/// The facts of the request, not the buffer it points into.
impl fmt::Debug for Request<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("method", &self.method)
            .field("target", &self.target())
            .field("path", &self.path)
            .field("query", &self.query())
            .field("minor", &self.minor)
            .field("keep_alive", &self.keep_alive)
            .field("body", &self.body)
            .field("expect_continue", &self.expect_continue)
            .field("host", &self.host())
            .field("range", &self.range())
            .field("if_none_match", &self.if_none_match())
            .field("if_modified_since", &self.if_modified_since())
            .field("if_range", &self.if_range())
            .field("if_match", &self.if_match())
            .field("if_unmodified_since", &self.if_unmodified_since())
            .field("accept_encoding", &self.accept_encoding())
            .field("fields", &self.fields)
            .field("head_len", &self.head_len)
            .finish()
    }
}

/// Parses and validates one request head at the start of `buf`. The path borrows `buf`
/// when it needs no decoding, else `path_buf`.
pub fn parse_request<'b: 'p, 'p, const N: usize>(
    buf: &'b [u8],
    slots: &mut Fields<'b, N>,
    path_buf: &'p mut [u8],
) -> Result<Status<Request<'b, 'p>>, ParseError> {
    let mut fields = KnownFields::new(buf);
    let head = match parse_head_into(buf, slots, &mut fields)? {
        Status::Complete(head) => head,
        Status::Partial => return Ok(Status::Partial),
    };
    // Framing errors close; everything after keeps a persistent, bodiless connection.
    let body = if fields.framed {
        framing(&fields, head.minor)?
    } else {
        Body::None
    };
    let minor = head.minor.min(1);
    let keep_alive = !fields.connection.close && (minor == 1 || fields.connection.keep_alive);
    // The semantic checks, in the order their errors take precedence: a repeated single
    // field, the method, a chunked GET or HEAD, the target, Host, the path. Each refusal
    // keeps a persistent, bodiless connection.
    let refuse = |kind| Err(ParseError::keeping(kind, keep_alive && body == Body::None));
    if let Some(kind) = fields.repeated {
        return refuse(kind);
    }
    let method = if head.get {
        Method::Get
    } else {
        match Method::from_other_token(head.method) {
            Some(method) => method,
            None => return refuse(ErrorKind::UnknownMethod),
        }
    };
    if body == Body::Chunked && matches!(method, Method::Get | Method::Head) {
        return Err(ParseError::closing(ErrorKind::ChunkedWithoutContent));
    }
    // The origin-form (`/path?query`) is the everyday case and is split here; the other
    // forms out of line.
    let target = if head.target.first() == Some(&b'/') && method != Method::Connect {
        Target {
            path: path_part(head.target, head.path_len),
            authority: None,
            plain: head.plain_path,
        }
    } else {
        match Target::split_other(method, head.target, head.path_len) {
            Ok(target) => target,
            Err(kind) => return refuse(kind),
        }
    };
    let host_ok = match fields.host {
        Some(host) => valid_host(host),
        None => minor == 0,
    };
    if !host_ok {
        return refuse(ErrorKind::BadHost);
    }
    let path = match target.decode_into(path_buf) {
        Ok(path) => path,
        Err(kind) => return refuse(kind),
    };
    let base = buf.as_ptr() as usize;
    Ok(Status::Complete(Request {
        buf,
        path,
        body,
        head_len: head.len,
        fields: head.fields,
        target: Span::of(base, head.target),
        // The target is at most MAX_TARGET (8192) bytes, so its "?" offset fits.
        path_len: head.path_len as u16,
        host: target.authority.or(fields.host),
        raw: fields.raw,
        method,
        minor,
        keep_alive,
        expect_continue: minor == 1 && fields.expect_continue,
        accept: fields.accept,
        accept_many: fields.accept_lines > 1,
    }))
}

/// RFC 9112 §6.1 and §6.3: the body framing, or the framing error (always closing),
/// once a Content-Length or Transfer-Encoding line was seen. Out of line: a static
/// server mostly gets heads without a body.
#[inline(never)]
fn framing(fields: &KnownFields, minor: u8) -> Result<Body, ParseError> {
    if let Some(kind) = fields.framing_error {
        return Err(kind.into());
    }
    if fields.codings.present() {
        if minor == 0 {
            return Err(ErrorKind::BadTransferEncoding.into());
        }
        if fields.content_length.is_some() {
            return Err(ErrorKind::LengthAndChunked.into());
        }
        fields.codings.chunked()?;
        return Ok(Body::Chunked);
    }
    Ok(match fields.content_length {
        None | Some(0) => Body::None,
        Some(n) => Body::Length(n),
    })
}

/// The request-target split into its parts (RFC 9112 §3.2).
struct Target<'b> {
    /// The raw path to decode: origin-form path, absolute-form path, `*`, or empty.
    path: &'b [u8],
    /// The authority of an absolute-form or authority-form target.
    authority: Option<&'b [u8]>,
    /// `path` is known to be normal already (the target scan saw no "%", "//", "/.").
    plain: bool,
}

impl<'b> Target<'b> {
    /// The absolute-form, the authority-form (CONNECT) and the asterisk-form (OPTIONS);
    /// `raw` is the whole target, `path_len` where its first "?" is (or its length).
    #[inline(never)]
    fn split_other(method: Method, raw: &'b [u8], path_len: usize) -> Result<Self, ErrorKind> {
        if method == Method::Connect {
            // RFC 9112 §3.2.3: CONNECT takes the authority-form and only it.
            if !valid_host(raw) {
                return Err(ErrorKind::BadTarget);
            }
            return Ok(Target {
                path: b"",
                authority: Some(raw),
                plain: false,
            });
        }
        if let Some(rest) = strip_scheme(path_part(raw, path_len)) {
            let end = memchr::memchr(b'/', rest).unwrap_or(rest.len());
            let authority = &rest[..end];
            if !valid_host(authority) {
                return Err(ErrorKind::BadTarget);
            }
            // An empty path in absolute-form is "/" (RFC 9112 §3.2.1).
            let path = if end == rest.len() {
                b"/"
            } else {
                &rest[end..]
            };
            return Ok(Target {
                path,
                authority: Some(authority),
                plain: false,
            });
        }
        match method {
            Method::Options if raw == b"*" => Ok(Target {
                path: raw,
                authority: None,
                plain: false,
            }),
            _ => Err(ErrorKind::BadTarget),
        }
    }

    /// The decoded, normalised path: `self.path` itself when it needs no change (or is
    /// `*` or empty), else written into `out`. Longer than `out` is 414 either way.
    #[inline(always)]
    fn decode_into<'p>(&self, out: &'p mut [u8]) -> Result<&'p [u8], ErrorKind>
    where
        'b: 'p,
    {
        if self.path.len() > out.len() {
            return Err(ErrorKind::TargetTooLong);
        }
        if self.plain || self.path.first() != Some(&b'/') {
            return Ok(self.path);
        }
        normalize_rooted(self.path, out)
    }
}

/// The part of the target before its first "?", which is at `path_len` (or `path_len`
/// is the whole target); the query after it is [`Request::query`]'s business.
#[inline(always)]
fn path_part(raw: &[u8], path_len: usize) -> &[u8] {
    raw.get(..path_len).unwrap_or(raw)
}

/// The rest of `raw` after `http://` or `https://` (scheme case-insensitive).
fn strip_scheme(raw: &[u8]) -> Option<&[u8]> {
    let colon = raw.iter().position(|&b| b == b':')?;
    let (scheme, rest) = raw.split_at(colon);
    let known = scheme.eq_ignore_ascii_case(b"http") || scheme.eq_ignore_ascii_case(b"https");
    if !known {
        return None;
    }
    rest.strip_prefix(b"://")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::MAX_FIELDS;

    /// Accept-Encoding as the file layer reads it: one line from its span, several
    /// combined in order (the first weight of a coding wins), none absent.
    #[test]
    fn accept_encoding_lines_combine() {
        let lines = |ae: &[&str]| {
            let mut head = String::from("GET / HTTP/1.1\r\nHost: h\r\n");
            for line in ae {
                head.push_str(&format!("accept-ENCODING: {line}\r\nX: 1\r\n"));
            }
            head.push_str("\r\n");
            let mut slots = Fields::<MAX_FIELDS>::new();
            let mut path = [0u8; 64];
            match parse_request(head.as_bytes(), &mut slots, &mut path) {
                Ok(Status::Complete(r)) => r.accept_encoding(),
                other => panic!("{other:?}"),
            }
        };
        let added = |ae: &[&str]| {
            let mut a = AcceptEncoding::default();
            for line in ae {
                a.add(line.as_bytes());
            }
            a
        };
        for ae in [
            &[][..],
            &["gzip"],
            &[""],
            &["br;q=0.5", "gzip, br;q=1"],
            &["identity;q=0", "", "*;q=0.1"],
        ] {
            assert_eq!(lines(ae), added(ae), "{ae:?}");
        }
        assert_ne!(lines(&["br;q=0", "br"]), added(&["br"]));
    }

    /// `conditional` is true exactly when one of the six fields came, whatever else did.
    #[test]
    fn conditional_means_a_validator_or_range() {
        let conditional = |extra: &str| {
            let head = format!("GET / HTTP/1.1\r\nHost: h\r\n{extra}\r\n");
            let mut slots = Fields::<MAX_FIELDS>::new();
            let mut path = [0u8; 64];
            match parse_request(head.as_bytes(), &mut slots, &mut path) {
                Ok(Status::Complete(r)) => r.conditional(),
                other => panic!("{other:?}"),
            }
        };
        let plain = "Expect: 100-continue\r\nAccept-Encoding: gzip\r\nX-Range: 1\r\n";
        assert!(!conditional(""));
        assert!(!conditional(plain));
        for field in [
            "Range: bytes=0-1",
            "If-Range: \"a\"",
            "If-Match: *",
            "If-None-Match: \"a\"",
            "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT",
            "if-unmodified-since: Sun, 06 Nov 1994 08:49:37 GMT",
        ] {
            assert!(conditional(&format!("{field}\r\n")), "{field}");
            assert!(conditional(&format!("{plain}{field}\r\n")), "{field}");
        }
    }

    #[test]
    fn method_tokens_round_trip() {
        for m in Method::ALL {
            assert_eq!(Method::from_token(m.as_str().as_bytes()), Some(m));
        }
        assert_eq!(Method::from_token(b"get"), None);
        assert_eq!(Method::from_token(b"GETS"), None);
    }
}
