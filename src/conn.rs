//! The connection state machine: one enum named after what the connection waits for, and
//! one transition function, [`advance`], that moves it as far as the socket allows.
//!
//! Names: one thing each, in identifiers and comments here and in `conn/`:
//! - the *head* is a request's head (request line and fields; the parser's
//!   `find_head_end`, [`MAX_HEAD`]), never the response's;
//! - the *preamble* is a response's status line and header fields (`http::response`
//!   builds it from a `ResponseHead` with `write_head`; its size limits keep the
//!   `HEAD_` names there and in `SiteRules::head_area`);
//! - the *preamble area* is where a preamble is built and held: the front of the working
//!   area and of each slot's region;
//! - the *spill* is the worker's area for a preamble too long for the preamble area
//!   (only a 301 with a long target, [`SPILL_CAP`]); a *spilled* preamble is then moved
//!   to the back of the receive area (`logged::spill_at`) and sent from there;
//! - *sent* counts the preamble's bytes written (`Preamble::sent`), *body_sent* the
//!   body's.
//!
//! Input: a connection slot (its socket, its state, and its page-aligned region of the
//! loop's arena), the loop's working area (laid out as a region is: a preamble area
//! of 1 KiB, more with long operator lines (see [`IN_CAP`]), then a 16 KiB receive area;
//! one per loop, where every call reads its requests and builds its preambles, while a
//! slot's own region receives only what outlives a call: a head in pieces, a pipelined
//! rest, an unsent preamble, the request bytes a pending log line reads; `held.rs`),
//! readiness hints from epoll, and the worker's shared
//! [`Ctx`] (root, file cache, cached Date, counters, access log, deadlines). Output: bytes
//! written to the socket, and a [`Next`] telling the loop to park the slot or close it.
//! It does not accept, poll or own the table; `serve_loop` does.
//!
//! Rules (RFC 9112 §9.3 persistence, §9.3.2 pipelining, §9.6 closing; RFC 9110 §9.3.1):
//! - requests are answered strictly in order: the next buffered head is parsed only once
//!   the previous response is completely written;
//! - a body that is not forwarded is read and discarded, never parsed as a request: one
//!   announced by Content-Length exactly, after the response, before the next head; a
//!   chunked one before the response, through the strict decoder, since its framing
//!   decides the answer (`discard.rs`: a bad chunk is 400); past 1 MiB a GET/HEAD is
//!   refused with 413 and the connection closes at once, unread, another method's
//!   answer closes after a linger (`respond.rs`);
//! - HTTP/1.0 without keep-alive and `Connection: close` close after the response;
//! - after an error that must close (400, 413, 414, 431, 505, framing errors) the write
//!   side is shut, and the connection lingers reading and discarding input until the peer
//!   closes or the linger timeout fires, so the client reads the answer instead of a reset;
//! - with `--proxy-protocol` a connection first waits in `Proxy` for its PROXY header
//!   (haproxy's v1 or v2, in as many pieces as it comes); a bad or truncated one closes
//!   without a response;
//! - a response's access-log line is written when it is finished, or by [`abandon`] when
//!   the connection ends before that (cut short), with the body bytes really written; the
//!   request's bytes stay in the receive area until then (`logged.rs`).
//!
//! The response in flight is one value inside `Awaiting::Send` (`in_flight.rs`: its
//! preamble's length, spill and bytes sent, the body with its cache pin, how the connection goes on,
//! the request's unread body and head), as hyper's `Writing::Body(Encoder)` carries its
//! encoder; a body still to discard exists only as `Awaiting::Body { left }` (after the
//! answer) or `Awaiting::Chunked` (before it). Planning
//! builds that value: a `Responder` (`record.rs`) whose methods are the response kinds
//! (`respond.rs` picks one, `file.rs`, `listing.rs`, `auth.rs` hold the rest) writes the
//! preamble into the working area's preamble area, which start-up sized for the largest
//! preamble (`SiteRules::head_area`); a preamble that did not fit would be a 500 that
//! closes, never a body without its preamble.
//!
//! Fairness: one call of [`advance`] answers at most [`REQUEST_BUDGET`] requests,
//! moves at most about [`BYTE_BUDGET`] bytes and does at most about a millisecond of a
//! directory listing's reading (`crate::listing::WORK_BUDGET`); then it returns [`Next::Yield`] with the
//! work left undone, and the loop drives the slot again on its next turn, after the
//! other ready connections (edge-triggered epoll would not announce it again). Without
//! this, a client pipelining without end or a fast reader of a large file would keep
//! the worker in one call while every other connection of the worker waits.
//!
//! Syscalls, the figure this design is judged on: a request that arrives whole costs one
//! `read`; its response one `send` (preamble + cached small body from the file cache, or
//! preamble + static error page, copied behind the preamble into one buffer; a `sendmsg` of the
//! two when the body does not fit there) or `send(MSG_MORE)` + `sendfile` for an
//! uncached file, of pages known to be in the page cache: a page-cache miss is read by
//! the worker's I/O threads off the loop while the connection waits in `Send`
//! (`crate::disk`; a descriptor-cache entry lately sent whole from cached pages costs no
//! probe, a hit costs no extra call). A read
//! shorter than the space offered means the socket was drained (a new edge will come),
//! so no extra read that would return `EAGAIN` is made.

mod admit;
mod auth;
mod discard;
mod file;
mod held;
pub(crate) mod hosts;
mod in_flight;
mod listing;
mod logged;
mod proxy;
mod record;
pub(crate) mod relay;
mod respond;
mod rules;

use crate::access_log::AccessLog;
use crate::client_addr::{parse_proxy_header, Walk};
use crate::disk::{Disk, Done, Ready, Span};
use crate::files::cache::FileCache;
use crate::files::PATH_MAX;
use crate::http::date::DateCache;
use crate::http::response::HEAD_AREA_MAX;
use crate::http::{find_head_end, Status, MAX_HEAD, MAX_TARGET};
use crate::listing::{Fill, Listings, WORK_BUDGET};
use crate::site::SiteRules;
use crate::stats::WorkerCounters;
use crate::timers::{Kind, Timers};
use core::sync::atomic::Ordering::Relaxed;
use discard::Judged;
pub(crate) use held::Areas;
use in_flight::{After, Outgoing, Response};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::io::{Errno, IoSlice};
use rustix::net::{SendAncillaryBuffer, SendFlags, Shutdown};
use std::net::IpAddr;

/// Bytes of the receive area of a slot (the parser's head limit): the last bytes of the
/// slot. The preamble area is the rest, in front of it: as large as the worker's
/// site rules need (`SiteRules::head_area`: 1 KiB, up to [`HEAD_AREA_MAX`] with long
/// `--header` lines), the same for every slot of a worker.
pub(crate) const IN_CAP: usize = MAX_HEAD;

/// Bytes of arena per connection slot with a preamble area of `preamble_area` bytes.
pub(crate) const fn slot_bytes(preamble_area: usize) -> usize {
    preamble_area + IN_CAP
}

/// Where a slot's receive area starts in its arena region (the preamble area is in front).
fn receive_at(buf: &[u8]) -> usize {
    buf.len().saturating_sub(IN_CAP)
}

/// A slot's arena region split into its preamble area and its receive area.
fn areas(buf: &mut [u8]) -> (&mut [u8], &mut [u8]) {
    buf.split_at_mut(receive_at(buf))
}

/// Bytes of the worker's spill, for a preamble too long for a slot's preamble area:
/// only a 301 whose `Location` repeats a long target (at most [`MAX_TARGET`] + 1 bytes,
/// since the target's bytes are all `pchar` and re-encode to no more bytes than they came
/// from). It is copied to the back of the receive area (`logged::spill_at`), which
/// must hold it.
pub(crate) const SPILL_CAP: usize = MAX_TARGET + HEAD_AREA_MAX;
const _: () = assert!(SPILL_CAP <= IN_CAP);
/// Largest `sendfile` count per call (the socket buffer bounds it anyway).
const SENDFILE_CHUNK: usize = 1 << 20;
/// Requests one [`advance`] answers before it yields the worker to other connections.
pub(crate) const REQUEST_BUDGET: u32 = 16;
/// Bytes one [`advance`] sends (or reads and discards) before it yields.
pub(crate) const BYTE_BUDGET: u64 = 2 << 20;

