//! The load generator: a [`LoadSpec`] in, a [`LoadReport`] out (requests, bytes, errors
//! by kind, latency histograms per thread and merged, client CPU time).
//!
//! Design. One thread per `-t`, each optionally pinned, each with its own epoll instance
//! and its own slice of the connections; threads share nothing until they are joined.
//! Sockets are nonblocking and registered once, edge-triggered, for IN|OUT|RDHUP. Per
//! request on a keep-alive connection the loop makes one `send`, one `read` (a second
//! only when the first filled the buffer or the peer hung up) and a share of one
//! `epoll_wait`: the next request is written as soon as the last byte of the previous
//! response is read, with no `epoll_ctl` in between (wrk re-arms its write event on
//! every request). A new connection is written to straight after `connect`: on loopback
//! the handshake has usually completed inside `connect`, and if it has not, `send`
//! returns EAGAIN and the loop waits for EPOLLOUT (`sk_stream_wait_connect` in the
//! kernel's `net/core/stream.c`).
//!
//! Readiness contract: an event is a hint. Tokens carry the slot and a generation that
//! changes whenever the slot's socket does, so an event for a closed socket is dropped.
//! With edge triggering, reading stops early only when a read returned less than the
//! buffer and the event did not report a hang-up: any byte arriving later raises a new
//! edge.
//!
//! Closed loop: each connection sends its next request when the last one completes.
//! Open loop (`--rate`): thread `t` owns every `threads`-th slot of a fixed schedule of
//! intended send times; a due request takes any idle connection, and its latency is
//! measured from its intended time even when no connection was free then, so a server
//! that stalls is charged for the whole stall (no coordinated omission).
//!
//! Nothing is allocated per request: the request bytes, the read buffer, the connection
//! table, the idle stack and the histograms are made before the clock starts.
//! It does not follow redirects, pipeline requests, or time out a request: a request
//! still open at the end of the run is simply not counted.

use super::client::{Feed, ResponseError, ResponseReader};
use super::hist::Hist;
use super::spec::LoadSpec;
use crate::bench::BenchError;
use crate::cpuset::CpuId;
use rustix::event::epoll;
use rustix::fd::OwnedFd;
use rustix::io::Errno;
use rustix::net::{AddressFamily, SendFlags, SocketFlags, SocketType};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Why a request failed; each kind has its own counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// `socket` or `connect` failed, or the handshake was refused or reset.
    Connect,
    /// `read` failed (such as ECONNRESET).
    Read,
    /// `send` failed on an established connection.
    Write,
    /// The server closed the connection before the response was complete.
    Eof,
    /// The bytes received are not an HTTP/1.x response, or follow a complete one.
    Garbage,
    /// A framing the reader does not support (chunked) or a bad Content-Length.
    Framing,
    /// A complete response whose status is not 2xx or 3xx (also counted as a request).
    Status,
}

impl ErrorKind {
    /// Every kind, in report order.
    pub(crate) const ALL: [ErrorKind; 7] = [
        ErrorKind::Connect,
        ErrorKind::Read,
        ErrorKind::Write,
        ErrorKind::Eof,
        ErrorKind::Garbage,
        ErrorKind::Framing,
        ErrorKind::Status,
    ];

    /// The name reports use.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Read => "read",
            ErrorKind::Write => "write",
            ErrorKind::Eof => "eof",
            ErrorKind::Garbage => "garbage",
            ErrorKind::Framing => "framing",
            ErrorKind::Status => "status",
        }
    }
}

impl From<ResponseError> for ErrorKind {
    fn from(e: ResponseError) -> ErrorKind {
        match e {
            ResponseError::Garbage => ErrorKind::Garbage,
            ResponseError::Framing => ErrorKind::Framing,
            ResponseError::Eof => ErrorKind::Eof,
        }
    }
}

