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
//! deliveries (`signals::install`); this loop reads the counters. Every other signal
//! whose default would end the process is ignored (`signals::ignored`).
//! TERM, INT: fast stop. QUIT: graceful stop (new connections refused at once, responses
//! in flight finish up to `--shutdown-timeout`, then the master kills what is left).
//! HUP: with `--config`, after reading the file again (a file that does not parse, or
//! changes a setting only new listeners could apply, is refused with one line and the
//! running workers keep serving), and after checking the root, the error pages and fallback, and the log as the workers
//! will open them (the start-up checks, `preflight.rs`), and reading the `--mime-types`
//! file again, start fresh workers on the same listeners; each old worker retires
//! (drains, see `serve_loop::Loop::drain`) once its successor serves. USR2: binary
//! upgrade in place (`upgrade.rs`: the new binary's `check` answers the handshake and
//! its trial `serve` seats the passed listeners, then this process re-executes it and
//! its next image retires these workers as a HUP would; a trial stops right after
//! `seat_passed`, before anything is made or started). USR1:
//! workers reopen the access log.
//!
//! Workers report on a pipe when they serve; from that come `/health`, the service
//! manager's `READY=1` (`notify.rs`) and the moment a predecessor retires.
//!
//! It does not decide the plan or assemble the program (plan.rs, steer.rs), and does not
//! accept connections (serve_loop.rs in each worker).

use crate::config::{Serving, SteerPolicy};
use crate::dashboard::status::StatusDocument;
use crate::inherit::{self, Inherited};
use crate::listen::{self, Listeners, SocketOptions};
use crate::notify::Notifier;
use crate::plan::Plan;
use crate::signals;
use crate::stats::{self, SharedCounters};
use crate::sys;
use crate::upgrade::{self, Launch};
use crate::user;
use core::fmt;
use std::io;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;

mod supervisor;

use supervisor::{Shared, Supervisor};

/// A bring-up step of the master that failed.
#[derive(Debug)]
pub(crate) enum MasterError {
    /// Installing the signal handlers.
    Signals(io::Error),
    /// Reading or applying the master's own CPU placement.
    Pin(io::Error),
    /// Making the listeners.
    Listen(listen::ListenError),
    /// Binding the metrics endpoint.
    Metrics(SocketAddr, io::Error),
    /// `--user` names no user or group.
    User(user::UserError),
    /// Becoming `--user` (uid, gid) failed.
    BecomeUser(u32, u32, io::Error),
    /// Privileges could be regained after dropping them.
    Regained,
    /// A passed descriptor cannot be used.
    Inherit(crate::inherit::InheritError),
    /// The workers a previous image handed over cannot be read.
    TakenOver(upgrade::WorkersError),
    /// The shared counters mapping.
    Counters(io::Error),
    /// `fork` failed at start.
    Fork(io::Error),
    /// The workers' readiness pipe.
    Pipe(io::Error),
    /// The `--basic-auth` file, read after privileges are dropped, as a reload reads it.
    Credentials(crate::preflight::Problem),
}

impl fmt::Display for MasterError {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MasterError::Signals(e) => write!(f, "signals: {e}"),
            MasterError::Pin(e) => write!(f, "pinning the master: {e}"),
            // These four are printed under their own stage name (see `stage`).
            MasterError::Listen(e) => write!(f, "{e}"),
            MasterError::Metrics(a, e) => write!(f, "{a}: {e}"),
            MasterError::User(e) => write!(f, "{e}"),
            MasterError::BecomeUser(uid, gid, e) => write!(f, "becoming uid {uid} gid {gid}: {e}"),
            MasterError::Regained => {
                f.write_str("privileges could be regained after dropping them")
            }
            MasterError::Inherit(e) => write!(f, "{e}"),
            MasterError::TakenOver(e) => write!(f, "{e}"),
            MasterError::Counters(e) => write!(f, "counters mapping: {e}"),
            MasterError::Fork(e) => write!(f, "fork: {e}"),
            MasterError::Pipe(e) => write!(f, "readiness pipe: {e}"),
            MasterError::Credentials(p) => write!(f, "{}", p.message),
        }
    }
}

impl MasterError {
    /// The pipeline stage to name in the one-line error.
    pub(crate) fn stage(&self) -> &'static str {
        match self {
            MasterError::Listen(_) | MasterError::Inherit(_) | MasterError::TakenOver(_) => {
                "listen"
            }
            MasterError::Metrics(..) => "metrics",
            MasterError::User(_) | MasterError::BecomeUser(..) | MasterError::Regained => "user",
            MasterError::Credentials(_) => "site",
            _ => "master",
        }
    }
}

