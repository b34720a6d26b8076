//! The master's supervision loop: one slot per plan entry, each with its current worker,
//! the predecessor a reload keeps serving until the successor serves, and its crash
//! history; the workers' readiness reports; the signals; the metrics and health answers.
//!
//! Input: what bring-up made ([`Shared`]), the service-manager [`Notifier`], how this
//! binary was started (for an upgrade) and, in a master started by an upgrade, the pipe
//! to report on. Output: workers kept running until a stop, or a hand-over to a new
//! master. It never serves HTTP to clients and never waits on a client.
//!
//! Never a moment without a serving worker on a slot: a reload starts the successor
//! beside the running worker and retires the running one (USR2: drain, leave the
//! listener) only when the successor reports that it serves; a successor that cannot
//! start leaves the predecessor serving while the usual back-off restarts it.
//!
//! Listeners: only the master ever shuts one (a graceful stop of the whole server, once
//! the workers have accepted its queue); a dead worker's replacement serves the very
//! socket it had. Retiring workers: at most `RETIRING_PER_SLOT` per slot drain at their
//! own pace; older ones are told to close their idle connections at once.

use crate::auth::HostUsers;
use crate::config::rows::Rows;
use crate::config::Serving;
use crate::dashboard::{self, history::History, status::StatusDocument, Document};
use crate::listen::Listeners;
use crate::notify::Notifier;
use crate::plan::Plan;
use crate::signals::{self, requested_stop, Stop};
use crate::stats;
use crate::stats::SharedCounters;
use crate::sys::{self, Forked};
use crate::upgrade::{proof::Proof, Launch, TakenOver};
use crate::worker::{self, WorkerStart};
use core::sync::atomic::Ordering::Relaxed;
use rustix::process::{Pid, Signal, WaitOptions, WaitStatus};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

mod backoff;
mod generations;

use backoff::{backoff, BACKOFF_FIRST, BACKOFF_MAX, CRASH_WINDOW};

/// How long a fast stop waits for workers before `SIGKILL`.
const FAST_STOP_GRACE: Duration = Duration::from_secs(3);
/// Extra wait after `--shutdown-timeout` before a graceful stop kills what is left.
const GRACEFUL_SLACK: Duration = Duration::from_secs(1);
/// Longest sleep of the supervision loop (signals interrupt it sooner).
const TICK: Duration = Duration::from_millis(100);

/// What bring-up made and the supervisor uses.
pub(crate) struct Shared<'a> {
    pub(crate) cfg: &'a Serving,
    pub(crate) plan: &'a Plan,
    pub(crate) listeners: &'a Listeners,
    pub(crate) counters: &'a SharedCounters,
    /// The metrics listener and the status document it serves.
    pub(crate) metrics: Option<(&'a OwnedFd, &'a StatusDocument)>,
    /// The metrics listener's accept queue (`somaxconn`): most accepted per wake.
    pub(crate) metrics_backlog: u32,
    /// The workers' readiness pipe: (read end, write end).
    pub(crate) ready: (OwnedFd, OwnedFd),
    /// The CPUs the master runs on between its other moves (its pin, if any).
    pub(crate) home: &'a sys::AffinityMask,
    /// The users of `--basic-auth` as last read (at start, then at each HUP that
    /// passed its checks): what every worker started from now on serves with.
    pub(crate) auth: HostUsers,
    /// With `--config`: reads the configuration again for a HUP (`cmd/serve.rs`).
    pub(crate) reread: Option<crate::config::Reread<'a>>,
}

/// One worker slot: the process serving plan entry `index`, its predecessor during a
/// reload, and its crash history.
///
/// Counter accounting: slot `i` owns blocks `i` and `i + n` of the shared counters and
/// each HUP switches to the other one, so a new generation never counts into the block
/// an old worker is still draining. When a worker is reaped, the master zeroes the
/// `open` gauge of its block (a killed worker never decrements it), unless another live
/// process still counts into that block (only when three generations of a slot are alive
/// at once, after HUPs faster than the old workers drain): its leftovers are then
/// cleared when the last of them is reaped. `/metrics` shows the sum of both blocks.
#[derive(Debug, Default)]
struct WorkerSlot {
    pid: Option<Pid>,
    started: Option<Instant>,
    crashes: u32,
    respawn_at: Option<Instant>,
    /// The counter block the current process of this slot counts into.
    block: usize,
    /// The current process has reported that it serves.
    serving: bool,
    /// The worker a reload replaces, serving until the current one serves (and its
    /// counter block).
    predecessor: Option<(Pid, usize)>,
}