/// What one thread (or all of them, merged) measured.
#[derive(Clone, Debug, Default)]
pub struct ThreadReport {
    /// The CPU the thread was pinned to.
    pub(crate) cpu: Option<CpuId>,
    /// Complete responses.
    pub requests: u64,
    /// Response bytes read.
    pub(crate) bytes: u64,
    /// Failures, indexed like [`ErrorKind::ALL`].
    pub errors: [u64; 7],
    /// Open loop: requests that were due but not sent when the run ended.
    pub(crate) unsent: u64,
    /// Whole request: intended send time to last response byte.
    pub(crate) latency: Hist,
    /// `connect` call to established, once per new connection.
    pub(crate) connect: Hist,
    /// Intended send time to first response byte.
    pub(crate) ttfb: Hist,
    /// How long the thread ran.
    pub(crate) elapsed: Duration,
}

impl ThreadReport {
    /// Adds `other`'s counts and histograms; keeps the longer elapsed time.
    pub(crate) fn merge(&mut self, other: &ThreadReport) {
        self.requests += other.requests;
        self.bytes += other.bytes;
        for (a, b) in self.errors.iter_mut().zip(other.errors) {
            *a += b;
        }
        self.unsent += other.unsent;
        self.latency.merge(&other.latency);
        self.connect.merge(&other.connect);
        self.ttfb.merge(&other.ttfb);
        self.elapsed = self.elapsed.max(other.elapsed);
    }

    /// Failures of all kinds.
    pub fn error_total(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// Responses per second.
    pub(crate) fn rate(&self) -> f64 {
        per_second(self.requests, self.elapsed)
    }

    /// Response bytes per second.
    pub(crate) fn byte_rate(&self) -> f64 {
        per_second(self.bytes, self.elapsed)
    }
}

fn per_second(n: u64, d: Duration) -> f64 {
    if d.is_zero() {
        0.0
    } else {
        n as f64 / d.as_secs_f64()
    }
}

/// The result of a run.
#[derive(Clone, Debug)]
pub struct LoadReport {
    /// One report per thread, in thread order.
    pub(crate) threads: Vec<ThreadReport>,
    /// All threads merged.
    pub merged: ThreadReport,
    /// CPU time (user + system) the whole process used during the run.
    pub(crate) client_cpu: Duration,
}

impl LoadReport {
    /// Client CPU time per complete response, in microseconds.
    pub(crate) fn cpu_per_request_us(&self) -> f64 {
        if self.merged.requests == 0 {
            return 0.0;
        }
        self.client_cpu.as_secs_f64() * 1e6 / self.merged.requests as f64
    }
}

/// Runs the load described by `spec` and waits for every thread.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub fn run(spec: &LoadSpec) -> Result<LoadReport, BenchError> {
    let request = spec.request();
    let cpu_before = process_cpu();
    let results: Vec<Result<ThreadReport, BenchError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..spec.threads)
            .map(|t| {
                let request = &request;
                s.spawn(move || run_thread(spec, t, request))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(BenchError::Panicked("load"))))
            .collect()
    });
    let client_cpu = process_cpu().saturating_sub(cpu_before);
    let threads = results.into_iter().collect::<Result<Vec<_>, _>>()?;
    let mut merged = ThreadReport::default();
    for t in &threads {
        merged.merge(t);
    }
    Ok(LoadReport {
        threads,
        merged,
        client_cpu,
    })
}

/// `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`: user + system time of every thread.
pub(crate) fn process_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn run_thread(spec: &LoadSpec, t: u32, request: &[u8]) -> Result<ThreadReport, BenchError> {
    let cpu = (!spec.pin.is_empty()).then(|| spec.pin[t as usize % spec.pin.len()]);
    if let Some(cpu) = cpu {
        crate::sys::pin_to_cpu(cpu.get()).map_err(|e| BenchError::LoadPin(cpu, e))?;
    }
    let mut w = Worker::new(spec, t, request)?;
    w.report.cpu = cpu;
    w.run(spec, t);
    Ok(w.report)
}

