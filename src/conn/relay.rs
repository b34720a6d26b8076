//! The exchanges with upstreams: one per connection slot whose request a `--proxy` rule
//! forwards, kept in a per-worker side table indexed by slot (a connection serving files
//! pays nothing for it: its `Conn` holds only `Outgoing::Upstream`).
//!
//! Input: the re-framed request head (`proxy.rs` writes it into [`Relays::start`]'s
//! buffer), the upstream's readiness from epoll, and how many bytes the client has taken.
//! Output: the bytes for the client ([`Pump::Bytes`]): the response head steerd frames
//! from the upstream's (status and reason kept, end-to-end fields, its own framing
//! fields), then the body as it arrives, or a 502/504 page when no head came. Nothing
//! waits: the upstream socket is nonblocking and registered edge-triggered in the
//! worker's epoll under the client's slot with [`Token::UPSTREAM`] set; an event drives
//! the client's connection, which pumps its exchange.
//!
//! Framing (RFC 9112 §6.3, §7.1): a `Content-Length` body is relayed counted; a chunked
//! one is decoded (`http::chunked`) and chunked again, so the client never sees a chunk
//! the decoder did not accept; a body delimited by the upstream's close is chunked to an
//! HTTP/1.1 client (the connection persists) and sent as it is, then closed, to HTTP/1.0.
//! A body cut short by the upstream ends the client's connection without the last chunk
//! or the missing bytes: never a truncated body that looks complete. An interim 1xx
//! answer (but 101) is dropped.
//!
//! Connections: an exchange takes an idle connection to its upstream from the worker's
//! pool (`pool.rs`) or connects a fresh one, and gives it back when it ended cleanly
//! (`open.rs` says when); one that fails before any response is retried once on a fresh
//! connection when that is safe (`machine.rs`). `--proxy-max-conns` counts exchanges in
//! flight, not idle connections, which the pool bounds itself.
//!
//! Memory: the buffers of an exchange (the request head, the upstream's bytes, the
//! client's, the operator's lines for the client's head) are taken from a spare list and
//! given back at its end, so steady proxying allocates nothing.

mod body;
mod head;
mod limits;
mod machine;
mod open;
mod pool;
mod splice;
mod tunnel;
mod upload;

pub(crate) use upload::{Client, Upload};

use crate::event::Token;
use crate::http::chunked::Dechunk;
use crate::http::upstream_head::{RespFraming, MAX_RESPONSE_HEAD};
use crate::site::rules::Rule;
use crate::stats::proxy::Outcome;
use pool::Pool;
use rustix::fd::OwnedFd;

/// Bytes of the request buffer: the longest head steerd reads with the fields it adds
/// (`X-Forwarded-*`, framing), then the body bytes the receive area held behind it,
/// staged for the upstream (chunked again: no longer than they came).
pub(crate) const REQUEST_CAP: usize = 2 * super::IN_CAP + 1024;
/// Bytes read from the upstream at most at once (the longest response head).
const UP_CAP: usize = MAX_RESPONSE_HEAD;
/// Bytes for the client: a head re-framed from one of `UP_CAP`, or a chunk of that much
/// data with its size line and CRLF.
const DOWN_CAP: usize = UP_CAP + 256;
/// Spare buffer sets kept for the next exchanges.
const SPARE_MAX: usize = 64;

/// An exchange's buffers.
struct Bufs {
    request: Box<[u8]>,
    up: Box<[u8]>,
    down: Box<[u8]>,
    /// The operator's lines for the client's head (`head::OwnLines`; kept with its
    /// capacity, so a steady run allocates nothing).
    lines: Vec<u8>,
}

impl Bufs {
    fn new() -> Bufs {
        Bufs {
            request: vec![0; REQUEST_CAP].into_boxed_slice(),
            up: vec![0; UP_CAP].into_boxed_slice(),
            down: vec![0; DOWN_CAP].into_boxed_slice(),
            lines: Vec::new(),
        }
    }
}

/// Where an exchange is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The nonblocking connect is under way.
    Connecting,
    /// The request head is being written.
    Request,
    /// The response head is awaited.
    Head,
    /// The body is relayed.
    Body,
    /// After a 101: bytes both ways until either side closes (`tunnel.rs`).
    Tunnel,
    /// Everything for the client is produced.
    Done,
    /// The response was cut short after its head went out.
    Cut,
    /// A reused connection failed before any response: a fresh one is wanted.
    Retry,
}

