//! Worker entry: verify pinning, build the loop, run it.
//!
//! Input: a [`WorkerStart`] made by the master just before `fork` (this worker's plan
//! entry, its listeners, the fds it must close, the serve options, its counter block).
//! Output: nothing; the process ends with `_exit`. Order matters and is the point of this
//! file: clean signal state, die with the master, pin, verify the pin with `sched_getcpu`,
//! close every listener that is not ours, and only then allocate (open the root, build the
//! loop's tables inside `serve_loop::run`), so first touch puts the memory on our node.
//!
//! It does not accept or parse: `serve_loop` does. Several `--listen` addresses give a
//! worker several listeners; the first is served on the worker's main thread and each
//! further one by a thread of the same (pinned) process, each with its own loop.

use crate::auth::HostUsers;
use crate::config::Serving;
use crate::cpuset::CpuId;
use crate::plan::WorkerPlan;
use crate::serve_loop::{self, Control, LoopConfig};
use crate::signals::{self, Stop};
use crate::stats::WorkerCounters;
use crate::sys;
use core::fmt;
use rustix::fs::{Mode, OFlags};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd, RawFd};
use std::path::Path;

/// What a forked worker is handed.
pub(crate) struct WorkerStart<'a> {
    /// This worker's plan entry.
    pub(crate) plan: WorkerPlan,
    /// Its listeners, one per `--listen` address.
    pub(crate) listeners: Vec<BorrowedFd<'a>>,
    /// Fds inherited from the master that are not this worker's (other workers'
    /// listeners, the metrics socket), closed after fork.
    pub(crate) close: Vec<RawFd>,
    /// What to serve, and how.
    pub(crate) cfg: &'a Serving,
    /// This worker's counter block in the shared mapping.
    pub(crate) counters: &'a WorkerCounters,
    /// Where to report, once, that this worker serves (its pid, 4 bytes).
    pub(crate) ready: Option<BorrowedFd<'a>>,
    /// The master's pid, taken before the fork: the child's own `getppid` would already
    /// name the reaper if the master died before the child first ran.
    pub(crate) master: rustix::process::Pid,
    /// Each host's users of `--basic-auth`, as the master last read them.
    pub(crate) auth: &'a HostUsers,
}

/// A bring-up step of the worker that failed.
#[derive(Debug)]
pub(crate) enum WorkerError {
    /// Signal mask or parent-death signal.
    Signals(io::Error),
    /// `sched_setaffinity` refused the CPU.
    Pin(CpuId, io::Error),
    /// The pin did not hold: `sched_getcpu` names another CPU.
    Verify {
        /// The CPU asked for.
        want: CpuId,
        /// The CPU `sched_getcpu` reported.
        got: usize,
    },
    /// The served root could not be opened.
    Root(io::Error),
    /// The serving loop failed.
    Loop(serve_loop::LoopError),
    /// A thread for a further `--listen` address could not start or panicked.
    Thread(io::Error),
}

impl fmt::Display for WorkerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkerError::Signals(e) => write!(f, "signals: {e}"),
            WorkerError::Pin(cpu, e) => write!(f, "pinning to CPU {cpu}: {e}"),
            WorkerError::Verify { want, got } => {
                write!(
                    f,
                    "pinning: running on CPU {got} after pinning to CPU {want}"
                )
            }
            WorkerError::Root(e) => write!(f, "opening the root: {e}"),
            WorkerError::Loop(e) => write!(f, "serve loop: {e}"),
            WorkerError::Thread(e) => write!(f, "listener thread: {e}"),
        }
    }
}

/// The child's whole life after `fork`. Never returns: exit status 0 after a requested
/// stop, 1 after a bring-up or loop failure (the master then respawns with back-off).
pub(crate) fn main(start: WorkerStart<'_>) -> ! {
    let index = start.plan.index;
    let status = match run(start) {
        Ok(()) => 0,
        Err(e) => {
            crate::say!("worker {index}: {e}");
            1
        }
    };
    sys::exit_now(status)
}

