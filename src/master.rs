//! The master process: bring-up (pin, listeners, steering, privileges), fork, supervise,
//! signals.
//!
//! Input: the [`Serving`] configuration, the [`Plan`], and the steering program (or none for
//! `hash`). Output: exit once stopped. The master never serves HTTP; it holds every
//! listener fd for its whole life (so a dead worker's group slot never moves), forks one
//! worker per plan entry, restarts the ones that die on the same CPU with the same
//! listener, and answers on the `--metrics` address (the dashboard, `/status.json`,
//! `/metrics`).
//!
//! Signals are those nginx users know (`ngx_process_cycle.c`): the handlers only count
//! deliveries (`sys::count_signals`); this loop reads the counters.
//! TERM, INT: fast stop. QUIT: graceful stop (workers finish responses in flight up to
//! `--shutdown-timeout`, then the master kills what is left). HUP: start fresh workers on
//! the same listeners (they reopen the root and the log) and stop the old ones gracefully.
//! USR1: workers reopen the access log.
//!
//! It does not decide the plan or assemble the program (plan.rs, steer.rs), and does not
//! accept connections (serve_loop.rs in each worker).

use crate::config::{Serving, SteerPolicy};
use crate::dashboard::{self, status::Status, Document};
use crate::listen::{self, Listeners, SocketOptions};
use crate::plan::Plan;
use crate::signals::{self, requested_stop, Stop};
use crate::stats;
use crate::stats::SharedCounters;
use crate::sys::{self, Forked};
use crate::user;
use crate::worker::{self, WorkerStart};
use core::fmt;
use rustix::process::{Pid, Signal, WaitOptions, WaitStatus};
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// A worker that lived less than this before dying counts as a crash for the back-off.
const CRASH_WINDOW: Duration = Duration::from_secs(2);
/// First back-off delay after a crash; doubles per consecutive crash.
const BACKOFF_FIRST: Duration = Duration::from_millis(100);
/// Longest back-off delay.
const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// How long a fast stop waits for workers before `SIGKILL`.
const FAST_STOP_GRACE: Duration = Duration::from_secs(3);
/// Extra wait after `--shutdown-timeout` before a graceful stop kills what is left.
const GRACEFUL_SLACK: Duration = Duration::from_secs(1);
/// Longest sleep of the supervision loop (signals interrupt it sooner).
const TICK: Duration = Duration::from_millis(100);

/// A bring-up step of the master that failed.
#[derive(Debug)]
pub enum MasterError {
    /// Installing the signal handlers.
    Signals(io::Error),
    /// Reading or applying the master's own CPU placement.
    Pin(io::Error),
    /// Making the listeners.
    Listen(listen::ListenError),
    /// Binding the metrics endpoint.
    Metrics(SocketAddr, io::Error),
    /// Resolving or becoming `--user`.
    User(String),
    /// The served root cannot be opened.
    Root(std::path::PathBuf, io::Error),
    /// The shared counters mapping.
    Counters(io::Error),
    /// `fork` failed at start.
    Fork(io::Error),
}

impl fmt::Display for MasterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MasterError::Signals(e) => write!(f, "signals: {e}"),
            MasterError::Pin(e) => write!(f, "pinning the master: {e}"),
            // These four are printed under their own stage name (see `stage`).
            MasterError::Listen(e) => write!(f, "{e}"),
            MasterError::Metrics(a, e) => write!(f, "{a}: {e}"),
            MasterError::User(e) => write!(f, "{e}"),
            MasterError::Root(path, e) => write!(f, "{}: {e}", path.display()),
            MasterError::Counters(e) => write!(f, "counters mapping: {e}"),
            MasterError::Fork(e) => write!(f, "fork: {e}"),
        }
    }
}

impl MasterError {
    /// The pipeline stage to name in the one-line error.
    pub fn stage(&self) -> &'static str {
        match self {
            MasterError::Listen(_) => "listen",
            MasterError::Metrics(..) => "metrics",
            MasterError::User(_) => "user",
            MasterError::Root(..) => "root",
            _ => "master",
        }
    }
}

