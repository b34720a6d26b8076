//! One request to one response plan: status, head bytes in the slot's head area, body
//! source, and what follows (keep-alive, close, linger).
//!
//! Input: the buffered bytes (a complete head, or enough to refuse one), the worker's
//! [`Ctx`] (file cache, Date, counters, log). Output: the connection set to
//! [`Awaiting::Send`] with its plan, and the number of bytes the head took. No I/O except
//! the file lookup; no allocation.
//!
//! Order of evaluation for GET/HEAD on a file (RFC 9110 §13.2.2): If-Match, else
//! If-Unmodified-Since (412); then If-None-Match, else If-Modified-Since (304); then Range (GET only, §14.2) subject to If-Range; 416 for an
//! unsatisfiable single range. Other methods get 405 with `Allow: GET, HEAD`.

use super::{After, Awaiting, Conn, Ctx, Outgoing, Scratch, IN_CAP};
use crate::access_log::Entry;
use crate::files::cache::Served;
use crate::files::{FileMeta, Lookup, PATH_MAX};
use crate::http::conditional::{not_modified, precondition_fails};
use crate::http::range::{evaluate, if_range_holds, RangeAnswer};
use crate::http::response::{
    error_body, write_error_head, write_head, ContentRange, Persist, ResponseHead,
};
use crate::http::{parse_request, Body, Header, Method, Request, Status, MAX_FIELDS};
use core::sync::atomic::Ordering::Relaxed;
use rustix::fd::OwnedFd;

/// The parts of a request the log and the persistence rule need.
struct Line<'a> {
    method: &'a [u8],
    target: &'a [u8],
    minor: u8,
    /// A HEAD request: the response has no content whatever its status (RFC 9110 §9.3.2,
    /// RFC 9112 §6.3 rule 1), though its Content-Length stays that of GET.
    head: bool,
}

const UNPARSED: Line<'static> = Line {
    method: b"-",
    target: b"-",
    minor: 1,
    head: false,
};

/// A refused head: unparsed, but a HEAD still gets no content (the client will read none).
fn unparsed(inb: &[u8]) -> Line<'static> {
    Line {
        head: request_line(inb).starts_with(b"HEAD "),
        ..UNPARSED
    }
}

/// Plans the response to the head at the start of `inb`. `None`: not complete yet.
pub(super) fn request(
    c: &mut Conn,
    out: &mut [u8],
    inb: &[u8],
    ctx: &mut Ctx<'_>,
    s: &mut Scratch,
) -> Option<usize> {
    let mut fields = [Header::EMPTY; MAX_FIELDS];
    match parse_request(inb, &mut fields, &mut s.path[..]) {
        Ok(Status::Complete(req)) => {
            serve(c, out, ctx, &req, &mut s.open, &mut s.spill[..]);
            Some(req.head_len)
        }
        Ok(Status::Partial) if inb.len() < IN_CAP => None,
        Ok(Status::Partial) => {
            refuse(c, out, ctx, 431, None, &unparsed(inb));
            Some(inb.len())
        }
        Err(e) => {
            // A refusal that may keep the connection came from a complete, well-framed
            // head without a body: it ends at the first blank line.
            let end = memchr::memmem::find(inb, b"\r\n\r\n").filter(|&i| i > 0);
            // A 414 always closes (the target may be cut anywhere).
            match end {
                Some(i) if !e.must_close() && e.status() != 414 && !ctx.draining => {
                    let minor = u8::from(!request_line(inb).ends_with(b"HTTP/1.0"));
                    refuse(
                        c,
                        out,
                        ctx,
                        e.status(),
                        Some(persist(true, minor)),
                        &unparsed(inb),
                    );
                    Some(i + 4)
                }
                _ => {
                    refuse(c, out, ctx, e.status(), None, &unparsed(inb));
                    Some(inb.len())
                }
            }
        }
    }
}

/// The first line without its CRLF (for the version of a refused request).
fn request_line(inb: &[u8]) -> &[u8] {
    let end = memchr::memchr(b'\r', inb).unwrap_or(inb.len());
    &inb[..end]
}

fn persist(keep: bool, minor: u8) -> Persist {
    match (keep, minor) {
        (false, _) => Persist::Close,
        (true, 0) => Persist::KeepAlive,
        (true, _) => Persist::Implicit,
    }
}

