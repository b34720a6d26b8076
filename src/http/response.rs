//! Response heads: the status line and header fields written into a caller's fixed
//! buffer, plus the small static bodies of error responses.
//!
//! Input: a [`ResponseHead`] describing one response (all values already validated by the file
//! layer or the connection). Output: bytes in the caller's buffer, or `None` if they do not
//! fit (the caller's buffer is sized so that this cannot happen for any head we build;
//! `None` is still handled, never a panic). No allocation, no I/O.
//!
//! Rules carried here: a 401 carries its challenge and a 429 its `Retry-After`, as the
//! caller renders them ([`ResponseHead::challenge`], RFC 9110 §15.5.2, RFC 6585 §4); a
//! 405 carries `Allow: GET, HEAD` (RFC 9110 §15.5.6); a 416 carries
//! `Content-Range: bytes */len` (§14.4, §15.5.17); a `Location` path is percent-encoded so
//! the decoded path we hold is sent back as a valid URI reference (RFC 3986 §2.1).
//!
//! The operator's lines (`--header`, `--cache-control`) arrive validated and
//! CRLF-terminated (`site::field`) and are copied as they are. Everything else in the
//! largest head steerd builds takes at most [`HEAD_BASE_MAX`] bytes plus its media type;
//! a connection's head area is sized for that plus the operator's lines ([`head_area`]),
//! and the start-up check refuses lines that would need more than [`HEAD_AREA_MAX`].

use super::date::IMF_LEN;
use super::encoding::Coding;

/// The `Connection` field we send, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Persist {
    /// HTTP/1.1 keeping the connection: no field needed.
    Implicit,
    /// HTTP/1.0 keeping the connection: `Connection: keep-alive`.
    KeepAlive,
    /// The connection closes after this response: `Connection: close`.
    Close,
}

/// A `Content-Range` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ContentRange {
    /// `bytes first-last/len` of a 206.
    Bytes {
        /// First byte sent.
        first: u64,
        /// Last byte sent (inclusive).
        last: u64,
        /// Whole representation length.
        len: u64,
    },
    /// `bytes */len` of a 416.
    Unsatisfied(u64),
}

/// Everything a response head says.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ResponseHead<'a> {
    /// Status code (one of [`reason`]'s).
    pub(crate) status: u16,
    /// IMF-fixdate text of now.
    pub(crate) date: &'a [u8; IMF_LEN],
    /// `Content-Type` value.
    pub(crate) content_type: Option<&'a [u8]>,
    /// `Content-Length` value (absent on 304).
    pub(crate) content_length: Option<u64>,
    /// `Last-Modified` value (IMF-fixdate text).
    pub(crate) last_modified: Option<&'a [u8; IMF_LEN]>,
    /// `ETag` value, quotes included.
    pub(crate) etag: Option<&'a [u8]>,
    /// Send `Accept-Ranges: bytes`.
    pub(crate) accept_ranges: bool,
    /// The file lines of a full 200, already rendered by [`write_file_lines`] (a cached
    /// file's): written in place of `Content-Type` .. `Accept-Ranges`, which are then
    /// ignored.
    pub(crate) file_lines: Option<&'a [u8]>,
    /// `Content-Range` value.
    pub(crate) content_range: Option<ContentRange>,
    /// `Location`: decoded path (percent-encoded on output) and raw query (without `?`).
    pub(crate) location: Option<(&'a [u8], Option<&'a [u8]>)>,
    /// Send `Allow: GET, HEAD` (405).
    pub(crate) allow: bool,
    /// `Content-Encoding` of a pre-compressed representation.
    pub(crate) content_encoding: Option<Coding>,
    /// Send `Vary: Accept-Encoding` (the file has more than one representation).
    pub(crate) vary: bool,
    /// Lines only some responses carry (a directory listing's `Transfer-Encoding`,
    /// `Vary: Accept` and policy), each CRLF-terminated.
    pub(crate) lines: &'a [u8],
    /// A `Cache-Control` line, CRLF included.
    pub(crate) cache_control: Option<&'a [u8]>,
    /// The operator's extra lines, each CRLF-terminated.
    pub(crate) extra: &'a [u8],
    /// The `--cors` origin lines for this request (`site::cors`), each CRLF-terminated.
    pub(crate) cors: &'a [u8],
    /// A 401's `WWW-Authenticate` or a 429's `Retry-After` line, CRLF-terminated.
    pub(crate) challenge: &'a [u8],
    /// A CORS preflight's answer: [`PREFLIGHT_LINES`], then `Access-Control-Allow-Headers`
    /// with this value unless it is empty.
    pub(crate) preflight: Option<&'a [u8]>,
    /// The `Connection` field.
    pub(crate) persist: Persist,
}