/// What the planner says about the request an exchange forwards.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Asked {
    /// The request is HEAD (the answer has no body whatever it says).
    pub(crate) head_method: bool,
    /// The client's HTTP minor version.
    pub(crate) minor: u8,
    /// The client's connection may persist after the response.
    pub(crate) keep: bool,
    /// The body the request announced.
    pub(crate) upload: Upload,
    /// `--max-body`.
    pub(crate) max_body: u64,
    /// `Expect: 100-continue`: steerd says `100 Continue` before it reads the body.
    pub(crate) expect: bool,
    /// The request asks for an upgrade (`Upgrade`, named by `Connection`).
    pub(crate) upgrade: bool,
    /// Bytes of `--cors` lines at the front of the operator's lines ([`Relays::plan`]).
    pub(crate) cors_len: usize,
    /// The method is idempotent (RFC 9110 §9.2.2): the request may be sent again.
    pub(crate) idempotent: bool,
}

impl Asked {
    /// What nothing was asked (an exchange started without a plan answers 500).
    fn none() -> Asked {
        Asked {
            head_method: false,
            minor: 1,
            keep: false,
            upload: Upload::None,
            max_body: 0,
            expect: false,
            upgrade: false,
            cors_len: 0,
            idempotent: false,
        }
    }
}

/// One exchange with an upstream.
struct Exchange {
    /// The upstream socket (`None`: the exchange failed before one was connected).
    fd: Option<OwnedFd>,
    generation: u32,
    phase: Phase,
    readable: bool,
    writable: bool,
    bufs: Bufs,
    request_len: usize,
    request_sent: usize,
    up_len: usize,
    down_len: usize,
    /// Bytes ever put in `down` (the client's count of bytes taken runs against it).
    produced: u64,
    asked: Asked,
    framing: RespFraming,
    /// Body bytes still to come under `Content-Length`.
    left: u64,
    dechunk: Dechunk,
    /// The body goes to the client chunked.
    chunk_out: bool,
    /// The status and persistence the client's head says, once produced (taken once).
    news: Option<(u16, bool)>,
    /// The client's head bytes (not body bytes, for the log).
    head_bytes: u64,
    /// The upstream was read from since the last look (re-arms its deadline).
    progressed: bool,
    timed_out: bool,
    /// The request body still to read (`upload.rs`).
    upload: Upload,
    body_dechunk: Dechunk,
    /// Decoded bytes of a chunked request body so far.
    body_total: u64,
    /// The last chunk is staged.
    last_staged: bool,
    /// A read of a chunked body took bytes past its end: close the client after.
    overread: bool,
    /// The response head (or steerd's error page) was produced.
    head_out: bool,
    /// The request head has begun to go out (`upload.rs`: not before the body that fits).
    head_sent: bool,
    /// The upstream it is counted in flight to (`Relays::admit`; 0: none).
    counted: usize,
    /// When it times out without progress (turn clock; 0: not armed).
    deadline_ms: u64,
    /// What steerd's own answer in place of the upstream's says of the exchange.
    own: Option<Outcome>,
    /// The index of its rule (a retry opens that rule's upstream again).
    rule: usize,
    /// The connection came from the pool (a failure before a response may be retried).
    reused: bool,
    /// The request buffer holds the whole request, head and body, from its start.
    whole: bool,
    /// A byte of a response came on this connection.
    answered: bool,
    /// The upstream's head lets its connection persist.
    keep_up: bool,
    /// A tunnel's pipes (made on first use, closed with the exchange).
    pipes: splice::Pipes,
}

/// What [`Relays::pump`] has for the client.
pub(crate) enum Pump<'a> {
    /// These bytes are next.
    Bytes(&'a [u8]),
    /// A tunnel moved these bytes to the client itself (through its pipe).
    Spliced(usize),
    /// A tunnel's bytes wait in its pipe for the client's socket, which would block.
    Blocked,
    /// Nothing until the upstream is ready again.
    Wait,
    /// The response is complete.
    Finished,
    /// The response was cut short: close the client's connection.
    Cut,
}

/// The worker's exchanges, by connection slot.
#[derive(Default)]
pub(crate) struct Relays {
    epoll: Option<OwnedFd>,
    by_slot: Vec<Option<Exchange>>,
    spare: Vec<Bufs>,
    generation: u32,
    /// `--proxy-max-conns`: exchanges in flight to one upstream.
    limit: u32,
    /// Exchanges in flight by upstream (the address of its rule's `Upstream`, which
    /// lives as long as the loop's site rules).
    in_flight: Vec<(usize, u32)>,
    /// `--proxy-timeout` in milliseconds.
    timeout_ms: u64,
    /// Exchanges planned and not started yet (normally one, for a moment).
    planned: Vec<Planned>,
    /// The last ticket given.
    ticket: u32,
    /// Idle connections to upstreams.
    pool: Pool,
}