/// A connection slot's size is part of what an idle connection costs
/// (`scripts/conn-memory.sh`): reading a file off the loop (`crate::disk`) added no byte.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(core::mem::size_of::<Conn>() <= 216);

/// What a connection is waiting for.
#[derive(Debug)]
enum Awaiting {
    /// Nothing: the slot is free.
    Free,
    /// The PROXY protocol header that must begin the connection (`--proxy-protocol`).
    Proxy,
    /// The bytes of a request head.
    Head,
    /// `left` more body bytes of a counted body, to discard after the answer.
    Body {
        /// Bytes still to discard.
        left: u64,
    },
    /// The rest of a chunked body no upstream reads, judged before the answer
    /// (`discard.rs`); the head stays at the front of the receive area.
    Chunked {
        /// The strict decoder, as far as the body has come.
        dechunk: crate::http::chunked::Dechunk,
        /// Bytes of the head in front of the body.
        head: u32,
    },
    /// Send space, to continue the response in flight.
    Send(Response),
    /// The peer's EOF, after a closing error response (lingering close).
    PeerClose,
}

/// One connection's protocol state (its buffers live in the loop's arena; the loop's
/// bookkeeping about it, such as the generation and epoll registration, is the loop's).
#[derive(Debug)]
pub(crate) struct Conn {
    /// The socket; `None` when free.
    fd: Option<OwnedFd>,
    /// What the connection waits for; the response being written lives in it.
    awaiting: Awaiting,
    /// Input may be available (edge seen, or last read filled the space).
    readable: bool,
    /// Send space may be available.
    writable: bool,
    /// The peer shut its write side: keep reading after short reads to see the EOF
    /// (no new edge will announce it).
    peer_shut: bool,
    /// The client's address: the peer's, or the one its PROXY header gave.
    client: Option<IpAddr>,
    /// The peer is a trusted proxy whose `X-Forwarded-For` names the client.
    forwarded: bool,
    /// The connection's PROXY v2 header said the client came without TLS
    /// (`--https-redirect`).
    proxied_plain: bool,
    /// The connection arrived on the worker's own CPU.
    local: bool,
    /// The `--max-rate` its socket is paced at (0: none; `admit.rs`).
    pacing: u32,
    /// What the log line of the response in flight will say (beside the response rather
    /// than in it: with the log off, planning never writes it).
    pending: Option<logged::Pending>,
    /// Microsecond clock when the current request began (0: not yet; json only).
    started_us: u64,
    /// Bytes buffered in the receive area.
    in_len: usize,
    /// Bytes of them already scanned for a head's end (see `head_ready`).
    scanned: u32,
    /// The slot's region was written since its pages were last given back (`held.rs`).
    held: bool,
    /// The host its request is served for (`hosts.rs`): none until a request names one
    /// (a new connection does not move the host in place), 0 without hosts.
    host: u16,
    /// The place in the host table of the name its last request matched
    /// ([`crate::site::hosts::NO_NAME`]: none): the next request's Host is compared
    /// with it first (`HostTable::pick_again`).
    host_name: u16,
    /// The rate-limit bucket its last request took a token from
    /// ([`crate::client_addr::rate::NO_BUCKET`]: none; `admit.rs`).
    rate_at: u16,
}

impl Conn {
    /// A free slot.
    pub(crate) fn free() -> Conn {
        Conn {
            fd: None,
            awaiting: Awaiting::Free,
            readable: false,
            writable: false,
            peer_shut: false,
            client: None,
            forwarded: false,
            proxied_plain: false,
            local: false,
            pacing: 0,
            pending: None,
            started_us: 0,
            in_len: 0,
            scanned: 0,
            held: false,
            host: hosts::NONE,
            host_name: crate::site::hosts::NO_NAME,
            rate_at: crate::client_addr::rate::NO_BUCKET,
        }
    }

    /// Takes a freshly accepted socket: waits for a head (or a PROXY header), assumed
    /// readable and writable (with `TCP_DEFER_ACCEPT` the request is normally already
    /// there).
    pub(crate) fn open(&mut self, fd: OwnedFd, arrival: Arrival) {
        *self = Conn::free();
        self.fd = Some(fd);
        self.client = arrival.peer;
        self.forwarded = arrival.forwarded;
        self.local = arrival.local;
        self.awaiting = match arrival.proxy_header {
            true => Awaiting::Proxy,
            false => Awaiting::Head,
        };
        self.readable = true;
        self.writable = true;
    }

    /// Releases everything the slot holds (the socket closes when dropped).
    pub(crate) fn release(&mut self, ctx: &mut Ctx<'_>) {
        if let Awaiting::Send(r) = &mut self.awaiting {
            ctx.enter(self.host);
            r.release(ctx);
        }
        *self = Conn::free();
    }

    /// Notes what epoll reported for the socket (hints, kept until a call would block).
    pub(crate) fn note_ready(&mut self, ready: Readiness) {
        self.readable |= ready.readable;
        self.writable |= ready.writable;
        self.peer_shut |= ready.peer_shut;
    }

    /// The slot holds no connection.
    pub(crate) fn is_free(&self) -> bool {
        matches!(self.awaiting, Awaiting::Free)
    }

    /// The connection's socket (`None` when free).
    pub(crate) fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.fd.as_ref().map(|fd| fd.as_fd())
    }

    /// A response is being written (one closed now is cut short: [`abandon`]).
    pub(crate) fn sending(&self) -> bool {
        matches!(self.awaiting, Awaiting::Send(_))
    }

    /// A read off the loop completed: `true` if it was for this connection's response,
    /// which the loop then drives again (its pages are in).
    pub(crate) fn disk_done(&mut self, d: &Done) -> bool {
        match &mut self.awaiting {
            Awaiting::Send(r) => {
                // A listing's directory read has no offset to move.
                let mut none = 0;
                let cached = r.body.cached_mut().unwrap_or(&mut none);
                crate::disk::landed(&mut r.pages, cached, d)
            }
            _ => false,
        }
    }

    /// Waiting between requests with nothing buffered (a graceful stop may close it).
    pub(crate) fn idle(&self) -> bool {
        matches!(self.awaiting, Awaiting::Head) && self.in_len == 0
    }

    /// The slot's region holds pages written by an earlier call that nothing needs any
    /// more (the connection is idle, or `closing`): true once, and the caller gives them
    /// back (`held.rs`).
    #[inline]
    pub(crate) fn take_spent_pages(&mut self, closing: bool) -> bool {
        if !self.held || !(closing || self.idle()) {
            return false;
        }
        self.held = false;
        true
    }
}

/// What epoll reported for a connection's socket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Readiness {
    /// Input (or the peer's EOF) may be read.
    pub(crate) readable: bool,
    /// Send space may be available.
    pub(crate) writable: bool,
    /// The peer shut its write side.
    pub(crate) peer_shut: bool,
}

/// What the loop knows about a connection when it accepts it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Arrival {
    /// The peer's address.
    pub(crate) peer: Option<IpAddr>,
    /// It arrived on the worker's own CPU.
    pub(crate) local: bool,
    /// The peer is a trusted proxy whose `X-Forwarded-For` names the client.
    pub(crate) forwarded: bool,
    /// The connection must begin with a PROXY header (the peer is trusted to send one).
    pub(crate) proxy_header: bool,
}

/// A connection the loop closes (timeout, stop) or that failed while a response was
/// being written: that response was cut short; count it and log it with the bytes that
/// went out. `buf` is the slot's arena region.
pub(crate) fn abandon(c: &mut Conn, buf: &[u8], ctx: &mut Ctx<'_>) {
    if let Awaiting::Send(r) = &mut c.awaiting {
        ctx.enter(c.host);
        r.release(ctx);
        logged::end(c, &buf[receive_at(buf)..], ctx, true);
        // The slot is released next; until then it has no response to end again.
        c.awaiting = Awaiting::PeerClose;
    }
}

/// The loop found the header deadline passed. A connection that began a head, or was
/// discarding a body, is answered 408 as a refused head is (`respond::timed_out`): the
/// answer is planned and `true` returned, and the loop then drives the connection, which
/// sends it like any other closing response (what the socket does not take at once under
/// the send deadline, then the linger before the close). Otherwise `false`: the loop
/// closes the slot; a PROXY header never completed is counted.
pub(crate) fn header_timeout(
    c: &mut Conn,
    buf: &mut [u8],
    ctx: &mut Ctx<'_>,
    s: &mut Scratch,
) -> bool {
    if c.fd.is_none() {
        return false;
    }
    ctx.enter(c.host);
    if matches!(c.awaiting, Awaiting::Proxy) {
        ctx.counters.proxy_refused.fetch_add(1, Relaxed);
        return false;
    }
    let started =
        !c.idle() || matches!(c.awaiting, Awaiting::Body { .. } | Awaiting::Chunked { .. });
    if started {
        // The answer is planned in the slot's region (what `held::load` reads next).
        c.held = true;
        let (out, inb) = areas(buf);
        respond::timed_out(c, out, &inb[..c.in_len], ctx, s);
    }
    started
}