fn run(start: WorkerStart<'_>) -> Result<(), WorkerError> {
    let master = Some(start.master);
    sys::reset_signal_counts();
    sys::mask_signals(&signals::COUNTED, false).map_err(WorkerError::Signals)?;
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
        .map_err(|e| WorkerError::Signals(e.into()))?;
    if rustix::process::getppid() != master {
        // The master died between fork and prctl (or before this child first ran): the
        // death signal will never come.
        sys::exit_now(1);
    }
    let cpu = start.plan.cpu;
    pin_and_verify(cpu)?;
    for &fd in &start.close {
        sys::close_inherited(fd);
    }
    let roots = open_roots(start.cfg).map_err(WorkerError::Root)?;
    if crate::files::beneath::fallback_in_use(roots.first.as_fd()) {
        crate::say!(
            "worker {}: {}",
            start.plan.index,
            crate::files::beneath::FALLBACK_WARNING
        );
    }
    crate::say!(
        "worker {} pid {} running on cpu {} node {}",
        start.plan.index,
        rustix::process::getpid().as_raw_nonzero(),
        cpu,
        start.plan.node
    );
    serve_all(&start, roots, (start.plan.index, cpu))
}

/// Every host's root, opened once: host 0's (without hosts, the one root), then the rest.
struct Roots {
    first: OwnedFd,
    rest: Vec<OwnedFd>,
}

fn open_roots(cfg: &Serving) -> io::Result<Roots> {
    let (first, rest) = match cfg.hosts.split_first() {
        None => (&cfg.root, &[][..]),
        Some((h, rest)) => (&h.root, rest),
    };
    let mut roots = Roots {
        first: open_root(first)?,
        rest: Vec::with_capacity(rest.len()),
    };
    for h in rest {
        roots.rest.push(open_root(&h.root)?);
    }
    Ok(roots)
}

impl Roots {
    fn try_clone(&self) -> io::Result<Roots> {
        let mut rest = Vec::with_capacity(self.rest.len());
        for fd in &self.rest {
            rest.push(fd.try_clone()?);
        }
        Ok(Roots {
            first: self.first.try_clone()?,
            rest,
        })
    }
}

/// Pins the process to `cpu` and checks with `sched_getcpu` that it now runs there
/// (`sched_setaffinity` on oneself migrates before returning, so a mismatch is a failure).
pub(crate) fn pin_and_verify(cpu: CpuId) -> Result<(), WorkerError> {
    sys::pin_to_cpu(cpu.get()).map_err(|e| WorkerError::Pin(cpu, e))?;
    let got = rustix::thread::sched_getcpu();
    if got != cpu.get() {
        return Err(WorkerError::Verify { want: cpu, got });
    }
    Ok(())
}

/// `open(root, O_PATH | O_DIRECTORY | O_CLOEXEC)`: the handle every file is resolved under.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn open_root(root: &Path) -> io::Result<OwnedFd> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    rustix::fs::open(root, flags, Mode::empty()).map_err(io::Error::from)
}

/// The loop's configuration for worker `index` on `cpu`.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn loop_config(start: &WorkerStart<'_>, (index, cpu): (u16, CpuId), roots: Roots) -> LoopConfig {
    let cfg = start.cfg;
    let (site, others) = match cfg.hosts.split_first() {
        None => (&cfg.site, &[][..]),
        Some((first, rest)) => (&first.site, rest),
    };
    let hosts = serve_loop::LoopHosts {
        at_accept: (!cfg.hosts.is_empty()).then(|| cfg.site.access.clone()),
        table: cfg.host_table.clone(),
        names: cfg.hosts.iter().map(|h| h.name.clone()).collect(),
        rows: cfg.hosts.iter().map(|h| h.row).collect(),
        others: (roots.rest.into_iter())
            .zip(others.iter().map(|h| h.site.clone()))
            .collect(),
    };
    LoopConfig {
        worker: u32::from(index),
        cpu,
        root: roots.first,
        max_conns: cfg.max_conns,
        max_conns_per_addr: cfg.max_conns_per_addr,
        timeouts: cfg.timeouts,
        logging: cfg.logging.clone(),
        site: site.clone(),
        hosts,
        auth: start.auth.clone(),
        proxy: cfg.proxy,
    }
}