/// Runs the server until a stop signal: bring-up, then supervision. `program` is the
/// steering program for `plan.steer` (`None` for hash); `status` the fixed part of the
/// dashboard's `/status.json` (with `--metrics`). Startup lines go to stderr.
pub fn run(
    cfg: &Serving,
    plan: &Plan,
    program: Option<&[asm_bpf::Insn]>,
    status: Option<Status>,
) -> Result<(), MasterError> {
    sys::count_signals(&signals::COUNTED).map_err(MasterError::Signals)?;
    // `--user` is resolved before anything is bound: a bad name binds nothing.
    let user = cfg.user.as_ref().map(user::lookup).transpose();
    let user = user.map_err(|e| MasterError::User(e.to_string()))?;
    let home = place_master(plan).map_err(MasterError::Pin)?;
    let opts = SocketOptions {
        defer_accept_secs: defer_accept_secs(cfg),
    };
    let listeners =
        listen::open(&plan.workers, &cfg.listen, &home, opts).map_err(MasterError::Listen)?;
    let policy = attach_steering(&listeners, plan.steer, program);
    let metrics = cfg.metrics.map(bind_metrics).transpose()?;
    announce(plan, policy, &listeners, metrics.as_ref());
    raise_fd_limit(cfg, plan.workers.len());
    if let Some(id) = &user {
        drop_privileges(id)?;
    }
    worker::open_root(&cfg.root).map_err(|e| MasterError::Root(cfg.root.clone(), e))?;
    // Two blocks per worker: one per generation (see `Slot::block`).
    let counters = SharedCounters::new(2 * plan.workers.len()).map_err(MasterError::Counters)?;
    let status = status.map(|mut s| {
        s.in_force(&listeners.addrs(), policy.name());
        s
    });
    let metrics = metrics.as_ref().zip(status.as_ref());
    let mut sup = Supervisor::new(cfg, plan, &listeners, &counters, metrics);
    sup.start_all()?;
    sup.supervise();
    Ok(())
}

/// Descriptors a serving loop holds besides its connections: the file cache's open
/// files (`CacheConfig::default().entries`).
const LOOP_FDS: u64 = 256;
/// Descriptors a worker holds besides its loops (epoll, root, log, stdio, listeners'
/// copies before they are closed, metrics).
const FD_HEADROOM: u64 = 64;

/// Raises the soft `RLIMIT_NOFILE` (inherited by the workers) towards the hard limit so
/// each worker can hold `--max-conns` connections on each listener, plus its cached
/// files and headroom: the usual soft limit of 1024 is below the default 10,240
/// connections. If the hard limit is lower, one warning names the capacity left (no
/// privilege is used to raise the hard limit). getrlimit(2).
fn raise_fd_limit(cfg: &Serving, workers: usize) {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let loops = cfg.listen.len().max(1) as u64;
    let inherited = (workers as u64).saturating_mul(loops);
    let per_loop = u64::from(cfg.max_conns) + LOOP_FDS;
    let want = per_loop * loops + FD_HEADROOM + inherited;
    let lim = getrlimit(Resource::Nofile);
    let soft = lim.current.unwrap_or(u64::MAX);
    if soft >= want {
        return;
    }
    let target = want.min(lim.maximum.unwrap_or(u64::MAX));
    let raised = Rlimit {
        current: Some(target),
        maximum: lim.maximum,
    };
    let got = if setrlimit(Resource::Nofile, raised).is_ok() {
        target
    } else {
        soft
    };
    if got < want {
        let room = got.saturating_sub(FD_HEADROOM + inherited) / loops;
        crate::say!(
            "warning: open files limited to {got} (hard limit): about {} connections per worker and listener instead of --max-conns {}",
            room.saturating_sub(LOOP_FDS),
            cfg.max_conns
        );
    }
}

/// `TCP_DEFER_ACCEPT` for the header timeout, rounded up to whole seconds: the listener
/// wakes a worker only once a request's first bytes are there (one wakeup saved on every
/// new connection); a silent connection is handed over when the deferral ends, and the
/// header timeout then closes it.
fn defer_accept_secs(cfg: &Serving) -> u32 {
    let ms = cfg.timeouts.header.as_millis();
    u32::try_from(ms.div_ceil(1000)).unwrap_or(u32::MAX).max(1)
}