/// Per-worker state every connection uses.
pub(crate) struct Ctx<'a> {
    /// The served root.
    pub(crate) root: BorrowedFd<'a>,
    /// Small-file cache.
    pub(crate) cache: FileCache,
    /// The Date header of this second.
    pub(crate) date: DateCache,
    /// Monotonic milliseconds of this loop turn.
    pub(crate) now_ms: u64,
    /// Shared counters.
    pub(crate) counters: &'a WorkerCounters,
    /// Access log.
    pub(crate) log: AccessLog,
    /// The worker's index (for the log).
    pub(crate) worker: u32,
    /// The worker's CPU (for the log).
    pub(crate) cpu: u32,
    /// Deadlines.
    pub(crate) timers: Timers,
    /// Graceful stop in progress: no more keep-alive.
    pub(crate) draining: bool,
    /// The operator's headers, cache rules, error pages and fallback.
    pub(crate) site: &'a SiteRules,
    /// How far a trusted peer's `X-Forwarded-For` is believed.
    pub(crate) forwarded: Walk<'a>,
    /// `--basic-auth`: this loop's remembered verdicts and budget of hash checks.
    pub(crate) auth: Option<crate::auth::Gate>,
    /// Directory listings in progress (`--list-dirs`; no slots without it).
    pub(crate) listings: Listings,
    /// File reads that would wait for the disk, handed to I/O threads (`crate::disk`).
    pub(crate) disk: Disk,
    /// `--rate-limit`: this loop's buckets (none without the flag).
    pub(crate) rate: Option<crate::client_addr::rate::RateTable>,
    /// The `--max-rate` the site answering the request just planned asked for (0: none),
    /// taken by `admit::paced` (kept here, not in the connection: a slot's size is held).
    pub(crate) pace_wanted: Option<u32>,
    /// The hosts; `root`, `site` and `cache` above are the one in place (`hosts.rs`).
    pub(crate) hosts: hosts::Hosts<'a>,
    /// Exchanges with upstreams, by slot (`relay.rs`; inert when no site forwards).
    pub(crate) relays: relay::Relays,
    /// `--max-body`: the largest request body forwarded.
    pub(crate) max_body: u64,
}

/// Scratch space for one request at a time (decoded path, path to open).
pub(crate) struct Scratch {
    /// The parser's decoded path.
    pub(crate) path: Box<[u8; MAX_TARGET]>,
    /// NUL-terminated relative path for `openat2`.
    pub(crate) open: Box<[u8; PATH_MAX + 1]>,
    /// The spill: a preamble too long for the preamble area, until it is moved to the
    /// back of the receive area.
    pub(crate) spill: Box<[u8; SPILL_CAP]>,
    /// The request path of a pre-compressed sidecar (the decoded path plus
    /// `index.html` and a suffix).
    pub(crate) sidecar: Box<[u8; SIDECAR_CAP]>,
    /// The paths the rules name: a `--rewrite` target, then a `--try-ext` candidate.
    pub(crate) rewrite: Box<[u8; 2 * SIDECAR_CAP]>,
}

/// Bytes of a sidecar's request path: the longest decoded path, `index.html`, `.zst`.
const SIDECAR_CAP: usize = MAX_TARGET + 16;

impl Scratch {
    /// The parser's path area, the rules' path area, and the areas one answer may use.
    fn split(&mut self) -> (&mut [u8], &mut [u8], record::Bufs<'_>) {
        let bufs = record::Bufs {
            open: &mut self.open,
            spill: &mut self.spill[..],
            sidecar: &mut self.sidecar[..],
        };
        (&mut self.path[..], &mut self.rewrite[..], bufs)
    }

    /// Allocated once per worker.
    pub(crate) fn new() -> Scratch {
        Scratch {
            path: Box::new([0; MAX_TARGET]),
            open: Box::new([0; PATH_MAX + 1]),
            spill: Box::new([0; SPILL_CAP]),
            sidecar: Box::new([0; SIDECAR_CAP]),
            rewrite: Box::new([0; 2 * SIDECAR_CAP]),
        }
    }
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch::new()
    }
}

/// What the loop does with the slot after [`advance`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Keep it; make sure it is registered with epoll.
    Park,
    /// Close it and free the slot.
    Close,
    /// Its budget is spent with work left: keep it (registered) and drive it again on the
    /// loop's next turn without waiting for an event.
    Yield,
}

/// What one [`advance`] may still do before it yields.
struct Budget {
    requests: u32,
    bytes: u64,
    /// Directory reading and entries written for a listing (`crate::listing`).
    work: u32,
}

impl Budget {
    fn fresh() -> Budget {
        Budget {
            requests: REQUEST_BUDGET,
            bytes: BYTE_BUDGET,
            work: WORK_BUDGET,
        }
    }

    fn spend_bytes(&mut self, n: usize) {
        self.bytes = self.bytes.saturating_sub(n as u64);
    }

    fn bytes_spent(&self) -> bool {
        self.bytes == 0
    }
}

enum Read {
    Data(usize),
    Eof,
    Blocked,
}

fn read_some(fd: BorrowedFd<'_>, dst: &mut [u8]) -> Read {
    loop {
        match rustix::io::read(fd, &mut *dst) {
            Ok(0) => return Read::Eof,
            Ok(n) => return Read::Data(n),
            Err(Errno::INTR) => continue,
            Err(Errno::AGAIN) => return Read::Blocked,
            Err(_) => return Read::Eof,
        }
    }
}

/// Moves connection `slot` as far as its socket allows, working in the loop's area and
/// keeping in the slot's region only what outlives the call (`held.rs`).
pub(crate) fn advance(
    slot: u32,
    c: &mut Conn,
    mut mem: Areas<'_>,
    ctx: &mut Ctx<'_>,
    s: &mut Scratch,
) -> Next {
    // The socket is lent to the transition while it mutates the rest of the slot.
    let Some(sock) = c.fd.take() else {
        return Next::Close;
    };
    ctx.enter(c.host);
    held::load(c, &mut mem);
    let next = transition(slot, c, sock.as_fd(), mem.work.as_mut_slice(), ctx, s);
    held::store(c, &mut mem);
    c.fd = Some(sock);
    next
}