/// An error page. `keep`: the connection persists with this `Connection` value; `None`:
/// it closes after a linger.
fn refuse(
    c: &mut Conn,
    out: &mut [u8],
    ctx: &mut Ctx<'_>,
    status: u16,
    keep: Option<Persist>,
    line: &Line<'_>,
) {
    let p = keep.unwrap_or(Persist::Close);
    let after = match keep {
        Some(Persist::Close) => After::Close,
        Some(_) => After::KeepAlive,
        None => After::Linger,
    };
    error_reply(c, out, ctx, status, p, after, None, line);
}

#[allow(clippy::too_many_arguments)]
fn error_reply(
    c: &mut Conn,
    out: &mut [u8],
    ctx: &mut Ctx<'_>,
    status: u16,
    p: Persist,
    after: After,
    unsatisfied: Option<u64>,
    line: &Line<'_>,
) {
    let date = *ctx.date.text();
    let head = write_error_head(out, status, &date, p, unsatisfied).unwrap_or(0);
    let page = error_body(status);
    plan(
        c,
        ctx,
        status,
        head,
        Outgoing::Static(page, 0),
        page.len() as u64,
        after,
        line,
    );
}

/// Records the plan on the connection, counts it and logs it. A HEAD drops the body here,
/// for every status.
#[allow(clippy::too_many_arguments)]
fn plan(
    c: &mut Conn,
    ctx: &mut Ctx<'_>,
    status: u16,
    head_len: usize,
    body: Outgoing,
    body_len: u64,
    after: After,
    line: &Line<'_>,
) {
    let (body, body_len) = if line.head {
        (Outgoing::Nothing, 0)
    } else {
        (body, body_len)
    };
    c.head_len = head_len;
    c.head_sent = 0;
    c.head_spilled = false;
    c.body = body;
    c.pinned = false;
    c.after = after;
    c.awaiting = Awaiting::Send;
    let class = usize::from(status / 100).clamp(1, 5) - 1;
    ctx.counters.responses[class].fetch_add(1, Relaxed);
    let entry = Entry {
        peer: c.peer,
        method: line.method,
        target: line.target,
        minor: line.minor,
        status,
        bytes: head_len as u64 + body_len,
    };
    ctx.log.record(&entry, ctx.date.text());
}

/// A parsed request: method check, body handling, lookup, then the file answer.
fn serve(
    c: &mut Conn,
    out: &mut [u8],
    ctx: &mut Ctx<'_>,
    req: &Request<'_, '_>,
    open: &mut [u8; PATH_MAX + 1],
    spill: &mut [u8],
) {
    let line = Line {
        method: req.method.as_str().as_bytes(),
        target: req.target(),
        minor: req.minor,
        head: req.method == Method::Head,
    };
    let has_body = req.body != Body::None;
    // Expect: 100-continue with a body we will not read: answer and close rather than
    // wait for a body the client may never send (RFC 9110 §10.1.1).
    let keep = req.keep_alive && !ctx.draining && !(has_body && req.expect_continue);
    // Body bytes still owed: discarded before the next head when the connection persists,
    // else they make the close linger (closing with unread input sends a reset, which
    // can destroy the response at the client, RFC 9112 §9.6).
    c.discard = match req.body {
        Body::None => 0,
        Body::Length(n) => n,
        Body::Chunked => u64::MAX,
    };
    if !matches!(req.method, Method::Get | Method::Head) {
        // 405; an unread body of another method closes the connection.
        let keep = keep && !has_body;
        let after = if keep { After::KeepAlive } else { After::Close };
        return error_reply(
            c,
            out,
            ctx,
            405,
            persist(keep, req.minor),
            after,
            None,
            &line,
        );
    }
    let p = persist(keep, req.minor);
    let after = if keep { After::KeepAlive } else { After::Close };
    let after_err = after;
    match ctx.cache.lookup(ctx.root, req.path, ctx.now_ms, open) {
        Served::Hit(index) => {
            let Some(&meta) = ctx.cache.meta(index) else {
                return error_reply(c, out, ctx, 500, p, after_err, None, &line);
            };
            file(
                c,
                out,
                ctx,
                req,
                &meta,
                Source::Cached(index),
                p,
                after,
                &line,
            );
        }
        Served::Miss(Lookup::File(fd, meta)) => {
            file(c, out, ctx, req, &meta, Source::File(fd), p, after, &line);
        }
        Served::Miss(Lookup::AddSlash) => redirect(c, out, spill, ctx, req, p, after, &line),
        Served::Miss(Lookup::Status(s)) => error_reply(c, out, ctx, s, p, after_err, None, &line),
    }
}