/// Pins the master to the plan's CPU (when it names one) and returns the CPU set the
/// master comes back to after making each listener on its worker's CPU.
fn place_master(plan: &Plan) -> io::Result<crate::sys::AffinityMask> {
    match plan.master_cpu {
        Some(cpu) => {
            sys::pin_to_cpu(cpu.get())?;
            sys::affinity()
        }
        None => sys::affinity(),
    }
}

/// Attaches the program to every group; the policy actually in force. A kernel that
/// refuses it (an old kernel, gVisor: ENOPROTOOPT, EINVAL) leaves the kernel's hash, with
/// one warning line.
fn attach_steering(
    listeners: &Listeners,
    planned: SteerPolicy,
    program: Option<&[asm_bpf::Insn]>,
) -> SteerPolicy {
    let Some(prog) = program else {
        return SteerPolicy::Hash;
    };
    match listeners.attach(prog) {
        Ok(()) => planned,
        Err((addr, e)) => {
            crate::say!(
                "warning: steer: the kernel refused the {} steering program on {addr} \
                 ({e}); falling back to hash",
                planned.name()
            );
            SteerPolicy::Hash
        }
    }
}

/// The metrics endpoint: a plain nonblocking listener (not reuseport: only the master
/// answers it).
fn bind_metrics(addr: SocketAddr) -> Result<OwnedFd, MasterError> {
    let std_listener =
        std::net::TcpListener::bind(addr).map_err(|e| MasterError::Metrics(addr, e))?;
    std_listener
        .set_nonblocking(true)
        .map_err(|e| MasterError::Metrics(addr, e))?;
    Ok(OwnedFd::from(std_listener))
}

/// The startup lines (stderr): policy, one line per worker, the bound addresses.
/// Tests and scripts read `listening on ADDR` and `metrics on ADDR`.
fn announce(plan: &Plan, policy: SteerPolicy, listeners: &Listeners, metrics: Option<&OwnedFd>) {
    let master = plan
        .master_cpu
        .map_or_else(|| "unpinned".to_string(), |c| format!("on cpu {c}"));
    crate::say!(
        "policy {}, {} workers, master {master}, pid {}",
        policy.name(),
        plan.workers.len(),
        rustix::process::getpid().as_raw_nonzero()
    );
    for w in &plan.workers {
        crate::say!("worker {} cpu {} node {}", w.index, w.cpu, w.node.0);
    }
    for addr in listeners.addrs() {
        crate::say!("listening on {addr}");
    }
    let metrics_addr = metrics.and_then(|fd| rustix::net::getsockname(fd).ok());
    if let Some(Ok(addr)) = metrics_addr.map(SocketAddr::try_from) {
        crate::say!("metrics on {addr}");
    }
}

/// Becomes the `--user` resolved before binding.
fn drop_privileges(id: &user::Identity) -> Result<(), MasterError> {
    sys::become_user(id.uid, id.gid, &id.groups)
        .map_err(|e| MasterError::User(format!("becoming uid {} gid {}: {e}", id.uid, id.gid)))?;
    if id.uid != 0 && sys::become_user(0, 0, &[0]).is_ok() {
        return Err(MasterError::User(
            "privileges could be regained after dropping them".into(),
        ));
    }
    Ok(())
}

/// One worker slot: the process serving plan entry `index`, and its crash history.
///
/// Counter accounting: slot `i` owns blocks `i` and `i + n` of the shared counters and
/// each HUP switches to the other one, so a new generation never counts into the block
/// an old worker is still draining. When a worker is reaped, the master zeroes the
/// `open` gauge of its block (a killed worker never decrements it), unless another live
/// process still counts into that block (only when three generations of a slot are alive
/// at once, after HUPs faster than the old workers drain): its leftovers are then
/// cleared when the last of them is reaped. `/metrics` shows the sum of both blocks.
#[derive(Debug, Default)]
struct Slot {
    pid: Option<Pid>,
    started: Option<Instant>,
    crashes: u32,
    respawn_at: Option<Instant>,
    /// The counter block the current process of this slot counts into.
    block: usize,
}