/// The transition function: one arm per state, each looping until the socket would block.
fn transition(
    slot: u32,
    c: &mut Conn,
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    ctx: &mut Ctx<'_>,
    s: &mut Scratch,
) -> Next {
    let (out, inb) = areas(buf);
    let mut budget = Budget::fresh();
    // What the `Chunked` state found of the body behind the head it hands back.
    let mut judged = Judged::Unread;
    loop {
        match c.awaiting {
            // A free slot has nothing to do.
            Awaiting::Free => return Next::Close,
            // The PROXY header: take a complete one, else read more (header deadline
            // runs); a bad or truncated one closes without a response.
            Awaiting::Proxy => {
                if c.in_len > 0 {
                    match parse_proxy_header(&inb[..c.in_len]) {
                        Ok(Status::Complete(h)) => {
                            if let Some(source) = h.source {
                                c.client = Some(source.ip());
                            }
                            c.proxied_plain = h.tls == Some(false);
                            consume(c, inb, h.len);
                            c.awaiting = Awaiting::Head;
                            continue;
                        }
                        Ok(Status::Partial) => {}
                        Err(_) => return refuse_proxy(ctx),
                    }
                }
                if !c.readable {
                    return await_head(slot, c, inb, ctx);
                }
                match read_some(fd, &mut inb[c.in_len..]) {
                    Read::Data(n) => {
                        c.readable = n == IN_CAP - c.in_len || c.peer_shut;
                        c.in_len += n;
                    }
                    Read::Eof => return refuse_proxy(ctx),
                    Read::Blocked => {
                        c.readable = false;
                        return await_head(slot, c, inb, ctx);
                    }
                }
            }
            // A head: answer a complete buffered one, else read more (header deadline runs).
            Awaiting::Head => {
                if c.in_len > 0 && head_ready(c, inb) {
                    if budget.requests == 0 {
                        return Next::Yield;
                    }
                    let verdict = core::mem::replace(&mut judged, Judged::Unread);
                    if respond::request(c, out, &inb[..c.in_len], ctx, s, verdict) {
                        admit::paced(c, fd, &mut ctx.pace_wanted);
                        budget.requests -= 1;
                        // Answered: no deadline until it waits again. The head stays
                        // until its response is finished (the log reads it).
                        ctx.timers.disarm(slot);
                        if let Awaiting::Send(r) = &c.awaiting {
                            if r.preamble.spilled {
                                // The connection closes after this answer: the receive
                                // area holds the spilled preamble instead of further input.
                                c.in_len = 0;
                                let (at, len) = (logged::spill_at(r), r.preamble.len);
                                inb[at..at + len].copy_from_slice(&s.spill[..len]);
                            }
                        }
                        continue;
                    }
                    c.scanned = c.in_len as u32;
                }
                if !c.readable {
                    return await_head(slot, c, inb, ctx);
                }
                match read_some(fd, &mut inb[c.in_len..]) {
                    Read::Data(n) => {
                        let space = IN_CAP - c.in_len;
                        // The first bytes of a head start its duration (and its deadline,
                        // armed only if it has to wait: `await_head`).
                        if c.in_len == 0 || ctx.timers.kind(slot) == Some(Kind::Idle) {
                            c.started_us = logged::stamp(ctx);
                        }
                        c.in_len += n;
                        c.readable = n == space || c.peer_shut;
                    }
                    Read::Eof => return Next::Close,
                    Read::Blocked => {
                        c.readable = false;
                        return await_head(slot, c, inb, ctx);
                    }
                }
            }
            // Body bytes of a GET/HEAD: drop exactly `left`, then the next head.
            Awaiting::Body { left } => {
                let k = left.min(c.in_len as u64) as usize;
                consume(c, inb, k);
                if left == k as u64 {
                    c.awaiting = Awaiting::Head;
                    arm_between_requests(slot, c, inb, ctx);
                    continue;
                }
                c.awaiting = Awaiting::Body {
                    left: left - k as u64,
                };
                if !c.readable {
                    return Next::Park;
                }
                if budget.bytes_spent() {
                    return Next::Yield;
                }
                match read_some(fd, inb) {
                    Read::Data(n) => {
                        budget.spend_bytes(n);
                        c.in_len = n;
                        c.readable = n == IN_CAP || c.peer_shut;
                    }
                    Read::Eof => return Next::Close,
                    Read::Blocked => {
                        c.readable = false;
                        return Next::Park;
                    }
                }
            }
            // A chunked body no upstream reads: judge it through the strict decoder
            // (header deadline while it waits), then its head, still in front, is
            // answered as the verdict says, as any head but not counted again: the
            // verdict goes to the `Head` arm's planning call, the one place a head is
            // planned and paced.
            Awaiting::Chunked { .. } => {
                judged = match discard::chunked(slot, c, fd, inb, ctx, &mut budget) {
                    Ok(verdict) => verdict,
                    Err(next) => return next,
                };
                budget.requests += 1;
                c.scanned = 0;
                c.awaiting = Awaiting::Head;
            }
            // Send space: write until done or the socket is full (send deadline re-armed
            // on progress).
            Awaiting::Send(ref mut r) => {
                let disk = r.body.reads_disk();
                if disk && r.awaits_disk() {
                    return Next::Park;
                }
                if !c.writable {
                    return Next::Park;
                }
                let ready = match disk && r.must_read() {
                    true => ensure_pages(slot, r, ctx),
                    false => Ready::Send,
                };
                match ready {
                    Ready::Send => {}
                    Ready::Reading => {
                        // The read's completion drives the slot again (`Conn::disk_done`).
                        r.pin_if_cached(&mut ctx.cache);
                        if ctx.timers.kind(slot) != Some(Kind::Send) {
                            ctx.timers.arm(slot, Kind::Send, ctx.now_ms);
                        }
                        return Next::Park;
                    }
                    // No room for a read: the loop drives it again when there is.
                    Ready::Busy => {
                        r.pin_if_cached(&mut ctx.cache);
                        return Next::Park;
                    }
                }
                let preamble_at: &mut [u8] = if r.preamble.spilled {
                    &mut inb[logged::spill_at(r)..]
                } else {
                    out
                };
                match send_some(fd, r, preamble_at, ctx, &mut budget) {
                    Sent::Done => {
                        if finish_response(slot, c, fd, inb, ctx) == Next::Close {
                            return Next::Close;
                        }
                    }
                    Sent::Blocked { progressed } => {
                        r.pin_if_cached(&mut ctx.cache);
                        c.writable = false;
                        if progressed || ctx.timers.kind(slot) != Some(Kind::Send) {
                            ctx.timers.arm(slot, Kind::Send, ctx.now_ms);
                        }
                        return Next::Park;
                    }
                    Sent::Yield => {
                        r.pin_if_cached(&mut ctx.cache);
                        return Next::Yield;
                    }
                    // Sent up to the pages known cached: look at the next ones.
                    Sent::Uncertain => {}
                    Sent::Failed => return Next::Close,
                    // A relayed answer: the exchange moves it (`proxy.rs`).
                    // Once its last byte is out the body is `Nothing`: the next pass
                    // finishes it as any response (one call of `finish_response`).
                    Sent::Relay => {
                        if let Some(next) = proxy::turn(slot, c, (fd, inb), ctx, &mut budget) {
                            return next;
                        }
                    }
                }
            }
            // Lingering: discard input until EOF (then close) or the linger deadline.
            Awaiting::PeerClose => {
                if !c.readable {
                    return Next::Park;
                }
                if budget.bytes_spent() {
                    return Next::Yield;
                }
                match read_some(fd, inb) {
                    Read::Data(n) => budget.spend_bytes(n),
                    Read::Eof => return Next::Close,
                    Read::Blocked => {
                        c.readable = false;
                        return Next::Park;
                    }
                }
            }
        }
    }
}

/// The head (or the PROXY header before it) is not complete and the socket has nothing
/// more: park under the header deadline, which runs from the accept or from the turn the
/// head's first bytes were read (`now_ms` is the turn's), or under the idle deadline while
/// nothing but the blank lines a client may send between requests is buffered (RFC 9112
/// §2.2). Arming it here rather than on every read keeps the common case, a head that
/// arrives whole and is answered in the same turn, free of timer work.
#[inline(never)]
fn await_head(slot: u32, c: &Conn, inb: &[u8], ctx: &mut Ctx<'_>) -> Next {
    match ctx.timers.kind(slot) {
        Some(Kind::Header) => {}
        Some(Kind::Idle) if blank(&inb[..c.in_len]) => {}
        _ => ctx.timers.arm(slot, Kind::Header, ctx.now_ms),
    }
    Next::Park
}

/// Only CR and LF (or nothing): no request has begun.
fn blank(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| b == b'\r' || b == b'\n')
}

/// A missing, bad or truncated PROXY header: close without a response, counted.
fn refuse_proxy(ctx: &Ctx<'_>) -> Next {
    ctx.counters.proxy_refused.fetch_add(1, Relaxed);
    Next::Close
}

/// Whether the buffered bytes may hold a complete head (or enough to refuse one).
///
/// The first look at new bytes goes straight to the parser: a client's head nearly
/// always arrives whole, and the parser says `Partial` as cheaply as a scan would say
/// "not yet", so scanning first would walk every line twice. Once a parse said
/// `Partial` (`scanned` is then non-zero), later reads are scanned from where the last
/// scan stopped and parsed only when a head may be complete, so a head trickling in a
/// byte at a time is not parsed again per byte.
fn head_ready(c: &mut Conn, inb: &[u8]) -> bool {
    if c.in_len >= IN_CAP || c.scanned == 0 {
        return true;
    }
    match find_head_end(&inb[..c.in_len], c.scanned as usize) {
        Some(_) => true,
        None => {
            c.scanned = c.in_len as u32;
            false
        }
    }
}

/// Drops `n` bytes from the front of the receive area.
fn consume(c: &mut Conn, inb: &mut [u8], n: usize) {
    let n = n.min(c.in_len);
    inb.copy_within(n..c.in_len, 0);
    c.in_len -= n;
    c.scanned = 0;
}