/// Runs the server until a stop signal: bring-up, then supervision. `program` is the
/// steering program for `plan.steer` (`None` for hash); `status` the fixed part of the
/// dashboard's `/status.json` (with `--metrics`). Startup lines go to stderr.
///
/// Order: signals; the descriptors a parent passed (socket activation, upgrade); `--user`
/// resolved; then pinning, listeners (passed ones first in their groups), steering,
/// metrics, the `listening on` lines, privileges, workers. What a worker opens was
/// checked before this (`cmd/preflight.rs`).
pub(crate) fn run(
    cfg: &Serving,
    plan: &Plan,
    program: Option<&[asm_bpf::Insn]>,
    status: Option<StatusDocument>,
    reread: Option<crate::config::Reread<'_>>,
) -> Result<(), MasterError> {
    signals::install().map_err(MasterError::Signals)?;
    // Before any worker exists: each inherits it. A hint, as madvise's are: where it is
    // refused (user-mode QEMU answers EINVAL) the host's huge page setting stands.
    let _ = sys::base_pages_only();
    // An older steerd's upgrade re-executed the master with these blocked (this one
    // resets them first, `upgrade.rs`): one that came meanwhile is pending, and counted
    // from here on.
    sys::mask_signals(&signals::COUNTED, false).map_err(MasterError::Signals)?;
    let launch = Launch::record().ok();
    // Before `take_from_env`, which removes the variable that says they are ours.
    let trial = upgrade::handshake::take_trial();
    let taken_over = upgrade::take_workers().map_err(MasterError::TakenOver)?;
    let mut passed = inherit::take_from_env().map_err(MasterError::Inherit)?;
    let upgrade_pipe = upgrade::take_named(&mut passed, inherit::UPGRADE_PIPE);
    let passed_metrics = upgrade::take_named(&mut passed, inherit::METRICS);
    let notifier = Notifier::from_env().unwrap_or_else(|e| {
        crate::say!("warning: notify: {e}");
        Notifier::none()
    });
    // `--user` is resolved before anything is bound: a bad name binds nothing.
    let user = cfg.user.as_ref().map(user::lookup).transpose();
    let user = user.map_err(MasterError::User)?;
    let home = place_master(plan).map_err(MasterError::Pin)?;
    let opts = SocketOptions {
        defer_accept_secs: defer_accept_secs(cfg),
        send_buffer: cfg.send_buffer,
    };
    let seeded = seat_passed(cfg, plan, passed)?;
    if trial {
        // An upgrade's trial (`upgrade/handshake.rs`): everything up to here is what a
        // re-exec goes through before it changes anything; say so and stop.
        crate::say!("{}", upgrade::handshake::trial_line());
        return Ok(());
    }
    let listeners =
        listen::open_seeded(&plan.workers, seeded, &home, opts).map_err(MasterError::Listen)?;
    let policy = attach_steering(&listeners, plan.steer, program);
    let backlog = stats::metrics_server::backlog(SOMAXCONN);
    let metrics = match (passed_metrics, cfg.metrics) {
        (Some(fd), _) => Some(fd),
        (None, Some(addr)) => Some(bind_metrics(addr, backlog)?),
        (None, None) => None,
    };
    announce(plan, policy, &listeners, metrics.as_ref());
    raise_fd_limit(cfg, plan.workers.len());
    if let Some(id) = &user {
        drop_privileges(id)?;
    }
    // As the workers' user, as every reload reads it (`preflight::worker_files`).
    let auth = crate::preflight::host_users(cfg).map_err(MasterError::Credentials)?;
    // Two blocks per worker: one per generation (see `WorkerSlot::block`).
    let counters = SharedCounters::new(2 * plan.workers.len()).map_err(MasterError::Counters)?;
    let status = status.map(|mut s| {
        s.in_force(&listeners.addrs(), policy.name());
        s
    });
    let pipe = rustix::pipe::pipe_with(
        rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK,
    )
    .map_err(|e| MasterError::Pipe(e.into()))?;
    let shared = Shared {
        cfg,
        plan,
        listeners: &listeners,
        counters: &counters,
        metrics: metrics.as_ref().zip(status.as_ref()),
        metrics_backlog: backlog,
        ready: pipe,
        home: &home,
        auth,
        reread,
    };
    let mut sup = Supervisor::new(shared, notifier, launch, upgrade_pipe);
    sup.take_over(&taken_over);
    if !taken_over.is_empty() {
        crate::say!(
            "upgrade: this binary took over {} workers; each retires once its successor serves",
            taken_over.len()
        );
    }
    sup.start_all()?;
    sup.supervise();
    Ok(())
}

/// The passed listening sockets, seated in their `--listen` groups (`listen::adopt`).
#[cfg_attr(feature = "cold-size", optimize(size))]
fn seat_passed(
    cfg: &Serving,
    plan: &Plan,
    passed: Vec<Inherited>,
) -> Result<Vec<(SocketAddr, Vec<OwnedFd>)>, MasterError> {
    let mut offered = Vec::with_capacity(passed.len());
    let mut fds = Vec::with_capacity(passed.len());
    for p in passed {
        let Some((addr, reuseport)) = p.listener else {
            let problem = inherit::reuseport_problem(&p);
            return Err(MasterError::Inherit(
                problem.unwrap_or_else(|| inherit::not_listening(&p)),
            ));
        };
        offered.push(listen::adopt::Offered {
            name: p.name,
            addr,
            reuseport,
        });
        fds.push(Some(p.fd));
    }
    let default_only =
        cfg.listen.len() == 1 && cfg.listen[0].to_string() == crate::config::DEFAULT_LISTEN;
    let seating = listen::adopt::seat(&cfg.listen, default_only, &offered, plan.workers.len())
        .map_err(|e| MasterError::Inherit(inherit::InheritError::Seat(e)))?;
    if !offered.is_empty() {
        crate::say!("adopted {} passed listening sockets", offered.len());
    }
    Ok(seating
        .into_iter()
        .map(|(addr, seats)| (addr, seats.iter().filter_map(|&i| fds[i].take()).collect()))
        .collect())
}