/// The counter block of a worker that counts into a mapping this process image does
/// not hold (one taken over from the image before an upgrade): nothing to release.
const NO_BLOCK: usize = usize::MAX;

/// Retiring workers of one slot the master lets drain at their own pace (besides the
/// current worker and its predecessor); past this, the oldest is told to close its idle
/// connections at once (`signals::close_idle_requested`), so a storm of HUPs while idle
/// clients hold connections cannot keep every generation alive.
const RETIRING_PER_SLOT: usize = 2;

/// Longest a graceful stop waits for a slot's workers to accept their listener's queue
/// before it shuts the listener anyway.
const LEAVE_BOUND: Duration = Duration::from_secs(1);

/// A worker of an older generation that is draining.
#[derive(Debug, Clone, Copy)]
struct Retiring {
    pid: Pid,
    /// Its counter block ([`NO_BLOCK`] for one taken over by an upgrade).
    block: usize,
    /// It was told to close its idle connections at once.
    hurried: bool,
}

/// The signal counts the master has already acted on.
#[derive(Debug, Default)]
struct Seen {
    hup: u32,
    usr1: u32,
    usr2: u32,
}

pub(crate) struct Supervisor<'a> {
    s: Shared<'a>,
    /// What new workers start with: `s.cfg`, with the media types as last read (at start,
    /// or by the last reload that went through, which re-reads `--mime-types`).
    cfg: Serving,
    /// The name of each row of the per-host response counters: a host keeps its row
    /// through every reload (`config::rows`), as its counts stay in the blocks.
    host_rows: Rows,
    /// The row of each upstream's counters by upstream, kept the same way.
    upstream_rows: Rows,
    slots: Vec<WorkerSlot>,
    /// Workers of an older generation that are draining, oldest first.
    retiring: Vec<Retiring>,
    /// Raw pids, one entry per loop that reported it left its listener (graceful stop).
    left: Vec<u32>,
    /// A slot one of whose listeners no longer listens (found when a worker is reaped):
    /// `/health` answers 503 while it lasts.
    unlistening: Option<usize>,
    seen: Seen,
    /// Open `/metrics` and `/health` connections.
    responder: stats::metrics_server::Responder,
    /// The last minute of the workers' responses, for the dashboard (with `--metrics`).
    history: History,
    notifier: Notifier,
    /// How this binary was started, for an upgrade.
    launch: Option<Launch>,
    /// When an older steerd started this master as a second one: where to say that its
    /// workers serve.
    report_to: Option<OwnedFd>,
    /// The new binary's `check`, while an upgrade is being proved.
    proving: Option<Proof>,
    /// Workers taken over by an upgrade for slots this plan does not have: retired once
    /// every slot serves.
    held: Vec<rustix::process::Pid>,
    /// `READY=1` was sent for the current generation.
    announced: bool,
}

impl<'a> Supervisor<'a> {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn new(
        s: Shared<'a>,
        notifier: Notifier,
        launch: Option<Launch>,
        report_to: Option<OwnedFd>,
    ) -> Self {
        let slots = (0..s.plan.workers.len())
            .map(|i| WorkerSlot {
                block: i,
                ..WorkerSlot::default()
            })
            .collect();
        let responder = stats::metrics_server::Responder::new(s.metrics_backlog);
        let mut cfg = s.cfg.clone();
        let (mut host_rows, mut upstream_rows) = (Rows::of_hosts(), Rows::of_upstreams());
        host_rows.assign(&mut cfg.hosts);
        cfg.number_upstreams(&mut upstream_rows);
        Supervisor {
            cfg,
            host_rows,
            upstream_rows,
            s,
            slots,
            retiring: Vec::new(),
            left: Vec::new(),
            unlistening: None,
            seen: Seen::default(),
            responder,
            history: History::default(),
            notifier,
            launch,
            report_to,
            proving: None,
            held: Vec::new(),
            announced: false,
        }
    }

