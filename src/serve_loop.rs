//! The per-worker serving loop: accept on the worker's own listener, drive every
//! connection's state machine from epoll readiness, enforce the timeouts.
//!
//! Input: the worker's listener (already pinned, already steered), a [`LoopConfig`], the
//! worker's shared [`WorkerCounters`], and a control callback polled at least once per
//! loop turn (signals only set flags; this loop reads them). Output: served connections,
//! counted. It does not fork, pin or bind: the master and `worker.rs` did that.
//!
//! The loop's contract (mio's, written down): readiness is a hint. The listener is
//! level-triggered, so one `accept4` per event ([`Tuning::accept_batch`]) leaves a deeper
//! queue to be reported again at the next wait, and a connection flood cannot starve the
//! connections already open (an `accept4` that finds `EAGAIN` just ends the batch); connections
//! are edge-triggered and each one is driven by `conn::advance` until it would block.
//! Every token carries its slot's generation: an event for a slot that was closed (and
//! perhaps reused) earlier in the same batch is dropped and counted in `stale_events`.
//!
//! Memory: everything is allocated in [`run`] before the first `epoll_wait` (after the
//! worker pinned itself, so first touch puts it on the worker's node): the connection
//! table (`max_conns` slots), one arena of `max_conns × conn::slot_bytes(preamble area)`
//! rounded up to whole pages a slot (17 KiB of a 20 KiB stride: a 1 KiB response-head area
//! and a 16 KiB receive area; the head area grows in KiB steps, to 6 KiB at most, only
//! when the operator's `--header` and `--cache-control` lines need it, and then every
//! response writes into it), in one anonymous `MAP_NORESERVE` mapping,
//! `sys::ZeroedArena`, so a page becomes resident only when a connection first writes
//! it; the working area of the same size where every call of `conn::advance` reads and
//! answers (so a request that arrives whole is served without touching its slot's
//! pages, and an idle keep-alive connection holds none: a slot's region receives only
//! what a slow path must keep between calls, `conn::held`, and the loop gives those pages
//! back once the connection is idle again or closes; a slot left free for 10 to 20 s
//! gives its pages back too ([`give_back`], checked in the loop's once-a-second sweep),
//! and the table shrinks to the slots in use), the deadline lists, the event buffer, the
//! two ready lists (one entry per slot), the file cache, the access log buffer and, with
//! `--list-dirs`, the listing slots (`crate::listing`). Serving a request allocates
//! nothing.
//!
//! Accepting: one `accept4` per listener event ([`Tuning::accept_batch`]); `EINTR`,
//! `ECONNABORTED`, `EPROTO` and `EPERM` (a connection gone or refused before it was
//! taken) are passed over; `EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`, any other error or a
//! full table pause accepting for [`Tuning::accept_pause`] (the listener's interest is cleared,
//! so a level-triggered listener cannot spin the CPU), counted in `accept_pauses`; the
//! queued connections wait in the kernel's backlog and are served after the pause.
//! Address lists (`--allow`, `--deny`: the defaults, `site::access`): a peer they refuse
//! is closed as it is accepted, before a byte is read and before any slot is taken,
//! counted in `access_refused`; a proxy's clients are checked per request (`conn`).
//! Fairness (`--max-conns-per-addr`, [`per_addr`]): a connection from an address (an
//! IPv4 address, an IPv6 /64) that already holds its limit of this loop's slots is
//! closed at once, before a byte is read, and counted in `per_addr_refused`; it never
//! takes a slot or makes room. A full table makes room for an admitted connection by
//! closing one of the address holding the most connections (when it holds more than a
//! quarter of its limit): its oldest connection that waits on the client (between
//! requests, or in the middle of a head), otherwise the connection idle the longest of
//! any address, otherwise the oldest head still arriving of any address; with none of
//! them (every slot sending or lingering), accepting pauses. The
//! address is the TCP peer's, also behind a proxy (`--real-ip-from`, `--proxy-protocol`):
//! the client address a proxy names is read after the slot is taken.
//! A connection just accepted is read at once without registering it with epoll: with
//! `TCP_DEFER_ACCEPT` its request is already there, so a `Connection: close` exchange costs
//! `accept4`, `getsockopt(SO_INCOMING_CPU)`, `read`, `send`, `close`, and the
//! `epoll_pwait` that reported the listener (one per connection when they arrive one at
//! a time).
//!
//! Parts: [`table`] owns the connection table (slots, arena, free stack, give-back),
//! taken and released as nginx's `ngx_get_connection`/`ngx_free_connection`;
//! [`listener`] holds what the listener waits for (connections, the end of a pause, a
//! stop, nothing) and its one transition function, which a drain steps through; this
//! file turns epoll events, deadlines and control into calls on both.

use crate::access_log::AccessLog;
use crate::auth::budget::Limits;
use crate::auth::gate::random_key;
use crate::auth::{Gate, HostUsers};
use crate::client_addr::rate::RateTable;
use crate::client_addr::Walk;
use crate::config::{Cidr, Logging, Timeouts};
pub use crate::conn::hosts::LoopHosts;
use crate::conn::{self, Arrival, Ctx, Next, Readiness, Scratch};
use crate::disk::Disk;
use crate::event::{Poller, Ready, Token};
use crate::files::cache::{CacheConfig, FileCache};
use crate::files::FileOptions;
use crate::http::date::DateCache;
use crate::listing::Listings;
use crate::site::access::AccessList;
use crate::site::SiteRules;
use crate::timers::{Kind, Timers};
use core::sync::atomic::Ordering::Relaxed;
use rustix::fd::AsFd;
use rustix::io::Errno;
use rustix::net::SocketFlags;
use rustix::time::ClockId;