/// The deadline between requests: idle if nothing (or only the blank lines a client may
/// send between requests, RFC 9112 §2.2) is buffered, else the header deadline.
fn arm_between_requests(slot: u32, c: &Conn, inb: &[u8], ctx: &mut Ctx<'_>) {
    let kind = if blank(&inb[..c.in_len]) {
        Kind::Idle
    } else {
        Kind::Header
    };
    ctx.timers.arm(slot, kind, ctx.now_ms);
}

/// The response is out: count, then keep-alive, close or linger.
fn finish_response(
    slot: u32,
    c: &mut Conn,
    fd: BorrowedFd<'_>,
    inb: &mut [u8],
    ctx: &mut Ctx<'_>,
) -> Next {
    let Awaiting::Send(r) = &mut c.awaiting else {
        return Next::Close;
    };
    note_resident(r, ctx);
    r.release(ctx);
    let (after, owed, answered) = (r.after, r.owed, r.answered);
    logged::end(c, inb, ctx, false);
    // The response is over (`abandon` finds none); the state that follows is set below.
    c.awaiting = Awaiting::Head;
    consume(c, inb, answered);
    match after {
        After::KeepAlive { .. } if !ctx.draining => {
            if owed > 0 {
                c.awaiting = Awaiting::Body { left: owed };
                ctx.timers.arm(slot, Kind::Header, ctx.now_ms);
            } else {
                arm_between_requests(slot, c, inb, ctx);
            }
            Next::Park
        }
        // Nothing unread and no body owed: close at once. Otherwise linger, so the late
        // body meets a reading socket rather than a reset. While stopping, also linger
        // while the peer has not acknowledged the whole response: the process is about
        // to exit, and in a container its network namespace goes with it (and with it
        // what the kernel still had to send); `still_flushing` keeps the linger going.
        After::KeepAlive { .. } | After::Close { linger: false }
            if c.in_len == 0 && owed == 0 && !(ctx.draining && unacked(fd)) =>
        {
            Next::Close
        }
        _ => {
            c.in_len = 0;
            let _ = rustix::net::shutdown(fd, Shutdown::Write);
            c.awaiting = Awaiting::PeerClose;
            ctx.timers.arm(slot, Kind::Linger, ctx.now_ms);
            Next::Park
        }
    }
}

/// The peer has not acknowledged everything sent on `fd` (an error counts as no).
fn unacked(fd: BorrowedFd<'_>) -> bool {
    crate::sys::socket::unacked_bytes(fd).is_ok_and(|n| n > 0)
}

/// A lingering connection of a stopping worker whose response the peer has not
/// acknowledged whole: its linger deadline is extended (the shutdown deadline still
/// bounds it) instead of closing, which could lose the rest (see `finish_response`).
pub(crate) fn still_flushing(c: &Conn, ctx: &Ctx<'_>) -> bool {
    let lingering = matches!(c.awaiting, Awaiting::PeerClose);
    lingering && ctx.draining && c.fd.as_ref().is_some_and(|fd| unacked(fd.as_fd()))
}

enum Sent {
    Done,
    Blocked {
        progressed: bool,
    },
    /// The byte budget is spent and the response is not finished.
    Yield,
    /// A file body is sent up to the pages known cached (`Pages::resident`).
    Uncertain,
    Failed,
    /// A relayed answer's bytes come from its exchange (`proxy::relay`).
    Relay,
}

/// Writes as much of the response as the socket (and the budget) takes.
fn send_some(
    fd: BorrowedFd<'_>,
    r: &mut Response,
    out: &mut [u8],
    ctx: &mut Ctx<'_>,
    budget: &mut Budget,
) -> Sent {
    let mut progressed = false;
    loop {
        if budget.bytes_spent() && !r.done() {
            return Sent::Yield;
        }
        if let Some(stop) = next_listing_piece(&mut r.body, ctx, &mut budget.work) {
            return stop;
        }
        let preamble = &out[r.preamble.sent..r.preamble.len];
        let result = match &mut r.body {
            Outgoing::File {
                fd: file,
                at,
                end,
                cached,
            } => send_file(fd, preamble, file.as_fd(), at, (*end, *cached)),
            Outgoing::CachedFile {
                index,
                at,
                end,
                gzip,
                cached,
            } => match gzip_or_file(&ctx.cache, *index, *gzip) {
                Some(file) => send_file(fd, preamble, file, at, (*end, *cached)),
                None => return Sent::Failed,
            },
            _ => {
                let body = body_rest(&r.body, ctx);
                if preamble.is_empty() && body.is_empty() {
                    return match r.body {
                        Outgoing::Upstream { .. } => Sent::Relay,
                        _ => Sent::Done,
                    };
                }
                // A spilled preamble shares the receive area: nothing is copied behind it.
                let room = if r.preamble.spilled {
                    r.preamble.len
                } else {
                    out.len()
                };
                send_in_memory(fd, &mut out[..room], r.preamble.sent, r.preamble.len, body)
                    .map(Some)
            }
        };
        match result {
            Ok(None) => return Sent::Done,
            Ok(Some(0)) if r.preamble.sent < r.preamble.len || !r.body.needs_pages() => {
                return Sent::Failed
            }
            Ok(Some(0)) => return Sent::Uncertain,
            Ok(Some(n)) => {
                progressed = true;
                budget.spend_bytes(n);
                ctx.counters.bytes_sent.fetch_add(n as u64, Relaxed);
                r.advance(n);
                // Nearly every small response leaves in one call: done without another
                // pass to find nothing left.
                if r.done() {
                    return Sent::Done;
                }
            }
            Err(Errno::INTR) => {}
            Err(Errno::AGAIN) => return Sent::Blocked { progressed },
            Err(_) => return Sent::Failed,
        }
    }
}

/// One step of a response whose body is in memory (a cached small file, an error page):
/// the unsent preamble `area[sent..preamble_end]`, then `body`. When the body fits
/// behind the preamble in `area` it is copied there and the two leave in one `send` of
/// one buffer, which costs the kernel less than a `sendmsg` importing a message header
/// and an iovec (the preamble is about 230 bytes, the area 1 KiB); otherwise `sendmsg`
/// with both.
fn send_in_memory(
    sock: BorrowedFd<'_>,
    area: &mut [u8],
    sent: usize,
    preamble_end: usize,
    body: &[u8],
) -> rustix::io::Result<usize> {
    if sent == preamble_end {
        return rustix::net::send(sock, body, SendFlags::NOSIGNAL);
    }
    let end = preamble_end + body.len();
    if let Some(behind) = area.get_mut(preamble_end..end) {
        behind.copy_from_slice(body);
        return rustix::net::send(sock, &area[sent..end], SendFlags::NOSIGNAL);
    }
    let iov = [IoSlice::new(&area[sent..preamble_end]), IoSlice::new(body)];
    let mut control = SendAncillaryBuffer::default();
    rustix::net::sendmsg(sock, &iov, &mut control, SendFlags::NOSIGNAL)
}

/// One step of a file response: the preamble (with `MSG_MORE` while body bytes follow),
/// else one `sendfile` from `at` (which the kernel advances) up to `limit`, the end of
/// the pages known cached (`Some(0)` when `at` is there). `None`: nothing left.
fn send_file(
    sock: BorrowedFd<'_>,
    preamble: &[u8],
    file: BorrowedFd<'_>,
    at: &mut u64,
    (end, limit): (u64, u64),
) -> rustix::io::Result<Option<usize>> {
    if !preamble.is_empty() {
        let more = if *at < end {
            SendFlags::MORE
        } else {
            SendFlags::empty()
        };
        return rustix::net::send(sock, preamble, more | SendFlags::NOSIGNAL).map(Some);
    }
    if *at >= end {
        return Ok(None);
    }
    if *at >= limit {
        return Ok(Some(0));
    }
    let count = (end.min(limit) - *at).min(SENDFILE_CHUNK as u64) as usize;
    rustix::fs::sendfile(sock, file, Some(at), count).map(Some)
}

