//! `--basic-auth` for one parsed request: whether it may go on, and the 401 or 429 when
//! not.
//!
//! Input: the request (its path and fields), the connection's client address, the
//! worker's [`Ctx`] with its `auth::Gate`. Output: nothing (go on), or the refusal
//! planned on the connection as an error answer (the operator's `--error-page` for 401
//! or 429 when there is one), with the challenge or `Retry-After` line and the
//! request's CORS lines, so a script on an allowed origin can read the status. No
//! allocation.
//!
//! Where it stands (`respond.rs`): after the head is parsed and a body too large is
//! refused, after a CORS preflight is answered (a preflight carries no credentials, by
//! the Fetch standard's CORS-preflight fetch), before the method is looked at and before
//! any file is looked up, so a 404, a dotfile, a 405 or a redirect says nothing to a
//! client without credentials: everything is 401 to it. A request let in records what
//! it showed (`Responder::admitted`): a user's credentials admit every path, a skipped
//! path only the skipped ones, which is what a fallback or an error page it is answered
//! with is held to (`site::auth`).

use super::record::Responder;
use crate::auth::{Reason, Verdict};
use crate::client_addr::forwarded_for;
use crate::http::response::Writer;
use crate::http::{Header, Request};
use crate::site::auth::Admission;
use core::sync::atomic::Ordering::Relaxed;

impl Responder<'_, '_> {
    /// Answers the request 401 or 429 when `--basic-auth` refuses it, the connection
    /// going on as `self.after` says; `false` to go on.
    pub(crate) fn refused_by_auth(&mut self, req: &Request<'_, '_>) -> bool {
        let (walk, site) = (self.ctx.forwarded, self.ctx.site);
        let (Some(gate), Some(rule)) = (self.ctx.auth.as_mut(), site.auth.as_ref()) else {
            return false;
        };
        if rule.skips(req.path) {
            return false;
        }
        let fields = self.line.log.fields;
        let c = &*self.c;
        let client = || match c.forwarded {
            true => forwarded_for(fields, walk).or(c.client),
            false => c.client,
        };
        let value = authorization(fields);
        let verdict = gate.check(self.ctx.hosts.current, value, client, self.ctx.now_ms);
        let mut retry = [0u8; 32];
        let (status, lines, reason) = match verdict {
            Verdict::Pass => {
                self.line.log.accepted = value;
                self.admitted = Admission::User;
                return false;
            }
            Verdict::Challenge(reason) => (401, rule.challenge(), reason),
            Verdict::Limited { retry_after } => {
                let mut w = Writer::new(&mut retry);
                w.put(b"Retry-After: ")
                    .num(u64::from(retry_after))
                    .put(b"\r\n");
                let n = w.written();
                (429, &retry[..n], Reason::RateLimited)
            }
        };
        self.ctx.counters.auth_failures[reason.index()].fetch_add(1, Relaxed);
        self.challenged(status, lines);
        true
    }
}

/// The `Authorization` value; two of them are one too many (RFC 9110 §5.3: it is not a
/// list), which the gate then sees as a malformed value.
fn authorization<'a>(fields: &[Header<'a>]) -> Option<&'a [u8]> {
    let mut found = fields
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case(b"authorization"));
    let first = found.next()?;
    Some(match found.next() {
        Some(_) => b"",
        None => first.value,
    })
}
