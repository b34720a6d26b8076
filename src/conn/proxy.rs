//! A request a `--proxy` rule matched: re-framed for the rule's upstream and answered
//! with what the upstream says (`relay.rs` holds the exchange).
//!
//! Input: the parsed request (steerd's strict parser has judged its framing), the index
//! of the rule among the site's rules, the connection's client address and trust.
//! Output: the request head written for the upstream and the connection set to
//! `Awaiting::Send` with an `Outgoing::Upstream` body, whose bytes the relay produces;
//! then, per turn, [`relay`] moves them to the client.
//!
//! The head sent upstream (RFC 9110 §7.6, RFC 9112 §3): the method and target as the
//! client sent them (an absolute-form target becomes origin-form), `HTTP/1.1`, every
//! end-to-end field in order, without the hop-by-hop ones (`http::hop`: `Connection`,
//! the fields it names, `Keep-Alive`, `TE`, `Trailer`, `Transfer-Encoding`, `Upgrade`,
//! `Proxy-*`), without `Content-Length` (steerd frames the body itself) and without the
//! client's `X-Forwarded-*` unless the peer is trusted (`--real-ip-from`, the trust the
//! log's client address has); then `X-Forwarded-For` (a trusted peer's list with the peer
//! appended, else the client's address), `X-Forwarded-Proto` and `X-Forwarded-Host`. A
//! `Connection` naming more than 16 fields is answered 400. The body is framed by steerd:
//! `Content-Length` as announced, or `Transfer-Encoding: chunked` (`relay/upload.rs`);
//! `Expect: 100-continue` is answered by steerd (one past `--max-body` is 413 at once)
//! and not forwarded.
//!
//! What is told of it: the log line's upstream time (the exchange's start to the client's
//! head, `logged::upstream_answered`), and one count by upstream and outcome
//! (`stats::proxy`): steerd's own answer in the upstream's place when the head is
//! produced, else at the end, relayed whole or cut short (a connection that ends first
//! counts its exchange cut short, `in_flight.rs`). The `--cors` and `--header` lines go
//! with the plan, for the client's head (`relay/head.rs`).

use super::in_flight::{After, Outgoing, Preamble, Response};
use super::record::Responder;
use super::relay::{Asked, Client, Pump, Upload, REQUEST_CAP};
use super::{logged, Awaiting, Budget, Conn, Ctx, Next};
use crate::http::hop::{is_hop_by_hop, ConnectionTokens};
use crate::http::{Body, Header, Method, Request};
use crate::site::rules::Out;
use crate::stats::proxy::Outcome;
use crate::timers::Kind;
use core::fmt::Write as _;
use core::sync::atomic::Ordering::Relaxed;
use rustix::fd::BorrowedFd;
use rustix::io::Errno;
use rustix::net::SendFlags;

impl Responder<'_, '_> {
    /// Forwards `req` by the rule at `rule` of the site's rules: the head for the
    /// upstream is written here (the relays keep it under a ticket), the exchange is
    /// started by the first [`relay`], which has the slot.
    #[inline(never)]
    pub(super) fn proxy(&mut self, req: &Request<'_, '_>, rule: usize) {
        if let Body::Length(n) = req.body {
            if n > self.ctx.max_body {
                // Refused before the upstream sees anything; the body is not read.
                self.after = After::Close { linger: true };
                return self.error_page(413);
            }
        }
        // The body is the exchange's to read: nothing is owed after the answer.
        let keep = req.keep_alive && !self.ctx.draining;
        self.after = After::keep_if(keep, req.minor);
        self.owed = 0;
        let fields = self.line.log.fields;
        let asked = Asked {
            head_method: req.method == Method::Head,
            minor: req.minor,
            keep,
            upload: match req.body {
                Body::None | Body::Length(0) => Upload::None,
                Body::Length(n) => Upload::Length(n),
                Body::Chunked => Upload::Chunked,
            },
            max_body: self.ctx.max_body,
            expect: req.expect_continue,
            upgrade: upgrade_asked(fields).is_some(),
            cors_len: self.line.cors.len(),
            idempotent: matches!(
                req.method,
                Method::Get
                    | Method::Head
                    | Method::Put
                    | Method::Delete
                    | Method::Options
                    | Method::Trace
            ),
        };
        let c = &*self.c;
        let lines = [self.line.cors, &self.ctx.site.headers[..]];
        let ticket = self.ctx.relays.plan(asked, lines, |area| {
            let len = request_head(req, fields, c, area).ok_or(400u16)?;
            Ok((rule, len))
        });
        logged::begin(self.c, self.ctx, 0, &self.line.log);
        let body = Outgoing::Upstream {
            slot: None,
            ticket,
            sent: 0,
            began_us: 0,
            tally: self.ctx.site.rules.get(rule).and_then(|r| r.counted),
        };
        self.c.awaiting = Awaiting::Send(self.response(Preamble::unsent(0, false), body));
    }
}

