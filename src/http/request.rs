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
//!   Accept-Encoding lines are read as they come (`encoding::AcceptEncoding`), so any
//!   number of them combine as one list (RFC 9110 §5.3).
//! - semantic refusals (unknown method, Host, target, path, repeated single fields) keep
//!   the connection when the request has no body and asked to persist; syntax, framing
//!   and limit errors always close.

use super::encoding::AcceptEncoding;
use super::error::{ErrorKind, ParseError};
use super::fields::{content_length, expects_continue, valid_host, Codings, ConnectionOptions};
use super::parse::{parse_head, Head, Header, Status};
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
    /// What the `Accept-Encoding` lines accept.
    pub accept_encoding: AcceptEncoding,
    /// How many header slots hold field lines.
    pub fields: usize,
    /// Bytes of the buffer the head took, blank line included; the body (if any) or the
    /// next pipelined request starts here.
    pub head_len: usize,
}

/// Parses and validates one request head at the start of `buf`.
pub fn parse_request<'b, 'p>(
    buf: &'b [u8],
    slots: &mut [Header<'b>],
    path_buf: &'p mut [u8],
) -> Result<Status<Request<'b, 'p>>, ParseError> {
    let head = match parse_head(buf, slots)? {
        Status::Complete(head) => head,
        Status::Partial => return Ok(Status::Partial),
    };
    let fields = Fields::collect(&slots[..head.fields])?;
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
fn request<'b, 'p>(
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
        accept_encoding: fields.accept_encoding,
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
    AcceptEncoding,
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
            (15, b'a') => (Known::AcceptEncoding, b"accept-encoding"),
            (17, b't') => (Known::TransferEncoding, b"transfer-encoding"),
            (17, b'i') => (Known::IfModifiedSince, b"if-modified-since"),
            (19, b'i') => (Known::IfUnmodifiedSince, b"if-unmodified-since"),
            _ => return None,
        };
        let same = name
            .iter()
            .zip(spelled)
            .all(|(&b, &lower)| b | 0x20 == lower);
        same.then_some(known)
    }
}

/// The fields the server acts on, gathered in one pass over the slots.
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
    accept_encoding: AcceptEncoding,
    /// The first semantic error, reported once framing is known.
    repeated: Option<ErrorKind>,
}

impl<'b> Fields<'b> {
    /// Framing errors return at once (they close); others wait in `repeated`.
    fn collect(headers: &[Header<'b>]) -> Result<Self, ParseError> {
        let mut f = Fields::default();
        for h in headers {
            let value = h.value;
            match Known::of(h.name) {
                None => {}
                Some(Known::Host) => f.once(|f| &mut f.host, value, ErrorKind::BadHost),
                Some(Known::Range) => f.once(|f| &mut f.range, value, ErrorKind::RepeatedField),
                Some(Known::Expect) => f.once(|f| &mut f.expect, value, ErrorKind::RepeatedField),
                Some(Known::IfRange) => {
                    f.once(|f| &mut f.if_range, value, ErrorKind::RepeatedField)
                }
                Some(Known::IfMatch) => {
                    f.once(|f| &mut f.if_match, value, ErrorKind::RepeatedField)
                }
                Some(Known::IfUnmodifiedSince) => f.once(
                    |f| &mut f.if_unmodified_since,
                    value,
                    ErrorKind::RepeatedField,
                ),
                Some(Known::IfNoneMatch) => {
                    f.once(|f| &mut f.if_none_match, value, ErrorKind::RepeatedField)
                }
                Some(Known::IfModifiedSince) => f.once(
                    |f| &mut f.if_modified_since,
                    value,
                    ErrorKind::RepeatedField,
                ),
                Some(Known::Connection) => f.connection.add(value),
                Some(Known::ContentLength) => {
                    if f.content_length.is_some() {
                        return Err(ErrorKind::BadContentLength.into());
                    }
                    f.content_length = Some(content_length(value)?);
                }
                Some(Known::TransferEncoding) => f.codings.add(value)?,
                Some(Known::AcceptEncoding) => f.accept_encoding.add(value),
            }
        }
        Ok(f)
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
    fn split(method: Method, raw: &'b [u8], path_len: usize) -> Result<Self, ErrorKind> {
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
        let (before, query) = match raw.get(path_len + 1..) {
            Some(query) => (&raw[..path_len], Some(query)),
            None => (raw, None),
        };
        if before.first() == Some(&b'/') {
            return Ok(Target {
                path: before,
                query,
                authority: None,
            });
        }
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

    fn decode_into<'p>(&self, out: &'p mut [u8]) -> Result<&'p [u8], ErrorKind> {
        if self.path.first() != Some(&b'/') {
            let n = self.path.len();
            let place = out.get_mut(..n).ok_or(ErrorKind::TargetTooLong)?;
            place.copy_from_slice(self.path);
            return Ok(place);
        }
        let n = normalize(self.path, out)?;
        Ok(&out[..n])
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