/// Before a file body is sent from its offset: its pages there are cached (maybe after
/// reading them off the loop, `crate::disk`); before a listing's first piece, its
/// directory was read off the loop. A cache entry whose file was lately sent
/// whole from cached pages is trusted for a revalidation period without probing, so a
/// cached hit costs the syscalls it always did (`FileCache::resident`).
fn ensure_pages(slot: u32, r: &mut Response, ctx: &mut Ctx<'_>) -> Ready {
    let pages = &mut r.pages;
    let (file, at, end, cached) = match r.body {
        Outgoing::File {
            ref fd,
            at,
            end,
            ref mut cached,
        } => (fd.as_fd(), at, end, cached),
        Outgoing::CachedFile {
            index,
            at,
            end,
            gzip,
            ref mut cached,
        } => {
            // The trust is the identity file's (a `.gz` is always probed).
            if !gzip && !pages.waited() && ctx.cache.resident(index, ctx.now_ms) {
                *cached = end;
                pages.trust();
                return Ready::Send;
            }
            match gzip_or_file(&ctx.cache, index, gzip) {
                Some(file) => (file, at, end, cached),
                None => return Ready::Send,
            }
        }
        Outgoing::Listing { ref dir, .. } => return ctx.disk.warm_dir(pages, dir.as_fd(), slot),
        _ => return Ready::Send,
    };
    ctx.disk.ensure(pages, cached, Span { file, at, end }, slot)
}

/// A cache entry's file just sent whole, every page probed and found cached: the cache
/// trusts its pages for a while (`ensure_pages`).
fn note_resident(r: &Response, ctx: &mut Ctx<'_>) {
    let Outgoing::CachedFile {
        index, gzip: false, ..
    } = r.body
    else {
        return;
    };
    let whole = ctx.cache.meta(index).is_some_and(|m| m.size == r.body_sent);
    if whole && r.pages.all_probed_cached() {
        ctx.cache.mark_resident(index, ctx.now_ms);
    }
}

/// A cached entry's open file, or its `.gz` in `--compress-cache DIR`.
fn gzip_or_file(cache: &FileCache, index: u32, gzip: bool) -> Option<BorrowedFd<'_>> {
    match gzip {
        true => cache.gzip_file(index),
        false => cache.file(index),
    }
}

/// The unsent part of an in-memory body (for a listing, of its current piece).
fn body_rest<'c>(body: &Outgoing, ctx: &'c Ctx<'_>) -> &'c [u8] {
    let piece = match *body {
        Outgoing::Static(b, at) => return b.get(at..).unwrap_or(&[]),
        Outgoing::Cached {
            index,
            at,
            end,
            gzip,
        } => match gzip {
            true => ctx.cache.gzip_body(index).get(at..end),
            false => ctx.cache.body(index).get(at..end),
        },
        Outgoing::Listing { index, at, end, .. } => ctx.listings.bytes(index).get(at..end),
        _ => None,
    };
    piece.unwrap_or(&[])
}

/// A listing whose current piece is all sent gets its next one (`crate::listing`),
/// spending `work`. `Some`: what `send_some` returns instead of sending, because the
/// turn's work is spent before anything was produced (yield) or the directory failed.
fn next_listing_piece(body: &mut Outgoing, ctx: &mut Ctx<'_>, work: &mut u32) -> Option<Sent> {
    let Outgoing::Listing {
        dir,
        index,
        at,
        end,
        last,
    } = body
    else {
        return None;
    };
    if *at < *end || *last {
        return None;
    }
    let fill = ctx.listings.fill(*index, dir.as_fd(), ctx.root, work);
    let passes = ctx.listings.take_passes();
    if passes > 0 {
        ctx.counters.listing_passes.fetch_add(passes, Relaxed);
    }
    match fill {
        Fill::Bytes {
            at: a,
            end: e,
            last: l,
        } if a < e || l => {
            (*at, *end, *last) = (a, e, l);
            None
        }
        Fill::Bytes { .. } | Fill::Later => Some(Sent::Yield),
        Fill::Failed => Some(Sent::Failed),
    }
}