/// Bytes of a connection's response-head area without long operator lines (the least
/// [`head_area`] gives): every head but a long 301 must fit.
pub(crate) const HEAD_CAP: usize = 1024;

/// Most bytes of a connection's response-head area, which bounds the operator's lines:
/// about 5.5 KiB of them beside the largest head and media type.
pub(crate) const HEAD_AREA_MAX: usize = 6 * 1024;

/// The response-head area each connection needs when the operator's lines take `lines`
/// bytes of a head and the longest media type `media_type` bytes: the largest head
/// steerd builds, in whole KiB, at least [`HEAD_CAP`]; `None` beyond [`HEAD_AREA_MAX`].
/// Sized to what every head carries, so no byte of it is there for nothing.
pub(crate) fn head_area(lines: usize, media_type: usize) -> Option<usize> {
    let largest = HEAD_BASE_MAX + media_type + lines;
    let area = largest.div_ceil(1024) * 1024;
    (area <= HEAD_AREA_MAX).then_some(area.max(HEAD_CAP))
}

/// Bytes of the largest head steerd builds without its media type and the operator's
/// lines: a 206 with every field at its longest (checked by a test).
pub(crate) const HEAD_BASE_MAX: usize = 420;

impl<'a> ResponseHead<'a> {
    /// A head with only the status, date and persistence set.
    pub(crate) fn new(status: u16, date: &'a [u8; IMF_LEN], persist: Persist) -> ResponseHead<'a> {
        ResponseHead {
            status,
            date,
            content_type: None,
            content_length: None,
            last_modified: None,
            etag: None,
            accept_ranges: false,
            file_lines: None,
            content_range: None,
            location: None,
            allow: false,
            content_encoding: None,
            vary: false,
            lines: b"",
            cache_control: None,
            extra: b"",
            cors: b"",
            challenge: b"",
            preflight: None,
            persist,
        }
    }
}

/// The reason phrase of every status steerd sends.
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

macro_rules! page {
    ($code:literal, $text:literal) => {
        concat!(
            "<html><head><title>",
            $code,
            " ",
            $text,
            "</title></head><body><h1>",
            $code,
            " ",
            $text,
            "</h1></body></html>\n"
        )
        .as_bytes()
    };
}

/// The small HTML body of an error status (empty for statuses that are not errors).
pub(crate) fn error_body(status: u16) -> &'static [u8] {
    match status {
        301 => page!("301", "Moved Permanently"),
        302 => page!("302", "Found"),
        303 => page!("303", "See Other"),
        307 => page!("307", "Temporary Redirect"),
        308 => page!("308", "Permanent Redirect"),
        400 => page!("400", "Bad Request"),
        401 => page!("401", "Unauthorized"),
        403 => page!("403", "Forbidden"),
        404 => page!("404", "Not Found"),
        405 => page!("405", "Method Not Allowed"),
        406 => page!("406", "Not Acceptable"),
        408 => page!("408", "Request Timeout"),
        411 => page!("411", "Length Required"),
        412 => page!("412", "Precondition Failed"),
        413 => page!("413", "Content Too Large"),
        414 => page!("414", "URI Too Long"),
        416 => page!("416", "Range Not Satisfiable"),
        417 => page!("417", "Expectation Failed"),
        421 => page!("421", "Misdirected Request"),
        429 => page!("429", "Too Many Requests"),
        431 => page!("431", "Request Header Fields Too Large"),
        500 => page!("500", "Internal Server Error"),
        501 => page!("501", "Not Implemented"),
        503 => page!("503", "Service Unavailable"),
        505 => page!("505", "HTTP Version Not Supported"),
        _ => b"",
    }
}

/// The lines of a CORS preflight's answer after its origin lines: the methods steerd
/// serves, and how long a browser may keep the answer (two hours, Chromium's ceiling).
pub(crate) const PREFLIGHT_LINES: &[u8] =
    b"Access-Control-Allow-Methods: GET, HEAD\r\nAccess-Control-Max-Age: 7200\r\n";

/// The media type of [`error_body`].
pub(crate) const HTML: &[u8] = b"text/html; charset=utf-8";

/// A cursor over a fixed buffer that remembers whether anything failed to fit.
pub(crate) struct Writer<'b> {
    buf: &'b mut [u8],
    len: usize,
    overflow: bool,
}

