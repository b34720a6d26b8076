//! The answer for a regular file: which representation (the file or a pre-compressed
//! sidecar), then conditionals and Range on the bytes actually sent; and error answers
//! that carry the operator's `--error-page`.
//!
//! Input: the parsed request, the file's metadata (with its usable sidecars, from the
//! file cache), the worker's [`Ctx`]. Output: the connection's plan, through
//! `record::plan`. No I/O except cache lookups (a sidecar's bytes, an error page), no
//! allocation.
//!
//! Order (RFC 9110 §12.5.3, §13.2.2, §14.2):
//!
//! 1. the representation: `Accept-Encoding` against the file's usable sidecars
//!    (`http::encoding`); 406 when nothing acceptable exists; a sidecar that vanished
//!    since the file was looked up leaves the file itself;
//! 2. If-Match, else If-Unmodified-Since (412); then If-None-Match, else
//!    If-Modified-Since (304), each against the chosen representation's ETag and mtime;
//! 3. Range (GET only) subject to If-Range, over the representation's bytes (206, 416).
//!
//! Every response for a file with a usable sidecar carries `Vary: Accept-Encoding`
//! (identity, 304, 206, 406 and 416 included); `Content-Type` is always the file's own.
//! 2xx and 304 answers carry the operator's `--header` lines and the `Cache-Control` of
//! the first `--cache-control` rule matching the path served (the fallback's path for a
//! fallback). Errors carry neither.

use super::record::{plan, Line};
use super::{After, Conn, Ctx, Outgoing};
use crate::files::cache::Served;
use crate::files::{sidecar_path, FileMeta, Lookup, PATH_MAX};
use crate::http::conditional::{not_modified, precondition_fails};
use crate::http::encoding::{Choice, Coding};
use crate::http::range::{evaluate, if_range_holds, RangeAnswer};
use crate::http::response::{error_body, write_head, ContentRange, Persist, ResponseHead, HTML};
use crate::http::{Method, Request};
use rustix::fd::OwnedFd;

/// The worker's scratch areas one answer may use (borrowed apart from the parser's path).
pub(super) struct Bufs<'s> {
    /// NUL-terminated relative path for `openat2`.
    pub open: &'s mut [u8; PATH_MAX + 1],
    /// A response head too long for the head area.
    pub spill: &'s mut [u8],
    /// A sidecar's request path.
    pub sidecar: &'s mut [u8],
}

/// Where a body's bytes come from.
pub(super) enum Source {
    Cached(u32),
    File(OwnedFd),
}

/// The bytes chosen for a response and what describes them.
struct Representation {
    meta: FileMeta,
    src: Source,
    coding: Option<Coding>,
}

/// 200, 206, 304, 406, 412 or 416 for the regular file found at `path`.
#[allow(clippy::too_many_arguments)]
pub(super) fn file(
    c: &mut Conn,
    out: &mut [u8],
    ctx: &mut Ctx<'_>,
    bufs: &mut Bufs<'_>,
    req: &Request<'_, '_>,
    path: &[u8],
    meta: &FileMeta,
    src: Source,
    p: Persist,
    after: After,
    line: &Line<'_>,
) {
    let vary = !meta.sidecars.is_empty();
    let order = ctx.cache.options().precompressed;
    let rep = match req.accept_encoding().choose(&order, meta.sidecars) {
        Choice::Identity => identity(meta, src),
        Choice::Coded(coding) => match sidecar(ctx, bufs, path, coding) {
            Some((meta, src)) => Representation {
                meta,
                src,
                coding: Some(coding),
            },
            None => identity(meta, src),
        },
        Choice::NotAcceptable => {
            return error_answer(c, out, ctx, bufs, 406, vary, None, p, after, line);
        }
    };
    let etag = match rep.coding {
        Some(coding) => rep.meta.etag.coded(coding),
        None => rep.meta.etag,
    };
    let etag = etag.as_bytes();
    let date = *ctx.date.text();
    let site = ctx.site;
    let mut h = ResponseHead::new(200, &date, p);
    h.last_modified = Some(&rep.meta.last_modified);
    h.etag = Some(etag);
    h.vary = vary;
    h.content_encoding = rep.coding;
    h.cache_control = crate::site::cache_control(&site.cache_rules, path);
    h.extra = &site.headers;
    let mtime = rep.meta.mtime;
    if precondition_fails(req.if_match(), req.if_unmodified_since(), etag, mtime) {
        return error_answer(c, out, ctx, bufs, 412, vary, None, p, after, line);
    }
    if not_modified(req.if_none_match(), req.if_modified_since(), etag, mtime) {
        h.status = 304;
        let n = write_head(out, &h).unwrap_or(0);
        return plan(c, ctx, 304, n, Outgoing::Nothing, after, line);
    }
    let size = rep.meta.size;
    let validated = req
        .if_range()
        .is_none_or(|v| if_range_holds(v, etag, mtime));
    let range = match (req.method, req.range()) {
        (Method::Get, Some(r)) if validated => evaluate(r, size),
        _ => RangeAnswer::Full,
    };
    let (first, end) = match range {
        RangeAnswer::Full => (0, size),
        RangeAnswer::Partial { first, last } => {
            h.status = 206;
            h.content_range = Some(ContentRange::Bytes {
                first,
                last,
                len: size,
            });
            (first, last + 1)
        }
        RangeAnswer::Unsatisfiable => {
            let len = Some(size);
            return error_answer(c, out, ctx, bufs, 416, vary, len, p, after, line);
        }
    };
    h.content_type = Some(meta.mime);
    h.content_length = Some(end - first);
    h.accept_ranges = true;
    // A full 200 of a cached file as itself: the cache rendered these lines already.
    h.file_lines = match (&rep.src, rep.coding, h.status) {
        (Source::Cached(index), None, 200) => ctx.cache.file_lines(*index),
        _ => None,
    };
    let n = write_head(out, &h).unwrap_or(0);
    let body = match req.method {
        Method::Head => Outgoing::Nothing,
        _ => outgoing(ctx, rep.src, first, end),
    };
    plan(c, ctx, h.status, n, body, after, line);
}