/// What a connection slot waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No request in flight (a keep-alive socket may be open).
    Idle,
    /// The handshake, before the first byte of the request could be sent.
    Connecting,
    /// Room in the send buffer for the rest of the request.
    Sending,
    /// The response.
    Receiving,
}

struct Conn {
    sock: Option<OwnedFd>,
    generation: u32,
    phase: Phase,
    reader: ResponseReader,
    sent: usize,
    intended: u64,
    connect_start: u64,
    first_byte: bool,
}

impl Conn {
    fn new() -> Conn {
        Conn {
            sock: None,
            generation: 0,
            phase: Phase::Idle,
            reader: ResponseReader::new(),
            sent: 0,
            intended: 0,
            connect_start: 0,
            first_byte: false,
        }
    }
}

/// Events fetched per `epoll_wait`.
const EVENTS: usize = 256;
/// Read buffer per thread: large enough that a 1 MiB body takes few reads.
const READ_BUF: usize = 256 * 1024;
/// How long a closed loop waits before retrying connections that failed.
const RETRY_NS: u64 = 1_000_000;

struct Worker<'a> {
    epoll: OwnedFd,
    conns: Vec<Conn>,
    request: &'a [u8],
    addr: SocketAddr,
    close: bool,
    open_loop: bool,
    buf: Vec<u8>,
    idle: Vec<u32>,
    start: Instant,
    report: ThreadReport,
}

impl<'a> Worker<'a> {
    fn new(spec: &LoadSpec, t: u32, request: &'a [u8]) -> Result<Worker<'a>, BenchError> {
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC).map_err(BenchError::LoadEpoll)?;
        let n = spec.conns_of(t);
        Ok(Worker {
            epoll,
            conns: (0..n).map(|_| Conn::new()).collect(),
            request,
            addr: spec.target.addr,
            close: spec.close,
            open_loop: spec.rate.is_some(),
            buf: vec![0; READ_BUF],
            idle: (0..n).rev().collect(),
            start: Instant::now(),
            report: ThreadReport::default(),
        })
    }

    fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// The loop: launch what is due, wait, handle events, until the deadline.
    fn run(&mut self, spec: &LoadSpec, t: u32) {
        let mut events: Vec<epoll::Event> = Vec::with_capacity(EVENTS);
        let end = spec.duration.as_nanos() as u64;
        let interval = spec
            .rate
            .map_or(0, |r| (f64::from(spec.threads) * 1e9 / r).max(1.0) as u64);
        // Threads' schedules interleave: thread t starts t/threads of an interval late.
        let mut next_due = interval * u64::from(t) / u64::from(spec.threads);
        self.start = Instant::now();
        loop {
            let now = self.now();
            if now >= end {
                break;
            }
            let wait_ns = if self.open_loop {
                next_due = self.launch_due(next_due, interval, now);
                if self.idle.is_empty() {
                    end - now
                } else {
                    next_due.saturating_sub(now)
                }
            } else {
                self.launch_idle(now);
                if self.idle.is_empty() {
                    end - now
                } else {
                    RETRY_NS
                }
            };
            let timeout = rustix::time::Timespec {
                tv_sec: (wait_ns.min(end - now) / 1_000_000_000) as i64,
                tv_nsec: (wait_ns.min(end - now) % 1_000_000_000) as _,
            };
            events.clear();
            match epoll::wait(
                &self.epoll,
                rustix::buffer::spare_capacity(&mut events),
                Some(&timeout),
            ) {
                Ok(_) | Err(Errno::INTR) => {}
                Err(_) => break,
            }
            for ev in &events {
                self.on_event(ev.data.u64(), ev.flags);
            }
        }
        self.report.elapsed = self.start.elapsed();
        if self.open_loop && next_due < end {
            self.report.unsent = (end - next_due).div_ceil(interval.max(1));
        }
    }