/// Starts the exchange planned under `ticket` for the request at the front of `inb`,
/// with the body bytes buffered behind its head.
fn start(slot: u32, ticket: u32, c: &mut Conn, inb: &[u8], ctx: &mut Ctx<'_>) {
    let date = *ctx.date.text();
    let head_len = match &c.awaiting {
        Awaiting::Send(r) => r.answered.min(c.in_len),
        _ => c.in_len,
    };
    let rules = &ctx.site.rules;
    let body = &inb[head_len..c.in_len];
    let began = logged::stamp(ctx);
    let took = ctx.relays.start(slot, ticket, rules, body, &date);
    // The body bytes taken go with the head once the answer is finished.
    if let Awaiting::Send(r) = &mut c.awaiting {
        r.answered = head_len + took;
        if let Outgoing::Upstream { began_us, .. } = &mut r.body {
            *began_us = began;
        }
    }
}

/// Writes the head for the upstream into `out`; `None` when it does not fit or the
/// request's `Connection` names too many fields.
fn request_head(
    req: &Request<'_, '_>,
    fields: &[Header<'_>],
    c: &Conn,
    out: &mut [u8],
) -> Option<usize> {
    let mut named = ConnectionTokens::new();
    for h in fields
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case(b"connection"))
    {
        named.add(h.value).ok()?;
    }
    let mut w = Out::new(out);
    w.put(req.method.as_str().as_bytes())?;
    w.put(b" ")?;
    w.put(origin_form(req.target()))?;
    w.put(b" HTTP/1.1\r\n")?;
    let trusted = c.forwarded;
    let mut own = [false; 3];
    for h in fields {
        let name = h.name;
        let xf = FORWARDED.iter().position(|f| name.eq_ignore_ascii_case(f));
        if is_hop_by_hop(name)
            || named.names(name)
            || name.eq_ignore_ascii_case(b"content-length")
            || name.eq_ignore_ascii_case(b"expect")
            || xf.is_some() && !trusted
        {
            continue;
        }
        // A trusted peer's X-Forwarded-For lines become one, written below.
        if xf == Some(0) {
            own[0] = true;
            continue;
        }
        if let Some(i) = xf {
            own[i] = true;
        }
        w.all(&[name, b": ", h.value, b"\r\n"])?;
    }
    let mut ip = arrayvec::ArrayString::<48>::new();
    if let Some(addr) = c.client {
        let _ = write!(ip, "{addr}");
    }
    w.put(b"X-Forwarded-For: ")?;
    let listed = fields
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case(FORWARDED[0]));
    for h in listed.filter(|_| own[0]) {
        w.all(&[h.value, b", "])?;
    }
    w.all(&[ip.as_bytes(), b"\r\n"])?;
    if !own[1] {
        w.put(b"X-Forwarded-Proto: http\r\n")?;
    }
    if let (false, Some(host)) = (own[2], req.host()) {
        w.all(&[b"X-Forwarded-Host: ", host, b"\r\n"])?;
    }
    if let Some(protocols) = upgrade_asked(fields) {
        w.all(&[b"Upgrade: ", protocols, b"\r\nConnection: upgrade\r\n"])?;
    }
    let mut digits = arrayvec::ArrayString::<20>::new();
    match req.body {
        Body::None => {}
        Body::Length(n) => {
            let _ = write!(digits, "{n}");
            w.all(&[b"Content-Length: ", digits.as_bytes(), b"\r\n"])?;
        }
        Body::Chunked => w.put(b"Transfer-Encoding: chunked\r\n")?,
    }
    w.put(b"\r\n")?;
    (w.len() <= REQUEST_CAP).then_some(w.len())
}