/// 301 to the same path with a trailing slash, query kept. A `Location` too long for the
/// head area (a path of more than about 800 bytes) is written to the worker's spill area,
/// which the transition moves to the receive area; the connection then closes, since
/// that area can no longer hold the pipelined input.
#[allow(clippy::too_many_arguments)]
fn redirect(
    c: &mut Conn,
    out: &mut [u8],
    spill: &mut [u8],
    ctx: &mut Ctx<'_>,
    req: &Request<'_, '_>,
    p: Persist,
    after: After,
    line: &Line<'_>,
) {
    let date = *ctx.date.text();
    let page = error_body(301);
    let mut h = ResponseHead::new(301, &date, p);
    h.content_type = Some(crate::http::response::HTML);
    h.content_length = Some(page.len() as u64);
    h.location = Some((req.path, req.query()));
    let body = Outgoing::Static(page, 0);
    if let Some(n) = write_head(out, &h) {
        return plan(c, ctx, 301, n, body, page.len() as u64, after, line);
    }
    h.persist = Persist::Close;
    match write_head(spill, &h) {
        Some(n) => {
            plan(c, ctx, 301, n, body, page.len() as u64, After::Linger, line);
            c.head_spilled = true;
        }
        // Unreachable for a target the parser accepted (see `SPILL_CAP`); closes.
        None => error_reply(c, out, ctx, 414, Persist::Close, After::Linger, None, line),
    }
}

enum Source {
    Cached(u32),
    File(OwnedFd),
}

/// 200, 206, 304 or 416 for a regular file.
#[allow(clippy::too_many_arguments)]
fn file(
    c: &mut Conn,
    out: &mut [u8],
    ctx: &mut Ctx<'_>,
    req: &Request<'_, '_>,
    meta: &FileMeta,
    src: Source,
    p: Persist,
    after: After,
    line: &Line<'_>,
) {
    let date = *ctx.date.text();
    let etag = meta.etag.as_bytes();
    let mut h = ResponseHead::new(200, &date, p);
    h.last_modified = Some(&meta.last_modified);
    h.etag = Some(etag);
    if precondition_fails(req.if_match(), req.if_unmodified_since(), etag, meta.mtime) {
        return error_reply(c, out, ctx, 412, p, after, None, line);
    }
    if not_modified(
        req.if_none_match(),
        req.if_modified_since(),
        etag,
        meta.mtime,
    ) {
        h.status = 304;
        let n = write_head(out, &h).unwrap_or(0);
        return plan(c, ctx, 304, n, Outgoing::Nothing, 0, after, line);
    }
    let validated = match req.if_range() {
        Some(v) => if_range_holds(v, etag, meta.mtime),
        None => true,
    };
    let range = match (req.method, req.range()) {
        (Method::Get, Some(r)) if validated => evaluate(r, meta.size),
        _ => RangeAnswer::Full,
    };
    let (first, end) = match range {
        RangeAnswer::Full => (0, meta.size),
        RangeAnswer::Partial { first, last } => {
            h.status = 206;
            h.content_range = Some(ContentRange::Bytes {
                first,
                last,
                len: meta.size,
            });
            (first, last + 1)
        }
        RangeAnswer::Unsatisfiable => {
            return error_reply(c, out, ctx, 416, p, after, Some(meta.size), line);
        }
    };
    h.content_type = Some(meta.mime);
    h.content_length = Some(end - first);
    h.accept_ranges = true;
    let n = write_head(out, &h).unwrap_or(0);
    let (body, len) = match (req.method, src) {
        (Method::Head, _) => (Outgoing::Nothing, 0),
        (_, Source::Cached(index)) if ctx.cache.file(index).is_some() => (
            Outgoing::CachedFile {
                index,
                at: first,
                end,
            },
            end - first,
        ),
        (_, Source::Cached(index)) => (
            Outgoing::Cached {
                index,
                at: first as usize,
                end: end as usize,
            },
            end - first,
        ),
        (_, Source::File(fd)) => (Outgoing::File { fd, at: first, end }, end - first),
    };
    plan(c, ctx, h.status, n, body, len, after, line);
}