    /// The workers the image before an upgrade ran: each keeps serving its slot as the
    /// predecessor of the worker this image starts there (retired when that one serves,
    /// as after a HUP); those already retiring are told again and waited for.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn take_over(&mut self, workers: &[TakenOver]) {
        for w in workers {
            match w.slot.and_then(|i| self.slots.get_mut(i)) {
                Some(slot) if slot.predecessor.is_none() => {
                    slot.predecessor = Some((w.pid, NO_BLOCK))
                }
                _ if w.slot.is_some() => self.held.push(w.pid),
                _ => self.retire(w.pid, NO_BLOCK),
            }
        }
    }

    pub(crate) fn start_all(&mut self) -> Result<(), super::MasterError> {
        for i in 0..self.slots.len() {
            self.spawn(i).map_err(super::MasterError::Fork)?;
        }
        Ok(())
    }

    /// Descriptors a forked worker must close: other workers' listeners, the metrics
    /// listener, the readiness pipe's read end, the upgrade pipes.
    fn not_for_workers(&self, i: usize) -> Vec<std::os::fd::RawFd> {
        let mut close = self.s.listeners.raw_fds_not_of(i);
        close.extend(self.s.metrics.map(|(m, _)| m.as_raw_fd()));
        close.push(self.s.ready.0.as_raw_fd());
        close.extend(self.report_to.as_ref().map(|p| p.as_raw_fd()));
        close.extend(self.proving.as_ref().map(|p| p.fd().as_raw_fd()));
        close
    }

    /// Forks worker `i` with signals blocked across the fork (the child unblocks them
    /// once its counters are reset).
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn spawn(&mut self, i: usize) -> io::Result<()> {
        let start = WorkerStart {
            plan: self.s.plan.workers[i],
            listeners: self.s.listeners.of_worker(i),
            close: self.not_for_workers(i),
            cfg: &self.cfg,
            counters: self
                .s
                .counters
                .get(self.slots[i].block)
                .ok_or_else(|| io::Error::other("no counter block"))?,
            ready: Some(self.s.ready.1.as_fd()),
            master: rustix::process::getpid(),
            auth: &self.s.auth,
        };
        sys::mask_signals(&signals::COUNTED, true)?;
        let forked = sys::fork();
        if let Ok(Forked::Child) = forked {
            // Still masked: the worker resets its counters, then unmasks.
            worker::main(start);
        }
        let unmask = sys::mask_signals(&signals::COUNTED, false);
        if let Forked::Parent(pid) = forked? {
            let slot = &mut self.slots[i];
            slot.pid = Some(pid);
            slot.serving = false;
            slot.started = Some(Instant::now());
            slot.respawn_at = None;
        }
        unmask
    }

    /// The supervision loop; returns once every worker has stopped after a stop signal
    /// (an upgrade does not return: it replaces this program).
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn supervise(&mut self) {
        loop {
            // A stop signal sent to the whole process group (as service managers do)
            // reaches the workers too: their exits are then part of the stop, not crashes.
            let stop = requested_stop();
            self.reap(stop.is_some());
            if let Some(stop) = stop {
                return self.stop(stop);
            }
            self.read_ready();
            self.handle_reload();
            self.handle_reopen();
            self.handle_upgrade();
            self.poll_upgrade();
            self.respawn_due();
            self.wait_for_events();
            self.answer_metrics();
        }
    }

    /// Collects every exited child (any child at all: as PID 1 the orphans of the
    /// namespace are ours to reap); schedules a respawn for current workers unless
    /// `stopping`.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn reap(&mut self, stopping: bool) {
        while let Ok(Some((pid, status))) = rustix::process::waitpid(None, WaitOptions::NOHANG) {
            if self.proving.as_mut().is_some_and(|p| p.exited(pid, status)) {
                continue;
            }
            if let Some(pos) = self.held.iter().position(|&p| p == pid) {
                self.held.swap_remove(pos);
                continue;
            }
            if let Some(pos) = self.retiring.iter().position(|r| r.pid == pid) {
                // `remove`, not `swap_remove`: the order is the age.
                let gone = self.retiring.remove(pos);
                self.release(gone.block);
                continue;
            }
            let pred = self
                .slots
                .iter()
                .position(|s| s.predecessor.is_some_and(|(p, _)| p == pid));
            if let Some(i) = pred {
                if let Some((_, block)) = self.slots[i].predecessor.take() {
                    self.release(block);
                }
                continue;
            }
            let Some(i) = self.slots.iter().position(|s| s.pid == Some(pid)) else {
                continue;
            };
            self.slots[i].pid = None;
            self.slots[i].serving = false;
            self.release(self.slots[i].block);
            if !stopping {
                self.schedule_respawn(i, pid, status);
                self.check_listeners();
            }
        }
    }

    /// After a worker's death: every slot's listeners still listen (`SO_ACCEPTCONN`)? A
    /// worker never shuts one, but another process holding it could; such a socket cannot
    /// rejoin its reuseport group at its index, so `/health` answers 503 and one line
    /// names the slot.
    fn check_listeners(&mut self) {
        let listens = |fd| rustix::net::sockopt::socket_acceptconn(fd).unwrap_or(false);
        let dead = (0..self.slots.len())
            .find(|&i| !self.s.listeners.of_worker(i).into_iter().all(listens));
        if dead.is_some() && dead != self.unlistening {
            if let Some(i) = dead {
                crate::say!(
                    "worker {i}: its listener no longer listens (shut by a process holding it); /health answers 503 until a restart"
                );
            }
        }
        self.unlistening = dead;
    }

    /// A process counting into `block` is gone: its open connections closed with it, so
    /// the gauge is zeroed, unless another live process still counts there.
    fn release(&self, block: usize) {
        let shared = self.slots.iter().any(|s| {
            (s.pid.is_some() && s.block == block) || s.predecessor.is_some_and(|(_, b)| b == block)
        }) || self.retiring.iter().any(|r| r.block == block);
        if let (false, Some(c)) = (shared, self.s.counters.get(block)) {
            c.open.store(0, Relaxed);
        }
    }

    fn schedule_respawn(&mut self, i: usize, pid: Pid, status: WaitStatus) {
        let slot = &mut self.slots[i];
        let now = Instant::now();
        let lived = slot.started.map_or(Duration::ZERO, |t| now - t);
        slot.crashes = if lived < CRASH_WINDOW {
            slot.crashes + 1
        } else {
            0
        };
        let delay = backoff(slot.crashes);
        slot.respawn_at = Some(now + delay);
        crate::say!(
            "worker {i} (pid {}, cpu {}) {}; restarting in {} ms",
            pid.as_raw_nonzero(),
            self.s.plan.workers[i].cpu,
            crate::say::ended(status),
            delay.as_millis()
        );
    }

    fn respawn_due(&mut self) {
        let now = Instant::now();
        for i in 0..self.slots.len() {
            let due =
                self.slots[i].pid.is_none() && self.slots[i].respawn_at.is_some_and(|t| t <= now);
            if !due {
                continue;
            }
            match self.spawn(i) {
                Ok(()) => {
                    if let Some(c) = self.s.counters.get(self.slots[i].block) {
                        c.respawns.fetch_add(1, Relaxed);
                    }
                }
                Err(e) => {
                    crate::say!("worker {i}: fork: {e}; retrying");
                    self.slots[i].respawn_at = Some(now + BACKOFF_MAX.min(BACKOFF_FIRST * 10));
                }
            }
        }
    }

    /// USR1: every current worker reopens its access log.
    fn handle_reopen(&mut self) {
        if signals::arrived(libc::SIGUSR1, &mut self.seen.usr1) {
            self.signal_all(Signal::USR1);
        }
    }

    fn live(&self) -> impl Iterator<Item = Pid> + '_ {
        self.slots
            .iter()
            .flat_map(|s| s.pid.into_iter().chain(s.predecessor.map(|(p, _)| p)))
            .chain(self.retiring.iter().map(|r| r.pid))
            .chain(self.held.iter().copied())
    }

    fn signal_all(&self, sig: Signal) {
        for pid in self.live() {
            let _ = rustix::process::kill_process(pid, sig);
        }
    }

    /// Sleeps until a signal, the next due respawn, a worker's report, a metrics
    /// client's socket or its deadline, or the upgrade's pipe. The sockets are
    /// nonblocking: nothing here waits on a client.
    fn wait_for_events(&self) {
        use rustix::event::{PollFd, PollFlags};
        let now = Instant::now();
        let next = self
            .slots
            .iter()
            .filter_map(|s| s.respawn_at)
            .chain(self.responder.next_deadline())
            .chain(self.proving.as_ref().map(|p| p.deadline()))
            .min();
        let timeout = next.map_or(TICK, |t| t.saturating_duration_since(now).min(TICK));
        let ts = rustix::time::Timespec {
            tv_sec: timeout.as_secs() as i64,
            tv_nsec: i64::from(timeout.subsec_nanos()),
        };
        let mut fds = match self.s.metrics {
            Some((m, _)) => self.responder.poll_fds(m.as_fd()),
            None => Vec::new(),
        };
        fds.push(PollFd::new(&self.s.ready.0, PollFlags::IN));
        if let Some(p) = &self.proving {
            fds.push(PollFd::from_borrowed_fd(p.fd(), PollFlags::IN));
        }
        let _ = rustix::event::poll(&mut fds, Some(&ts));
    }

    /// Takes the dashboard's snapshot of the second when one is due, then accepts and
    /// moves every metrics client as far as it can go without waiting.
    fn answer_metrics(&mut self) {
        let Some((m, status)) = self.s.metrics else {
            return;
        };
        let healthy = self.healthy();
        let retiring = self.retiring.len();
        let (workers, counters) = (&self.s.plan.workers, self.s.counters);
        let n = workers.len();
        let merged = || -> Vec<stats::WorkerCounters> {
            (0..n)
                .map(|i| stats::merged(counters.get(i), counters.get(i + n)))
                .collect()
        };
        let now = Instant::now();
        self.history.offer(now, || {
            merged().iter().map(|c| c.latency.counts()).collect()
        });
        let (slots, history) = (&self.slots, &self.history);
        let (hosts, upstreams) = (self.host_rows.names(), self.upstream_rows.names());
        let render = |doc| {
            let merged = merged();
            match doc {
                Document::Metrics => {
                    let mut text = stats::render(workers, merged.iter(), hosts, upstreams);
                    stats::render_retiring(&mut text, retiring);
                    stats::process::render(&mut text, workers, slots.iter().map(|s| s.pid));
                    text
                }
                Document::Status => status.render(workers, merged.iter(), history),
            }
        };
        let answer = |head: &[u8]| dashboard::reply(head, healthy, render);
        let access = &self.cfg.site.access;
        let admits = |ip| access.admits(ip);
        if let Err(e) = self.responder.service(m.as_fd(), now, &admits, answer) {
            crate::say!("metrics: {e}");
        }
    }

    /// A graceful stop's refusal of new connections: shuts each listener still
    /// listening once nothing is queued on it, or once every worker serving its slot has
    /// accepted the queue and left it (their `LEFT_LISTENER` reports), or at `by`. A
    /// worker never shuts a listener itself: the master and the worker's successors
    /// hold the same socket. True once every listener is shut.
    fn shut_left_listeners(&mut self, by: Instant) -> bool {
        self.read_reports();
        let late = Instant::now() >= by;
        let mut all = true;
        for i in 0..self.slots.len() {
            let left = self.slot_left(i);
            for fd in self.s.listeners.of_worker(i) {
                if !rustix::net::sockopt::socket_acceptconn(fd).unwrap_or(false) {
                    continue;
                }
                if late || left || queue_empty(fd) {
                    let _ = rustix::net::shutdown(fd, rustix::net::Shutdown::Read);
                } else {
                    all = false;
                }
            }
        }
        all
    }

    /// Every worker serving slot `i` (its current one and its predecessor) is gone or
    /// has reported leaving each of its listeners.
    fn slot_left(&self, i: usize) -> bool {
        let loops = self.s.listeners.of_worker(i).len();
        let slot = &self.slots[i];
        let reported = |pid: Pid| {
            let raw = pid.as_raw_nonzero().get() as u32;
            self.left.iter().filter(|&&p| p == raw).count() >= loops
        };
        slot.pid
            .into_iter()
            .chain(slot.predecessor.map(|(p, _)| p))
            .all(reported)
    }

    /// Stops every worker: TERM (fast) or QUIT (graceful), then waits; a TERM during a
    /// graceful stop makes it fast; whatever is left at the deadline is killed.
    fn stop(&mut self, mut end: Stop) {
        crate::say!("stopping ({})", end.name());
        self.notifier
            .stopping(&format!("stopping ({})", end.name()));
        self.stop_upgrade();
        self.signal_all(end.signal());
        let mut deadline = Instant::now() + self.grace(end);
        let mut shutting = (end == Stop::Graceful).then(|| Instant::now() + LEAVE_BOUND);
        loop {
            self.reap(true);
            if shutting.is_some_and(|by| self.shut_left_listeners(by)) {
                shutting = None;
            }
            if self.live().next().is_none() {
                break;
            }
            if end != Stop::Fast && requested_stop() == Some(Stop::Fast) {
                end = Stop::Fast;
                self.signal_all(Signal::TERM);
                deadline = deadline.min(Instant::now() + FAST_STOP_GRACE);
            }
            if Instant::now() >= deadline {
                crate::say!("workers still running after the grace period; killing them");
                self.signal_all(Signal::KILL);
                deadline = Instant::now() + FAST_STOP_GRACE;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        crate::say!("stopped");
    }

    fn grace(&self, end: Stop) -> Duration {
        match end {
            Stop::Fast => FAST_STOP_GRACE,
            Stop::Graceful => self.cfg.timeouts.shutdown + GRACEFUL_SLACK,
        }
    }
}

/// No connection waits in `fd`'s accept queue (a listener polls readable while one
/// does). poll(2).
fn queue_empty(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    use rustix::event::{PollFd, PollFlags};
    let mut fds = [PollFd::from_borrowed_fd(fd, PollFlags::IN)];
    let zero = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    match rustix::event::poll(&mut fds, Some(&zero)) {
        Ok(n) => n == 0 || !fds[0].revents().contains(PollFlags::IN),
        Err(_) => false,
    }
}
