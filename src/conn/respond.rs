//! One request to one response plan: status, preamble in the preamble area, body
//! source, and what follows (keep-alive, close, linger).
//!
//! Input: the buffered bytes (a complete head, or enough to refuse one), the worker's
//! [`Ctx`] (file cache, Date, counters, log). Output: the connection set to
//! `Awaiting::Send` with its response (which also holds how many bytes the request's head
//! took), through the `Responder` kind chosen here. No I/O except the file lookup; no
//! allocation.
//!
//! With `--basic-auth`, a request that is not a CORS preflight must pass the credential
//! check (`auth.rs`) before anything else is decided for it. For GET/HEAD: the file lookup; a path that does not exist gets the `--fallback` file
//! instead when one is set (and the path's extension is not in `--fallback-skip`), as
//! nginx's `try_files $uri $uri/ PATH` does, provided the request would be let in to the
//! fallback's own path (with `--basic-auth-skip`, a skipped path that does not exist is
//! 404, not the protected fallback); then the file answer (`file.rs`). Other
//! methods get 405 with `Allow: GET, HEAD`. An error answered to a parsed request carries
//! the operator's `--error-page` for its status when that page can be served
//! (`file.rs`), the built-in page otherwise.
//!
//! Framing is judged before the method: a request that is not forwarded may carry a
//! body, which is read and discarded, a counted one after the response, a chunked one
//! before it (`discard.rs`; a bad chunk is 400, a good body gets the answer the request
//! would have had), up to [`DISCARD_MAX`]. A GET or HEAD declaring a larger one is
//! refused before anything else (413, RFC 9110 §15.5.14) and the connection closes at
//! once: no byte of that body is waited for or read; another method's answer closes
//! after a linger.

use super::discard::{Judged, DISCARD_MAX};
use super::file::Found;
use super::in_flight::{After, Outgoing, Preamble};
use super::logged::LoggedRequest;
use super::record::{Line, Place, Responder};
use super::rules::Ruled;
use super::{Conn, Ctx, Scratch, IN_CAP};
use crate::files::cache::Served;
use crate::files::Lookup;
use crate::http::response::{error_body, write_head, ResponseHead};
use crate::http::{parse_request, Body, Fields, Header, Method, Request, Status, MAX_FIELDS};
use crate::log_line::RequestLine;
use crate::site::cors::{Cors, CorsAnswer};

/// Longest first line of a refused request kept for the log.
const RAW_LINE_MAX: usize = 8 * 1024;

/// A refused head: unparsed, but a HEAD still gets no content (the client will read none).
fn unparsed(inb: &[u8]) -> Line<'_> {
    let first = request_line(inb);
    Line {
        log: LoggedRequest {
            area: inb,
            line: RequestLine::Raw(&first[..first.len().min(RAW_LINE_MAX)]),
            fields: &[],
            accepted: None,
            rule: None,
        },
        head_method: first.starts_with(b"HEAD "),
        cors: b"",
    }
}

