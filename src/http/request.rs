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
//! - semantic refusals (unknown method, Host, target, path, repeated single fields) keep
//!   the connection when the request has no body and asked to persist; syntax, framing
//!   and limit errors always close.

use super::error::{ErrorKind, ParseError};
use super::fields::{content_length, expects_continue, valid_host, Codings, ConnectionOptions};
use super::parse::{parse_head_into, word, FieldSink, Head, Header, Status};
use super::path::normalize;

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

    /// The method for a token (case-sensitive, RFC 9110 §9.1), if known. (A `match` on
    /// the byte strings measured slower on the bench than this walk, GET being first.)
    #[inline]
    pub fn from_token(token: &[u8]) -> Option<Method> {
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

/// A validated request head. Slices borrow the receive buffer (`'b`) and the path
/// buffer (`'p`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request<'b, 'p> {
    /// The method.
    pub method: Method,
    /// The request-target exactly as sent.
    pub target: &'b [u8],
    /// The decoded, normalised path (starts with "/"; `*` for `OPTIONS *`; empty for
    /// CONNECT's authority-form).
    pub path: &'p [u8],
    /// The raw query after "?", if any, for the trailing-slash redirect.
    pub query: Option<&'b [u8]>,
    /// The minor version: 0 or 1 (a higher 1.x is read as 1.1, RFC 9110 §6.2).
    pub minor: u8,
    /// Whether the connection may carry another request after this one.
    pub keep_alive: bool,
    /// Body framing.
    pub body: Body,
    /// `Expect: 100-continue` in an HTTP/1.1 request.
    pub expect_continue: bool,
    /// The host: the absolute-form authority, else the Host field (None only in 1.0).
    pub host: Option<&'b [u8]>,
    /// Raw `Range` value.
    pub range: Option<&'b [u8]>,
    /// Raw `If-None-Match` value.
    pub if_none_match: Option<&'b [u8]>,
    /// Raw `If-Modified-Since` value.
    pub if_modified_since: Option<&'b [u8]>,
    /// Raw `If-Range` value.
    pub if_range: Option<&'b [u8]>,
    /// Raw `If-Match` value.
    pub if_match: Option<&'b [u8]>,
    /// Raw `If-Unmodified-Since` value.
    pub if_unmodified_since: Option<&'b [u8]>,
    /// How many header slots hold field lines.
    pub fields: usize,
    /// Bytes of the buffer the head took, blank line included; the body (if any) or the
    /// next pipelined request starts here.
    pub head_len: usize,
}

/// Parses and validates one request head at the start of `buf`. The path borrows `buf`
/// when it needs no decoding, else `path_buf`.
pub fn parse_request<'b: 'p, 'p>(
    buf: &'b [u8],
    slots: &mut [Header<'b>],
    path_buf: &'p mut [u8],
) -> Result<Status<Request<'b, 'p>>, ParseError> {
    let mut fields = Fields::default();
    let head = match parse_head_into(buf, slots, &mut fields)? {
        Status::Complete(head) => head,
        Status::Partial => return Ok(Status::Partial),
    };
    if let Some(kind) = fields.framing_error {
        return Err(kind.into());
    }
    let body = fields.framing(head.minor)?;
    let minor = head.minor.min(1);
    let keep_alive = !fields.connection.close && (minor == 1 || fields.connection.keep_alive);
    let refuse = |kind| ParseError::keeping(kind, keep_alive && body == Body::None);
    if let Some(kind) = fields.repeated {
        return Err(refuse(kind));
    }
    let method = Method::from_token(head.method).ok_or(refuse(ErrorKind::UnknownMethod))?;
    if body == Body::Chunked && matches!(method, Method::Get | Method::Head) {
        return Err(ParseError::closing(ErrorKind::ChunkedWithoutContent));
    }
    let target = Target::split(method, head.target, head.path_len).map_err(refuse)?;
    let host = target.authority.or(fields.host);
    if fields.host.is_some_and(|h| !valid_host(h)) || (minor == 1 && fields.host.is_none()) {
        return Err(refuse(ErrorKind::BadHost));
    }
    let path = target.decode_into(path_buf).map_err(refuse)?;
    Ok(Status::Complete(request(
        head, method, target, path, minor, keep_alive, body, host, &fields,
    )))
}