/// One fixture per state: a socket pair, one slot, a real root directory.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::cache::CacheConfig;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;

    struct Fixture {
        conn: Conn,
        /// The slot's region (an arena of one slot).
        buf: crate::sys::ZeroedArena,
        /// The loop's working area.
        work: crate::sys::ZeroedArena,
        peer: UnixStream,
        scratch: Scratch,
        counters: &'static WorkerCounters,
        cache: Option<FileCache>,
        log: Option<AccessLog>,
        dir: std::path::PathBuf,
        root: OwnedFd,
        /// The operator's `--header` lines the worker's rules carry.
        headers: Box<[u8]>,
    }

    fn fixture(name: &str) -> Fixture {
        fixture_with(name, Arrival::default())
    }

    fn fixture_with(name: &str, arrival: Arrival) -> Fixture {
        let dir = std::env::temp_dir().join(format!("steerd-conn-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.txt"), "abc").unwrap();
        std::fs::File::create(dir.join("big"))
            .unwrap()
            .set_len(8 << 20)
            .unwrap();
        let root = rustix::fs::open(
            &dir,
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        let (ours, peer) = UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        let mut conn = Conn::free();
        conn.open(OwnedFd::from(ours), arrival);
        Fixture {
            conn,
            buf: crate::sys::ZeroedArena::new(slot_bytes(crate::http::response::HEAD_CAP)).unwrap(),
            work: crate::sys::ZeroedArena::new(slot_bytes(crate::http::response::HEAD_CAP))
                .unwrap(),
            peer,
            scratch: Scratch::new(),
            counters: Box::leak(Box::default()),
            cache: Some(FileCache::new(CacheConfig {
                entries: 4,
                file_max: 1024,
                revalidate: std::time::Duration::from_secs(1),
            })),
            log: Some(AccessLog::off()),
            dir,
            root,
            headers: Box::default(),
        }
    }

    impl Fixture {
        /// The response in flight (the test fails when none is).
        fn response(&self) -> &Response {
            match &self.conn.awaiting {
                Awaiting::Send(r) => r,
                other => panic!("no response in flight: {other:?}"),
            }
        }

        fn step(&mut self) -> Next {
            self.conn.readable = true;
            self.conn.writable = true;
            // Other connections of the loop use the working area between two calls.
            self.work.as_mut_slice().fill(0xa5);
            self.with_ctx(|f, ctx| {
                let mem = Areas {
                    arena: &mut f.buf,
                    at: 0,
                    work: &mut f.work,
                };
                advance(0, &mut f.conn, mem, ctx, &mut f.scratch)
            })
        }

        /// Runs `run` with the worker state this fixture keeps between steps.
        fn with_ctx<T>(&mut self, run: impl FnOnce(&mut Fixture, &mut Ctx<'_>) -> T) -> T {
            let root = self.root.try_clone().unwrap();
            let rules = SiteRules {
                headers: self.headers.clone(),
                ..SiteRules::default()
            };
            let more = hosts::LoopHosts::default();
            let mut ctx = Ctx {
                hosts: hosts::Hosts::new((root.as_fd(), &rules), &more, false, &|_| unreachable!()),
                root: root.as_fd(),
                cache: self.cache.take().expect("cache"),
                date: DateCache::new(0),
                now_ms: 0,
                counters: self.counters,
                log: self.log.take().expect("log"),
                worker: 0,
                cpu: 0,
                timers: Timers::new(1, [1000; 4]),
                draining: false,
                site: &rules,
                forwarded: Walk::LastHop,
                auth: None,
                listings: Listings::new(0),
                disk: crate::disk::Disk::new(1).unwrap(),
                rate: None,
                pace_wanted: None,
                relays: relay::Relays::new(None, 0, 0),
                max_body: 0,
            };
            let out = run(self, &mut ctx);
            self.cache = Some(ctx.cache);
            self.log = Some(ctx.log);
            out
        }

        /// Logs in `format` to a file of the fixture; returns its path.
        fn log_to_file(&mut self, format: crate::config::LogFormat) -> std::path::PathBuf {
            let path = self.dir.join("access.log");
            let target = crate::config::LogTarget::File(path.clone());
            self.log = Some(AccessLog::open(&target, format, &DateCache::new(0)).unwrap());
            path
        }

        /// The log's lines so far.
        fn logged(&mut self, path: &std::path::Path) -> Vec<String> {
            let log = self.log.as_mut().unwrap();
            log.flush();
            log.settle();
            let text = std::fs::read_to_string(path).unwrap();
            text.lines().map(str::to_string).collect()
        }

        fn answer(&mut self) -> String {
            self.peer
                .set_read_timeout(Some(std::time::Duration::from_secs(2)))
                .unwrap();
            let mut b = vec![0u8; 4096];
            let n = self.peer.read(&mut b).unwrap();
            String::from_utf8_lossy(&b[..n]).into_owned()
        }
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    #[test]
    fn new_bytes_go_to_the_parser_first_then_only_a_possible_head_end_does() {
        let mut c = Conn::free();
        let mut inb = vec![0u8; 64];
        let mut feed = |c: &mut Conn, bytes: &[u8]| {
            inb[c.in_len..c.in_len + bytes.len()].copy_from_slice(bytes);
            c.in_len += bytes.len();
            head_ready(c, &inb)
        };
        // The first look parses (a whole head is the usual case).
        assert!(feed(&mut c, b"GET / HTTP/1.1\r\nHo"));
        // The parse said Partial: later bytes are scanned, not parsed, until a head may end.
        c.scanned = c.in_len as u32;
        assert!(!feed(&mut c, b"st: a"));
        assert!(!feed(&mut c, b"\r\n"));
        assert!(!feed(&mut c, b"\r"));
        assert!(feed(&mut c, b"\n"));
    }

    #[test]
    fn head_partial_then_complete_then_keep_alive() {
        let mut f = fixture("head");
        f.peer.write_all(b"GET /a.txt HTTP/1.1\r\nHo").unwrap();
        assert_eq!(f.step(), Next::Park);
        assert!(
            matches!(f.conn.awaiting, Awaiting::Head),
            "{:?}",
            f.conn.awaiting
        );
        f.peer.write_all(b"st: t\r\n\r\n").unwrap();
        assert_eq!(f.step(), Next::Park);
        let a = f.answer();
        assert!(
            a.starts_with("HTTP/1.1 200 OK\r\n") && a.ends_with("\r\n\r\nabc"),
            "{a}"
        );
        assert!(matches!(f.conn.awaiting, Awaiting::Head), "kept alive");
        assert!(f.conn.idle());
    }

    /// A request that arrives whole is answered without a write to the slot's region; a
    /// head in pieces waits there, and once answered its pages are spent (given back).
    #[test]
    fn only_what_outlives_a_call_is_written_to_the_slot() {
        let mut f = fixture("held");
        let untouched = |f: &mut Fixture| f.buf.as_mut_slice().iter().all(|&b| b == 0);
        f.peer
            .write_all(b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        assert_eq!(f.step(), Next::Park);
        assert!(f.answer().ends_with("\r\n\r\nabc"));
        assert!(
            untouched(&mut f),
            "a whole request and its answer stay in the loop's area"
        );
        assert!(!f.conn.take_spent_pages(false));
        f.peer.write_all(b"GET /a.txt HTTP/1.1\r\nHo").unwrap();
        assert_eq!(f.step(), Next::Park);
        assert!(!untouched(&mut f), "the partial head waits in the slot");
        assert!(!f.conn.take_spent_pages(false), "still needed");
        f.peer.write_all(b"st: t\r\n\r\n").unwrap();
        assert_eq!(f.step(), Next::Park);
        assert!(f.answer().ends_with("\r\n\r\nabc"));
        assert!(f.conn.take_spent_pages(false), "idle: the pages go back");
        assert!(!f.conn.take_spent_pages(false), "once");
    }

    /// A preamble the socket did not take waits in the slot's region, and the next call
    /// sends it from there (other connections have used the working area meanwhile).
    #[test]
    fn a_preamble_the_socket_did_not_take_waits_in_the_slot() {
        let mut f = fixture("unsent");
        let mut filled = 0usize;
        for _ in 0..4096 {
            match rustix::io::write(f.conn.fd().unwrap(), &[b'x'; 4096]) {
                Ok(n) => filled += n,
                Err(_) => break,
            }
        }
        f.peer
            .write_all(b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        assert_eq!(f.step(), Next::Park);
        assert!(
            f.response().preamble.sent < f.response().preamble.len,
            "socket full"
        );
        assert!(
            f.buf.as_mut_slice().iter().any(|&b| b != 0),
            "kept in the slot"
        );
        f.peer.read_exact(&mut vec![0; filled]).unwrap();
        assert_eq!(f.step(), Next::Park);
        let a = f.answer();
        assert!(
            a.starts_with("HTTP/1.1 200 OK\r\n") && a.ends_with("\r\n\r\nabc"),
            "{a}"
        );
        assert!(f.conn.idle() && f.conn.take_spent_pages(false));
    }

    #[test]
    fn body_is_discarded_across_reads() {
        let mut f = fixture("body");
        f.peer
            .write_all(b"GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nxy")
            .unwrap();
        assert_eq!(f.step(), Next::Park);
        assert!(
            matches!(f.conn.awaiting, Awaiting::Body { left: 3 }),
            "{:?}",
            f.conn.awaiting
        );
        assert!(f.answer().ends_with("abc"));
        f.peer
            .write_all(b"zzzGET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        assert_eq!(f.step(), Next::Park);
        assert!(
            f.answer().ends_with("abc"),
            "the next request after exactly 5 bytes"
        );
        assert!(
            matches!(f.conn.awaiting, Awaiting::Head),
            "{:?}",
            f.conn.awaiting
        );
    }

    #[test]
    fn a_chunked_body_is_judged_across_reads_before_the_answer() {
        let mut f = fixture("chunked");
        f.peer
            .write_all(
                b"POST /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab",
            )
            .unwrap();
        assert_eq!(f.step(), Next::Park);
        assert!(
            matches!(f.conn.awaiting, Awaiting::Chunked { head: 61, .. }),
            "{:?}",
            f.conn.awaiting
        );
        assert_eq!(
            f.conn.in_len, 61,
            "the body's bytes are dropped, the head kept"
        );
        f.peer
            .write_all(b"c\r\n0\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        assert_eq!(f.step(), Next::Park);
        let answers = f.answer();
        assert!(answers.starts_with("HTTP/1.1 405 "), "{answers}");
        assert!(
            answers.ends_with("abc"),
            "then the request after the body: {answers}"
        );
        assert!(matches!(f.conn.awaiting, Awaiting::Head));
    }

    #[test]
    fn a_bad_chunk_is_400_and_lingers() {
        let mut f = fixture("bad-chunk");
        f.peer
            .write_all(
                b"POST /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3x\r\n",
            )
            .unwrap();
        assert_eq!(f.step(), Next::Park);
        let answer = f.answer();
        assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
        assert!(answer.contains("Connection: close"), "{answer}");
        assert!(matches!(f.conn.awaiting, Awaiting::PeerClose));
    }

    #[test]
    fn send_waits_for_space_then_finishes() {
        let mut f = fixture("send");
        f.peer
            .write_all(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        assert_eq!(f.step(), Next::Park);
        assert!(f.conn.sending(), "8 MiB do not fit the socket buffer");
        let mut total = 0usize;
        let mut b = vec![0u8; 1 << 16];
        f.peer.set_nonblocking(true).unwrap();
        while f.conn.sending() {
            while let Ok(n) = f.peer.read(&mut b) {
                total += n;
            }
            assert_eq!(f.step(), Next::Park);
        }
        while let Ok(n) = f.peer.read(&mut b) {
            total += n;
        }
        assert!(total > 8 << 20, "preamble and the whole body: {total}");
        assert!(
            matches!(f.conn.awaiting, Awaiting::Head),
            "{:?}",
            f.conn.awaiting
        );
    }

    #[test]
    fn peer_close_after_an_error_that_closes() {
        let mut f = fixture("linger");
        f.peer
            .write_all(b"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n")
            .unwrap();
        assert_eq!(f.step(), Next::Park);
        assert!(
            matches!(f.conn.awaiting, Awaiting::PeerClose),
            "{:?}",
            f.conn.awaiting
        );
        let a = f.answer();
        assert!(
            a.starts_with("HTTP/1.1 400 ") && a.contains("Connection: close"),
            "{a}"
        );
        f.peer.write_all(b"more junk").unwrap();
        assert_eq!(f.step(), Next::Park, "still lingering while the peer sends");
        f.peer.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(f.step(), Next::Close, "peer EOF ends the linger");
    }

    #[test]
    fn pipelined_requests_yield_after_the_request_budget() {
        let mut f = fixture("budget");
        let n = REQUEST_BUDGET as usize + 4;
        let one = "GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n";
        f.peer.write_all(one.repeat(n).as_bytes()).unwrap();
        assert_eq!(f.step(), Next::Yield, "budget spent, requests left");
        assert!(
            matches!(f.conn.awaiting, Awaiting::Head),
            "{:?}",
            f.conn.awaiting
        );
        let mut seen = String::new();
        while seen.matches("HTTP/1.1 200").count() < REQUEST_BUDGET as usize {
            seen += &f.answer();
        }
        assert_eq!(
            seen.matches("HTTP/1.1 200").count(),
            REQUEST_BUDGET as usize
        );
        assert_eq!(f.step(), Next::Park, "the rest fits the next budget");
        while seen.matches("HTTP/1.1 200").count() < n {
            seen += &f.answer();
        }
        assert!(f.conn.idle());
    }

    #[test]
    fn a_large_send_yields_after_the_byte_budget() {
        let mut f = fixture("bytes");
        let sock = f.conn.fd.as_ref().unwrap();
        rustix::net::sockopt::set_socket_send_buffer_size(sock, 4 << 20).unwrap();
        let room = rustix::net::sockopt::socket_send_buffer_size(sock).unwrap();
        if room < 3 << 20 {
            crate::test_skip::skip_or_fail(
                &crate::test_skip::this_test(),
                &format!("the socket buffer ({room} bytes) blocks before the budget"),
            );
            return;
        }
        f.peer
            .write_all(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        assert_eq!(
            f.step(),
            Next::Yield,
            "2 MiB sent, 6 MiB left, socket not full"
        );
        assert!(
            f.response().pinned,
            "the cached descriptor is pinned while paused"
        );
    }

    /// The joined `send` and the two-part `sendmsg` put the same bytes on the wire, and
    /// a preamble already sent leaves only the body.
    #[test]
    fn in_memory_body_joined_or_not_sends_the_same_bytes() {
        let cases: [(usize, usize, &[u8]); 3] =
            [(64, 0, b"HEADbody"), (6, 0, b"HEADbody"), (64, 4, b"body")];
        for (room, sent, want) in cases {
            let (ours, mut peer) = UnixStream::pair().unwrap();
            let mut area = [0u8; 64];
            area[..4].copy_from_slice(b"HEAD");
            let n = send_in_memory(ours.as_fd(), &mut area[..room], sent, 4, b"body").unwrap();
            assert_eq!(n, want.len(), "room {room}, sent {sent}");
            let mut got = vec![0u8; n];
            peer.read_exact(&mut got).unwrap();
            assert_eq!(got, want, "room {room}, sent {sent}");
        }
    }

    /// A preamble larger than the preamble area (which the start-up check rules out: here
    /// the rules carry more `--header` bytes than the fixture's area was sized for) is a
    /// 500 that closes, never a body without its preamble.
    #[test]
    fn a_preamble_that_does_not_fit_is_a_500_that_closes() {
        let mut f = fixture("overflow");
        let line = format!(
            "X-Long: {}\r\n",
            "a".repeat(crate::http::response::HEAD_CAP)
        );
        f.headers = line.into_bytes().into_boxed_slice();
        f.peer
            .write_all(b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        assert_eq!(f.step(), Next::Park);
        let a = f.answer();
        assert!(a.starts_with("HTTP/1.1 500 "), "{a}");
        assert!(
            a.contains("Connection: close\r\n") && !a.contains("X-Long"),
            "{a}"
        );
        assert!(!a.ends_with("abc"), "{a}");
        assert!(
            matches!(f.conn.awaiting, Awaiting::PeerClose),
            "{:?}",
            f.conn.awaiting
        );
        assert_eq!(f.counters.responses[4].load(Relaxed), 1);
    }

    #[test]
    fn free_slot_closes() {
        let mut f = fixture("free");
        f.conn = Conn::free();
        assert_eq!(f.step(), Next::Close);
    }

    fn json(line: &str) -> serde_json::Value {
        serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    fn proxied() -> Arrival {
        Arrival {
            peer: Some("127.0.0.1".parse().unwrap()),
            proxy_header: true,
            ..Arrival::default()
        }
    }

    #[test]
    fn a_proxy_header_in_pieces_then_the_request() {
        let mut f = fixture_with("proxy", proxied());
        assert_eq!(f.step(), Next::Park, "nothing yet (no deferred accept)");
        assert!(
            matches!(f.conn.awaiting, Awaiting::Proxy),
            "{:?}",
            f.conn.awaiting
        );
        f.peer.write_all(b"PROXY TCP4 203.0.113.9 ").unwrap();
        assert_eq!(f.step(), Next::Park);
        assert!(matches!(f.conn.awaiting, Awaiting::Proxy), "still partial");
        f.peer
            .write_all(b"127.0.0.1 40000 80\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        assert_eq!(f.step(), Next::Park);
        assert!(f.answer().ends_with("\r\n\r\nabc"));
        assert_eq!(f.conn.client, Some("203.0.113.9".parse().unwrap()));
        assert!(
            matches!(f.conn.awaiting, Awaiting::Head),
            "{:?}",
            f.conn.awaiting
        );
    }

    #[test]
    fn a_bad_or_truncated_proxy_header_closes_without_a_response() {
        let mut f = fixture_with("proxybad", proxied());
        f.peer.write_all(b"GET /a.txt HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(f.step(), Next::Close);
        let mut f = fixture_with("proxycut", proxied());
        f.peer.write_all(b"PROXY TCP4 203.0").unwrap();
        assert_eq!(f.step(), Next::Park);
        f.peer.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(f.step(), Next::Close, "EOF in the middle of the header");
        assert_eq!(f.counters.proxy_refused.load(Relaxed), 1);
    }

    #[test]
    fn pipelined_lines_name_their_own_requests() {
        let mut f = fixture("logpipe");
        let log = f.log_to_file(crate::config::LogFormat::Json);
        f.peer
            .write_all(
                b"GET /a.txt?1 HTTP/1.1\r\nHost: t\r\nUser-Agent: one\r\n\r\n\
                  GET /nope?2 HTTP/1.1\r\nHost: t\r\nReferer: http://r/\r\n\r\n",
            )
            .unwrap();
        assert_eq!(f.step(), Next::Park);
        let lines = f.logged(&log);
        assert_eq!(lines.len(), 2, "{lines:?}");
        let (a, b) = (json(&lines[0]), json(&lines[1]));
        assert_eq!(a["request"], "GET /a.txt?1 HTTP/1.1");
        assert_eq!(
            (a["status"].as_u64(), a["body_bytes"].as_u64()),
            (Some(200), Some(3))
        );
        assert_eq!(a["user_agent"], "one");
        assert_eq!(b["request"], "GET /nope?2 HTTP/1.1");
        assert_eq!(b["status"], 404);
        assert_eq!(b["referer"], "http://r/");
        assert_eq!(b["user_agent"], serde_json::Value::Null);
        assert_eq!(a["cut_short"], false);
    }

    #[test]
    fn a_spilled_redirect_is_logged_with_its_long_target() {
        let mut f = fixture("logspill");
        std::fs::create_dir(f.dir.join("d")).unwrap();
        let log = f.log_to_file(crate::config::LogFormat::Common);
        let target = format!("/d?{}", "q".repeat(900));
        let req = format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n");
        f.peer.write_all(req.as_bytes()).unwrap();
        assert_eq!(f.step(), Next::Park);
        assert!(f.answer().starts_with("HTTP/1.1 301 "));
        let lines = f.logged(&log);
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].contains(&format!("\"GET {target} HTTP/1.1\" 301 ")),
            "{lines:?}"
        );
    }

    #[test]
    fn a_response_cut_short_is_logged_with_the_bytes_written() {
        let mut f = fixture("logcut");
        let log = f.log_to_file(crate::config::LogFormat::Json);
        f.peer
            .write_all(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        assert_eq!(f.step(), Next::Park);
        let sent = f.response().body_sent;
        assert!(sent > 0 && sent < 8 << 20, "{sent}");
        // The loop gives up on it (a timeout, a stop): the line says how far it got.
        f.with_ctx(|f, ctx| abandon(&mut f.conn, f.buf.as_mut_slice(), ctx));
        let lines = f.logged(&log);
        let v = json(&lines[0]);
        assert_eq!(v["body_bytes"].as_u64(), Some(sent));
        assert_eq!(v["cut_short"], true);
        assert_eq!(f.counters.cut_short.load(Relaxed), 1);
        f.with_ctx(|f, ctx| abandon(&mut f.conn, f.buf.as_mut_slice(), ctx));
        assert_eq!(f.counters.cut_short.load(Relaxed), 1, "counted once");
    }
}