/// Plans the response to the head at the start of `inb`, its chunked body `judged`
/// so far (`discard.rs`). `false`: not complete yet.
pub(super) fn request(
    c: &mut Conn,
    out: &mut [u8],
    inb: &[u8],
    ctx: &mut Ctx<'_>,
    s: &mut Scratch,
    judged: Judged,
) -> bool {
    let mut fields = Fields::<MAX_FIELDS>::new();
    let (path, rewrite, bufs) = s.split();
    match parse_request(inb, &mut fields, path) {
        Ok(Status::Complete(mut req)) => {
            let host = ctx.hosts.table.pick_again(req.host(), &mut c.host_name);
            if let Some(i) = host {
                c.host = i;
                ctx.enter(i);
            }
            let cors = cors_answer(&ctx.site.cors, &req, &fields[..req.fields]);
            let line = line_of(&req, inb, &fields[..req.fields], cors.lines());
            let mut r = Responder::new(c, out, ctx, bufs, line);
            if host.is_none() {
                // RFC 9110 §15.5.20: no host here answers this name (nor is one logged).
                r.c.host = super::hosts::NONE;
                // The connection closes after it: the client may try another (§15.5.20).
                r.answered = req.head_len;
                r.builtin_error(421);
            } else if body_too_large(&req) {
                // Close once the 413 is out, dropping what is buffered: nothing lingers.
                r.after = After::Close { linger: false };
                r.answered = inb.len();
                r.error_page(413);
            } else if req.body == Body::Chunked && r.chunked_first(&mut req, judged, rewrite) {
                // Framing before the method: its chunked body is judged first (or was
                // found malformed: 400).
            } else {
                r.answered = req.head_len;
                serve(&mut r, &req, cors.preflight(), rewrite);
            }
        }
        Ok(Status::Partial) if inb.len() < IN_CAP => return false,
        Ok(Status::Partial) => {
            let mut r = Responder::new(c, out, ctx, bufs, unparsed(inb));
            r.answered = inb.len();
            r.builtin_error(431);
        }
        Err(e) => {
            // A refusal that may keep the connection came from a complete, well-framed
            // head without a body: it ends at the first blank line.
            let end = memchr::memmem::find(inb, b"\r\n\r\n").filter(|&i| i > 0);
            let draining = ctx.draining;
            let mut r = Responder::new(c, out, ctx, bufs, unparsed(inb));
            r.answered = inb.len();
            // A 414 always closes (the target may be cut anywhere).
            match end {
                Some(i) if !e.must_close() && e.status() != 414 && !draining => {
                    let minor = u8::from(!request_line(inb).ends_with(b"HTTP/1.0"));
                    r.after = After::KeepAlive { minor };
                    r.answered = i + 4;
                }
                _ => {}
            }
            r.builtin_error(e.status());
        }
    }
    true
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
        log: LoggedRequest {
            area,
            line: RequestLine::Parsed {
                method: req.method,
                target: req.target(),
                minor: req.minor,
            },
            fields,
            accepted: None,
            rule: None,
        },
        head_method: req.method == Method::Head,
        cors,
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
    let (_, _, bufs) = s.split();
    Responder::new(c, out, ctx, bufs, unparsed(inb)).error_page(408);
}

/// A parsed request: method check, body handling, lookup (or the fallback), then the
/// file answer.
fn serve(
    r: &mut Responder<'_, '_>,
    req: &Request<'_, '_>,
    preflight: Option<&[u8]>,
    rewrite: &mut [u8],
) {
    // Body bytes still owed: discarded before the next head when the connection persists,
    // else they make the close linger (closing with unread input sends a reset, which
    // can destroy the response at the client, RFC 9112 §9.6).
    r.owed = match req.body {
        Body::None => 0,
        Body::Length(n) => n,
        Body::Chunked => u64::MAX,
    };
    // Expect: 100-continue with a body we will not read: answer and close rather than
    // wait for a body the client may never send (RFC 9110 §10.1.1).
    let keep = req.keep_alive && !r.ctx.draining && !(r.owed > 0 && req.expect_continue);
    // A counted body of a refused request (405, 401, 404, a preflight) is discarded
    // after the answer as a GET's is, up to `DISCARD_MAX`; a larger one, or a chunked
    // one not read whole, closes the connection.
    r.after = After::keep_if(keep && r.owed <= DISCARD_MAX, req.minor);
    // `--allow`/`--deny` for a proxied client, `--rate-limit`, `--max-rate`.
    if r.refused_by_limits() {
        return;
    }
    if let Some(echo) = preflight {
        // A CORS preflight `--cors` allows: 204.
        return r.preflight(echo);
    }
    // Before credentials are asked for: they would travel in clear.
    if r.https_redirect(req) {
        return;
    }
    if r.refused_by_auth(req) {
        return;
    }
    if !matches!(req.method, Method::Get | Method::Head) {
        // Any method may be forwarded; the files answer GET and HEAD only.
        return r.other_method(req, rewrite);
    }
    let (rewritten, tried) = rewrite.split_at_mut(rewrite.len() / 2);
    let ruled = r.rules(req, rewritten);
    let site = r.ctx.site;
    let mut path = match ruled {
        Ruled::Answered => return,
        Ruled::Proxy(rule) => return r.proxy(req, rule),
        // A page its own request would not be let in to is not sent in its place.
        Ruled::Path(p) if p.is_empty() || !site.admits(r.admitted, p) => return r.error_page(404),
        Ruled::Path(p) => p,
        Ruled::None => req.path,
    };
    let mut found = r
        .ctx
        .cache
        .lookup(r.ctx.root, path, r.ctx.now_ms, r.bufs.open);
    // The fallback rule is looked at only for a path that is not there; under
    // `--list-dirs` a directory without index.html is there, as its listing.
    if matches!(found, Served::Miss(Lookup::Status(404))) {
        if site.list_dirs && path == req.path && r.listing(req) {
            return;
        }
        if let Some((p, f)) = r.try_ext(path, tried) {
            (path, found) = (p, f);
        }
    }
    if matches!(found, Served::Miss(Lookup::Status(404))) {
        if let Some(fallback) = site.fallback_for(req.path) {
            // A page its own request would not be let in to is not sent in its place.
            if !site.admits(r.admitted, fallback) {
                return r.error_page(404);
            }
            path = fallback;
            found = r
                .ctx
                .cache
                .lookup(r.ctx.root, path, r.ctx.now_ms, r.bufs.open);
        }
    }
    match found {
        Served::Hit(index) => r.file(req, path, Found::Cached(index)),
        Served::Miss(Lookup::File(fd, meta)) => r.file(req, path, Found::File(fd, &meta)),
        // Only the request's own path redirects; a fallback that is a directory is none.
        Served::Miss(Lookup::AddSlash) if path == req.path => r.redirect(req),
        Served::Miss(Lookup::AddSlash) => r.error_page(404),
        Served::Miss(Lookup::Status(s)) => r.error_page(s),
    }
}

