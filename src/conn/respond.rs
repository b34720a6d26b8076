//! One request to one response plan: status, head bytes in the slot's head area, body
//! source, and what follows (keep-alive, close, linger).
//!
//! Input: the buffered bytes (a complete head, or enough to refuse one), the worker's
//! [`Ctx`] (file cache, Date, counters, log). Output: the connection set to
//! `Awaiting::Send` with its plan, and the number of bytes the head took. No I/O except
//! the file lookup; no allocation.
//!
//! With `--basic-auth`, a request that is not a CORS preflight must pass the credential
//! check (`auth.rs`) before anything else is decided for it. For GET/HEAD: the file lookup; a path that does not exist gets the `--fallback` file
//! instead when one is set (and the path's extension is not in `--fallback-skip`), as
//! nginx's `try_files $uri $uri/ PATH` does; then the file answer (`file.rs`). Other
//! methods get 405 with `Allow: GET, HEAD`. An error answered to a parsed request carries
//! the operator's `--error-page` for its status when that page can be served
//! (`file.rs`), the built-in page otherwise.
//!
//! A GET or HEAD may carry a body, which is read and discarded after the response; one
//! declared larger than [`DISCARD_MAX`] is refused before anything else (413, RFC 9110
//! §15.5.14) and the connection closes at once: no byte of that body is waited for or
//! read.

use super::file::{error_page, file, Bufs, Source};
use super::listing::listing;
use super::logged::Request as Logged;
use super::record::{plan, Line};
use super::{After, Conn, Ctx, Outgoing, Scratch, IN_CAP};
use crate::files::cache::Served;
use crate::files::Lookup;
use crate::http::response::{error_body, write_error_head, write_head, Persist, ResponseHead};
use crate::http::{parse_request, Body, Fields, Header, Method, Request, Status, MAX_FIELDS};
use crate::log_line::RequestLine;
use crate::site::cors::{Cors, CorsAnswer};

/// Largest body of a GET or HEAD that is read and discarded (nginx's default
/// `client_max_body_size`); a larger one gets 413.
pub const DISCARD_MAX: u64 = 1 << 20;

/// Longest first line of a refused request kept for the log.
const RAW_LINE_MAX: usize = 8 * 1024;

/// A refused head: unparsed, but a HEAD still gets no content (the client will read none).
fn unparsed(inb: &[u8]) -> Line<'_> {
    let first = request_line(inb);
    Line {
        log: Logged {
            area: inb,
            line: RequestLine::Raw(&first[..first.len().min(RAW_LINE_MAX)]),
            fields: &[],
        },
        head: first.starts_with(b"HEAD "),
        cors: b"",
        challenge: b"",
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
    let mut fields = Fields::<MAX_FIELDS>::new();
    match parse_request(inb, &mut fields, &mut s.path[..]) {
        Ok(Status::Complete(req)) => {
            let cors = cors_answer(&ctx.site.cors, &req, &fields[..req.fields]);
            let line = line_of(&req, inb, &fields[..req.fields], cors.lines());
            let mut bufs = Bufs {
                open: &mut s.open,
                spill: &mut s.spill[..],
                sidecar: &mut s.sidecar[..],
            };
            if body_too_large(&req) {
                // Close once the 413 is out, dropping what is buffered: nothing lingers.
                c.discard = 0;
                let (p, after) = (Persist::Close, After::Close);
                error_page(c, out, ctx, &mut bufs, 413, p, after, &line);
                return Some(inb.len());
            }
            serve(c, out, ctx, &req, &line, cors.preflight(), &mut bufs);
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

/// A GET or HEAD announcing a body larger than the server discards.
fn body_too_large(req: &Request<'_, '_>) -> bool {
    let discarded = matches!(req.method, Method::Get | Method::Head);
    discarded && matches!(req.body, Body::Length(n) if n > DISCARD_MAX)
}

/// A parsed request as the log and the persistence rule see it: `area` is the receive
/// area its slices point into, `fields` its field lines.
fn line_of<'r>(
    req: &Request<'r, '_>,
    area: &'r [u8],
    fields: &'r [Header<'r>],
    cors: &'r [u8],
) -> Line<'r> {
    Line {
        log: Logged {
            area,
            line: RequestLine::Parsed {
                method: req.method.as_str().as_bytes(),
                target: req.target(),
                minor: req.minor,
            },
            fields,
        },
        head: req.method == Method::Head,
        cors,
        challenge: b"",
    }
}