impl<'b> Writer<'b> {
    /// An empty writer over `buf`.
    pub(crate) fn new(buf: &'b mut [u8]) -> Writer<'b> {
        Writer {
            buf,
            len: 0,
            overflow: false,
        }
    }

    /// Appends bytes (or records the overflow). Always inlined: most pieces are
    /// constants, whose copies then compile to a few moves instead of a `memmove` call.
    #[inline(always)]
    pub(crate) fn put(&mut self, b: &[u8]) -> &mut Self {
        match self.buf.get_mut(self.len..self.len + b.len()) {
            Some(dst) => {
                dst.copy_from_slice(b);
                self.len += b.len();
            }
            None => self.overflow = true,
        }
        self
    }

    /// Appends a decimal number, its digits written in place.
    pub(crate) fn num(&mut self, mut v: u64) -> &mut Self {
        let digits = v.checked_ilog10().map_or(1, |d| d as usize + 1);
        let Some(dst) = self.buf.get_mut(self.len..self.len + digits) else {
            self.overflow = true;
            return self;
        };
        for d in dst.iter_mut().rev() {
            *d = b'0' + (v % 10) as u8;
            v /= 10;
        }
        self.len += digits;
        self
    }

    /// Bytes written, or `None` if something did not fit.
    pub(crate) fn finish(&self) -> Option<usize> {
        (!self.overflow).then_some(self.len)
    }

    /// Bytes written so far (what fit), whether or not something was left out.
    pub(crate) fn written(&self) -> usize {
        self.len
    }
}

/// Text through `core::fmt` (an address, say), with the same all-or-nothing rule per piece.
impl core::fmt::Write for Writer<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.put(s.as_bytes());
        Ok(())
    }
}

/// RFC 3986 `pchar` minus `%` plus `/`: bytes a path may carry unescaped.
fn path_safe(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&b)
}