#[allow(clippy::too_many_arguments)]
fn request<'b: 'p, 'p>(
    head: Head<'b>,
    method: Method,
    target: Target<'b>,
    path: &'p [u8],
    minor: u8,
    keep_alive: bool,
    body: Body,
    host: Option<&'b [u8]>,
    fields: &Fields<'b>,
) -> Request<'b, 'p> {
    Request {
        method,
        target: head.target,
        path,
        query: target.query,
        minor,
        keep_alive,
        body,
        expect_continue: minor == 1 && fields.expect.is_some_and(expects_continue),
        host,
        range: fields.range,
        if_none_match: fields.if_none_match,
        if_modified_since: fields.if_modified_since,
        if_range: fields.if_range,
        if_match: fields.if_match,
        if_unmodified_since: fields.if_unmodified_since,
        fields: head.fields,
        head_len: head.len,
    }
}

/// The field names the server acts on.
#[derive(Clone, Copy)]
enum Known {
    Host,
    Range,
    Expect,
    IfRange,
    IfMatch,
    IfNoneMatch,
    IfModifiedSince,
    IfUnmodifiedSince,
    Connection,
    ContentLength,
    TransferEncoding,
}

impl Known {
    /// Which known field `name` is (case-insensitive, RFC 9110 §5.1). Length and first
    /// letter pick the one candidate, so most names cost two compares. `b | 0x20` equals
    /// a lowercase letter or "-" only for that letter in either case or "-" itself among
    /// `tchar` bytes, which is all a parsed name holds.
    #[inline]
    fn of(name: &[u8]) -> Option<Known> {
        let first = *name.first()? | 0x20;
        let (known, spelled): (Known, &[u8]) = match (name.len(), first) {
            (4, b'h') => (Known::Host, b"host"),
            (5, b'r') => (Known::Range, b"range"),
            (6, b'e') => (Known::Expect, b"expect"),
            // "if-range" and "if-match": the fourth letter decides.
            (8, b'i') if name[3] | 0x20 == b'r' => (Known::IfRange, b"if-range"),
            (8, b'i') => (Known::IfMatch, b"if-match"),
            (10, b'c') => (Known::Connection, b"connection"),
            (13, b'i') => (Known::IfNoneMatch, b"if-none-match"),
            (14, b'c') => (Known::ContentLength, b"content-length"),
            (17, b't') => (Known::TransferEncoding, b"transfer-encoding"),
            (17, b'i') => (Known::IfModifiedSince, b"if-modified-since"),
            (19, b'i') => (Known::IfUnmodifiedSince, b"if-unmodified-since"),
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
#[derive(Default)]
struct Fields<'b> {
    host: Option<&'b [u8]>,
    content_length: Option<u64>,
    codings: Codings,
    connection: ConnectionOptions,
    expect: Option<&'b [u8]>,
    range: Option<&'b [u8]>,
    if_none_match: Option<&'b [u8]>,
    if_modified_since: Option<&'b [u8]>,
    if_range: Option<&'b [u8]>,
    if_match: Option<&'b [u8]>,
    if_unmodified_since: Option<&'b [u8]>,
    /// The first framing error (it closes); later field lines are then not looked at.
    framing_error: Option<ErrorKind>,
    /// The first semantic error, reported once framing is known.
    repeated: Option<ErrorKind>,
}

impl<'b> FieldSink<'b> for Fields<'b> {
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

impl<'b> Fields<'b> {
    /// Framing errors come back at once; others wait in `repeated`.
    #[inline(always)]
    fn add(&mut self, known: Known, value: &'b [u8]) -> Result<(), ErrorKind> {
        match known {
            Known::Host => self.once(|f| &mut f.host, value, ErrorKind::BadHost),
            Known::Range => self.once(|f| &mut f.range, value, ErrorKind::RepeatedField),
            Known::Expect => self.once(|f| &mut f.expect, value, ErrorKind::RepeatedField),
            Known::IfRange => self.once(|f| &mut f.if_range, value, ErrorKind::RepeatedField),
            Known::IfMatch => self.once(|f| &mut f.if_match, value, ErrorKind::RepeatedField),
            Known::IfUnmodifiedSince => self.once(
                |f| &mut f.if_unmodified_since,
                value,
                ErrorKind::RepeatedField,
            ),
            Known::IfNoneMatch => {
                self.once(|f| &mut f.if_none_match, value, ErrorKind::RepeatedField)
            }
            Known::IfModifiedSince => self.once(
                |f| &mut f.if_modified_since,
                value,
                ErrorKind::RepeatedField,
            ),
            Known::Connection => self.connection.add(value),
            Known::ContentLength => {
                if self.content_length.is_some() {
                    return Err(ErrorKind::BadContentLength);
                }
                self.content_length = Some(content_length(value)?);
            }
            Known::TransferEncoding => self.codings.add(value)?,
        }
        Ok(())
    }

    /// Stores a single-valued field, remembering `kind` if it was already there.
    fn once(
        &mut self,
        slot: impl Fn(&mut Self) -> &mut Option<&'b [u8]>,
        value: &'b [u8],
        kind: ErrorKind,
    ) {
        let place = slot(self);
        if place.is_some() {
            self.repeated.get_or_insert(kind);
        } else {
            *place = Some(value);
        }
    }

    /// RFC 9112 §6.1 and §6.3: the body framing, or the framing error (always closing).
    fn framing(&self, minor: u8) -> Result<Body, ParseError> {
        if self.codings.present() {
            if minor == 0 {
                return Err(ErrorKind::BadTransferEncoding.into());
            }
            if self.content_length.is_some() {
                return Err(ErrorKind::LengthAndChunked.into());
            }
            self.codings.chunked()?;
            return Ok(Body::Chunked);
        }
        Ok(match self.content_length {
            None | Some(0) => Body::None,
            Some(n) => Body::Length(n),
        })
    }
}

/// The request-target split into its parts (RFC 9112 §3.2).
struct Target<'b> {
    /// The raw path to decode: origin-form path, absolute-form path, `*`, or empty.
    path: &'b [u8],
    query: Option<&'b [u8]>,
    /// The authority of an absolute-form or authority-form target.
    authority: Option<&'b [u8]>,
}

impl<'b> Target<'b> {
    /// `raw` is the whole target; `path_len` where its first "?" is (or its length).
    /// The origin-form (`/path?query`) is the everyday case and is split here; the
    /// other forms out of line.
    #[inline(always)]
    fn split(method: Method, raw: &'b [u8], path_len: usize) -> Result<Self, ErrorKind> {
        if raw.first() == Some(&b'/') && method != Method::Connect {
            let (path, query) = split_query(raw, path_len);
            return Ok(Target {
                path,
                query,
                authority: None,
            });
        }
        Self::split_other(method, raw, path_len)
    }

