//! The answer for a directory without `index.html` under `--list-dirs`: the listing's
//! representation, validators, conditionals and framing, and the listing slot its body
//! streams from.
//!
//! Input: the parsed GET or HEAD whose path ends in `/` and found no file, the worker's
//! `Ctx`. Output: `true` and the connection's plan (through `Responder::plan`), or `false`
//! when the path is not a listable directory (`files::dir::open_dir`), so the caller
//! keeps its 404 (and the fallback rule). No allocation.
//!
//! - Representation: JSON when `Accept` prefers `application/json` (`http::accept`),
//!   else HTML; every answer carries `Vary: Accept`.
//! - Validators: the ETag is made of the directory's inode, mtime (with nanoseconds) and
//!   size, the representation and the dotfile rule (`"L<ino>-<sec>.<nsec>-<size>-html"`,
//!   `-all` under `--dotfiles allow`); `Last-Modified` is the directory's mtime. A
//!   directory's mtime changes when an entry is added, removed or renamed, not when a
//!   file in it is rewritten: a listing whose sizes or times changed may be answered
//!   304. So listings carry `Cache-Control: no-cache` (a cache revalidates each time)
//!   unless an operator's `--cache-control` rule matches the path.
//! - Conditionals, in the order of `file.rs` (RFC 9110 §13.2.2): If-Match, else
//!   If-Unmodified-Since (412); If-None-Match, else If-Modified-Since (304). Range is
//!   ignored: the body has no length to range over.
//! - Framing: HTTP/1.1 `Transfer-Encoding: chunked`; HTTP/1.0 has none, so its GET closes
//!   after the body (`Connection: close`). HEAD sends the GET's preamble without a body and
//!   takes no listing slot; neither does a 304.
//! - Policy: the page has no script and says so to the browser:
//!   `Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'` (names are
//!   chosen by whoever can write the tree).
//! - A GET with every listing slot of the worker taken is answered 503.

use super::in_flight::{After, Outgoing};
use super::record::{Place, Responder};
use crate::files::dir::{open_dir, DirMeta};
use crate::http::accept::prefers_json;
use crate::http::conditional::{not_modified, precondition_fails};
use crate::http::date::format_imf;
use crate::http::response::{ResponseHead, Writer};
use crate::http::{Method, Request};
use crate::listing::{Format, Spec};
use crate::site::dotfiles::Dotfiles;

// A listing's own lines (RFC 9112 §6.1, RFC 9110 §12.5.5), as macros so that `concat!`
// joins them into one constant per case.
macro_rules! chunked {
    () => {
        "Transfer-Encoding: chunked\r\n"
    };
}
macro_rules! vary {
    () => {
        "Vary: Accept\r\n"
    };
}
macro_rules! policy {
    () => {
        "Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'\r\n"
    };
}

/// `Cache-Control` of a listing no operator rule covers.
pub(super) const NO_CACHE: &[u8] = b"Cache-Control: no-cache\r\n";

/// The lines of a listing's preamble (`chunked`: only on a 200 that will have a body).
fn lines(format: Format, chunked: bool) -> &'static [u8] {
    let all: &'static str = match (format, chunked) {
        (Format::Html, true) => concat!(chunked!(), vary!(), policy!()),
        (Format::Html, false) => concat!(vary!(), policy!()),
        (Format::Json, true) => concat!(chunked!(), vary!()),
        (Format::Json, false) => vary!(),
    };
    all.as_bytes()
}

/// Bytes of a listing's ETag: four numbers of at most 20 digits, a sign, marks, tokens.
const TAG_CAP: usize = 96;

/// A listing's strong ETag (see the module doc).
struct Tag {
    buf: [u8; TAG_CAP],
    len: usize,
}