fn put_encoded_path(w: &mut Writer<'_>, path: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in path {
        if path_safe(b) {
            w.put(&[b]);
        } else {
            w.put(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
}

/// `Content-Type` .. `Accept-Ranges`: the lines that describe the bytes sent.
fn put_file_lines(
    w: &mut Writer<'_>,
    content_type: Option<&[u8]>,
    len: Option<u64>,
    last_modified: Option<&[u8; IMF_LEN]>,
    etag: Option<&[u8]>,
    accept_ranges: bool,
) {
    if let Some(t) = content_type {
        w.put(b"Content-Type: ").put(t).put(b"\r\n");
    }
    if let Some(n) = len {
        w.put(b"Content-Length: ").num(n).put(b"\r\n");
    }
    if let Some(lm) = last_modified {
        w.put(b"Last-Modified: ").put(lm).put(b"\r\n");
    }
    if let Some(e) = etag {
        w.put(b"ETag: ").put(e).put(b"\r\n");
    }
    if accept_ranges {
        w.put(b"Accept-Ranges: bytes\r\n");
    }
}

/// The file lines of a full 200 of a file (what [`write_head`] writes for them), so that
/// a cache can render them once per file instead of once per response. `None`: they do
/// not fit in `out`.
pub fn write_file_lines(
    out: &mut [u8],
    content_type: &[u8],
    len: u64,
    last_modified: Option<&[u8; IMF_LEN]>,
    etag: Option<&[u8]>,
) -> Option<usize> {
    let mut w = Writer::new(out);
    put_file_lines(
        &mut w,
        Some(content_type),
        Some(len),
        last_modified,
        etag,
        true,
    );
    w.finish()
}

/// Writes the status line and header section (ending in the empty line) into `out`.
pub(crate) fn write_head(out: &mut [u8], h: &ResponseHead<'_>) -> Option<usize> {
    let mut w = Writer::new(out);
    if h.status == 200 {
        w.put(b"HTTP/1.1 200 OK");
    } else {
        w.put(b"HTTP/1.1 ").num(u64::from(h.status)).put(b" ");
        w.put(reason(h.status).as_bytes());
    }
    w.put(b"\r\nServer: steerd\r\nDate: ")
        .put(h.date)
        .put(b"\r\n");
    match h.file_lines {
        Some(lines) => {
            w.put(lines);
        }
        None => {
            let (mime, len, lm) = (h.content_type, h.content_length, h.last_modified);
            put_file_lines(&mut w, mime, len, lm, h.etag, h.accept_ranges);
        }
    }
    match h.content_range {
        Some(ContentRange::Bytes { first, last, len }) => {
            w.put(b"Content-Range: bytes ")
                .num(first)
                .put(b"-")
                .num(last);
            w.put(b"/").num(len).put(b"\r\n");
        }
        Some(ContentRange::Unsatisfied(len)) => {
            w.put(b"Content-Range: bytes */").num(len).put(b"\r\n");
        }
        None => {}
    }
    if let Some((path, query)) = h.location {
        w.put(b"Location: ");
        put_encoded_path(&mut w, path);
        w.put(b"/");
        if let Some(q) = query {
            w.put(b"?").put(q);
        }
        w.put(b"\r\n");
    }
    if h.allow {
        w.put(b"Allow: GET, HEAD\r\n");
    }
    if let Some(c) = h.content_encoding {
        w.put(b"Content-Encoding: ")
            .put(c.token().as_bytes())
            .put(b"\r\n");
    }
    if h.vary {
        w.put(b"Vary: Accept-Encoding\r\n");
    }
    w.put(h.lines);
    if let Some(line) = h.cache_control {
        w.put(line);
    }
    w.put(h.extra);
    w.put(h.cors);
    w.put(h.challenge);
    if let Some(echo) = h.preflight {
        w.put(PREFLIGHT_LINES);
        if !echo.is_empty() {
            w.put(b"Access-Control-Allow-Headers: ")
                .put(echo)
                .put(b"\r\n");
        }
    }
    match h.persist {
        Persist::Implicit => {}
        Persist::KeepAlive => {
            w.put(b"Connection: keep-alive\r\n");
        }
        Persist::Close => {
            w.put(b"Connection: close\r\n");
        }
    }
    w.put(b"\r\n");
    w.finish()
}

/// Writes the head of an error response whose body is [`error_body`]`(status)`.
/// `len` is the representation length for a 416's `Content-Range`.
pub(crate) fn write_error_head(
    out: &mut [u8],
    status: u16,
    date: &[u8; IMF_LEN],
    persist: Persist,
    unsatisfied_len: Option<u64>,
) -> Option<usize> {
    let body = error_body(status);
    let mut h = ResponseHead::new(status, date, persist);
    h.content_type = Some(HTML);
    h.content_length = Some(body.len() as u64);
    h.allow = status == 405;
    h.content_range = unsatisfied_len.map(ContentRange::Unsatisfied);
    write_head(out, &h)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATE: &[u8; IMF_LEN] = b"Sun, 06 Nov 1994 08:49:37 GMT";

    #[test]
    fn the_head_area_grows_in_kib_steps_to_its_limit() {
        assert_eq!(head_area(0, 80), Some(HEAD_CAP));
        assert_eq!(head_area(HEAD_CAP - HEAD_BASE_MAX - 80, 80), Some(HEAD_CAP));
        assert_eq!(head_area(HEAD_CAP - HEAD_BASE_MAX - 79, 80), Some(2 * 1024));
        assert_eq!(
            head_area(4096, 80),
            Some(5 * 1024),
            "4 KiB of operator lines"
        );
        let most = HEAD_AREA_MAX - HEAD_BASE_MAX - 80;
        assert_eq!(head_area(most, 80), Some(HEAD_AREA_MAX));
        assert_eq!(head_area(most + 1, 80), None);
    }

    fn head_text(h: &ResponseHead<'_>) -> String {
        let mut buf = [0u8; 1024];
        let n = write_head(&mut buf, h).expect("fits");
        String::from_utf8(buf[..n].to_vec()).expect("ascii")
    }

    #[test]
    fn numbers_are_written_in_place_or_not_at_all() {
        for v in [0, 7, 9, 10, 99, 100, 12_345, 9_999_999_999, u64::MAX] {
            let mut buf = [0u8; 20];
            let mut w = Writer::new(&mut buf);
            let n = w.num(v).finish().expect("20 digits fit");
            assert_eq!(&buf[..n], v.to_string().as_bytes());
            let mut small = [0u8; 4];
            let mut w = Writer::new(&mut small);
            let fits = v.to_string().len() <= 4;
            assert_eq!(w.num(v).finish().is_some(), fits, "{v}");
        }
    }

    #[test]
    fn rendered_file_lines_give_the_same_head() {
        let mut lines = [0u8; 256];
        let n =
            write_file_lines(&mut lines, b"text/css", 77, Some(DATE), Some(b"\"a-b\"")).unwrap();
        for persist in [Persist::Implicit, Persist::KeepAlive, Persist::Close] {
            let mut h = ResponseHead::new(200, DATE, persist);
            h.content_type = Some(b"text/css");
            h.content_length = Some(77);
            h.last_modified = Some(DATE);
            h.etag = Some(b"\"a-b\"");
            h.accept_ranges = true;
            h.cache_control = Some(b"Cache-Control: no-cache\r\n");
            h.vary = true;
            let formatted = head_text(&h);
            h.file_lines = Some(&lines[..n]);
            assert_eq!(head_text(&h), formatted);
        }
        assert_eq!(
            write_file_lines(&mut [0u8; 40], b"text/css", 77, Some(DATE), Some(b"x")),
            None
        );
    }

    #[test]
    fn a_full_200_head() {
        let mut h = ResponseHead::new(200, DATE, Persist::KeepAlive);
        h.content_type = Some(b"text/html");
        h.content_length = Some(1234);
        h.etag = Some(b"\"1-2-3\"");
        h.last_modified = Some(DATE);
        h.accept_ranges = true;
        assert_eq!(
            head_text(&h),
            "HTTP/1.1 200 OK\r\nServer: steerd\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
             Content-Type: text/html\r\nContent-Length: 1234\r\n\
             Last-Modified: Sun, 06 Nov 1994 08:49:37 GMT\r\nETag: \"1-2-3\"\r\n\
             Accept-Ranges: bytes\r\nConnection: keep-alive\r\n\r\n"
        );
    }

    #[test]
    fn error_heads_carry_their_required_fields() {
        let mut buf = [0u8; 512];
        let n = write_error_head(&mut buf, 405, DATE, Persist::Implicit, None).unwrap();
        let t = std::str::from_utf8(&buf[..n]).unwrap();
        assert!(t.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"));
        assert!(t.contains("\r\nAllow: GET, HEAD\r\n"));
        let len = error_body(405).len();
        assert!(t.contains(&format!("\r\nContent-Length: {len}\r\n")));
        let n = write_error_head(&mut buf, 416, DATE, Persist::Close, Some(10)).unwrap();
        let t = std::str::from_utf8(&buf[..n]).unwrap();
        assert!(t.contains("\r\nContent-Range: bytes */10\r\n"));
        assert!(t.ends_with("Connection: close\r\n\r\n"));
    }

    #[test]
    fn location_is_percent_encoded_and_keeps_the_query() {
        let mut h = ResponseHead::new(301, DATE, Persist::Implicit);
        h.location = Some((b"/a dir/\xc3\xa9", Some(b"x=1&y")));
        assert!(head_text(&h).contains("\r\nLocation: /a%20dir/%C3%A9/?x=1&y\r\n"));
    }

    #[test]
    fn overflow_is_reported_not_panicked() {
        let mut small = [0u8; 20];
        let h = ResponseHead::new(200, DATE, Persist::Close);
        assert_eq!(write_head(&mut small, &h), None);
    }

    #[test]
    fn every_error_status_has_a_tidy_page() {
        for s in [
            400, 403, 404, 405, 406, 408, 412, 413, 414, 416, 431, 500, 501, 503, 505,
        ] {
            let body = std::str::from_utf8(error_body(s)).unwrap();
            assert!(body.contains(&format!("{s} {}", reason(s))), "{body}");
            assert!(body.len() < 200);
        }
    }

    #[test]
    fn the_largest_head_fits_its_stated_bound() {
        let etag = [b'x'; 2 + 16 + 1 + 8 + 1 + 16 + 5];
        let mut h = ResponseHead::new(206, DATE, Persist::KeepAlive);
        h.content_type = Some(b"");
        h.content_length = Some(u64::MAX);
        h.last_modified = Some(DATE);
        h.etag = Some(&etag);
        h.accept_ranges = true;
        h.content_range = Some(ContentRange::Bytes {
            first: u64::MAX,
            last: u64::MAX,
            len: u64::MAX,
        });
        h.content_encoding = Some(Coding::Zstd);
        h.vary = true;
        let n = head_text(&h).len();
        assert!(n <= HEAD_BASE_MAX, "{n}");
        assert!(n + 20 > HEAD_BASE_MAX, "{n}: the bound is loose");
    }

    #[test]
    fn operator_lines_go_before_connection() {
        let mut h = ResponseHead::new(200, DATE, Persist::Close);
        h.content_encoding = Some(Coding::Gzip);
        h.vary = true;
        h.cache_control = Some(b"Cache-Control: no-cache\r\n");
        h.extra = b"X-A: 1\r\nX-B: 2\r\n";
        assert!(head_text(&h).ends_with(
            "Content-Encoding: gzip\r\nVary: Accept-Encoding\r\nCache-Control: no-cache\r\n\
             X-A: 1\r\nX-B: 2\r\nConnection: close\r\n\r\n"
        ));
    }

    #[test]
    fn numbers() {
        let mut b = [0u8; 32];
        let mut w = Writer::new(&mut b);
        w.num(0).put(b" ").num(u64::MAX);
        let n = w.finish().unwrap();
        assert_eq!(&b[..n], b"0 18446744073709551615");
    }
}