/// What `--cors` makes of a parsed request (its fields are looked at only when it is on).
fn cors_answer<'r>(cors: &'r Cors, req: &Request<'r, '_>, fields: &[Header<'r>]) -> CorsAnswer<'r> {
    if !cors.is_on() {
        return CorsAnswer::Off;
    }
    let field = |name: &[u8]| {
        fields
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    };
    cors.answer(
        req.method == Method::Options,
        field(b"origin"),
        field(b"access-control-request-method"),
        field(b"access-control-request-headers"),
    )
}

/// The first line without its CRLF (for the version of a refused request).
fn request_line(inb: &[u8]) -> &[u8] {
    let end = memchr::memchr(b'\r', inb).unwrap_or(inb.len());
    &inb[..end]
}

pub(super) fn persist(keep: bool, minor: u8) -> Persist {
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

/// The header deadline passed with `inb` buffered (perhaps nothing, between a body's
/// bytes): a 408 with the operator's `--error-page` for 408 when it can be served, else
/// the built-in page, logged like a refused head (the partial first line, `-` when none
/// arrived). It lingers before the close, whatever is buffered: the rest of the head, or
/// of a body being discarded, may still be on its way, and a close with unread input
/// would reset the connection and could destroy the 408 before it is read (RFC 9112
/// §9.6).
pub(super) fn timed_out(
    c: &mut Conn,
    out: &mut [u8],
    inb: &[u8],
    ctx: &mut Ctx<'_>,
    s: &mut Scratch,
) {
    let (p, after) = (Persist::Close, After::Linger);
    let mut bufs = Bufs {
        open: &mut s.open,
        spill: &mut s.spill[..],
        sidecar: &mut s.sidecar[..],
    };
    error_page(c, out, ctx, &mut bufs, 408, p, after, &unparsed(inb));
}

/// An error with the built-in page.
#[allow(clippy::too_many_arguments)]
pub(super) fn error_reply(
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
    plan(c, ctx, status, head, Outgoing::Static(page, 0), after, line);
}

/// A parsed request: method check, body handling, lookup (or the fallback), then the
/// file answer.
fn serve(
    c: &mut Conn,
    out: &mut [u8],
    ctx: &mut Ctx<'_>,
    req: &Request<'_, '_>,
    line: &Line<'_>,
    preflight: Option<&[u8]>,
    bufs: &mut Bufs<'_>,
) {
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
    if let Some(echo) = preflight {
        // A CORS preflight `--cors` allows: 204 (an unread body closes, as for 405).
        let keep = keep && !has_body;
        let after = if keep { After::KeepAlive } else { After::Close };
        return preflight_answer(c, out, ctx, persist(keep, req.minor), after, echo, line);
    }
    // A refused request's unread body closes the connection, as for a 405.
    let refused_keep = keep && !has_body;
    let refusal = (
        persist(refused_keep, req.minor),
        if refused_keep {
            After::KeepAlive
        } else {
            After::Close
        },
    );
    if super::auth::refused(c, out, ctx, req, line, bufs, refusal) {
        return;
    }
    if !matches!(req.method, Method::Get | Method::Head) {
        // 405; an unread body of another method closes the connection.
        let keep = keep && !has_body;
        let after = if keep { After::KeepAlive } else { After::Close };
        let p = persist(keep, req.minor);
        return error_page(c, out, ctx, bufs, 405, p, after, line);
    }
    let p = persist(keep, req.minor);
    let after = if keep { After::KeepAlive } else { After::Close };
    let site = ctx.site;
    let mut path = req.path;
    let mut found = ctx.cache.lookup(ctx.root, path, ctx.now_ms, bufs.open);
    // The fallback rule is looked at only for a path that is not there; under
    // `--list-dirs` a directory without index.html is there, as its listing.
    if matches!(found, Served::Miss(Lookup::Status(404))) {
        if site.list_dirs && listing(c, out, ctx, bufs, req, p, after, line) {
            return;
        }
        if let Some(fallback) = site.fallback_for(req.path) {
            path = fallback;
            found = ctx.cache.lookup(ctx.root, path, ctx.now_ms, bufs.open);
        }
    }
    match found {
        Served::Hit(index) => match ctx.cache.meta(index) {
            Some(&meta) => {
                let src = Source::Cached(index);
                file(c, out, ctx, bufs, req, path, &meta, src, p, after, line);
            }
            None => error_page(c, out, ctx, bufs, 500, p, after, line),
        },
        Served::Miss(Lookup::File(fd, meta)) => {
            let src = Source::File(fd);
            file(c, out, ctx, bufs, req, path, &meta, src, p, after, line);
        }
        // Only the request's own path redirects; a fallback that is a directory is none.
        Served::Miss(Lookup::AddSlash) if path == req.path => {
            redirect(c, out, bufs.spill, ctx, req, p, after, line)
        }
        Served::Miss(Lookup::AddSlash) => error_page(c, out, ctx, bufs, 404, p, after, line),
        Served::Miss(Lookup::Status(s)) => error_page(c, out, ctx, bufs, s, p, after, line),
    }
}

/// 204 to a CORS preflight: the origin lines, the methods, the requested headers echoed
/// (`echo`, unless empty), the max age and the operator's `--header` lines. Its head fits
/// the head area: `SiteRules::head_bytes` counts the longest one.
fn preflight_answer(
    c: &mut Conn,
    out: &mut [u8],
    ctx: &mut Ctx<'_>,
    p: Persist,
    after: After,
    echo: &[u8],
    line: &Line<'_>,
) {
    let date = *ctx.date.text();
    let mut h = ResponseHead::new(204, &date, p);
    h.extra = &ctx.site.headers;
    h.cors = line.cors;
    h.preflight = Some(echo);
    match write_head(out, &h) {
        Some(n) => plan(c, ctx, 204, n, Outgoing::Nothing, after, line),
        // Unreachable while the start-up check holds; loud, never a headless body.
        None => error_reply(c, out, ctx, 500, Persist::Close, After::Linger, None, line),
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
    h.extra = &ctx.site.headers;
    h.cors = line.cors;
    let body = Outgoing::Static(page, 0);
    if let Some(n) = write_head(out, &h) {
        return plan(c, ctx, 301, n, body, after, line);
    }
    h.persist = Persist::Close;
    match write_head(spill, &h) {
        Some(n) => {
            plan(c, ctx, 301, n, body, After::Linger, line);
            c.head_spilled = true;
        }
        // Unreachable for a target the parser accepted (see `SPILL_CAP`); closes.
        None => error_reply(c, out, ctx, 414, Persist::Close, After::Linger, None, line),
    }
}