    /// Closed loop: every idle connection sends now (failures wait for the next turn).
    fn launch_idle(&mut self, now: u64) {
        for _ in 0..self.idle.len() {
            match self.idle.pop() {
                Some(slot) => self.begin(slot, now),
                None => break,
            }
        }
    }

    /// Open loop: each due request takes an idle connection; returns the next due time.
    fn launch_due(&mut self, mut next_due: u64, interval: u64, now: u64) -> u64 {
        while next_due <= now {
            let Some(slot) = self.idle.pop() else { break };
            self.begin(slot, next_due);
            next_due += interval;
        }
        next_due
    }

    /// Starts a request on `slot`, timed from `intended`.
    fn begin(&mut self, slot: u32, intended: u64) {
        let c = &mut self.conns[slot as usize];
        c.intended = intended;
        c.reader.reset();
        c.sent = 0;
        c.first_byte = false;
        if c.sock.is_some() {
            c.phase = Phase::Sending;
        } else if let Err(kind) = self.open(slot) {
            return self.fail(slot, kind);
        }
        self.send(slot);
    }

    /// A new nonblocking socket for `slot`, connecting, registered with epoll.
    fn open(&mut self, slot: u32) -> Result<(), ErrorKind> {
        let now = self.now();
        let family = match self.addr {
            SocketAddr::V4(_) => AddressFamily::INET,
            SocketAddr::V6(_) => AddressFamily::INET6,
        };
        let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
        let sock = rustix::net::socket_with(family, SocketType::STREAM, flags, None)
            .map_err(|_| ErrorKind::Connect)?;
        if !self.close {
            // Requests are written whole after each response; Nagle would only add delay.
            let _ = rustix::net::sockopt::set_tcp_nodelay(&sock, true);
        }
        match rustix::net::connect(&sock, &self.addr) {
            Ok(()) | Err(Errno::INPROGRESS) => {}
            Err(_) => return Err(ErrorKind::Connect),
        }
        let c = &mut self.conns[slot as usize];
        c.generation = c.generation.wrapping_add(1);
        let token = u64::from(slot) | u64::from(c.generation) << 32;
        let interest = epoll::EventFlags::IN
            | epoll::EventFlags::OUT
            | epoll::EventFlags::RDHUP
            | epoll::EventFlags::ET;
        epoll::add(
            &self.epoll,
            &sock,
            epoll::EventData::new_u64(token),
            interest,
        )
        .map_err(|_| ErrorKind::Connect)?;
        c.sock = Some(sock);
        c.phase = Phase::Connecting;
        c.connect_start = now;
        Ok(())
    }

    /// Writes what is left of the request; EAGAIN waits for EPOLLOUT.
    fn send(&mut self, slot: u32) {
        loop {
            let c = &mut self.conns[slot as usize];
            let Some(sock) = c.sock.as_ref() else { return };
            match rustix::net::send(sock, &self.request[c.sent..], SendFlags::NOSIGNAL) {
                Ok(n) => {
                    if c.phase == Phase::Connecting {
                        c.phase = Phase::Sending;
                        let took = self.start.elapsed().as_nanos() as u64 - c.connect_start;
                        self.report.connect.record(took);
                    }
                    c.sent += n;
                    if c.sent == self.request.len() {
                        c.phase = Phase::Receiving;
                        return;
                    }
                }
                Err(Errno::AGAIN) => return,
                Err(Errno::INTR) => {}
                Err(_) => {
                    let kind = if c.phase == Phase::Connecting {
                        ErrorKind::Connect
                    } else {
                        ErrorKind::Write
                    };
                    return self.fail(slot, kind);
                }
            }
        }
    }

