//! The answers of the operator's rules: a `--redirect` (its status and `Location`), the
//! path a `--rewrite` or `--try-ext` names, and the `--https-redirect` 308.
//!
//! Input: the parsed request, the worker's [`Ctx`](super::Ctx) (its `SiteRules`), the
//! scratch area a target is written into. Output: a planned redirect, or the path the
//! file lookup is to try instead. No allocation, no I/O: a `Location` line is written into
//! the sidecar area (a redirect looks up no sidecar), a rewritten path into the rewrite
//! area, both sized for the longest request target.
//!
//! `--https-redirect` believes `X-Forwarded-Proto: http` only from a peer in
//! `--real-ip-from` (the same trust `X-Forwarded-For` has: not with `--proxy-protocol`,
//! where the PROXY v2 header says it instead, by the absence of its SSL TLV); from any
//! other peer the field is ignored. HOST must be a plain host name or address (letters, digits, `.`, `-`, `:`,
//! `[`, `]`): any other `Host` gets no redirect.

use super::in_flight::{Outgoing, Preamble};
use super::record::{Place, Responder};
use crate::files::cache::Served;
use crate::files::Lookup;
use crate::http::response::{error_body, write_head, ResponseHead, HTML};
use crate::http::{Method, Request};
use crate::site::glob::Captures;
use crate::site::rules::{self, Action};

/// What the rules make of a request before its file is looked up.
pub(super) enum Ruled<'p> {
    /// Answered (a redirect).
    Answered,
    /// Look up this path instead of the request's (a rewrite).
    Path(&'p [u8]),
    /// Forward the request (the rule at this index of the site's rules).
    Proxy(usize),
    /// No rule matched.
    None,
}