/// The protocols of the request's `Upgrade` field when its `Connection` names it (RFC
/// 9110 §7.8): the one hop-by-hop field forwarded, for the upstream to accept with 101.
fn upgrade_asked<'a>(fields: &[Header<'a>]) -> Option<&'a [u8]> {
    let mut named = ConnectionTokens::new();
    for h in fields
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case(b"connection"))
    {
        named.add(h.value).ok()?;
    }
    let upgrade = fields
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(b"upgrade"))?;
    named.names(b"upgrade").then_some(upgrade.value)
}

/// The `X-Forwarded-*` fields steerd sets, in the order of the flags of `own` above.
const FORWARDED: [&[u8]; 3] = [
    b"x-forwarded-for",
    b"x-forwarded-proto",
    b"x-forwarded-host",
];

/// An absolute-form target's path and query (`http://h/p?q` gives `/p?q`); any other
/// target as it is.
fn origin_form(target: &[u8]) -> &[u8] {
    if target.starts_with(b"/") || target == b"*" {
        return target;
    }
    let after_scheme = memchr::memmem::find(target, b"://").map_or(0, |i| i + 3);
    match memchr::memchr(b'/', &target[after_scheme..]) {
        Some(i) => &target[after_scheme + i..],
        None => b"/",
    }
}

/// What [`relay`] leaves the transition to do.
enum Relayed {
    /// The response is complete (its body now `Nothing`): finish it as any response.
    Done,
    /// Wait for the client's socket or the upstream's.
    Park,
    /// The turn's byte budget is spent.
    Yield,
    /// The response was cut short or the client is gone: close.
    Close,
}