/// An exchange planned: its head written, its slot not known yet.
struct Planned {
    ticket: u32,
    bufs: Bufs,
    /// The rule's index and the head's length, or the status to answer instead.
    to: Result<(usize, usize), u16>,
    asked: Asked,
}

impl Relays {
    /// Relays registering upstream sockets in `epoll` (`None`: no site forwards), with at
    /// most `limit` exchanges in flight to one upstream.
    pub(crate) fn new(epoll: Option<OwnedFd>, limit: u32, timeout_ms: u64) -> Relays {
        Relays {
            epoll,
            limit,
            timeout_ms,
            ..Relays::default()
        }
    }

    /// Slots the table has room for (every slot below it may hold an exchange).
    pub(crate) fn slots(&self) -> u32 {
        self.by_slot.len() as u32
    }

    /// Plans an exchange: `write` puts the upstream's head in its request buffer and says
    /// which rule and how long (or which status to answer instead); `lines` are the
    /// operator's lines for the client's head (`--cors`'s, `asked.cors_len` bytes, then
    /// `--header`'s); the ticket it is kept under until [`Relays::start`].
    pub(crate) fn plan(
        &mut self,
        asked: Asked,
        lines: [&[u8]; 2],
        write: impl FnOnce(&mut [u8]) -> Result<(usize, usize), u16>,
    ) -> u32 {
        let mut bufs = self.spare.pop().unwrap_or_else(Bufs::new);
        bufs.lines.clear();
        lines.iter().for_each(|l| bufs.lines.extend_from_slice(l));
        let to = write(&mut bufs.request);
        self.ticket = self.ticket.wrapping_add(1);
        let ticket = self.ticket;
        self.planned.push(Planned {
            ticket,
            bufs,
            to,
            asked,
        });
        ticket
    }

    /// A planned exchange that will not start (its connection ended first).
    pub(crate) fn forget(&mut self, ticket: u32) {
        if let Some(i) = self.planned.iter().position(|p| p.ticket == ticket) {
            let p = self.planned.swap_remove(i);
            self.spare.push(p.bufs);
        }
    }

    /// Starts the exchange planned under `ticket` for `slot`: with its rule's upstream
    /// (of `rules`), or, for a status planned instead or an upstream that cannot be
    /// reached (502), with steerd's own answer. `body` holds the body bytes already read
    /// (behind the head in the receive area); returns how many of them it took.
    pub(crate) fn start(
        &mut self,
        slot: u32,
        ticket: u32,
        rules: &[Rule],
        body: &[u8],
        date: &[u8; 29],
    ) -> usize {
        let planned = match self.planned.iter().position(|p| p.ticket == ticket) {
            Some(i) => Some(self.planned.swap_remove(i)),
            None => None,
        };
        let (bufs, to, asked) = match planned {
            Some(p) => (p.bufs, p.to, p.asked),
            None => (Bufs::new(), Err(500), Asked::none()),
        };
        let rule = to.map_or(0, |(rule, _)| rule);
        let upstream = |(rule, len): (usize, usize)| {
            let up = rules.get(rule).and_then(|r| r.upstream.as_ref());
            up.map(|u| (u, len)).ok_or(500u16)
        };
        let to = to.and_then(upstream);
        let token = self.token(slot);
        // Past `--proxy-max-conns` to this upstream: 503, nothing sent.
        let key = to.map_or(0, |(u, _)| core::ptr::from_ref(u) as usize);
        let to = match to {
            Ok(_) if !self.admit(key) => Err(503),
            other => other,
        };
        let counted = if to.is_ok() { key } else { 0 };
        let opened = to.and_then(|(upstream, len)| Ok((self.open(upstream, key, token)?, len)));
        let (fd, reused, token, len, failed) = match opened {
            Ok(((fd, reused, token), len)) => (Some(fd), reused, token, len, None),
            Err(status) => (None, false, token, 0, Some(status)),
        };
        if self.by_slot.len() <= slot as usize {
            self.by_slot.resize_with(slot as usize + 1, || None);
        }
        let x = self.by_slot[slot as usize].insert(Exchange {
            fd,
            generation: token.generation,
            phase: match reused {
                true => Phase::Request,
                false => Phase::Connecting,
            },
            readable: false,
            writable: reused,
            bufs,
            request_len: len,
            request_sent: 0,
            up_len: 0,
            down_len: 0,
            produced: 0,
            asked,
            framing: RespFraming::None,
            left: 0,
            dechunk: Dechunk::new(),
            chunk_out: false,
            news: None,
            head_bytes: 0,
            progressed: false,
            timed_out: false,
            upload: asked.upload,
            body_dechunk: Dechunk::new(),
            body_total: 0,
            last_staged: false,
            overread: false,
            head_out: false,
            head_sent: false,
            counted,
            deadline_ms: 0,
            own: None,
            rule,
            reused,
            whole: true,
            answered: false,
            keep_up: false,
            pipes: splice::Pipes::default(),
        });
        if let Some(status) = failed {
            x.fail(status, date);
            return 0;
        }
        let took = x.feed(body, date);
        if asked.expect && !x.body_read() && !x.head_out {
            x.put(b"HTTP/1.1 100 Continue\r\n\r\n");
            x.head_bytes = x.produced;
        }
        took
    }