    fn on_event(&mut self, token: u64, flags: epoll::EventFlags) {
        let slot = token as u32;
        let Some(c) = self.conns.get(slot as usize) else {
            return;
        };
        if c.generation != (token >> 32) as u32 || c.sock.is_none() {
            return; // stale: the socket this event was for is gone
        }
        let hangup = flags.intersects(epoll::EventFlags::RDHUP | epoll::EventFlags::HUP);
        match c.phase {
            Phase::Connecting | Phase::Sending => {
                self.send(slot);
                if flags.contains(epoll::EventFlags::ERR)
                    && self.conns[slot as usize].phase == Phase::Connecting
                {
                    return self.fail(slot, ErrorKind::Connect);
                }
            }
            Phase::Idle if hangup || flags.contains(epoll::EventFlags::IN) => {
                return self.drop_idle(slot)
            }
            Phase::Idle | Phase::Receiving => {}
        }
        let readable = epoll::EventFlags::IN | epoll::EventFlags::ERR;
        if self.conns[slot as usize].phase == Phase::Receiving
            && (hangup || flags.intersects(readable))
        {
            self.receive(slot, hangup);
        }
    }

    /// Reads until the response is complete, the socket is drained, or it fails.
    fn receive(&mut self, slot: u32, hangup: bool) {
        loop {
            let c = &mut self.conns[slot as usize];
            let Some(sock) = c.sock.as_ref() else { return };
            let n = match rustix::io::read(sock, &mut self.buf[..]) {
                Ok(n) => n,
                Err(Errno::AGAIN) => return,
                Err(Errno::INTR) => continue,
                Err(_) => return self.fail(slot, ErrorKind::Read),
            };
            if n == 0 {
                return match c.reader.eof() {
                    Ok(()) => self.complete(slot, false),
                    Err(e) => self.fail(slot, e.into()),
                };
            }
            // One clock read serves the first byte and, when the response came whole in
            // this read (the usual small response), its completion too.
            let mut first_at = None;
            if !c.first_byte {
                c.first_byte = true;
                let now = self.start.elapsed().as_nanos() as u64;
                self.report.ttfb.record(now.saturating_sub(c.intended));
                first_at = Some(now);
            }
            self.report.bytes += n as u64;
            match c.reader.feed(&self.buf[..n]) {
                Ok(Feed::Complete(used)) => {
                    let now = first_at.unwrap_or_else(|| self.now());
                    return self.complete_at(slot, used < n, now);
                }
                Ok(Feed::Partial) if n < self.buf.len() && !hangup && !c.reader.server_closes() => {
                    return
                }
                Ok(Feed::Partial) => {}
                Err(e) => return self.fail(slot, e.into()),
            }
        }
    }

    /// A response is complete; `trailing` is true when more bytes followed it.
    fn complete(&mut self, slot: u32, trailing: bool) {
        let now = self.now();
        self.complete_at(slot, trailing, now);
    }

    /// [`Worker::complete`] at a time already read.
    fn complete_at(&mut self, slot: u32, trailing: bool, now: u64) {
        let c = &mut self.conns[slot as usize];
        self.report.latency.record(now.saturating_sub(c.intended));
        self.report.requests += 1;
        if !(200..400).contains(&c.reader.status()) {
            self.report.errors[ErrorKind::Status as usize] += 1;
        }
        if trailing {
            self.report.errors[ErrorKind::Garbage as usize] += 1;
        }
        c.phase = Phase::Idle;
        if self.close || trailing || c.reader.server_closes() {
            c.sock = None;
        }
        if self.open_loop {
            self.idle.push(slot);
        } else {
            self.begin(slot, now);
        }
    }

    /// Counts a failure and closes the slot's socket; the slot waits to be relaunched.
    fn fail(&mut self, slot: u32, kind: ErrorKind) {
        self.report.errors[kind as usize] += 1;
        let c = &mut self.conns[slot as usize];
        c.sock = None;
        c.phase = Phase::Idle;
        self.idle.push(slot);
    }

    /// The server closed (or wrote to) a connection with no request in flight: drop it
    /// quietly; the next request on the slot reconnects. Not an error (keep-alive timeout).
    fn drop_idle(&mut self, slot: u32) {
        self.conns[slot as usize].sock = None;
    }
}
