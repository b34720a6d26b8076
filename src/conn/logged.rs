//! What the access log needs to remember about a response while it is being written,
//! and the line written when it ends (finished, or cut short).
//!
//! Input: at planning time, the request as the log shows it (slices of the receive area
//! the call works in) and the client address; at the end, the body bytes actually
//! written. Output: one [`Record`] handed to the worker's log, and the cut-short counter
//! or, for a response finished whole, its response time (`stats::latency`, on the turn
//! clock: no clock read here). No allocation: the request's bytes stay at the front of
//! the receive area until its response is finished (the next head is not parsed before
//! that anyway), so only offsets into that area are kept, not copies (between calls the
//! bytes wait at the same offsets in the slot's own region, `held.rs`). A spilled
//! preamble sits at the back of the receive area ([`spill_at`]); a field reaching past
//! its start is cut there.
//!
//! The client is the connection's own (the peer, or what its PROXY header said), or, for
//! a trusted peer without `--proxy-protocol`, the one `X-Forwarded-For` names (its last
//! address, or with `--real-ip-recursive` the first from the right that is not a trusted
//! proxy: `client_addr::forwarded`).

use super::in_flight::Response;
use super::{Awaiting, Conn, Ctx, IN_CAP};
use crate::auth::basic::{self, DECODED_MAX};
use crate::client_addr::forwarded_for;
use crate::config::LogFormat;
use crate::http::{Header, Method};
use crate::log_line::{Record, RequestLine};
use core::num::NonZeroU16;
use core::sync::atomic::Ordering::Relaxed;
use std::net::IpAddr;

/// Where the preamble of `r`, when spilled (too long for the preamble area), starts in
/// the receive area: at its back, so the request in front of it, which the log reads,
/// keeps all the room the preamble leaves; the end of the area when nothing is spilled.
pub(crate) fn spill_at(r: &Response) -> usize {
    match r.preamble.spilled {
        true => IN_CAP.saturating_sub(r.preamble.len),
        false => IN_CAP,
    }
}

/// A part of the receive area.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    at: u16,
    len: u16,
}

const _: () = assert!(IN_CAP <= u16::MAX as usize);

impl Span {
    /// Where `part` lies in `area` (empty if it is not inside).
    fn of(area: &[u8], part: &[u8]) -> Span {
        let at = (part.as_ptr() as usize).wrapping_sub(area.as_ptr() as usize);
        if at > area.len() || part.len() > area.len() - at {
            return Span::default();
        }
        Span {
            at: at as u16,
            len: part.len() as u16,
        }
    }

    /// The bytes of this span, cut at the end of `area`.
    fn get(self, area: &[u8]) -> &[u8] {
        let at = usize::from(self.at).min(area.len());
        let end = (at + usize::from(self.len)).min(area.len());
        &area[at..end]
    }
}

/// The request as the log will show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LineSpan {
    /// A parsed request line.
    Parsed {
        /// Method (one byte where its token's slice took sixteen: a slot's size is held).
        method: Method,
        /// Request-target.
        target: Span,
        /// Minor HTTP version.
        minor: u8,
    },
    /// The first line of a request that did not parse.
    Raw(Span),
}

/// A response being written, as its log line will tell it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pending {
    status: u16,
    line: LineSpan,
    referer: Option<Span>,
    user_agent: Option<Span>,
    /// The `Authorization` value `--basic-auth` accepted.
    accepted: Option<Span>,
    client: Option<IpAddr>,
    /// One more than the index of the rule that answered, in `SiteRules::rules` (two
    /// bytes where `Option<u16>` takes four: a connection slot's size is held,
    /// `conn.rs`).
    rule: Option<NonZeroU16>,
    /// A forwarded request's upstream time in microseconds ([`upstream_answered`];
    /// `u32::MAX`: not known).
    upstream_us: u32,
}

/// The request of a response being planned, as the log shows it: slices of `area` (the
/// receive area).
#[derive(Clone, Copy)]
pub(crate) struct LoggedRequest<'a> {
    /// The receive area the slices below point into.
    pub(crate) area: &'a [u8],
    /// The request line.
    pub(crate) line: RequestLine<'a>,
    /// Its field lines (none for a request that did not parse).
    pub(crate) fields: &'a [Header<'a>],
    /// The `Authorization` value `--basic-auth` accepted (the log shows its user).
    pub(crate) accepted: Option<&'a [u8]>,
    /// The index of the `--redirect`/`--rewrite` that answered.
    pub(crate) rule: Option<u16>,
}

fn field<'a>(fields: &[Header<'a>], name: &[u8]) -> Option<&'a [u8]> {
    fields
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))
        .map(|h| h.value)
}

/// A microsecond clock reading, taken only for the format that shows durations.
pub(crate) fn stamp(ctx: &Ctx<'_>) -> u64 {
    if ctx.log.format() != LogFormat::Json || !ctx.log.enabled() {
        return 0;
    }
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64).saturating_mul(1_000_000) + (t.tv_nsec as u64) / 1000
}

/// A response to `req` with `status` starts: remember what its line will say.
#[inline]
pub(super) fn begin(c: &mut Conn, ctx: &Ctx<'_>, status: u16, req: &LoggedRequest<'_>) {
    if ctx.log.enabled() {
        remember(c, ctx, status, req);
    }
}