/// Serves the first listener here and every further one on a thread of its own; returns
/// when all loops have stopped, with the first error any of them met.
fn serve_all(start: &WorkerStart<'_>, roots: Roots, at: (u16, CpuId)) -> Result<(), WorkerError> {
    let counters = start.counters;
    let cpu = at.1;
    let Some((&first, rest)) = start.listeners.split_first() else {
        return Ok(());
    };
    let mut configs = Vec::with_capacity(rest.len());
    for _ in rest {
        let dup = roots.try_clone().map_err(WorkerError::Root)?;
        configs.push(loop_config(start, at, dup));
    }
    let main_cfg = loop_config(start, at, roots);
    std::thread::scope(|s| {
        let mut others = Vec::with_capacity(rest.len());
        for (&l, cfg) in rest.iter().zip(configs) {
            let report = Reports {
                ready: start.ready,
                serving: false,
            };
            let spawned = std::thread::Builder::new()
                .name(format!("steerd-w{cpu}"))
                .spawn_scoped(s, move || serve_one(l, cfg, counters, report));
            match spawned {
                Ok(h) => others.push(h),
                // Threads already serving stop only on a signal: end the whole worker
                // now and let the master start it again.
                Err(e) => {
                    crate::say!("worker on cpu {cpu}: {}", WorkerError::Thread(e));
                    sys::exit_now(1);
                }
            }
        }
        let report = Reports {
            ready: start.ready,
            serving: true,
        };
        let mut result = serve_one(first, main_cfg, counters, report);
        for h in others {
            let joined = h.join().unwrap_or_else(|_| {
                Err(WorkerError::Thread(io::Error::other(
                    "a listener thread panicked",
                )))
            });
            result = result.and(joined);
        }
        result
    })
}

/// What a loop tells the master on the readiness pipe.
#[derive(Clone, Copy)]
struct Reports<'a> {
    /// The pipe (none in a worker that reports nothing).
    ready: Option<BorrowedFd<'a>>,
    /// This loop reports, at its first turn, that the worker serves (the first loop).
    serving: bool,
}

/// Set in a report that says a loop has accepted its listener's queue and left the
/// listener (graceful stop); the other 31 bits are the pid (`pid_max` is at most 2^22).
pub(crate) const LEFT_LISTENER: u32 = 1 << 31;

/// Runs one loop. The first loop tells the master once, at its first turn, that this
/// worker serves; every loop tells it, at the call after the one that began a graceful
/// stop (the loop makes that call as soon as the queue is accepted and the listener
/// left), that it left its listener, so that the master may shut the listener on a
/// server-wide stop.
fn serve_one(
    listener: BorrowedFd<'_>,
    cfg: LoopConfig,
    counters: &WorkerCounters,
    mut report: Reports<'_>,
) -> Result<(), WorkerError> {
    let mut signals = SignalView::default();
    let mut stopping = false;
    let mut control = || {
        if let (Some(fd), true) = (report.ready, report.serving) {
            report.serving = false;
            report_serving(fd, 0);
        }
        let now = signals.control();
        if let (Some(fd), true) = (report.ready, stopping) {
            report.ready = None;
            report_serving(fd, LEFT_LISTENER);
        }
        stopping |= now == Control::StopGraceful;
        now
    };
    serve_loop::run(listener, cfg, counters, &mut control).map_err(WorkerError::Loop)
}

/// Writes this worker's pid (with `flags`) to the master's readiness pipe (4 bytes: one
/// atomic pipe write, pipe(7)); the master's `/health`, `READY=1` and retiring of a
/// predecessor wait for the first, a graceful stop's shutting of the listeners for the
/// [`LEFT_LISTENER`] ones.
fn report_serving(fd: BorrowedFd<'_>, flags: u32) {
    let pid = rustix::process::getpid().as_raw_nonzero().get() as u32;
    let _ = rustix::io::write(fd, &(pid | flags).to_le_bytes());
}

/// Maps the worker's signal counters to what the loop should do, as nginx workers do:
/// TERM/INT stop now, QUIT stops gracefully, USR2 retires (a successor took the
/// listener), USR1 reopens the log (once per delivery).
#[derive(Debug, Default)]
pub(crate) struct SignalView {
    reopened: u32,
    /// WINCH deliveries seen while serving: only later ones ask a retiring worker to
    /// close its idle connections.
    winch_while_serving: u32,
}

impl SignalView {
    /// The loop's next step given the signals counted so far.
    pub(crate) fn control(&mut self) -> Control {
        match signals::requested_stop() {
            Some(Stop::Fast) => Control::StopNow,
            Some(Stop::Graceful) => Control::StopGraceful,
            None if signals::retire_requested() => {
                if signals::close_idle_count() > self.winch_while_serving {
                    Control::RetireCloseIdle
                } else {
                    Control::Retire
                }
            }
            None => {
                // A WINCH while serving (a terminal's resize) never counts later.
                self.winch_while_serving = signals::close_idle_count();
                if signals::arrived(libc::SIGUSR1, &mut self.reopened) {
                    Control::ReopenLog
                } else {
                    Control::Run
                }
            }
        }
    }
}