use crate::cpuset::CpuId;
use crate::stats::WorkerCounters;
use core::fmt;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::time::Duration;

mod give_back;
mod listener;
mod per_addr;
mod table;

use listener::{Awaits, Event, Listener};
use per_addr::{AddrKey, PerAddr};
use table::Table;

/// What the worker should do next, as told by its signal flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Keep serving.
    Run,
    /// Graceful stop: accept what is already queued, leave the listener (the master
    /// shuts it on a server-wide stop), drain the connections (see [`Loop::drain`]), exit.
    StopGraceful,
    /// Retire (a newer worker took over the same listener): stop accepting and leave the
    /// listener to it, drain the connections, exit.
    Retire,
    /// Retire, and close the connections idle between requests now (too many
    /// generations retire at once).
    RetireCloseIdle,
    /// Close everything now and exit.
    StopNow,
    /// Reopen the access log, then keep serving.
    ReopenLog,
}

/// Everything the loop needs, fixed at start.
#[derive(Debug)]
pub struct LoopConfig {
    /// The worker's index (for the access log).
    pub worker: u32,
    /// The CPU this worker is pinned to (for the locality counter).
    pub cpu: CpuId,
    /// The served root directory, opened once (`O_PATH | O_DIRECTORY`).
    pub root: OwnedFd,
    /// Connection slots (the table is allocated once, after pinning).
    pub max_conns: u32,
    /// Slots one client address (IPv4 address, IPv6 /64) may hold at a time.
    pub max_conns_per_addr: u32,
    /// The connection deadlines; `shutdown` is the grace period for
    /// [`Control::StopGraceful`].
    pub timeouts: Timeouts,
    /// The access log and the client address it names.
    pub logging: Logging,
    /// The operator's rules for responses (everyday serving).
    pub site: SiteRules,
    /// The virtual hosts: `root` and `site` above are host 0, these the rest.
    pub hosts: LoopHosts,
    /// Each host's users of `--basic-auth` (read by the master; empty without the flag).
    pub auth: HostUsers,
    /// What bounds a forwarded request (`--max-body`, `--proxy-timeout`, ...).
    pub proxy: crate::config::ProxyLimits,
}

/// Why the loop could not run.
#[derive(Debug)]
pub enum LoopError {
    /// A bring-up step failed (epoll creation, table allocation, ...).
    Setup(&'static str, std::io::Error),
}

impl fmt::Display for LoopError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoopError::Setup(step, e) => write!(f, "{step}: {e}"),
        }
    }
}

/// Knobs that are not command-line flags (defaults suit production; tests shrink them).
#[derive(Clone, Copy, Debug)]
pub struct Tuning {
    /// The per-worker small-file cache.
    pub cache: CacheConfig,
    /// How long a connection closing after an error reads and discards input.
    pub(crate) linger: Duration,
    /// How long accepting pauses on a failed accept (EMFILE, ENFILE, ...) or a full table.
    pub(crate) accept_pause: Duration,
    /// Most connections accepted per listener event. One, as nginx's default
    /// (`multi_accept off`): the listener is level-triggered, so a deeper queue is
    /// reported again by the next wait, which then returns at once; accepting until
    /// `EAGAIN` instead spends an `accept4` per wake-up only to find the queue empty,
    /// which under a steady stream of short connections is one failed call per
    /// connection (measured: 1.8 `accept4` and 0.8 `epoll_pwait` per connection).
    pub(crate) accept_batch: usize,
    /// epoll events fetched per wait.
    pub(crate) events: usize,
    /// The `--basic-auth` budgets of hash checks (`auth::budget`).
    pub(crate) auth_limits: Limits,
    /// Directory listings one worker streams at a time under `--list-dirs` (each slot's
    /// memory is allocated at start: `crate::listing`).
    pub(crate) listings: usize,
    /// Bytes of each listing slot's name arena (`listing::BATCH_NAMES`; a smaller one
    /// makes a listing take more passes, as tests want).
    pub listing_names: usize,
    /// How long a free slot stays unused before its arena pages go back to the kernel
    /// (one to two of these: `serve_loop::give_back`).
    pub(crate) give_back: Duration,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            cache: CacheConfig::default(),
            linger: Duration::from_secs(2),
            accept_pause: Duration::from_millis(100),
            accept_batch: 1,
            events: 256,
            auth_limits: Limits::SERVING,
            listings: crate::listing::SLOTS,
            listing_names: crate::listing::BATCH_NAMES,
            give_back: Duration::from_secs(10),
        }
    }
}

/// Longest sleep, so the control callback is polled even with no signal to this thread.
const MAX_WAIT_MS: u64 = 500;
/// The worker's file cache, describing files as the site says, with its compressed
/// arena under `--compress gzip`.
fn file_cache(cfg: CacheConfig, site: &SiteRules) -> FileCache {
    let cache = FileCache::new(cfg).with_options(FileOptions::serving(site));
    // Checked at start and by each reload (`preflight::compress_cache`): a directory
    // gone since is no large-file compression, not a worker that cannot start.
    use rustix::fs::OFlags;
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let dir = site.compress.cache_dir.as_ref();
    let dir = dir.and_then(|d| rustix::fs::open(d, flags, rustix::fs::Mode::empty()).ok());
    match site.compress.gzip {
        true => cache.with_compression(dir),
        false => cache,
    }
}