/// [`relay`] for the transition: `None` when the response is complete (its body now
/// `Nothing`, finished by the next pass as any response), else what the loop does next.
/// Cold and out of line: the file path's transition carries only the call.
#[cold]
#[inline(never)]
pub(super) fn turn(
    slot: u32,
    c: &mut Conn,
    sock: (BorrowedFd<'_>, &[u8]),
    ctx: &mut Ctx<'_>,
    budget: &mut Budget,
) -> Option<Next> {
    match relay(slot, c, sock, ctx, budget) {
        Relayed::Done => None,
        Relayed::Park => Some(Next::Park),
        Relayed::Yield => Some(Next::Yield),
        Relayed::Close => Some(Next::Close),
    }
}

/// Moves a relayed response to the client of `slot` as far as both sockets allow (its
/// exchange started first, on the first call).
fn relay(
    slot: u32,
    c: &mut Conn,
    (fd, inb): (BorrowedFd<'_>, &[u8]),
    ctx: &mut Ctx<'_>,
    budget: &mut Budget,
) -> Relayed {
    if let Awaiting::Send(Response {
        body:
            Outgoing::Upstream {
                slot: id @ None,
                ticket,
                ..
            },
        ..
    }) = &mut c.awaiting
    {
        *id = Some(slot);
        let ticket = *ticket;
        start(slot, ticket, c, inb, ctx);
    }
    let Awaiting::Send(r) = &mut c.awaiting else {
        return Relayed::Close;
    };
    let Outgoing::Upstream { sent, .. } = &mut r.body else {
        return Relayed::Close;
    };
    let date = *ctx.date.text();
    let mut progressed = false;
    loop {
        if budget.bytes_spent() {
            return Relayed::Yield;
        }
        let mut client = Client {
            fd,
            readable: c.readable,
        };
        let rules = &ctx.site.rules;
        let pumped = ctx.relays.pump(slot, *sent, (&date, rules), &mut client);
        c.readable = client.readable;
        let moved = match pumped {
            Pump::Bytes(b) => rustix::net::send(fd, b, SendFlags::NOSIGNAL),
            // A tunnel's pipe reached the client's socket itself: counted as a send.
            Pump::Spliced(n) => Ok(n),
            Pump::Blocked => Err(Errno::AGAIN),
            Pump::Wait => {
                // Waiting on the upstream (or the body's next bytes): its deadline runs.
                if ctx.timers.kind(slot).is_some() {
                    ctx.timers.disarm(slot);
                }
                if ctx.relays.take_progress(slot) || !ctx.relays.armed(slot) {
                    ctx.relays.arm(slot, ctx.now_ms);
                }
                note_news(slot, c, ctx);
                return Relayed::Park;
            }
            Pump::Finished => {
                ended(slot, c, ctx, Outcome::Relayed);
                return Relayed::Done;
            }
            Pump::Cut => {
                ended(slot, c, ctx, Outcome::CutShort);
                return Relayed::Close;
            }
        };
        match moved {
            Ok(n) => {
                progressed = true;
                *sent += n as u64;
                r.body_sent += n as u64;
                budget.spend_bytes(n);
                ctx.counters.bytes_sent.fetch_add(n as u64, Relaxed);
            }
            Err(Errno::INTR) => {}
            Err(Errno::AGAIN) => {
                c.writable = false;
                ctx.relays.disarm(slot);
                if progressed || ctx.timers.kind(slot) != Some(Kind::Send) {
                    ctx.timers.arm(slot, Kind::Send, ctx.now_ms);
                }
                note_news(slot, c, ctx);
                return Relayed::Park;
            }
            Err(_) => return Relayed::Close,
        }
    }
}

/// The exchange of `slot` ended (whole, `Relayed`, or `CutShort`): its news noted, its
/// outcome counted (unless steerd's own answer was), the body bytes the log shows made
/// the body's alone, the exchange given back (the response's body is then `Nothing`).
fn ended(slot: u32, c: &mut Conn, ctx: &mut Ctx<'_>, outcome: Outcome) {
    note_news(slot, c, ctx);
    if let Awaiting::Send(r) = &mut c.awaiting {
        if let Outgoing::Upstream { tally, .. } = r.body {
            count(ctx, tally, outcome);
        }
        r.body_sent = r.body_sent.saturating_sub(ctx.relays.head_bytes(slot));
        r.body = Outgoing::Nothing;
    }
    ctx.relays.release(slot, ctx.now_ms);
}

/// Counts one forwarded request to the upstream at `tally` (none: not counted apart).
fn count(ctx: &Ctx<'_>, tally: Option<u8>, outcome: Outcome) {
    if let Some(place) = tally {
        ctx.counters.proxy_responses.count(place, outcome);
    }
}

/// The upstream's head was turned into the client's (or steerd's own answer made in its
/// place): count the response (and steerd's answer's outcome), put its status and the
/// upstream's time in the log line, and close after it when it must.
fn note_news(slot: u32, c: &mut Conn, ctx: &mut Ctx<'_>) {
    let Some((status, close)) = ctx.relays.take_news(slot) else {
        return;
    };
    let class = usize::from(status / 100).clamp(1, 5) - 1;
    ctx.counters.responses[class].fetch_add(1, Relaxed);
    logged::restatus(c, status);
    let own = ctx.relays.own_outcome(slot);
    let Awaiting::Send(r) = &mut c.awaiting else {
        return;
    };
    if close {
        // A body may be left unread (a refusal): linger rather than reset.
        r.after = After::Close { linger: true };
    }
    let Outgoing::Upstream {
        began_us, tally, ..
    } = &mut r.body
    else {
        return;
    };
    let began = *began_us;
    if let Some(outcome) = own {
        // steerd answered in the upstream's place: that is the outcome.
        count(ctx, tally.take(), outcome);
    }
    logged::upstream_answered(c, logged::stamp(ctx).saturating_sub(began));
}
