//! The answer for a regular file: which representation (the file or a pre-compressed
//! sidecar), then conditionals and Range on the bytes actually sent; and error answers
//! that carry the operator's `--error-page`.
//!
//! Input: the parsed request, the file's metadata (with its usable sidecars, from the
//! file cache), the worker's [`Ctx`]. Output: the connection's plan, through
//! [`Responder::plan`]. No I/O except cache lookups (a sidecar's bytes, an error page), no
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

use super::in_flight::Outgoing;
use super::record::{Bufs, Place, Responder};
use super::Ctx;
use crate::files::cache::{FileCache, Served};
use crate::files::{sidecar_path, FileMeta, Lookup, PATH_MAX};
use crate::http::conditional::{not_modified, precondition_fails};
use crate::http::encoding::{Choice, Coding};
use crate::http::range::{evaluate, if_range_holds, RangeAnswer};
use crate::http::response::{error_body, write_head, ContentRange, ResponseHead, HTML};
use crate::http::{Method, Request};
use rustix::fd::OwnedFd;

/// Where a body's bytes come from.
pub(super) enum Source {
    Cached(u32),
    /// A cache entry's gzip bytes, compressed once (`files::cache::compress`).
    CachedGzip(u32),
    File(OwnedFd),
}

/// The regular file a request found: a cache entry, whose metadata is borrowed from the
/// cache where it is read (never copied: a request's instructions count,
/// `scripts/serve-instructions.sh`), or a file opened uncached with its metadata.
pub(super) enum Found<'m> {
    Cached(u32),
    File(OwnedFd, &'m FileMeta),
}

/// The metadata of the file found: cache entry `entry`'s, else `own`.
fn meta_of<'m>(
    cache: &'m FileCache,
    entry: Option<u32>,
    own: Option<&'m FileMeta>,
) -> Option<&'m FileMeta> {
    match entry {
        Some(index) => cache.meta(index),
        None => own,
    }
}