/// Each host's share of the file cache: the entries divided among the hosts, at least
/// 32 each (or all of them, when fewer), so the hosts together hold about what one site
/// would.
fn host_caches(cfg: CacheConfig, hosts: usize) -> CacheConfig {
    let share = cfg.entries / u32::try_from(hosts.max(1)).unwrap_or(u32::MAX);
    CacheConfig {
        entries: share.max(cfg.entries.min(32)),
        ..cfg
    }
}

/// Period of the file cache's sweep.
const SWEEP_MS: u64 = 1000;
/// Slots are indexed by u32 and `u32::MAX` is the listener's token.
const MAX_SLOTS: u32 = 1 << 24;

/// Serves connections from `listener` until `control` says stop.
pub(crate) fn run(
    listener: BorrowedFd<'_>,
    cfg: LoopConfig,
    counters: &WorkerCounters,
    control: &mut dyn FnMut() -> Control,
) -> Result<(), LoopError> {
    run_tuned(listener, cfg, Tuning::default(), counters, control)
}

/// [`run`] with explicit [`Tuning`].
pub fn run_tuned(
    listener: BorrowedFd<'_>,
    cfg: LoopConfig,
    tuning: Tuning,
    counters: &WorkerCounters,
    control: &mut dyn FnMut() -> Control,
) -> Result<(), LoopError> {
    let mut lp = Loop::new(listener, &cfg, tuning, counters)?;
    lp.serve(&cfg, control)
}

/// The loop's `--basic-auth` gate: the credentials, and a key for its memory drawn now
/// (`now` on the turn clock).
fn gate(cfg: &LoopConfig, tuning: &Tuning, now: u64) -> Result<Option<Gate>, LoopError> {
    if cfg.auth.iter().all(Option::is_none) {
        return Ok(None);
    }
    let key = random_key().map_err(|e| LoopError::Setup("getrandom (the credential key)", e))?;
    Ok(Some(Gate::new(
        cfg.auth.clone(),
        tuning.auth_limits,
        key,
        now,
    )))
}

/// The loop's clock, read once a turn. The coarse clocks are the kernel's last tick
/// (1-10 ms old, by `CONFIG_HZ`): deadlines of seconds and a Date of whole seconds need
/// no more, and the vDSO answers them from memory, without reading the TSC (measured on
/// this project's 2-vCPU guest: 4 ns against 22 ns a read; two reads a turn, and on the
/// close path a turn per connection). clock_gettime(2).
fn now_ms() -> u64 {
    let t = rustix::time::clock_gettime(ClockId::MonotonicCoarse);
    (t.tv_sec as u64).saturating_mul(1000) + (t.tv_nsec as u64) / 1_000_000
}

/// Whole seconds of wall time for the Date header and the log (coarse, as [`now_ms`]).
fn wall_secs() -> i64 {
    rustix::time::clock_gettime(ClockId::RealtimeCoarse).tv_sec
}

fn ms(d: Duration) -> u64 {
    d.as_millis().min(u128::from(u64::MAX / 4)) as u64
}

fn setup(step: &'static str) -> impl FnOnce(rustix::io::Errno) -> LoopError {
    move |e| LoopError::Setup(step, e.into())
}

/// Who may take a slot, and how an accepted connection arrives.
struct Admission<'a> {
    /// This worker's CPU (for the locality counter).
    cpu: u32,
    /// `--real-ip-from`.
    trusted: &'a [Cidr],
    /// `--proxy-protocol`.
    proxy_protocol: bool,
    /// `--allow` and `--deny` (the defaults'; before any Host is known), `None` when
    /// both are empty (every peer passes: one compare a connection).
    access: Option<&'a AccessList>,
    /// The slots each client address holds (`--max-conns-per-addr`).
    per_addr: PerAddr,
}

struct Loop<'a> {
    listener: Listener<'a>,
    poller: Poller,
    table: Table,
    /// Connections that yielded with work left, driven again next turn (capacity: one
    /// per slot, so pushing never allocates).
    ready: Vec<Token>,
    /// The ready list being driven this turn (swapped with `ready`, same capacity).
    driving: Vec<Token>,
    /// What every connection's transition reads; its `draining` mirrors the listener's
    /// state ([`Listener::draining`]), written only by [`Loop::listen`].
    ctx: Ctx<'a>,
    scratch: Scratch,
    admission: Admission<'a>,
    /// Connections open (sockets in slots).
    open: usize,
    /// When the file cache's unused descriptors are next swept.
    sweep_at: u64,
}