impl Responder<'_, '_> {
    /// A request neither GET nor HEAD: forwarded when a `--proxy` rule takes it (the
    /// other rules and the files pass it by), else 405. Out of line: the file path does
    /// not carry it.
    #[inline(never)]
    fn other_method(&mut self, req: &Request<'_, '_>, rewrite: &mut [u8]) {
        match self.rules(req, rewrite) {
            Ruled::Proxy(rule) => self.proxy(req, rule),
            _ => self.error_page(405),
        }
    }

    /// 204 to a CORS preflight: the origin lines, the methods, the requested headers
    /// echoed (`echo`, unless empty), the max age and the operator's `--header` lines.
    /// Its preamble fits the preamble area: `SiteRules::head_bytes` counts the longest one.
    fn preflight(&mut self, echo: &[u8]) {
        let date = *self.ctx.date.text();
        let mut h = ResponseHead::new(204, &date, self.after.persist());
        h.extra = &self.ctx.site.headers;
        h.cors = self.line.cors;
        h.preflight = Some(echo);
        self.answer(&h, Place::PreambleArea, Outgoing::Nothing);
    }

    /// 301 to the same path with a trailing slash, query kept. A `Location` too long for
    /// the preamble area (a path of more than about 800 bytes) is written to the worker's
    /// spill, which the transition moves to the receive area; the connection then
    /// closes, since that area can no longer hold the pipelined input.
    fn redirect(&mut self, req: &Request<'_, '_>) {
        let date = *self.ctx.date.text();
        let page = error_body(301);
        let mut h = ResponseHead::new(301, &date, self.after.persist());
        h.content_type = Some(crate::http::response::HTML);
        h.content_length = Some(page.len() as u64);
        h.location = Some((req.path, req.query()));
        h.extra = &self.ctx.site.headers;
        h.cors = self.line.cors;
        let body = Outgoing::Static(page, 0);
        if let Some(len) = write_head(self.out, &h) {
            return self.plan(301, Preamble::unsent(len, false), body);
        }
        self.after = After::Close { linger: true };
        h.persist = self.after.persist();
        self.answer(&h, Place::Spill, body);
    }
}
