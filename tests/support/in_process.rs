//! The in-process loop harness: a site tree and a thread of the test process running
//! `serve_loop::run_tuned` on a listener the test binds, with its counters and a control
//! knob the test turns. The real binary is started with `server.rs`.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use steerd::config::{Logging, Timeouts};
use steerd::cpuset::CpuId;
use steerd::serve_loop::{self, Control, LoopConfig, Tuning};
use steerd::stats::WorkerCounters;

/// A temporary site: files inside `root`, a secret beside it.
pub(crate) struct Site {
    pub base: PathBuf,
    pub root: PathBuf,
}

impl Site {
    pub(crate) fn new(name: &str) -> Site {
        let base = std::env::temp_dir().join(format!("steerd-serve-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("root");
        std::fs::create_dir_all(root.join("dir")).unwrap();
        std::fs::create_dir_all(root.join("empty-dir")).unwrap();
        std::fs::write(base.join("secret.txt"), "TOP SECRET").unwrap();
        std::fs::write(root.join("index.html"), "<h1>home</h1>\n").unwrap();
        std::fs::write(root.join("hello.txt"), "hello world\n").unwrap();
        std::fs::write(root.join("ten.bin"), "0123456789").unwrap();
        std::fs::write(root.join("dir/index.html"), "dir index\n").unwrap();
        std::fs::write(root.join("%2e%2e"), "literal percent name\n").unwrap();
        let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(root.join("big.bin"), big).unwrap();
        std::os::unix::fs::symlink("../secret.txt", root.join("escape")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("passwd")).unwrap();
        std::os::unix::fs::symlink("..", root.join("up")).unwrap();
        Site { base, root }
    }

    pub(crate) fn big(&self) -> Vec<u8> {
        std::fs::read(self.root.join("big.bin")).unwrap()
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

pub(crate) fn open_root(root: &Path) -> OwnedFd {
    use rustix::fs::{Mode, OFlags};
    rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap()
}

pub(crate) fn config(root: &Path) -> LoopConfig {
    LoopConfig {
        worker: 0,
        cpu: CpuId::new(0).unwrap(),
        root: open_root(root),
        max_conns: 256,
        max_conns_per_addr: 256,
        timeouts: Timeouts {
            header: Duration::from_secs(10),
            keepalive: Duration::from_secs(10),
            send: Duration::from_secs(10),
            shutdown: Duration::from_secs(5),
        },
        logging: Logging::default(),
        site: Default::default(),
        hosts: Default::default(),
        auth: Vec::new(),
        proxy: Default::default(),
    }
}

/// The serve loop in a thread of the test process.
pub(crate) struct InProc {
    pub addr: SocketAddr,
    pub counters: Arc<WorkerCounters>,
    /// What the control callback returns next: 0 run, 1 graceful stop, 2 stop now,
    /// 3 reopen the log (once, then back to 0), 4 retire.
    pub control: Arc<AtomicU8>,
    /// How many times the loop has polled the control callback.
    pub polls: Arc<std::sync::atomic::AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl InProc {
    pub(crate) fn start(cfg: LoopConfig, tuning: Tuning) -> InProc {
        InProc::start_marked(cfg, tuning, || {})
    }

    /// As [`InProc::start`], running `mark` first on the server thread.
    pub(crate) fn start_marked(cfg: LoopConfig, tuning: Tuning, mark: fn()) -> InProc {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let counters = Arc::new(WorkerCounters::default());
        let control = Arc::new(AtomicU8::new(0));
        let polls = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (c2, s2, p2) = (counters.clone(), control.clone(), polls.clone());
        let thread = std::thread::spawn(move || {
            mark();
            let fd = OwnedFd::from(listener);
            let mut control = || {
                p2.fetch_add(1, Ordering::Relaxed);
                match s2.load(Ordering::Relaxed) {
                    1 => Control::StopGraceful,
                    2 => Control::StopNow,
                    3 => {
                        let _ = s2.compare_exchange(3, 0, Ordering::Relaxed, Ordering::Relaxed);
                        Control::ReopenLog
                    }
                    4 => Control::Retire,
                    _ => Control::Run,
                }
            };
            use std::os::fd::AsFd;
            serve_loop::run_tuned(fd.as_fd(), cfg, tuning, &c2, &mut control).unwrap();
        });
        InProc {
            addr,
            counters,
            control,
            polls,
            thread: Some(thread),
        }
    }

    /// Sets the control value and waits (bounded) until the loop has acted on it: two
    /// polls later, the turn that read it is over.
    pub(crate) fn set_control(&self, value: u8) {
        self.control.store(value, Ordering::Relaxed);
        let seen = self.polls.load(Ordering::Relaxed);
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.polls.load(Ordering::Relaxed) < seen + 2 {
            assert!(Instant::now() < deadline, "the loop stopped polling");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub(crate) fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    }
}

impl InProc {
    /// Waits for the loop to return (after a stop), with a bound.
    pub(crate) fn join_within(&mut self, t: Duration) -> bool {
        let deadline = Instant::now() + t;
        while Instant::now() < deadline {
            if self.thread.as_ref().is_none_or(|h| h.is_finished()) {
                if let Some(h) = self.thread.take() {
                    let _ = h.join();
                }
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }
}

impl Drop for InProc {
    fn drop(&mut self) {
        self.control.store(2, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