impl<'a> Loop<'a> {
    fn new(
        listener: BorrowedFd<'a>,
        cfg: &'a LoopConfig,
        tuning: Tuning,
        counters: &'a WorkerCounters,
    ) -> Result<Loop<'a>, LoopError> {
        let slots = cfg.max_conns.clamp(1, MAX_SLOTS);
        let n = slots as usize;
        let sites = || core::iter::once(&cfg.site).chain(cfg.hosts.others.iter().map(|(_, s)| s));
        let slot_bytes = conn::slot_bytes(sites().map(SiteRules::head_area).max().unwrap_or(0));
        let poller = Poller::new(tuning.events).map_err(setup("epoll_create1"))?;
        poller
            .add_listener(listener)
            .map_err(setup("epoll_ctl(listener)"))?;
        // Accepted sockets inherit TCP_NODELAY from the listener: no per-connection call.
        let _ = rustix::net::sockopt::set_tcp_nodelay(listener, true);
        let date = DateCache::new(wall_secs());
        // One reading for every clock the loop starts: the give-back round is due exactly
        // one period after the turn clock's start.
        let now = now_ms();
        let log = AccessLog::open(&cfg.logging.access_log, cfg.logging.log_format, &date)
            .map_err(|e| LoopError::Setup("opening the access log", e))?;
        let durations = [
            ms(cfg.timeouts.header),
            ms(cfg.timeouts.keepalive),
            ms(cfg.timeouts.send),
            ms(tuning.linger),
        ];
        let caches = host_caches(tuning.cache, 1 + cfg.hosts.others.len());
        let ctx = Ctx {
            root: cfg.root.as_fd(),
            cache: file_cache(caches, &cfg.site),
            hosts: conn::hosts::Hosts::new(
                (cfg.root.as_fd(), &cfg.site),
                &cfg.hosts,
                cfg.logging.proxy_protocol,
                &|site| file_cache(caches, site),
            ),
            date,
            now_ms: now,
            counters,
            log,
            worker: cfg.worker,
            cpu: cfg.cpu.get() as u32,
            timers: Timers::growing(n, durations),
            draining: false,
            site: &cfg.site,
            forwarded: match cfg.logging.real_ip_recursive {
                true => Walk::PastTrusted(&cfg.logging.real_ip_from),
                false => Walk::LastHop,
            },
            auth: gate(cfg, &tuning, now)?,
            listings: Listings::with_arena(
                if sites().any(|s| s.list_dirs) {
                    tuning.listings
                } else {
                    0
                },
                tuning.listing_names,
                crate::listing::BATCH_ENTRIES,
            ),
            disk: Disk::new(n).map_err(setup("eventfd"))?,
            rate: sites()
                .any(|s| s.rate_limit > 0)
                .then(|| RateTable::new(per_addr::seed())),
            pace_wanted: None,
            relays: conn::relay::Relays::new(
                match sites().any(SiteRules::forwards) {
                    true => Some(poller.handle().map_err(setup("dup(epoll)"))?),
                    false => None,
                },
                cfg.proxy.max_conns,
                ms(cfg.proxy.timeout),
            ),
            max_body: cfg.proxy.max_body,
        };
        poller
            .add_wake(ctx.disk.wake_fd(), Token::DISK)
            .map_err(setup("epoll_ctl(eventfd)"))?;
        Ok(Loop {
            listener: Listener::new(listener, tuning.accept_batch, ms(tuning.accept_pause)),
            poller,
            table: Table::new(n, slot_bytes, ms(tuning.give_back), now)?,
            ready: Vec::with_capacity(n),
            driving: Vec::with_capacity(n),
            ctx,
            scratch: Scratch::new(),
            admission: Admission {
                cpu: cfg.cpu.get() as u32,
                trusted: &cfg.logging.real_ip_from,
                proxy_protocol: cfg.logging.proxy_protocol,
                access: Some(cfg.hosts.accept_list(&cfg.site)).filter(|list| !list.is_open()),
                per_addr: PerAddr::growing(n, cfg.max_conns_per_addr),
            },
            open: 0,
            sweep_at: 0,
        })
    }

    fn serve(
        &mut self,
        cfg: &LoopConfig,
        control: &mut dyn FnMut() -> Control,
    ) -> Result<(), LoopError> {
        let mut grace_end = None;
        loop {
            let control_now = control();
            match control_now {
                Control::Run => {}
                Control::ReopenLog => {
                    let _ = self.ctx.log.reopen();
                }
                Control::StopNow => break,
                Control::StopGraceful | Control::Retire | Control::RetireCloseIdle => {
                    if grace_end.is_none() {
                        grace_end = Some(self.ctx.now_ms + ms(cfg.timeouts.shutdown));
                    }
                    self.drain(control_now == Control::StopGraceful);
                    if control_now == Control::RetireCloseIdle {
                        self.close_idle();
                    }
                    // The queue is accepted and the listener left: the control's next
                    // call tells the master so (`worker.rs`), now rather than after the
                    // next wait, so it shuts the listener before more connections queue.
                    if control_now == Control::StopGraceful && control() == Control::StopNow {
                        break;
                    }
                }
            }
            if let Some(end) = grace_end {
                if self.open == 0 || self.ctx.now_ms >= end {
                    break;
                }
            }
            let timeout = self.wait_ms(grace_end);
            let n = self.poller.wait(timeout).map_err(setup("epoll_wait"))?;
            self.tick();
            for i in 0..n {
                if let Some((token, ready)) = self.poller.event(i) {
                    self.dispatch(token, ready);
                }
            }
            self.drive_ready();
            self.expire();
            self.sweep();
            let (now, mut compressed) = (self.ctx.now_ms, 0);
            self.ctx.busy_caches(|c| {
                c.hash_turn(now);
                compressed += u64::from(c.compress_turn(now));
            });
            if compressed > 0 {
                self.ctx
                    .counters
                    .compressions
                    .fetch_add(compressed, Relaxed);
            }
            self.maybe_resume();
            self.ctx.log.tick(&self.ctx.date, self.ctx.now_ms);
            self.count_log_drops();
        }
        // Responses still being written are cut short: their lines go out with the rest.
        self.close_all();
        self.ctx.log.close();
        self.count_log_drops();
        Ok(())
    }

    /// Adds the access log lines dropped since the last call to the worker's counter
    /// (once a loop turn: inlined, as the two lines it stands for were).
    #[inline(always)]
    fn count_log_drops(&mut self) {
        let dropped = self.ctx.log.take_dropped();
        self.ctx
            .counters
            .log_lines_dropped
            .fetch_add(dropped, Relaxed);
    }

    /// About once a second (the wait never exceeds `MAX_WAIT_MS`): close cached
    /// descriptors of unused or deleted files, and give back the pages of slots unused
    /// for a while.
    fn sweep(&mut self) {
        if self.ctx.now_ms >= self.sweep_at {
            let now = self.ctx.now_ms;
            self.ctx.each_cache(&mut |c| c.sweep(now));
            self.relays_expire();
            self.give_back();
            self.sweep_at = self.ctx.now_ms + SWEEP_MS;
        }
    }

    /// Idle pooled upstream connections past their time are closed, and exchanges with
    /// upstreams past `--proxy-timeout` without progress: each connection is driven to
    /// its 504 or its end (checked with the sweep, about once a second: the
    /// deadline is seconds long, and the request path pays nothing for it).
    fn relays_expire(&mut self) {
        self.ctx.relays.expire_idle(self.ctx.now_ms);
        for slot in 0..self.ctx.relays.slots() {
            if self.ctx.relays.expire(slot, self.ctx.now_ms) {
                self.drive(slot);
            }
        }
    }

    /// Gives the arena pages of slots unused for a while back to the kernel ([`give_back`]);
    /// when the table shrinks, its companion tables (the deadline and per-address links)
    /// shrink with it, their room kept.
    fn give_back(&mut self) {
        if let Some(keep) = self.table.give_back(self.ctx.now_ms) {
            self.ctx.timers.truncate(keep);
            self.admission.per_addr.truncate(keep);
        }
    }

    fn tick(&mut self) {
        self.ctx.now_ms = now_ms();
        self.ctx.date.update(wall_secs());
    }

    /// Milliseconds until the next deadline of any kind (capped).
    fn wait_ms(&self, grace_end: Option<u64>) -> i32 {
        let now = self.ctx.now_ms;
        let mut until = now + MAX_WAIT_MS;
        if let Some(d) = self.ctx.timers.next_deadline() {
            until = until.min(d);
        }
        // A full table resumes when a slot frees (in the same turn), not on a timer.
        if let Awaits::Resume { at } = self.listener.awaits() {
            if self.table.has_room() {
                until = until.min(at);
            }
        }
        if let Some(end) = grace_end {
            until = until.min(end);
        }
        // A large file's content hash goes on at once, or when its slice is read in.
        self.ctx.busy_caches_ref(|c| {
            if let Some(at) = c.hash_wake() {
                until = until.min(at);
            }
            // So is a compression (a slice a turn).
            if let Some(at) = c.compress_wake() {
                until = until.min(at.max(now));
            }
        });
        // Connections that yielded are driven again at once, after polling the others.
        if !self.ready.is_empty() {
            until = now;
        }
        // Round up: waking a millisecond early would spin once more for nothing.
        (until.saturating_sub(now) + u64::from(until > now)).min(MAX_WAIT_MS) as i32
    }

    fn dispatch(&mut self, token: Token, ready: Ready) {
        if token == Token::LISTENER {
            return self.accept_batch(self.listener.batch);
        }
        if token == Token::DISK {
            return self.disk_done();
        }
        let Some(conn) = self.table.live(token) else {
            // An upstream's token names no slot of the table (its bit is set).
            if token.slot & Token::UPSTREAM != 0 {
                return self.upstream_ready(token, ready);
            }
            self.ctx.counters.stale_events.fetch_add(1, Relaxed);
            return;
        };
        conn.note_ready(Readiness {
            readable: ready.readable || ready.hangup,
            writable: ready.writable || ready.hangup,
            peer_shut: ready.peer_shut || ready.hangup,
        });
        self.drive(token.slot);
    }

    /// An upstream socket's event: drives the connection whose exchange it is (an event
    /// for an exchange ended since is dropped).
    #[inline(never)]
    fn upstream_ready(&mut self, token: Token, ready: Ready) {
        let seen = ready.readable || ready.hangup;
        let relays = &mut self.ctx.relays;
        if let Some(slot) = relays.note_ready(token, seen, ready.writable || ready.hangup) {
            self.drive(slot);
        }
    }

    /// Reads handed to the I/O threads completed: count them, drive each connection
    /// whose response waited for one (a completion for a slot closed since is dropped),
    /// then those that waited for room for a read, while there is room.
    fn disk_done(&mut self) {
        self.ctx.disk.reset_wake();
        while let Some(done) = self.ctx.disk.take_done() {
            let counters = self.ctx.counters;
            counters.disk_reads.fetch_add(1, Relaxed);
            counters.disk_wait_us.fetch_add(done.waited_us, Relaxed);
            let slot = done.slot;
            if (slot as usize) < self.table.len() && self.table.slot_mut(slot).conn.disk_done(&done)
            {
                self.drive(slot);
            }
        }
        // Each waiting slot once at most: one that finds no room again waits again.
        for _ in 0..self.table.len() {
            let Some(slot) = self.ctx.disk.next_waiting() else {
                break;
            };
            if (slot as usize) < self.table.len() {
                self.drive(slot);
            }
        }
    }

    /// Accepts up to `limit` connections while the listener awaits them.
    fn accept_batch(&mut self, limit: usize) {
        for _ in 0..limit {
            if self.listener.awaits() != Awaits::Connections {
                return;
            }
            // A full table makes room (below) only for a connection really accepted.
            if !self.table.has_room() && self.reclaimable().is_none() {
                return self.pause();
            }
            match rustix::net::acceptfrom_with(
                self.listener.fd,
                SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
            ) {
                Ok((fd, addr)) => {
                    let peer = addr.and_then(|a| std::net::SocketAddr::try_from(a).ok());
                    let peer = peer.map(|a| a.ip());
                    let access = self.admission.access;
                    if access.is_some_and(|l| peer.is_some_and(|ip| !l.admits(ip))) {
                        // `--allow`/`--deny`: closed before a byte is read, no slot taken.
                        self.ctx.counters.access_refused.fetch_add(1, Relaxed);
                        drop(fd);
                        continue;
                    }
                    // A trusted proxy (`--real-ip-from`) carries many clients: not limited.
                    let trusted =
                        peer.is_some_and(|ip| Cidr::any_contains(self.admission.trusted, ip));
                    let key = peer.filter(|_| !trusted).map(AddrKey::of);
                    if key.is_some_and(|k| !self.admission.per_addr.admits(k)) {
                        // Closed before a byte is read: it takes no slot and makes no room.
                        self.ctx.counters.per_addr_refused.fetch_add(1, Relaxed);
                        drop(fd);
                        continue;
                    }
                    if !self.table.has_room() {
                        self.make_room();
                    }
                    let (timers, per_addr) = (&mut self.ctx.timers, &mut self.admission.per_addr);
                    let grow = || {
                        timers.add_slot();
                        per_addr.add_slot();
                    };
                    let Some(slot) = self.table.take(grow) else {
                        return;
                    };
                    self.accepted(slot, fd, peer);
                }
                Err(Errno::AGAIN) => return,
                Err(Errno::INTR | Errno::CONNABORTED | Errno::PROTO | Errno::PERM) => {}
                Err(Errno::MFILE | Errno::NFILE | Errno::NOBUFS | Errno::NOMEM) => {
                    return self.pause()
                }
                Err(_) => return self.pause(),
            }
        }
    }

    fn accepted(&mut self, slot: u32, fd: OwnedFd, peer: Option<std::net::IpAddr>) {
        let counters = self.ctx.counters;
        counters.accepted.fetch_add(1, Relaxed);
        let adm = &mut self.admission;
        let local = rustix::net::sockopt::socket_incoming_cpu(&fd) == Ok(adm.cpu);
        if local {
            counters.local.fetch_add(1, Relaxed);
        }
        let trusted = peer.is_some_and(|ip| Cidr::any_contains(adm.trusted, ip));
        if adm.proxy_protocol && !trusted {
            // Only a trusted proxy may send a PROXY header: close before reading a byte.
            counters.proxy_refused.fetch_add(1, Relaxed);
            self.table.put_back(slot);
            return;
        }
        let arrival = Arrival {
            peer,
            local,
            forwarded: trusted && !adm.proxy_protocol,
            proxy_header: adm.proxy_protocol,
        };
        if let Some(ip) = peer.filter(|_| !trusted) {
            adm.per_addr.add(slot, AddrKey::of(ip));
        }
        counters.open.fetch_add(1, Relaxed);
        self.open += 1;
        // The header deadline is armed only if the request has to be waited for.
        self.table.slot_mut(slot).open(fd, arrival);
        self.drive(slot);
    }

    fn drive(&mut self, slot: u32) {
        let (next, s) = self.table.advance(slot, &mut self.ctx, &mut self.scratch);
        match next {
            Next::Park if s.registered => {}
            Next::Park => {
                let token = s.token(slot);
                let added = s.conn.fd().map(|fd| self.poller.add_conn(fd, token));
                match added {
                    Some(Ok(())) => s.registered = true,
                    _ => self.close(slot),
                }
            }
            Next::Yield => {
                let token = s.token(slot);
                let added = match (s.registered, s.conn.fd()) {
                    (true, _) => Ok(()),
                    (false, Some(fd)) => self.poller.add_conn(fd, token),
                    (false, None) => Err(Errno::BADF),
                };
                if added.is_err() {
                    return self.close(slot);
                }
                s.registered = true;
                if !s.queued {
                    s.queued = true;
                    self.queue(token);
                }
            }
            Next::Close => self.close(slot),
        }
    }

    /// Puts a yielded connection on the ready list. Entries of slots closed since they
    /// were queued are dropped first if the list is full, so it never outgrows one entry
    /// per slot (a live slot is queued at most once).
    fn queue(&mut self, token: Token) {
        if self.ready.len() == self.ready.capacity() {
            let table = &self.table;
            self.ready.retain(|t| table.is_queued(*t));
        }
        self.ready.push(token);
    }

    /// Drives the connections that yielded before this pass; those yielding again during
    /// it go on the (swapped, empty) ready list for the next turn.
    fn drive_ready(&mut self) {
        if self.ready.is_empty() {
            return;
        }
        core::mem::swap(&mut self.ready, &mut self.driving);
        for i in 0..self.driving.len() {
            let token = self.driving[i];
            if !self.table.is_queued(token) {
                continue;
            }
            self.table.slot_mut(token.slot).queued = false;
            self.drive(token.slot);
        }
        self.driving.clear();
    }

    fn close(&mut self, slot: u32) {
        if self.table.release(slot, &mut self.ctx) {
            self.admission.per_addr.remove(slot);
            self.open -= 1;
            self.ctx.counters.open.fetch_sub(1, Relaxed);
        }
    }

    fn close_all(&mut self) {
        for slot in 0..self.table.len() as u32 {
            self.close(slot);
        }
    }

    /// Closes every connection whose deadline passed; a head that timed out gets a 408,
    /// sent as any closing response is (driven from here on).
    fn expire(&mut self) {
        while let Some((slot, kind)) = self.ctx.timers.pop_expired(self.ctx.now_ms) {
            if kind == Kind::Header {
                let (c, buf) = self.table.held(slot);
                if conn::header_timeout(c, buf, &mut self.ctx, &mut self.scratch) {
                    self.drive(slot);
                    continue;
                }
            }
            if kind == Kind::Linger && conn::still_flushing(&self.table.slot(slot).conn, &self.ctx)
            {
                self.ctx.timers.arm(slot, Kind::Linger, self.ctx.now_ms);
                continue;
            }
            self.close(slot);
        }
    }

    /// A full table makes room by closing [`Loop::reclaimable`].
    fn make_room(&mut self) {
        if let Some(slot) = self.reclaimable() {
            self.close(slot);
        }
    }

    /// The connection a full table closes for a new one, the first there is of:
    ///
    /// 1. when one address holds more than a quarter of its limit (`PerAddr::hogged`),
    ///    the oldest of the address holding the most that waits on its client (idle
    ///    between requests, or in a head or a body to discard);
    /// 2. as nginx, the connection idle the longest;
    /// 3. the oldest head (or body to discard) still arriving, whatever its address: it
    ///    has had the longest of any to arrive, while the new connection's request is
    ///    already there (`TCP_DEFER_ACCEPT`). Without this, addresses each holding a
    ///    modest share (sixteen at a quarter of the limit) keep the table with half-sent
    ///    heads until the header timeout, and accepting pauses.
    ///
    /// Walks at most one address's connections (its limit).
    fn reclaimable(&self) -> Option<u32> {
        let timers = &self.ctx.timers;
        let waiting = |s: &u32| matches!(timers.kind(*s), Some(Kind::Idle | Kind::Header));
        let per_addr = &self.admission.per_addr;
        let from_hog = per_addr.hogged().then(|| per_addr.busiest().find(waiting));
        from_hog
            .flatten()
            .or_else(|| timers.oldest(Kind::Idle))
            .or_else(|| timers.oldest(Kind::Header))
    }

    /// Steps the listener's state on `event`, and tells the connections whether they
    /// drain (the only writer of `ctx.draining`).
    fn listen(&mut self, event: Event) {
        self.listener.step(event, &self.poller);
        self.ctx.draining = self.listener.draining();
    }

    fn pause(&mut self) {
        self.ctx.counters.accept_pauses.fetch_add(1, Relaxed);
        let until = self.ctx.now_ms + self.listener.pause_ms;
        self.listen(Event::Pause { until });
    }

    fn maybe_resume(&mut self) {
        let Awaits::Resume { at } = self.listener.awaits() else {
            return;
        };
        if self.ctx.now_ms < at {
            return;
        }
        if self.table.has_room() || self.reclaimable().is_some() {
            self.listen(Event::Due);
        }
    }

    /// Stops taking new connections and lets the open ones end without a request in
    /// flight ever meeting a close: every response from now on says `Connection: close`
    /// (`ctx.draining`) and the connection closes after it; a connection that stays idle
    /// is closed by its keep-alive deadline (or at the shutdown deadline, whichever comes
    /// first), the race any keep-alive server has at its idle timeout.
    ///
    /// `refuse_new` (a stop, not a retirement): the connections already queued on the
    /// listener are accepted first (as before the drain: not yet `Connection: close`),
    /// then the loop leaves the listener for good. It never
    /// shuts the socket: the master and this worker's successors hold the very same one
    /// (a `shutdown` would end it for all of them). On a server-wide stop the master
    /// shuts it once the workers have accepted their queues (the worker says so on the
    /// readiness pipe, `worker.rs`), so new connections are refused at once; a QUIT to
    /// this worker alone leaves it listening for the replacement. A retiring worker
    /// leaves the listener alone too: its successor accepts from the same socket.
    ///
    /// A retiring worker told to close its idle connections now
    /// ([`Control::RetireCloseIdle`]: `SIGWINCH` from the master when too many generations
    /// retire at once) also closes every connection waiting between requests
    /// ([`Self::close_idle`]).
    fn drain(&mut self, refuse_new: bool) {
        if refuse_new && self.listener.awaits() != Awaits::Nothing {
            self.listen(Event::LastCall);
            // Until the queue is empty (or no slot can be freed).
            self.accept_batch(usize::MAX);
            self.listen(Event::Leave);
        }
        self.listen(Event::Retire);
    }

    /// Closes every connection idle between requests (nothing buffered, no response
    /// owed): what a keep-alive client meets at any idle timeout.
    fn close_idle(&mut self) {
        for _ in 0..self.table.len() {
            let Some(slot) = self.ctx.timers.oldest(Kind::Idle) else {
                return;
            };
            self.ctx.timers.disarm(slot);
            self.close(slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    fn config(max_conns: u32) -> LoopConfig {
        let dir = std::env::temp_dir();
        LoopConfig {
            worker: 0,
            cpu: CpuId::new(0).unwrap(),
            root: rustix::fs::open(&dir, rustix::fs::OFlags::PATH, rustix::fs::Mode::empty())
                .unwrap(),
            max_conns,
            max_conns_per_addr: max_conns,
            timeouts: Timeouts {
                header: Duration::from_secs(5),
                keepalive: Duration::from_secs(5),
                send: Duration::from_secs(5),
                shutdown: Duration::from_secs(5),
            },
            logging: Logging::default(),
            site: SiteRules::default(),
            hosts: LoopHosts::default(),
            auth: Vec::new(),
            proxy: Default::default(),
        }
    }

    fn bound() -> (TcpListener, std::net::SocketAddr) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        (listener, addr)
    }

    const READY: Ready = Ready {
        readable: true,
        writable: true,
        hangup: false,
        peer_shut: false,
    };

    #[test]
    fn an_event_for_an_old_generation_is_dropped_and_counted() {
        let (listener, addr) = bound();
        let cfg = config(4);
        let counters = WorkerCounters::default();
        let mut lp = Loop::new(listener.as_fd(), &cfg, Tuning::default(), &counters).unwrap();
        let _client = TcpStream::connect(addr).unwrap();
        let ready = READY;
        lp.dispatch(Token::LISTENER, ready);
        assert_eq!(lp.open, 1);
        let live = lp.table.slot(0).generation;
        lp.dispatch(
            Token {
                slot: 0,
                generation: live.wrapping_sub(1),
            },
            ready,
        );
        lp.dispatch(
            Token {
                slot: 3,
                generation: 0,
            },
            ready,
        ); // a slot not in use (never used yet: beyond the table so far)
        lp.dispatch(
            Token {
                slot: 99,
                generation: 0,
            },
            ready,
        ); // out of range
        assert_eq!(counters.stale_events.load(Relaxed), 3);
        lp.dispatch(
            Token {
                slot: 0,
                generation: live,
            },
            ready,
        );
        assert_eq!(
            counters.stale_events.load(Relaxed),
            3,
            "the live token is not stale"
        );
    }

    /// A slot's region is written only by a slow path and given back once the connection
    /// is idle again; a free slot unused for a period leaves the table.
    #[test]
    fn a_slot_holds_pages_only_while_a_slow_path_needs_them() {
        use std::io::Write;
        let (listener, addr) = bound();
        let cfg = config(4);
        let counters = WorkerCounters::default();
        let tuning = Tuning {
            give_back: Duration::from_millis(10),
            ..Tuning::default()
        };
        let mut lp = Loop::new(listener.as_fd(), &cfg, tuning, &counters).unwrap();
        let mut client = TcpStream::connect(addr).unwrap();
        client
            .write_all(b"GET /steerd-no-such-file HTTP/1.1\r\nHo")
            .unwrap();
        lp.dispatch(Token::LISTENER, READY);
        let slot = (0..lp.table.len() as u32)
            .find(|&i| lp.table.slot(i).conn.fd().is_some())
            .unwrap();
        let touched = |lp: &mut Loop<'_>| lp.table.held(slot).1.iter().any(|&b| b != 0);
        assert!(
            touched(&mut lp),
            "the partial head waits in the slot's region"
        );
        let token = lp.table.slot(slot).token(slot);
        client.write_all(b"st: a\r\n\r\n").unwrap();
        lp.dispatch(token, READY);
        assert!(status_line(&mut client).starts_with("HTTP/1.1 404"));
        assert!(!touched(&mut lp), "idle again: the pages read as zeros");
        client
            .write_all(b"GET /steerd-no-such-file HTTP/1.1\r\nHost: a\r\n\r\n")
            .unwrap();
        lp.dispatch(token, READY);
        assert!(status_line(&mut client).starts_with("HTTP/1.1 404"));
        assert!(
            !touched(&mut lp),
            "a whole request is answered in the loop's area"
        );
        drop(client);
        lp.dispatch(
            token,
            Ready {
                hangup: true,
                ..READY
            },
        );
        assert_eq!(lp.open, 0);
        lp.ctx.now_ms += 10;
        lp.give_back();
        assert_eq!(lp.table.len(), slot as usize + 1, "kept for a whole period");
        lp.ctx.now_ms += 10;
        lp.give_back();
        assert_eq!(
            lp.table.len(),
            slot as usize,
            "the table shrank to its slots in use (none)"
        );
        let mut client = TcpStream::connect(addr).unwrap();
        client
            .write_all(b"GET /steerd-no-such-file HTTP/1.1\r\nHost: a\r\n\r\n")
            .unwrap();
        lp.dispatch(Token::LISTENER, READY);
        let line = status_line(&mut client);
        assert!(
            line.starts_with("HTTP/1.1 404"),
            "the table grows again: {line}"
        );
        assert!(
            lp.table.slot(slot).generation > token.generation,
            "no old token matches"
        );
    }

    /// The status line of the next whole response on `client` (its head and its
    /// `Content-Length` body are read).
    fn status_line(client: &mut TcpStream) -> String {
        use std::io::Read;
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            client.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        let text = String::from_utf8_lossy(&head).into_owned();
        let len = text
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .map_or(0, |n| n.trim().parse().unwrap());
        client.read_exact(&mut vec![0; len]).unwrap();
        text.lines().next().unwrap_or_default().to_string()
    }
}
