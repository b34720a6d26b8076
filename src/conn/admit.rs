//! Per request, who the site lets in and how often, and the pace it is sent at:
//! `--allow`/`--deny` (403), `--rate-limit` (429 with `Retry-After`), `--max-rate`.
//!
//! Input: the request's fields, the connection's client (its peer, the address its PROXY
//! header gave, or, from a trusted proxy, the one `X-Forwarded-For` names), the
//! [`SiteRules`](crate::site::SiteRules) that answers and the worker's rate buckets.
//! Output: nothing (go on), or the refusal planned as an error answer (the operator's
//! `--error-page` for 403 or 429 when there is one). No allocation; with none of the
//! three flags, two comparisons.
//!
//! Where it stands (`respond.rs`): first for a parsed request, before a CORS preflight,
//! the HTTPS redirect and `--basic-auth`, so a client refused here learns nothing else.
//! A connection whose peer the lists refuse never gets here: the loop closed it at
//! accept. Checked again per request because a proxy's clients are known only here and
//! because the site that answers may have lists of its own; a client that is the peer,
//! at a site whose lists are the ones accept applied, is not checked again (the same
//! answer, and the pass over 50 networks was most of what the lists cost a keep-alive
//! request). The rate limit counts every request.

use super::record::Responder;
use super::Conn;
use crate::client_addr::{forwarded_for, AddrKey};
use crate::http::response::Writer;
use rustix::fd::BorrowedFd;

impl Responder<'_, '_> {
    /// Answers 403 or 429 when the request's client may not be served now; `false` to
    /// go on. Sets the connection's pacing to the site's `--max-rate` first.
    pub(crate) fn refused_by_limits(&mut self) -> bool {
        let site = self.ctx.site;
        // Asked for only when it changes the connection's pacing (mostly never).
        if site.max_rate != self.c.pacing {
            self.pace(site.max_rate);
        }
        if site.access.is_open() && site.rate_limit == 0 {
            return false;
        }
        let c = &*self.c;
        let client = match c.forwarded {
            true => forwarded_for(self.line.log.fields, self.ctx.forwarded).or(c.client),
            false => c.client,
        };
        let Some(ip) = client else {
            return false;
        };
        let checked = !c.forwarded && self.ctx.hosts.peer_checked;
        if !checked && !site.access.admits(ip) {
            self.error_page(403);
            return true;
        }
        let Some(table) = self.ctx.rate.as_mut().filter(|_| site.rate_limit > 0) else {
            return false;
        };
        let (key, now) = (AddrKey::of(ip), self.ctx.now_ms);
        let Err(secs) = table.take_at(key, &mut self.c.rate_at, site.rate_limit, now) else {
            return false;
        };
        let mut retry = [0u8; 32];
        let mut w = Writer::new(&mut retry);
        w.put(b"Retry-After: ").num(u64::from(secs)).put(b"\r\n");
        let n = w.written();
        self.challenged(429, &retry[..n]);
        true
    }

    /// Asks for the answering site's `--max-rate` (0: none); [`paced`] applies it.
    fn pace(&mut self, rate: u32) {
        self.ctx.pace_wanted = Some(rate);
    }
}

/// `SO_MAX_PACING_RATE` on `fd` at the rate the request just planned asked for
/// (`wanted`, taken: a request refused before its site was known asks for nothing), when
/// the connection is not paced so already: one call per connection with `--max-rate`,
/// none without. Called once a response is planned, before a byte of it is sent.
pub(super) fn paced(c: &mut Conn, fd: BorrowedFd<'_>, wanted: &mut Option<u32>) {
    let Some(rate) = wanted.take() else {
        return;
    };
    if c.pacing == rate {
        return;
    }
    let value = if rate == 0 { u32::MAX } else { rate };
    // A refusal (not TCP, an old kernel) leaves the response unpaced, not refused.
    let _ = crate::sys::socket::set_max_pacing_rate(fd, value);
    c.pacing = rate;
}