impl Responder<'_, '_> {
    /// 200, 206, 304, 406, 412 or 416 for the regular file found at `path`.
    pub(super) fn file(&mut self, req: &Request<'_, '_>, path: &[u8], found: Found<'_>) {
        let (src, entry, own) = match found {
            Found::Cached(index) => (Source::Cached(index), Some(index), None),
            Found::File(fd, meta) => (Source::File(fd), None, Some(meta)),
        };
        let Some(meta) = meta_of(&self.ctx.cache, entry, own) else {
            return self.error_page(500);
        };
        let (sidecars, mime) = (meta.sidecars, meta.mime);
        // Compressed by us: a cached small file of a compressible type, whose gzip
        // sidecar (if any) keeps priority.
        let ours = entry.filter(|&index| self.compressible(index, meta));
        let mut usable = sidecars;
        let mut order = self.ctx.cache.options().precompressed;
        if ours.is_some() {
            (usable, order) = (usable.with(Coding::Gzip), order.with_gzip());
        }
        let vary = !usable.is_empty();
        // The representation: the file itself, a sidecar (described by its own metadata)
        // or our gzip bytes (`gzip_len` of them, with the file's validators).
        let (mut side, mut gzip_len) = (None, None);
        let (src, coding) = match req.accept_encoding().choose(&order, usable) {
            Choice::Identity => (src, None),
            Choice::Coded(Coding::Gzip) if !sidecars.contains(Coding::Gzip) => {
                match ours.and_then(|i| Some((i, self.ctx.cache.gzip(i)?))) {
                    Some((index, len)) => {
                        gzip_len = Some(len as u64);
                        (Source::CachedGzip(index), Some(Coding::Gzip))
                    }
                    // Not ready yet (now queued): the identity bytes meanwhile.
                    None => (src, None),
                }
            }
            Choice::Coded(coding) => match sidecar(self.ctx, &mut self.bufs, path, coding) {
                Some((m, s)) => {
                    side = Some(m);
                    (s, Some(coding))
                }
                None => (src, None),
            },
            Choice::NotAcceptable => return self.error_answer(406, vary, None, b""),
        };
        // The file's metadata is borrowed again (a sidecar's lookup may have run since).
        let rep = match &side {
            Some(m) => m,
            None => match meta_of(&self.ctx.cache, entry, own) {
                Some(m) => m,
                None => return self.error_page(500),
            },
        };
        let size = gzip_len.unwrap_or(rep.size);
        // The identity's tag is borrowed, not copied (a request's instructions count).
        let coded;
        let etag = match coding {
            Some(coding) => {
                coded = rep.etag.map(|t| t.coded(coding));
                coded.as_ref()
            }
            None => rep.etag.as_ref(),
        };
        let etag = etag.map(|t| t.as_bytes());
        let site = self.ctx.site;
        let mut h = ResponseHead::new(200, self.ctx.date.text(), self.after.persist());
        h.last_modified = rep.last_modified.as_ref();
        h.etag = etag;
        h.vary = vary;
        h.content_encoding = coding;
        h.cache_control = crate::site::cache_control(&site.cache_rules, path);
        h.extra = &site.headers;
        h.cors = self.line.cors;
        // No validator and no Range (the usual request): the full 200, nothing to evaluate.
        let (first, end) = if req.conditional() {
            match evaluate_conditions(req, etag, rep.modified(), size) {
                Conditions::Failed => return self.error_answer(412, vary, None, b""),
                Conditions::NotModified => {
                    h.status = 304;
                    // The `ResponseHead` borrows the cache's metadata: written first.
                    let written = write_head(self.out, &h);
                    return self.answer_written(
                        304,
                        written,
                        Place::PreambleArea,
                        Outgoing::Nothing,
                    );
                }
                Conditions::Unsatisfiable => return self.error_answer(416, vary, Some(size), b""),
                Conditions::Full => (0, size),
                Conditions::Partial { first, last } => {
                    h.status = 206;
                    h.content_range = Some(ContentRange::Bytes {
                        first,
                        last,
                        len: size,
                    });
                    (first, last + 1)
                }
            }
        } else {
            // The oracle of the shortcut: without those fields the full evaluation says Full.
            debug_assert!(matches!(
                evaluate_conditions(req, etag, rep.modified(), size),
                Conditions::Full
            ));
            (0, size)
        };
        h.content_type = Some(mime);
        h.content_length = Some(end - first);
        h.accept_ranges = true;
        // A full 200 of a cached file as itself: the cache rendered these lines already.
        h.file_lines = match (&src, coding, h.status) {
            (Source::Cached(index), None, 200) => self.ctx.cache.file_lines(*index),
            _ => None,
        };
        // The `ResponseHead` borrows the cache's metadata and rendered lines: written
        // before the plan.
        let (status, written) = (h.status, write_head(self.out, &h));
        let body = match req.method {
            Method::Head => Outgoing::Nothing,
            _ => outgoing(self.ctx, src, first, end),
        };
        self.answer_written(status, written, Place::PreambleArea, body);
    }

    /// Whether cache entry `index` (holding `meta`'s file) is sent gzip-compressed by
    /// us to a client that prefers it: `--compress gzip`, a type of `--compress-types`,
    /// at least 1 KiB, in memory or with `--compress-cache`, and not found not to shrink.
    fn compressible(&self, index: u32, meta: &FileMeta) -> bool {
        let cache = &self.ctx.cache;
        meta.size >= crate::files::cache::COMPRESS_MIN
            && !cache.gzip_refused(index)
            && self.ctx.site.compress.wants(meta.mime)
    }