/// [`begin`] with the log on.
#[inline(never)]
fn remember(c: &mut Conn, ctx: &Ctx<'_>, status: u16, req: &LoggedRequest<'_>) {
    if c.started_us == 0 {
        c.started_us = stamp(ctx);
    }
    let span = |part: &[u8]| Span::of(req.area, part);
    let line = match req.line {
        RequestLine::Parsed {
            method,
            target,
            minor,
        } => LineSpan::Parsed {
            method,
            target: span(target),
            minor,
        },
        RequestLine::Raw(raw) => LineSpan::Raw(span(raw)),
    };
    let forwarded = c
        .forwarded
        .then(|| forwarded_for(req.fields, ctx.forwarded))
        .flatten();
    c.pending = Some(Pending {
        status,
        line,
        referer: field(req.fields, b"referer").map(span),
        user_agent: field(req.fields, b"user-agent").map(span),
        accepted: req.accepted.map(span),
        client: forwarded.or(c.client),
        rule: req.rule.and_then(|i| NonZeroU16::new(i.wrapping_add(1))),
        upstream_us: u32::MAX,
    });
}

/// The status of the response in flight on `c`, learnt after it was planned (a relayed
/// response's, from its upstream).
pub(super) fn restatus(c: &mut Conn, status: u16) {
    if let Some(p) = &mut c.pending {
        p.status = status;
    }
}

/// The head of the forwarded request in flight on `c` came (or steerd's own answer in its
/// place), `us` microseconds after its exchange began: its log line shows it.
pub(super) fn upstream_answered(c: &mut Conn, us: u64) {
    if let Some(p) = &mut c.pending {
        p.upstream_us = us.min(u64::from(u32::MAX - 1)) as u32;
    }
}

/// The response in flight on `c` ended (`cut_short`: before all of it was written):
/// count it (cut short, or its response time from the turn that planned it to this one)
/// and write its line. `inb` is the receive area holding the request. The caller then moves `c` out
/// of `Awaiting::Send`, so a response ends once. Inlined: with the log off (nothing
/// pending) this is a few tests and the histogram's adds, not a call.
#[inline]
pub(super) fn end(c: &mut Conn, inb: &[u8], ctx: &mut Ctx<'_>, cut_short: bool) {
    let Awaiting::Send(r) = &c.awaiting else {
        return;
    };
    if cut_short {
        ctx.counters.cut_short.fetch_add(1, Relaxed);
    } else {
        let ms = ctx.now_ms.saturating_sub(r.planned_ms);
        ctx.counters.latency.record(ms);
    }
    if c.pending.is_some() {
        write_line(c, inb, ctx, cut_short);
    }
}

/// The pending line of a response that ended, written to the log.
#[inline(never)]
fn write_line(c: &mut Conn, inb: &[u8], ctx: &mut Ctx<'_>, cut_short: bool) {
    let (Some(p), Awaiting::Send(r)) = (c.pending.take(), &c.awaiting) else {
        return;
    };
    let area = &inb[..inb.len().min(spill_at(r))];
    let request = match p.line {
        LineSpan::Parsed {
            method,
            target,
            minor,
        } => RequestLine::Parsed {
            method,
            target: target.get(area),
            minor,
        },
        LineSpan::Raw(raw) => RequestLine::Raw(raw.get(area)),
    };
    let started = core::mem::take(&mut c.started_us);
    let rule = (p.rule).and_then(|i| ctx.site.rules.get(usize::from(i.get() - 1)));
    let forwarded = rule.filter(|r| r.upstream.is_some());
    let mut rec = Record {
        client: p.client,
        request,
        status: p.status,
        body_bytes: r.body_sent,
        referer: p.referer.map(|s| s.get(area)),
        user_agent: p.user_agent.map(|s| s.get(area)),
        user: None,
        rule: rule.map(|r| r.source.as_bytes()),
        upstream: forwarded.map(|r| r.upstream_name.as_bytes()),
        upstream_us: (p.upstream_us != u32::MAX).then_some(u64::from(p.upstream_us)),
        host: (ctx.hosts.names.get(usize::from(c.host))).map(|n| n.as_bytes()),
        worker: ctx.worker,
        cpu: ctx.cpu,
        local: c.local,
        duration_us: stamp(ctx).saturating_sub(started),
        cut_short,
    };
    match p.accepted {
        None => ctx.log.record(&rec, ctx.now_ms),
        Some(value) => {
            // The decoding room is made only for a request `--basic-auth` accepted.
            let mut decoded = [0u8; DECODED_MAX];
            rec.user = basic::decode(value.get(area), &mut decoded).map(|(user, _)| user);
            ctx.log.record(&rec, ctx.now_ms);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_point_into_the_area_or_nowhere() {
        let area = b"GET /a HTTP/1.1\r\n".to_vec();
        let s = Span::of(&area, &area[4..6]);
        assert_eq!(s.get(&area), b"/a");
        assert_eq!(s.get(&area[..5]), b"/", "cut at the end of a shorter area");
        let elsewhere = b"/a".to_vec();
        assert_eq!(Span::of(&area, &elsewhere).get(&area), b"");
        assert_eq!(Span::of(&area, &area[17..]).get(&area), b"");
    }
}