impl Tag {
    fn new(meta: &DirMeta, format: Format, dotfiles: Dotfiles) -> Tag {
        let mut buf = [0u8; TAG_CAP];
        let mut w = Writer::new(&mut buf);
        w.put(b"\"L").num(meta.ino).put(b"-");
        if meta.mtime < 0 {
            w.put(b"-");
        }
        w.num(meta.mtime.unsigned_abs())
            .put(b".")
            .num(u64::from(meta.mtime_nsec));
        w.put(b"-").num(meta.size).put(b"-").put(format.token());
        if dotfiles == Dotfiles::Allow {
            w.put(b"-all");
        }
        w.put(b"\"");
        let len = w.written();
        Tag { buf, len }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Responder<'_, '_> {
    /// Answers a GET or HEAD of `req.path` (ending in `/`, no file found) with its
    /// listing when it is a listable directory. `false`: not one, nothing planned. Out of
    /// line, as the other rare answers are: it stays out of the request path's code.
    #[inline(never)]
    pub(super) fn listing(&mut self, req: &Request<'_, '_>) -> bool {
        let site = self.ctx.site;
        let Some((dir, meta)) = open_dir(self.ctx.root, req.path, self.bufs.open, site.dotfiles)
        else {
            return false;
        };
        let accept = self
            .line
            .log
            .fields
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case(b"accept"));
        let format = match prefers_json(accept.map(|h| h.value)) {
            true => Format::Json,
            false => Format::Html,
        };
        let tag = Tag::new(&meta, format, site.dotfiles);
        let etag = tag.as_bytes();
        if precondition_fails(
            req.if_match(),
            req.if_unmodified_since(),
            Some(etag),
            Some(meta.mtime),
        ) {
            self.error_page(412);
            return true;
        }
        let modified = format_imf(meta.mtime);
        let date = *self.ctx.date.text();
        let mut h = ResponseHead::new(200, &date, self.after.persist());
        h.content_type = Some(format.media_type());
        h.last_modified = Some(&modified);
        h.etag = Some(etag);
        h.cache_control =
            crate::site::cache_control(&site.cache_rules, req.path).or(Some(NO_CACHE));
        h.extra = &site.headers;
        h.cors = self.line.cors;
        let (since, none_match) = (req.if_modified_since(), req.if_none_match());
        if not_modified(none_match, since, Some(etag), Some(meta.mtime)) {
            h.status = 304;
            h.content_type = None;
            h.lines = lines(format, false);
            self.answer(&h, Place::PreambleArea, Outgoing::Nothing);
            return true;
        }
        // HTTP/1.0 has no chunks: the close ends a GET's body.
        let chunked = req.minor == 1;
        if !chunked && req.method == Method::Get {
            self.after = After::Close { linger: false };
        }
        h.persist = self.after.persist();
        h.lines = lines(format, chunked);
        if req.method == Method::Head {
            self.answer(&h, Place::PreambleArea, Outgoing::Nothing);
            return true;
        }
        let spec = Spec {
            path: req.path,
            format,
            chunked,
            dotfiles: site.dotfiles,
        };
        let Some(index) = self.ctx.listings.acquire(&spec) else {
            self.error_page(503);
            return true;
        };
        let body = Outgoing::Listing {
            dir,
            index,
            at: 0,
            end: 0,
            last: false,
        };
        self.answer(&h, Place::PreambleArea, body);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::response::{write_head, HEAD_BASE_MAX, HEAD_CAP};

    /// The largest listing preamble fits the preamble area every worker has beside the
    /// operator's lines (which the area is sized for on top).
    #[test]
    fn the_largest_listing_preamble_fits_the_smallest_preamble_area() {
        let meta = DirMeta {
            ino: u64::MAX,
            mtime: i64::MIN,
            mtime_nsec: 999_999_999,
            size: u64::MAX,
        };
        let tag = Tag::new(&meta, Format::Json, Dotfiles::Allow);
        assert_eq!(tag.len, 2 + 1 + 20 + 2 + 19 + 1 + 9 + 1 + 20 + 1 + 4 + 4);
        let date = *b"Sun, 06 Nov 1994 08:49:37 GMT";
        let mut h = ResponseHead::new(200, &date, crate::http::response::Persist::KeepAlive);
        h.content_type = Some(Format::Html.media_type());
        h.last_modified = Some(&date);
        h.etag = Some(tag.as_bytes());
        h.cache_control = Some(NO_CACHE);
        h.lines = lines(Format::Html, true);
        let mut buf = [0u8; 2 * HEAD_CAP];
        let n = write_head(&mut buf, &h).unwrap();
        assert!(n <= HEAD_BASE_MAX + crate::site::mime::LONGEST, "{n}");
        assert!(n <= HEAD_CAP);
    }

    #[test]
    fn tags_differ_by_representation_rule_and_metadata() {
        let m = DirMeta {
            ino: 7,
            mtime: 1_700_000_000,
            mtime_nsec: 5,
            size: 4096,
        };
        let text =
            |m: &DirMeta, f, d| String::from_utf8(Tag::new(m, f, d).as_bytes().to_vec()).unwrap();
        assert_eq!(
            text(&m, Format::Html, Dotfiles::Deny),
            "\"L7-1700000000.5-4096-html\""
        );
        assert_eq!(
            text(&m, Format::Json, Dotfiles::Allow),
            "\"L7-1700000000.5-4096-json-all\""
        );
        let later = DirMeta { mtime_nsec: 6, ..m };
        assert_ne!(
            text(&m, Format::Html, Dotfiles::Deny),
            text(&later, Format::Html, Dotfiles::Deny)
        );
    }
}
