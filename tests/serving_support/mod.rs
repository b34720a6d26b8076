//! Shared by the serving tests: a site tree, an in-process server (a thread running
//! `serve_loop::run_tuned` on a listener the test binds), the real binary, and a minimal
//! HTTP/1.1 response reader used as the client.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use steerd::config::Timeouts;
use steerd::cpuset::CpuId;
use steerd::serve_loop::{self, Control, LoopConfig, Tuning};
use steerd::stats::WorkerCounters;

/// A temporary site: files inside `root`, a secret beside it.
pub struct Site {
    pub base: PathBuf,
    pub root: PathBuf,
}

impl Site {
    pub fn new(name: &str) -> Site {
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

    pub fn big(&self) -> Vec<u8> {
        std::fs::read(self.root.join("big.bin")).unwrap()
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

pub fn open_root(root: &Path) -> OwnedFd {
    use rustix::fs::{Mode, OFlags};
    rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap()
}

pub fn config(root: &Path) -> LoopConfig {
    LoopConfig {
        cpu: CpuId::new(0).unwrap(),
        root: open_root(root),
        max_conns: 256,
        timeouts: Timeouts {
            header: Duration::from_secs(10),
            keepalive: Duration::from_secs(10),
            send: Duration::from_secs(10),
            shutdown: Duration::from_secs(5),
        },
        access_log: None,
        site: Default::default(),
    }
}

/// The serve loop in a thread of the test process.
pub struct InProc {
    pub addr: SocketAddr,
    pub counters: Arc<WorkerCounters>,
    /// What the control callback returns next: 0 run, 1 graceful stop, 2 stop now,
    /// 3 reopen the log (once, then back to 0).
    pub control: Arc<AtomicU8>,
    thread: Option<JoinHandle<()>>,
}

impl InProc {
    pub fn start(cfg: LoopConfig, tuning: Tuning) -> InProc {
        InProc::start_marked(cfg, tuning, || {})
    }

    /// As [`InProc::start`], running `mark` first on the server thread.
    pub fn start_marked(cfg: LoopConfig, tuning: Tuning, mark: fn()) -> InProc {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let counters = Arc::new(WorkerCounters::default());
        let control = Arc::new(AtomicU8::new(0));
        let (c2, s2) = (counters.clone(), control.clone());
        let thread = std::thread::spawn(move || {
            mark();
            let fd = OwnedFd::from(listener);
            let mut control = || match s2.load(Ordering::Relaxed) {
                1 => Control::StopGraceful,
                2 => Control::StopNow,
                3 => {
                    let _ = s2.compare_exchange(3, 0, Ordering::Relaxed, Ordering::Relaxed);
                    Control::ReopenLog
                }
                _ => Control::Run,
            };
            use std::os::fd::AsFd;
            serve_loop::run_tuned(fd.as_fd(), cfg, tuning, &c2, &mut control).unwrap();
        });
        InProc {
            addr,
            counters,
            control,
            thread: Some(thread),
        }
    }

    pub fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    }
}

impl InProc {
    /// Waits for the loop to return (after a stop), with a bound.
    pub fn join_within(&mut self, t: Duration) -> bool {
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

/// The real binary, serving `root` on an ephemeral loopback port.
pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    pub stderr: Arc<std::sync::Mutex<String>>,
}

impl Server {
    /// Starts `steerd serve ROOT --listen 127.0.0.1:0 ARGS...`, optionally through a wrapper
    /// command (e.g. `prlimit --nofile=64:64`), and waits for its "listening on" line.
    pub fn start(root: &Path, args: &[&str], wrapper: &[&str]) -> Server {
        let exe = env!("CARGO_BIN_EXE_steerd");
        let mut cmd = match wrapper.split_first() {
            Some((w, rest)) => {
                let mut c = Command::new(w);
                c.args(rest).arg(exe);
                c
            }
            None => Command::new(exe),
        };
        cmd.arg("serve")
            .arg(root)
            .args(["--listen", "127.0.0.1:0"])
            .args(args);
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn steerd");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let log = Arc::new(std::sync::Mutex::new(String::new()));
        let log2 = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(a) = line.strip_prefix("steerd: listening on ") {
                    let _ = tx.send(a.trim().to_string());
                }
                log2.lock().unwrap().push_str(&line);
                log2.lock().unwrap().push('\n');
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(a) => a.parse().expect("address"),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("steerd did not start: {}", log.lock().unwrap());
            }
        };
        let server = Server {
            child,
            addr,
            stderr: log,
        };
        server.wait_ready();
        server
    }

    /// Waits until a request is answered (workers may start after the listening line).
    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(mut s) = TcpStream::connect(self.addr) {
                s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                if s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    .is_ok()
                {
                    let mut v = Vec::new();
                    if s.read_to_end(&mut v).is_ok() && v.starts_with(b"HTTP/1.1") {
                        return;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("steerd never answered");
    }

    pub fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    }

    /// The sum over workers of a Prometheus series (needs `--metrics 127.0.0.1:0`).
    pub fn metric(&self, name: &str) -> u64 {
        let deadline = Instant::now() + Duration::from_secs(10);
        let addr = loop {
            let log = self.stderr.lock().unwrap().clone();
            if let Some(a) = log
                .lines()
                .find_map(|l| l.strip_prefix("steerd: metrics on "))
            {
                break a.trim().parse::<SocketAddr>().expect("metrics address");
            }
            assert!(Instant::now() < deadline, "no metrics line in {log}");
            std::thread::sleep(Duration::from_millis(20));
        };
        let text = exchange(
            addr,
            "GET /metrics HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n",
        )
        .text();
        text.lines()
            .filter(|l| l.starts_with(name) && l[name.len()..].starts_with('{'))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Every pid of the server: the master and its children.
    pub fn pids(&self) -> Vec<u32> {
        let mut out = vec![self.child.id()];
        let children = format!("/proc/{0}/task/{0}/children", self.child.id());
        if let Ok(text) = std::fs::read_to_string(children) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
        out
    }

    /// User + system CPU time of the server's processes, in clock ticks.
    pub fn cpu_ticks(&self) -> u64 {
        self.pids()
            .iter()
            .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).ok())
            .map(|s| {
                let after = &s[s.rfind(')').map_or(0, |i| i + 2)..];
                let f: Vec<&str> = after.split_whitespace().collect();
                f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
                    + f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
            })
            .sum()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(self.child.id() as i32).unwrap(),
            rustix::process::Signal::TERM,
        );
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One parsed response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Reads one response from `r`; `head_only` for a HEAD request or a 304.
pub fn read_response(r: &mut impl BufRead, head_only: bool) -> std::io::Result<Response> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "closed",
        ));
    }
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line)?;
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        let (n, v) = l
            .split_once(':')
            .ok_or_else(|| std::io::Error::other("bad header"))?;
        headers.push((n.to_string(), v.trim().to_string()));
    }
    let mut resp = Response {
        status,
        headers,
        body: Vec::new(),
    };
    if !head_only && status != 304 {
        let len: usize = resp
            .header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        resp.body = vec![0; len];
        r.read_exact(&mut resp.body)?;
    }
    Ok(resp)
}

/// Sends `req` on a new connection and reads one response.
pub fn exchange(addr: SocketAddr, req: &str) -> Response {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    let head_only = req.starts_with("HEAD ");
    read_response(&mut BufReader::new(s), head_only).unwrap()
}

/// `GET path` with Host and `Connection: close`, plus extra header lines.
pub fn get(addr: SocketAddr, path: &str, extra: &str) -> Response {
    exchange(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: t\r\n{extra}Connection: close\r\n\r\n"),
    )
}

/// Whether the peer closed: a read returns EOF (or a reset) within the timeout.
pub fn closed_within(s: &mut TcpStream, t: Duration) -> bool {
    s.set_read_timeout(Some(t)).unwrap();
    let mut b = [0u8; 4096];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}