/// The signal counts the master has already acted on.
#[derive(Debug, Default)]
struct Seen {
    hup: u32,
    usr1: u32,
}

struct Supervisor<'a> {
    cfg: &'a Serving,
    plan: &'a Plan,
    listeners: &'a Listeners,
    counters: &'a SharedCounters,
    /// The metrics listener and the status document it serves.
    metrics: Option<(&'a OwnedFd, &'a Status)>,
    slots: Vec<Slot>,
    /// Workers of an older generation (after HUP) that are stopping gracefully, with
    /// their counter block.
    retiring: Vec<(Pid, usize)>,
    seen: Seen,
    /// Open `/metrics` connections.
    responder: stats::metrics_server::Responder,
}

impl<'a> Supervisor<'a> {
    fn new(
        cfg: &'a Serving,
        plan: &'a Plan,
        listeners: &'a Listeners,
        counters: &'a SharedCounters,
        metrics: Option<(&'a OwnedFd, &'a Status)>,
    ) -> Self {
        let slots = (0..plan.workers.len())
            .map(|i| Slot {
                block: i,
                ..Slot::default()
            })
            .collect();
        Supervisor {
            cfg,
            plan,
            listeners,
            counters,
            metrics,
            slots,
            retiring: Vec::new(),
            seen: Seen::default(),
            responder: stats::metrics_server::Responder::default(),
        }
    }

    fn start_all(&mut self) -> Result<(), MasterError> {
        for i in 0..self.slots.len() {
            self.spawn(i).map_err(MasterError::Fork)?;
        }
        Ok(())
    }

    /// Forks worker `i` with signals blocked across the fork (the child unblocks them
    /// once its counters are reset).
    fn spawn(&mut self, i: usize) -> io::Result<()> {
        let mut close = self.listeners.raw_fds_not_of(i);
        close.extend(self.metrics.map(|(m, _)| m.as_raw_fd()));
        let start = WorkerStart {
            plan: self.plan.workers[i],
            listeners: self.listeners.of_worker(i),
            close,
            cfg: self.cfg,
            counters: self
                .counters
                .get(self.slots[i].block)
                .ok_or_else(|| io::Error::other("no counter block"))?,
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
            slot.started = Some(Instant::now());
            slot.respawn_at = None;
        }
        unmask
    }

    /// The supervision loop; returns once every worker has stopped after a stop signal.
    fn supervise(&mut self) {
        loop {
            // A stop signal sent to the whole process group (as service managers do)
            // reaches the workers too: their exits are then part of the stop, not crashes.
            self.reap(requested_stop().is_some());
            if let Some(stop) = requested_stop() {
                self.stop(stop);
                return;
            }
            self.handle_reload();
            self.handle_reopen();
            self.respawn_due();
            self.wait_for_events();
            self.answer_metrics();
        }
    }

    /// Collects every exited child; schedules a respawn for current workers unless
    /// `stopping`.
    fn reap(&mut self, stopping: bool) {
        while let Ok(Some((pid, status))) = rustix::process::waitpid(None, WaitOptions::NOHANG) {
            if let Some(pos) = self.retiring.iter().position(|&(p, _)| p == pid) {
                let (_, block) = self.retiring.swap_remove(pos);
                self.release(block);
                continue;
            }
            let Some(i) = self.slots.iter().position(|s| s.pid == Some(pid)) else {
                continue;
            };
            self.slots[i].pid = None;
            self.release(self.slots[i].block);
            if !stopping {
                self.schedule_respawn(i, pid, status);
            }
        }
    }