fn identity(meta: &FileMeta, src: Source) -> Representation {
    Representation {
        meta: *meta,
        src,
        coding: None,
    }
}

/// The sidecar of the file at `path` for `coding`, looked up as a file of its own.
fn sidecar(
    ctx: &mut Ctx<'_>,
    bufs: &mut Bufs<'_>,
    path: &[u8],
    coding: Coding,
) -> Option<(FileMeta, Source)> {
    let side = sidecar_path(path, coding, bufs.sidecar)?;
    plain_file(ctx, bufs.open, side)
}

/// A regular file served as itself (a sidecar, an error page), through the cache.
fn plain_file(
    ctx: &mut Ctx<'_>,
    open: &mut [u8; PATH_MAX + 1],
    path: &[u8],
) -> Option<(FileMeta, Source)> {
    match ctx.cache.lookup_plain(ctx.root, path, ctx.now_ms, open) {
        Served::Hit(index) => Some((*ctx.cache.meta(index)?, Source::Cached(index))),
        Served::Miss(Lookup::File(fd, meta)) => Some((meta, Source::File(fd))),
        Served::Miss(_) => None,
    }
}

/// Bytes `first..end` of a body.
fn outgoing(ctx: &Ctx<'_>, src: Source, first: u64, end: u64) -> Outgoing {
    match src {
        Source::Cached(index) if ctx.cache.file(index).is_some() => Outgoing::CachedFile {
            index,
            at: first,
            end,
        },
        Source::Cached(index) => Outgoing::Cached {
            index,
            at: first as usize,
            end: end as usize,
        },
        Source::File(fd) => Outgoing::File { fd, at: first, end },
    }
}

/// An error answer to a parsed request: the `--error-page` for `status` when one is set
/// and can be served (a regular file under the root), else the built-in page. The page is
/// looked up once, as a plain file; nothing it does can lead to another error page.
/// `vary`: the file asked for has sidecars; `unsatisfied`: a 416's representation length.
#[allow(clippy::too_many_arguments)]
fn error_answer(
    c: &mut Conn,
    out: &mut [u8],
    ctx: &mut Ctx<'_>,
    bufs: &mut Bufs<'_>,
    status: u16,
    vary: bool,
    unsatisfied: Option<u64>,
    p: Persist,
    after: After,
    line: &Line<'_>,
) {
    let site = ctx.site;
    let page = site
        .error_page(status)
        .and_then(|path| plain_file(ctx, bufs.open, path));
    let (mime, len, body) = match page {
        Some((meta, src)) => (meta.mime, meta.size, outgoing(ctx, src, 0, meta.size)),
        None => {
            let page = error_body(status);
            (HTML, page.len() as u64, Outgoing::Static(page, 0))
        }
    };
    let date = *ctx.date.text();
    let mut h = ResponseHead::new(status, &date, p);
    h.content_type = Some(mime);
    h.content_length = Some(len);
    h.allow = status == 405;
    h.content_range = unsatisfied.map(ContentRange::Unsatisfied);
    h.vary = vary;
    let n = write_head(out, &h).unwrap_or(0);
    plan(c, ctx, status, n, body, after, line);
}

/// [`error_answer`] for a request that did not reach a file.
#[allow(clippy::too_many_arguments)]
pub(super) fn error_page(
    c: &mut Conn,
    out: &mut [u8],
    ctx: &mut Ctx<'_>,
    bufs: &mut Bufs<'_>,
    status: u16,
    p: Persist,
    after: After,
    line: &Line<'_>,
) {
    error_answer(c, out, ctx, bufs, status, false, None, p, after, line);
}