    /// An event for an upstream socket: `Some(slot)` when it is the live exchange's, to
    /// drive that slot.
    pub(crate) fn note_ready(
        &mut self,
        token: Token,
        readable: bool,
        writable: bool,
    ) -> Option<u32> {
        let slot = token.slot & !Token::UPSTREAM;
        let live = self.by_slot.get_mut(slot as usize).and_then(Option::as_mut);
        let Some(x) = live.filter(|x| x.generation == token.generation) else {
            // An idle connection the upstream closed, or wrote to unasked: closed now.
            if readable {
                self.pool.drop_token(token);
            }
            return None;
        };
        x.readable |= readable;
        x.writable |= writable;
        Some(slot)
    }

    /// Ends the exchange of `slot`, keeping its buffers; its upstream connection goes to
    /// the pool when it ended cleanly, else closes.
    pub(crate) fn release(&mut self, slot: u32, now_ms: u64) {
        let Some(mut x) = self.by_slot.get_mut(slot as usize).and_then(Option::take) else {
            return;
        };
        Relays::park(&mut self.pool, (slot, &mut x), now_ms);
        self.leave(x.counted);
        if self.spare.len() < SPARE_MAX {
            self.spare.push(x.bufs);
        }
    }

    /// The status and persistence of the client's head, once it is produced.
    pub(crate) fn take_news(&mut self, slot: u32) -> Option<(u16, bool)> {
        self.exchange(slot)?.news.take()
    }

    /// The outcome of steerd's own answer, when it answered in the upstream's place.
    pub(crate) fn own_outcome(&self, slot: u32) -> Option<Outcome> {
        let x = self.by_slot.get(slot as usize).and_then(Option::as_ref);
        x.and_then(|x| x.own)
    }

    /// Whether the upstream was read from since the last call.
    pub(crate) fn take_progress(&mut self, slot: u32) -> bool {
        self.exchange(slot)
            .is_some_and(|x| core::mem::take(&mut x.progressed))
    }

    /// Bytes of the client's head in what was produced.
    pub(crate) fn head_bytes(&self, slot: u32) -> u64 {
        let x = self.by_slot.get(slot as usize).and_then(Option::as_ref);
        x.map_or(0, |x| x.head_bytes)
    }

    fn exchange(&mut self, slot: u32) -> Option<&mut Exchange> {
        self.by_slot.get_mut(slot as usize)?.as_mut()
    }

    /// Closes the idle upstream connections kept too long (the once-a-second sweep).
    pub(crate) fn expire_idle(&mut self, now_ms: u64) {
        self.pool.expire(now_ms);
    }

    /// The next bytes for the client of `slot`, which has taken `sent` bytes so far;
    /// moves the exchange with the upstream as far as it goes without waiting (`rules`:
    /// the site's, whose upstream a retry connects to again).
    pub(crate) fn pump(
        &mut self,
        slot: u32,
        sent: u64,
        (date, rules): (&[u8; 29], &[Rule]),
        client: &mut Client<'_>,
    ) -> Pump<'_> {
        let Some(x) = self.exchange(slot) else {
            return Pump::Cut;
        };
        if sent >= x.produced {
            x.down_len = 0;
            x.step(date, client);
            if x.phase == Phase::Retry {
                self.reopen(slot, rules, date);
                if let Some(x) = self.exchange(slot) {
                    x.step(date, client);
                }
            }
        }
        let Some(x) = self.by_slot.get_mut(slot as usize).and_then(Option::as_mut) else {
            return Pump::Cut;
        };
        let unsent = (x.produced.saturating_sub(sent)) as usize;
        if x.pipes.spliced > 0 {
            let n = core::mem::take(&mut x.pipes.spliced);
            x.produced += n as u64;
            return Pump::Spliced(n);
        }
        if core::mem::take(&mut x.pipes.blocked) {
            return Pump::Blocked;
        }
        match x.phase {
            _ if unsent > 0 => Pump::Bytes(&x.bufs.down[x.down_len - unsent..x.down_len]),
            Phase::Done => Pump::Finished,
            Phase::Cut => Pump::Cut,
            _ => Pump::Wait,
        }
    }
}
