//! Why a request head was refused, and what the server answers.
//!
//! Every [`ErrorKind`] maps to exactly one status (400, 414, 431, 501 or 505) and one
//! short reason. A [`ParseError`] adds whether the connection may stay open: syntax and
//! framing errors always close (RFC 9112 §2.2 SHOULD, §6.3 MUST); a well-framed request
//! with no body that is refused for its meaning (unknown method, bad Host, unsafe path)
//! may keep the connection if the client asked for persistence.
//! This module does not build the response; `response.rs` does.

use core::fmt;

/// One reason a request head is refused. See `docs/parser.md` for a vector per kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The method is empty or holds a byte that is not a `tchar` (RFC 9110 §5.6.2).
    BadMethod,
    /// The method is a valid token this server does not know (RFC 9110 §9.1: 501).
    UnknownMethod,
    /// The request-target holds a byte outside RFC 3986 or has the wrong form.
    BadTarget,
    /// The request-target is longer than [`crate::http::MAX_TARGET`] (RFC 9112 §3: 414).
    TargetTooLong,
    /// Separators in the request line are not exactly one SP each (RFC 9112 §3).
    BadRequestLine,
    /// The version is not `HTTP/DIGIT.DIGIT` (RFC 9112 §2.3).
    BadVersion,
    /// A request line with no version: HTTP/0.9 is not served.
    Http09,
    /// The major version is not 1 (RFC 9110 §15.6.6: 505).
    UnsupportedVersion,
    /// A line ends in LF without CR, or a CR is not followed by LF (RFC 9112 §2.2).
    BareLineEnd,
    /// A field name is empty or holds a byte that is not a `tchar`, or lacks its colon.
    BadFieldName,
    /// Whitespace between a field name and its colon (RFC 9112 §5.1: MUST 400).
    SpaceBeforeColon,
    /// A field line starts with SP or HTAB: obs-fold (RFC 9112 §5.2) or a whitespace-led
    /// first line (RFC 9112 §2.2).
    ObsFold,
    /// A field value holds NUL, another control byte or DEL (RFC 9110 §5.5).
    BadFieldValue,
    /// More than [`crate::http::MAX_FIELDS`] field lines, or more than the caller's
    /// slots (RFC 6585 §5: 431).
    TooManyFields,
    /// The head does not fit in [`crate::http::MAX_HEAD`] bytes (431).
    HeadTooLarge,
    /// Host is missing from HTTP/1.1, repeated, or not `uri-host [":" port]`
    /// (RFC 9112 §3.2: MUST 400).
    BadHost,
    /// Content-Length is not `1*DIGIT`, overflows, or is repeated (RFC 9112 §6.3(5)).
    BadContentLength,
    /// Both Content-Length and Transfer-Encoding (RFC 9112 §6.1, §6.3(3)).
    LengthAndChunked,
    /// Transfer-Encoding whose final coding is not `chunked`, with `chunked` repeated,
    /// or sent in HTTP/1.0 (RFC 9112 §6.1, §6.3(4)).
    BadTransferEncoding,
    /// A transfer coding other than `chunked` (RFC 9112 §6.1: SHOULD 501).
    UnsupportedCoding,
    /// A chunked body on GET or HEAD: refused rather than read.
    ChunkedWithoutContent,
    /// Percent-escape that is not `%HEXHEX`, or one that decodes to NUL or a control.
    BadEscape,
    /// The path climbs above the root with `..`.
    PathAboveRoot,
    /// A field this server reads as a single value (Range, If-Range, If-Modified-Since,
    /// If-None-Match, Expect) appears on more than one line.
    RepeatedField,
}

impl ErrorKind {
    /// The status code this kind is answered with.
    pub(crate) const fn status(self) -> u16 {
        match self {
            Self::TargetTooLong => 414,
            Self::TooManyFields | Self::HeadTooLarge => 431,
            Self::UnknownMethod | Self::UnsupportedCoding => 501,
            Self::UnsupportedVersion => 505,
            _ => 400,
        }
    }

    /// A short, static reason for logs and the error page body.
    pub(crate) const fn reason(self) -> &'static str {
        match self {
            Self::BadMethod => "invalid method token",
            Self::UnknownMethod => "method not implemented",
            Self::BadTarget => "invalid request-target",
            Self::TargetTooLong => "request-target too long",
            Self::BadRequestLine => "request line separators must be single SP",
            Self::BadVersion => "malformed HTTP version",
            Self::Http09 => "HTTP/0.9 request line without version",
            Self::UnsupportedVersion => "HTTP major version is not 1",
            Self::BareLineEnd => "bare CR or LF",
            Self::BadFieldName => "invalid field name",
            Self::SpaceBeforeColon => "whitespace before colon",
            Self::ObsFold => "line starts with whitespace (obs-fold)",
            Self::BadFieldValue => "control byte in field value",
            Self::TooManyFields => "too many header fields",
            Self::HeadTooLarge => "request head too large",
            Self::BadHost => "missing, repeated or invalid Host",
            Self::BadContentLength => "invalid or repeated Content-Length",
            Self::LengthAndChunked => "Content-Length with Transfer-Encoding",
            Self::BadTransferEncoding => "Transfer-Encoding must end in one chunked",
            Self::UnsupportedCoding => "transfer coding not implemented",
            Self::ChunkedWithoutContent => "chunked body on GET or HEAD",
            Self::BadEscape => "invalid percent-escape in path",
            Self::PathAboveRoot => "path climbs above root",
            Self::RepeatedField => "single-valued field repeated",
        }
    }
}

/// A refused request head: the [`ErrorKind`] and whether the connection must close.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseError {
    kind: ErrorKind,
    may_keep: bool,
}

impl ParseError {
    /// An error that closes the connection (syntax, framing, limits).
    pub(crate) const fn closing(kind: ErrorKind) -> Self {
        Self {
            kind,
            may_keep: false,
        }
    }

    /// An error on a well-framed request; it keeps the connection when `may_keep` (no
    /// body, persistence asked for), except a 414, which always closes (the notes'
    /// "close after 413, 414, 431 or 505").
    pub(crate) const fn keeping(kind: ErrorKind, may_keep: bool) -> Self {
        let may_keep = may_keep && !matches!(kind, ErrorKind::TargetTooLong);
        Self { kind, may_keep }
    }

    /// What was wrong.
    pub const fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The status code to answer with: 400, 414, 431, 501 or 505.
    pub const fn status(&self) -> u16 {
        self.kind.status()
    }

    /// True when the connection must be closed after the error response.
    pub const fn must_close(&self) -> bool {
        !self.may_keep
    }

    /// A short, static reason.
    pub const fn reason(&self) -> &'static str {
        self.kind.reason()
    }
}

impl From<ErrorKind> for ParseError {
    fn from(kind: ErrorKind) -> Self {
        Self::closing(kind)
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "http: request refused ({}): {}",
            self.status(),
            self.reason()
        )
    }
}