    /// A process counting into `block` is gone: its open connections closed with it, so
    /// the gauge is zeroed, unless another live process still counts there.
    fn release(&self, block: usize) {
        let shared = self
            .slots
            .iter()
            .any(|s| s.pid.is_some() && s.block == block)
            || self.retiring.iter().any(|&(_, b)| b == block);
        if let (false, Some(c)) = (shared, self.counters.get(block)) {
            c.open.store(0, core::sync::atomic::Ordering::Relaxed);
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
            self.plan.workers[i].cpu,
            describe(status),
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
                    if let Some(c) = self.counters.get(self.slots[i].block) {
                        c.respawns
                            .fetch_add(1, core::sync::atomic::Ordering::Relaxed);
                    }
                }
                Err(e) => {
                    crate::say!("worker {i}: fork: {e}; retrying");
                    self.slots[i].respawn_at = Some(now + BACKOFF_MAX.min(BACKOFF_FIRST * 10));
                }
            }
        }
    }

    /// HUP: fresh workers on the same listeners (they reopen the root and the log), then
    /// the old ones stop gracefully. If the root cannot be opened the old workers stay.
    fn handle_reload(&mut self) {
        if !signals::arrived(libc::SIGHUP, &mut self.seen.hup) {
            return;
        }
        if let Err(e) = worker::open_root(&self.cfg.root) {
            crate::say!("reload: root: {e}; keeping the running workers");
            return;
        }
        crate::say!("reload: starting new workers, stopping the old ones gracefully");
        let n = self.slots.len();
        let old: Vec<(Pid, usize)> = self
            .slots
            .iter_mut()
            .filter_map(|s| Some((s.pid.take()?, s.block)))
            .collect();
        for i in 0..n {
            self.slots[i].crashes = 0;
            // The new generation counts into the slot's other block.
            self.slots[i].block = (self.slots[i].block + n) % (2 * n);
            if let Err(e) = self.spawn(i) {
                crate::say!("worker {i}: fork: {e}; retrying");
                self.slots[i].respawn_at = Some(Instant::now() + BACKOFF_FIRST);
            }
        }
        for &(pid, _) in &old {
            let _ = rustix::process::kill_process(pid, Signal::QUIT);
        }
        self.retiring.extend(old);
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
            .filter_map(|s| s.pid)
            .chain(self.retiring.iter().map(|&(p, _)| p))
    }

    fn signal_all(&self, sig: Signal) {
        for pid in self.live() {
            let _ = rustix::process::kill_process(pid, sig);
        }
    }

    /// Sleeps until a signal, the next due respawn, a metrics client's socket or its
    /// deadline. The metrics sockets are nonblocking: nothing here waits on a client.
    fn wait_for_events(&self) {
        let now = Instant::now();
        let next = self
            .slots
            .iter()
            .filter_map(|s| s.respawn_at)
            .chain(self.responder.next_deadline())
            .min();
        let timeout = next.map_or(TICK, |t| t.saturating_duration_since(now).min(TICK));
        let ts = rustix::time::Timespec {
            tv_sec: timeout.as_secs() as i64,
            tv_nsec: i64::from(timeout.subsec_nanos()),
        };
        let mut fds = match self.metrics {
            Some((m, _)) => self.responder.poll_fds(m.as_fd()),
            None => Vec::new(),
        };
        let _ = rustix::event::poll(&mut fds, Some(&ts));
    }

    /// Accepts and moves every metrics client as far as it can go without waiting.
    fn answer_metrics(&mut self) {
        let Some((m, status)) = self.metrics else {
            return;
        };
        let (workers, counters) = (&self.plan.workers, self.counters);
        let render = |doc| {
            let n = workers.len();
            let merged: Vec<stats::WorkerCounters> = (0..n)
                .map(|i| stats::merged(counters.get(i), counters.get(i + n)))
                .collect();
            match doc {
                Document::Metrics => stats::render(workers, merged.iter()),
                Document::Status => status.render(workers, merged.iter()),
            }
        };
        let answer = |head: &[u8]| dashboard::reply(head, render);
        if let Err(e) = self.responder.service(m.as_fd(), Instant::now(), answer) {
            crate::say!("metrics: {e}");
        }
    }

    /// Stops every worker: TERM (fast) or QUIT (graceful), then waits; a TERM during a
    /// graceful stop makes it fast; whatever is left at the deadline is killed.
    fn stop(&mut self, mut kind: Stop) {
        crate::say!("stopping ({})", kind.name());
        self.signal_all(kind.signal());
        let mut deadline = Instant::now() + self.grace(kind);
        loop {
            self.reap(true);
            if self.live().next().is_none() {
                break;
            }
            if kind == Stop::Graceful && requested_stop() == Some(Stop::Fast) {
                kind = Stop::Fast;
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

    fn grace(&self, kind: Stop) -> Duration {
        match kind {
            Stop::Fast => FAST_STOP_GRACE,
            Stop::Graceful => self.cfg.timeouts.shutdown + GRACEFUL_SLACK,
        }
    }
}

/// The delay before restarting a worker after `crashes` consecutive early deaths:
/// none for a worker that had been running a while, then 100 ms doubling to 10 s.
pub fn backoff(crashes: u32) -> Duration {
    match crashes {
        0 => Duration::ZERO,
        n => BACKOFF_FIRST
            .checked_mul(1u32 << (n - 1).min(16))
            .map_or(BACKOFF_MAX, |d| d.min(BACKOFF_MAX)),
    }
}

fn describe(status: WaitStatus) -> String {
    if let Some(sig) = status.terminating_signal() {
        format!("killed by signal {sig}")
    } else if let Some(code) = status.exit_status() {
        format!("exited with status {code}")
    } else {
        "ended".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel is the oracle: a program it refuses (an unknown opcode gets `EINVAL`)
    /// leaves the listeners on the hash, and the policy says so.
    #[test]
    fn refused_program_falls_back_to_hash() {
        let cpu = crate::cpuset::CpuId::new(rustix::thread::sched_getcpu()).expect("cpu");
        let workers = [crate::plan::WorkerPlan {
            index: 0,
            cpu,
            node: crate::topology::NodeId(0),
        }];
        let home = sys::affinity().expect("affinity");
        let addrs = ["127.0.0.1:0".parse().expect("addr")];
        let opts = SocketOptions {
            defer_accept_secs: 0,
        };
        let l = listen::open(&workers, &addrs, &home, opts).expect("listeners");
        let bad = [asm_bpf::Insn {
            code: 0xffff,
            jt: 0,
            jf: 0,
            k: 0,
        }];
        assert_eq!(
            attach_steering(&l, SteerPolicy::Cpu, Some(&bad)),
            SteerPolicy::Hash
        );
        let ok = [asm_bpf::Insn {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: 0,
        }];
        if let Err((_, e)) = l.attach(&ok) {
            if e.raw_os_error() == Some(libc::ENOPROTOOPT) {
                // User-mode QEMU does not translate the option: every program is refused.
                eprintln!(
                    "skipped refused_program_falls_back_to_hash: the kernel (or emulator) \
                     refuses SO_ATTACH_REUSEPORT_CBPF: ENOPROTOOPT"
                );
                return;
            }
        }
        assert_eq!(
            attach_steering(&l, SteerPolicy::Cpu, Some(&ok)),
            SteerPolicy::Cpu
        );
        assert_eq!(
            attach_steering(&l, SteerPolicy::Cpu, None),
            SteerPolicy::Hash
        );
    }

    #[test]
    fn backoff_doubles_and_caps() {
        assert_eq!(backoff(0), Duration::ZERO);
        assert_eq!(backoff(1), Duration::from_millis(100));
        assert_eq!(backoff(2), Duration::from_millis(200));
        assert_eq!(backoff(4), Duration::from_millis(800));
        assert_eq!(backoff(8), BACKOFF_MAX);
        assert_eq!(backoff(u32::MAX), BACKOFF_MAX);
    }

    #[test]
    fn defer_accept_rounds_up_to_seconds() {
        let second = Duration::from_secs(1);
        let mut cfg = Serving {
            root: ".".into(),
            listen: Vec::new(),
            max_conns: 1,
            timeouts: crate::config::Timeouts {
                header: Duration::from_millis(1500),
                keepalive: second,
                send: second,
                shutdown: second,
            },
            logging: Default::default(),
            metrics: None,
            user: None,
            site: Default::default(),
        };
        assert_eq!(defer_accept_secs(&cfg), 2);
        cfg.timeouts.header = Duration::from_millis(1);
        assert_eq!(defer_accept_secs(&cfg), 1);
    }
}