    /// An error answer to a parsed request: the `--error-page` for `status` when one is
    /// set, the request would be let in to its path (`--basic-auth`: a user's credentials,
    /// or a page `--basic-auth-skip` exempts) and it can be served (a regular file under
    /// the root), else the built-in page. The
    /// page is looked up once, as a plain file; nothing it does can lead to another error
    /// page. `vary`: the file asked for has sidecars; `unsatisfied`: a 416's
    /// representation length; `challenge`: the `--basic-auth` challenge of a 401, or a
    /// 429's `Retry-After` (empty for others).
    fn error_answer(
        &mut self,
        status: u16,
        vary: bool,
        unsatisfied: Option<u64>,
        challenge: &[u8],
    ) {
        let site = self.ctx.site;
        let admitted = self.admitted;
        let page = site
            .error_page(status)
            .filter(|path| site.admits(admitted, path))
            .and_then(|path| plain_file(self.ctx, self.bufs.open, path));
        let (mime, len, body) = match page {
            Some((meta, src)) => (meta.mime, meta.size, outgoing(self.ctx, src, 0, meta.size)),
            None => {
                let page = error_body(status);
                (HTML, page.len() as u64, Outgoing::Static(page, 0))
            }
        };
        let date = *self.ctx.date.text();
        let mut h = ResponseHead::new(status, &date, self.after.persist());
        h.content_type = Some(mime);
        h.content_length = Some(len);
        h.allow = status == 405;
        h.content_range = unsatisfied.map(ContentRange::Unsatisfied);
        h.vary = vary;
        h.cors = self.line.cors;
        h.challenge = challenge;
        self.answer(&h, Place::PreambleArea, body);
    }

    /// [`Responder::error_answer`] for a request that did not reach a file.
    pub(crate) fn error_page(&mut self, status: u16) {
        self.error_answer(status, false, None, b"");
    }

    /// A 401 with its challenge `lines`, or a 429 with its `Retry-After` (`auth.rs`).
    pub(crate) fn challenged(&mut self, status: u16, lines: &[u8]) {
        self.error_answer(status, false, None, lines);
    }
}

/// What the validators and Range make of a representation (RFC 9110 §13.2.2).
enum Conditions {
    /// 412.
    Failed,
    /// 304.
    NotModified,
    /// 416.
    Unsatisfiable,
    /// 200 with every byte.
    Full,
    /// 206 with bytes `first..=last`.
    Partial { first: u64, last: u64 },
}

/// If-Match, else If-Unmodified-Since (412); then If-None-Match, else If-Modified-Since
/// (304); then Range (GET only) subject to If-Range, over `size` bytes.
fn evaluate_conditions(
    req: &Request<'_, '_>,
    etag: Option<&[u8]>,
    mtime: Option<i64>,
    size: u64,
) -> Conditions {
    if precondition_fails(req.if_match(), req.if_unmodified_since(), etag, mtime) {
        return Conditions::Failed;
    }
    if not_modified(req.if_none_match(), req.if_modified_since(), etag, mtime) {
        return Conditions::NotModified;
    }
    let validated = req
        .if_range()
        .is_none_or(|v| if_range_holds(v, etag, mtime));
    match (req.method, req.range()) {
        (Method::Get, Some(r)) if validated => match evaluate(r, size) {
            RangeAnswer::Full => Conditions::Full,
            RangeAnswer::Partial { first, last } => Conditions::Partial { first, last },
            RangeAnswer::Unsatisfiable => Conditions::Unsatisfiable,
        },
        _ => Conditions::Full,
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
            gzip: false,
            cached: 0,
        },
        Source::CachedGzip(index) if ctx.cache.gzip_file(index).is_some() => Outgoing::CachedFile {
            index,
            at: first,
            end,
            gzip: true,
            cached: 0,
        },
        Source::Cached(index) => Outgoing::Cached {
            index,
            at: first as usize,
            end: end as usize,
            gzip: false,
        },
        Source::CachedGzip(index) => Outgoing::Cached {
            index,
            at: first as usize,
            end: end as usize,
            gzip: true,
        },
        Source::File(fd) => Outgoing::File {
            fd,
            at: first,
            end,
            cached: 0,
        },
    }
}