/// Descriptors a serving loop holds besides its connections: the file cache's open
/// files (`CacheConfig::default().entries`).
const LOOP_FDS: u64 = 256;
/// Descriptors a worker holds at start besides its loops: stdin, stdout, stderr and the
/// readiness pipe.
const WORKER_BASE_FDS: u64 = 4;
/// Descriptors one loop holds at start besides connections: its listener, its epoll,
/// the root, and the access log or the first cached file.
const LOOP_BASE_FDS: u64 = 4;
/// Descriptors a worker holds besides its loops (epoll, root, log, stdio, listeners'
/// copies before they are closed, metrics).
const FD_HEADROOM: u64 = 64;

/// Raises the soft `RLIMIT_NOFILE` (inherited by the workers) towards the hard limit so
/// each worker can hold `--max-conns` connections on each listener, plus its cached
/// files and headroom: the usual soft limit of 1024 is below the default 10,240
/// connections. If the hard limit is lower, one warning names the capacity left (no
/// privilege is used to raise the hard limit). getrlimit(2).
#[cfg_attr(feature = "cold-size", optimize(size))]
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
        let room = got.saturating_sub(WORKER_BASE_FDS) / loops;
        crate::say!(
            "warning: open files limited to {got} (hard limit): about {} connections per worker and listener (fewer while cached files are open) instead of --max-conns {}",
            room.saturating_sub(LOOP_BASE_FDS),
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
#[cfg_attr(feature = "cold-size", optimize(size))]
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

/// Where the system's largest accept queue is read (once, at start).
const SOMAXCONN: &str = "/proc/sys/net/core/somaxconn";

/// The metrics endpoint: a plain nonblocking listener (not reuseport: only the master
/// answers it), its accept queue as long as the system allows (`backlog`, from
/// `somaxconn`): the standard library's 128 overflowed under a flood of silent
/// connections, and the kernel then drops a probe's SYN.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn bind_metrics(addr: SocketAddr, backlog: u32) -> Result<OwnedFd, MasterError> {
    let std_listener =
        std::net::TcpListener::bind(addr).map_err(|e| MasterError::Metrics(addr, e))?;
    std_listener
        .set_nonblocking(true)
        .map_err(|e| MasterError::Metrics(addr, e))?;
    let fd = OwnedFd::from(std_listener);
    // A second listen(2) on a listening socket sets its backlog anew.
    let queue = i32::try_from(backlog).unwrap_or(i32::MAX);
    rustix::net::listen(&fd, queue).map_err(|e| MasterError::Metrics(addr, e.into()))?;
    Ok(fd)
}

/// The startup lines (stderr): policy, one line per worker, the bound addresses.
/// Tests and scripts read `listening on ADDR` and `metrics on ADDR`.
#[cfg_attr(feature = "cold-size", optimize(size))]
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

/// Becomes the `--user` resolved before binding, and checks it cannot be undone. A master
/// that already is that user (started by an upgrade of one that had dropped privileges)
/// has nothing to do.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn drop_privileges(id: &user::Identity) -> Result<(), MasterError> {
    let already = rustix::process::geteuid().as_raw() == id.uid
        && rustix::process::getuid().as_raw() == id.uid
        && rustix::process::getgid().as_raw() == id.gid;
    if already && id.uid != 0 {
        return Ok(());
    }
    sys::become_user(id.uid, id.gid, &id.groups)
        .map_err(|e| MasterError::BecomeUser(id.uid, id.gid, e))?;
    if id.uid != 0 && sys::become_user(0, 0, &[0]).is_ok() {
        return Err(MasterError::Regained);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
            send_buffer: None,
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
                crate::test_skip::skip_or_fail(
                    &crate::test_skip::this_test(),
                    "the kernel (or emulator) refuses SO_ATTACH_REUSEPORT_CBPF: ENOPROTOOPT",
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
    fn defer_accept_rounds_up_to_seconds() {
        let second = Duration::from_secs(1);
        let mut cfg = Serving {
            root: ".".into(),
            listen: Vec::new(),
            max_conns: 1,
            max_conns_per_addr: 1,
            send_buffer: None,
            timeouts: crate::config::Timeouts {
                header: Duration::from_millis(1500),
                keepalive: second,
                send: second,
                shutdown: second,
            },
            logging: Default::default(),
            metrics: None,
            proxy: Default::default(),
            user: None,
            site: Default::default(),
            hosts: Vec::new(),
            host_table: Default::default(),
        };
        assert_eq!(defer_accept_secs(&cfg), 2);
        cfg.timeouts.header = Duration::from_millis(1);
        assert_eq!(defer_accept_secs(&cfg), 1);
    }
}