impl Responder<'_, '_> {
    /// The first `--redirect`/`--rewrite`/`--proxy` matching the request: a redirect is
    /// answered here, a rewrite's path is written into `area`, a proxy rule is named. A
    /// request that is neither GET nor HEAD meets only the proxy rules (the others serve
    /// files, which answer it 405).
    #[inline]
    pub(super) fn rules<'p>(&mut self, req: &Request<'_, '_>, area: &'p mut [u8]) -> Ruled<'p> {
        match self.ctx.site.rule_filter.may_match(req.path) {
            false => Ruled::None,
            true => self.first_rule(req, area),
        }
    }

    /// [`Responder::rules`] with rules configured; out of line, so a site without rules
    /// carries none of it in the request path.
    #[inline(never)]
    fn first_rule<'p>(&mut self, req: &Request<'_, '_>, area: &'p mut [u8]) -> Ruled<'p> {
        let site = self.ctx.site;
        let mut caps = Captures::default();
        let Some(rule) = rules::first_match(&site.rules, req.path, &mut caps) else {
            return Ruled::None;
        };
        let reads = matches!(req.method, Method::Get | Method::Head);
        if !reads && rule.action != Action::Proxy {
            return Ruled::None;
        }
        let at = site.rules.iter().position(|r| core::ptr::eq(r, rule));
        let index = at.map_or(u16::MAX, |i| i as u16);
        self.line.log.rule = Some(index);
        match rule.action {
            Action::Proxy => Ruled::Proxy(at.unwrap_or(0)),
            Action::Rewrite => match rule.write_target(req.path, &caps, None, area) {
                Some(n) => Ruled::Path(&area[..n]),
                // A target longer than any request path names nothing.
                None => Ruled::Path(b""),
            },
            Action::Redirect(status) => {
                let at = LOCATION.len();
                let line = &mut *self.bufs.sidecar;
                let n = rule.write_target(req.path, &caps, req.query(), &mut line[at..]);
                match n.and_then(|n| location_line(line, n)) {
                    Some(len) => self.located(status, len),
                    None => self.error_page(500),
                }
                Ruled::Answered
            }
        }
    }

    /// `--https-redirect`: 308 to `https://HOST/PATH?QUERY` when a trusted proxy says the
    /// request came over plain HTTP; `false` (nothing planned) otherwise.
    #[inline]
    pub(super) fn https_redirect(&mut self, req: &Request<'_, '_>) -> bool {
        let asked = self.ctx.site.https_redirect && (self.c.forwarded || self.c.proxied_plain);
        asked && self.https_redirect_asked(req)
    }

    /// [`Responder::https_redirect`] once it may apply; out of line.
    #[inline(never)]
    fn https_redirect_asked(&mut self, req: &Request<'_, '_>) -> bool {
        let fields = self.line.log.fields;
        let field = |name: &[u8]| {
            (fields.iter().find(|h| h.name.eq_ignore_ascii_case(name))).map(|h| h.value)
        };
        let said = field(b"x-forwarded-proto").is_some_and(|p| p.eq_ignore_ascii_case(b"http"));
        let plain = self.c.proxied_plain || (self.c.forwarded && said);
        let host = field(b"host").filter(|h| !h.is_empty() && h.iter().all(|&b| host_byte(b)));
        let Some(host) = host.filter(|_| plain) else {
            return false;
        };
        let at = LOCATION.len();
        let line = &mut *self.bufs.sidecar;
        let n = https_target(host, req.path, req.query(), &mut line[at..]);
        match n.and_then(|n| location_line(line, n)) {
            Some(len) => self.located(308, len),
            None => self.error_page(500),
        }
        true
    }

    /// `--try-ext`: the first `PATH.EXT` that exists for a `path` that does not (not for
    /// a directory's path), written into `area`, with its lookup.
    #[inline(never)]
    pub(super) fn try_ext<'p>(
        &mut self,
        path: &[u8],
        area: &'p mut [u8],
    ) -> Option<(&'p [u8], Served)> {
        if path.ends_with(b"/") {
            return None;
        }
        let mut hit = None;
        for ext in &self.ctx.site.try_ext {
            let mut w = rules::Out::new(area);
            let n = (w.put(path), w.put(b"."), w.put(ext)).2.map(|()| w.len());
            let Some(n) = n else { continue };
            let ctx = &mut *self.ctx;
            let found = ctx
                .cache
                .lookup(ctx.root, &area[..n], ctx.now_ms, self.bufs.open);
            if !matches!(found, Served::Miss(Lookup::Status(404))) {
                hit = Some((n, found));
                break;
            }
        }
        let (n, found) = hit?;
        Some((&area[..n], found))
    }

    /// A redirect with `status` whose `Location` line is the first `len` bytes of the
    /// sidecar area. One too long for the preamble area goes to the spill, and the
    /// connection then closes (as the trailing-slash 301 does).
    #[inline(never)]
    fn located(&mut self, status: u16, len: usize) {
        let date = *self.ctx.date.text();
        let page = error_body(status);
        let mut h = ResponseHead::new(status, &date, self.after.persist());
        h.content_type = Some(HTML);
        h.content_length = Some(page.len() as u64);
        h.lines = &self.bufs.sidecar[..len];
        h.extra = &self.ctx.site.headers;
        h.cors = self.line.cors;
        let body = Outgoing::Static(page, 0);
        if let Some(n) = write_head(self.out, &h) {
            return self.plan(status, Preamble::unsent(n, false), body);
        }
        self.after = super::in_flight::After::Close { linger: true };
        h.persist = self.after.persist();
        let written = write_head(self.bufs.spill, &h);
        self.answer_written(status, written, Place::Spill, body);
    }
}

const LOCATION: &[u8] = b"Location: ";

/// Frames the `n` bytes of a target written after [`LOCATION`] as its line; its length.
fn location_line(line: &mut [u8], n: usize) -> Option<usize> {
    let end = LOCATION.len() + n;
    line.get_mut(..LOCATION.len())?.copy_from_slice(LOCATION);
    line.get_mut(end..end + 2)?.copy_from_slice(b"\r\n");
    Some(end + 2)
}

/// A byte a `Host` may hold for it to be written into a `Location`.
fn host_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b".-:[]".contains(&b)
}

/// `https://HOST` + the path percent-encoded + `?QUERY`, into `out`; its length.
fn https_target(host: &[u8], path: &[u8], query: Option<&[u8]>, out: &mut [u8]) -> Option<usize> {
    let mut w = rules::Out::new(out);
    w.put(b"https://")?;
    w.put(host)?;
    path.iter().try_for_each(|&b| w.encoded(b))?;
    if let Some(q) = query {
        w.query(q)?;
    }
    Some(w.len())
}