    /// The absolute-form, the authority-form (CONNECT) and the asterisk-form (OPTIONS).
    #[inline(never)]
    fn split_other(method: Method, raw: &'b [u8], path_len: usize) -> Result<Self, ErrorKind> {
        if method == Method::Connect {
            // RFC 9112 §3.2.3: CONNECT takes the authority-form and only it.
            if !valid_host(raw) {
                return Err(ErrorKind::BadTarget);
            }
            return Ok(Target {
                path: b"",
                query: None,
                authority: Some(raw),
            });
        }
        let (before, query) = split_query(raw, path_len);
        if let Some(rest) = strip_scheme(before) {
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
                query,
                authority: Some(authority),
            });
        }
        match method {
            Method::Options if raw == b"*" => Ok(Target {
                path: raw,
                query: None,
                authority: None,
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
        if self.path.first() != Some(&b'/') {
            return Ok(self.path);
        }
        normalize(self.path, out)
    }
}

/// The part of the target before its first "?" (at `path_len`), and the query after it.
#[inline]
fn split_query(raw: &[u8], path_len: usize) -> (&[u8], Option<&[u8]>) {
    match raw.get(path_len + 1..) {
        Some(query) => (&raw[..path_len], Some(query)),
        None => (raw, None),
    }
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
    use super::Method;

    #[test]
    fn method_tokens_round_trip() {
        for m in Method::ALL {
            assert_eq!(Method::from_token(m.as_str().as_bytes()), Some(m));
        }
        assert_eq!(Method::from_token(b"get"), None);
        assert_eq!(Method::from_token(b"GETS"), None);
    }
}
