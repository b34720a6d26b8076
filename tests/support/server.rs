//! The binary-driven server harness: start the real `steerd serve` (directly or through
//! a wrapper that execs it), read its startup lines from stderr, speak plain HTTP/1.1 on
//! real sockets, read `/metrics`, pin the calling thread.
//!
//! Every server is killed by PID when its handle drops (its workers follow: they carry
//! a parent-death signal). Every wait is bounded. Framed responses (headers, bodies,
//! keep-alive) are read with `client.rs`; `read_response` here reads until the peer closes.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long any startup or state change may take on a loaded 2-CPU machine.
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

/// The binary under test.
pub(crate) fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_steerd")
}

/// How long a one-shot `steerd` command may take, output collected: far more than any needs
/// on a loaded machine or under user-mode emulation, so only a hang reaches it.
const ONE_SHOT_LIMIT: Duration = Duration::from_secs(120);

/// Runs `steerd ARGS` to its end with `stdin` as its standard input, and collects its
/// status and both outputs. A command that has not ended within [`ONE_SHOT_LIMIT`] is
/// killed and the test fails, naming the state the process was in. Under user-mode QEMU
/// (`STEERD_EMULATED`), whose fork emulation has been seen to leave a child hung before it
/// ran a single instruction of steerd, a hung command is run once more, saying so.
pub(crate) fn run_steerd(args: &[&str], stdin: &[u8]) -> Output {
    let hung = match run_steerd_within(args, stdin, ONE_SHOT_LIMIT) {
        Ok(out) => return out,
        Err(hung) => hung,
    };
    if std::env::var_os("STEERD_EMULATED").is_none() {
        panic!("steerd {args:?} did not end within {ONE_SHOT_LIMIT:?}: {hung}");
    }
    eprintln!(
        "note: steerd {args:?} hung under user-mode emulation ({hung}); killed, run again once"
    );
    run_steerd_within(args, stdin, ONE_SHOT_LIMIT)
        .unwrap_or_else(|again| panic!("steerd {args:?} hung twice: {hung}; then {again}"))
}

/// One bounded run: the output, or what was seen of a run that did not end in `limit`.
fn run_steerd_within(args: &[&str], stdin: &[u8], limit: Duration) -> Result<Output, String> {
    let deadline = Instant::now() + limit;
    let mut child = Command::new(binary())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn steerd");
    let (tx, rx) = std::sync::mpsc::channel();
    let mut input = child.stdin.take().expect("stdin");
    let stdin = stdin.to_vec();
    // steerd exits without reading stdin on a usage error: a broken pipe is fine.
    std::thread::spawn(move || drop(input.write_all(&stdin)));
    drain(child.stdout.take().expect("stdout"), 1, tx.clone());
    drain(child.stderr.take().expect("stderr"), 2, tx);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for steerd") {
            break status;
        }
        if Instant::now() >= deadline {
            let seen = process_state(child.id());
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("pid {} still running, {seen}", child.id()));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut out = Output {
        status,
        stdout: Vec::new(),
        stderr: Vec::new(),
    };
    for _ in 0..2 {
        let wait = deadline.saturating_duration_since(Instant::now());
        let (fd, bytes) = rx.recv_timeout(wait).map_err(|_| {
            format!("exited ({status}) but another process holds its output pipe open")
        })?;
        *(if fd == 1 {
            &mut out.stdout
        } else {
            &mut out.stderr
        }) = bytes;
    }
    Ok(out)
}

/// Reads `from` to its end in a thread and sends the bytes, tagged with `fd`.
fn drain(mut from: impl Read + Send + 'static, fd: u8, to: std::sync::mpsc::Sender<(u8, Vec<u8>)>) {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = from.read_to_end(&mut bytes);
        let _ = to.send((fd, bytes));
    });
}

/// What /proc says of a process: its state and wait channel, and what it runs (whether it
/// got as far as executing steerd).
fn process_state(pid: u32) -> String {
    let read =
        |what: &str| std::fs::read_to_string(format!("/proc/{pid}/{what}")).unwrap_or_default();
    let stat = read("stat");
    let state = stat
        .rsplit(") ")
        .next()
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or("?");
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).map(|p| p.display().to_string());
    format!(
        "state {state}, wchan {}, exe {}, cmdline {:?}",
        read("wchan"),
        exe.unwrap_or_else(|e| e.to_string()),
        read("cmdline").replace('\0', " ")
    )
}

/// Lines the server wrote to stderr, shared with the thread that reads them.
#[derive(Default)]
struct Lines {
    lines: Mutex<Vec<String>>,
    grew: Condvar,
}

/// A running `steerd serve`.
pub(crate) struct Server {
    child: Option<Child>,
    lines: Arc<Lines>,
    /// The first `listening on` address.
    pub addr: SocketAddr,
    /// The `metrics on` address, when `--metrics` was given.
    pub metrics: Option<SocketAddr>,
    /// The master's pid.
    pub pid: u32,
    /// Keeps the served directory alive.
    pub root: Option<TempDir>,
}

impl Server {
    /// Starts `steerd serve ROOT --listen 127.0.0.1:0 --metrics 127.0.0.1:0 EXTRA...`
    /// serving a fresh directory with `index.html`, and waits for every worker to report.
    pub(crate) fn start(extra: &[&str]) -> Server {
        let root = TempDir::new("serve");
        std::fs::write(root.path().join("index.html"), b"hello from steerd\n").unwrap();
        let mut args: Vec<String> = vec!["serve".into(), root.path().display().to_string()];
        if !extra.contains(&"--listen") {
            args.extend(["--listen".into(), "127.0.0.1:0".into()]);
        }
        if !extra.contains(&"--metrics") {
            args.extend(["--metrics".into(), "127.0.0.1:0".into()]);
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut s = Server::spawn(Command::new(binary()).args(&args));
        s.root = Some(root);
        s
    }

    /// Spawns `cmd` (which runs steerd serve, possibly through a wrapper that execs it)
    /// and waits for its startup lines.
    pub(crate) fn spawn(cmd: &mut Command) -> Server {
        Server::spawn_with_stdout(cmd, Stdio::null())
    }

    /// [`Server::spawn`] with the server's standard output going to `stdout`.
    pub(crate) fn spawn_with_stdout(cmd: &mut Command, stdout: impl Into<Stdio>) -> Server {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn steerd");
        let stderr = child.stderr.take().expect("stderr");
        let lines = Arc::new(Lines::default());
        let sink = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                eprintln!("[steerd] {line}");
                sink.lines.lock().unwrap().push(line);
                sink.grew.notify_all();
            }
        });
        let pid = child.id();
        let mut server = Server {
            child: Some(child),
            lines,
            addr: "0.0.0.0:0".parse().unwrap(),
            metrics: None,
            pid,
            root: None,
        };
        let line = server.wait_line(|l| l.contains("listening on "));
        server.addr = after(&line, "listening on ").parse().expect("address");
        let n = server.worker_count();
        server.wait_lines(|l| l.contains(" running on cpu "), n);
        // `metrics on` is printed before any worker starts.
        if let Some(m) = server.find_line(|l| l.contains("metrics on ")) {
            server.metrics = Some(after(&m, "metrics on ").parse().expect("metrics address"));
        }
        server
    }

    /// Starts `steerd serve ROOT --listen 127.0.0.1:0 ARGS...` on an existing tree,
    /// optionally through a wrapper command (e.g. `prlimit --nofile=64:64`) that execs it.
    pub(crate) fn start_in(root: &Path, args: &[&str], wrapper: &[&str]) -> Server {
        let mut cmd = match wrapper.split_first() {
            Some((w, rest)) => {
                let mut c = Command::new(w);
                c.args(rest).arg(binary());
                c
            }
            None => Command::new(binary()),
        };
        cmd.arg("serve")
            .arg(root)
            .args(["--listen", "127.0.0.1:0"])
            .args(args);
        Server::spawn(&mut cmd)
    }

    /// A fresh connection to the first address, with a bounded read timeout.
    pub(crate) fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    }

    /// `http://ADDR/path`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// The sum over workers of a Prometheus series (needs `--metrics`).
    pub(crate) fn metric(&self, name: &str) -> u64 {
        self.metrics()
            .iter()
            .filter(|(k, _)| k.starts_with(name) && k[name.len()..].starts_with('{'))
            .map(|(_, v)| v)
            .sum()
    }

    /// Every pid of the server: the master and its children.
    pub(crate) fn pids(&self) -> Vec<u32> {
        let mut out = vec![self.pid];
        let children = format!("/proc/{0}/task/{0}/children", self.pid);
        if let Ok(text) = std::fs::read_to_string(children) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
        out
    }

    /// User + system CPU time of the server's processes, in clock ticks.
    pub(crate) fn cpu_ticks(&self) -> u64 {
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

    /// Every `listening on` address, in `--listen` order.
    pub(crate) fn addrs(&self) -> Vec<SocketAddr> {
        self.lines()
            .iter()
            .filter(|l| l.contains("listening on "))
            .map(|l| after(l, "listening on ").parse().expect("address"))
            .collect()
    }

    /// Every stderr line so far.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.lines.lines.lock().unwrap().clone()
    }

    /// The first line matching `pred`, if any yet.
    pub(crate) fn find_line(&self, pred: impl Fn(&str) -> bool) -> Option<String> {
        self.lines().into_iter().find(|l| pred(l))
    }

    /// Waits (bounded) for a line matching `pred` and returns it.
    pub(crate) fn wait_line(&self, pred: impl Fn(&str) -> bool) -> String {
        self.wait_lines(&pred, 1).pop().expect("one line")
    }

    /// Waits (bounded) until `n` lines match `pred`; returns them.
    pub(crate) fn wait_lines(&self, pred: impl Fn(&str) -> bool, n: usize) -> Vec<String> {
        let deadline = Instant::now() + PATIENCE;
        let mut guard = self.lines.lines.lock().unwrap();
        loop {
            let hits: Vec<String> = guard.iter().filter(|l| pred(l)).cloned().collect();
            if hits.len() >= n {
                return hits;
            }
            let now = Instant::now();
            assert!(
                now < deadline,
                "timed out waiting for {n} matching lines; got:\n{}",
                guard.join("\n")
            );
            guard = self
                .lines
                .grew
                .wait_timeout(guard, deadline - now)
                .unwrap()
                .0;
        }
    }

    /// Workers in the plan, from `worker I cpu C node N` lines: (index, cpu).
    pub(crate) fn plan(&self) -> Vec<(usize, usize)> {
        let lines = self.lines();
        // The plan of the current program image: an upgrade re-executes the master,
        // which prints its plan again.
        let from = lines
            .iter()
            .rposition(|l| l.starts_with("steerd: policy "))
            .unwrap_or(0);
        lines[from..]
            .iter()
            .filter_map(|l| {
                let rest = l.strip_prefix("steerd: worker ")?;
                let f: Vec<&str> = rest.split(' ').collect();
                match f[..] {
                    [i, "cpu", c, "node", _] => Some((i.parse().ok()?, c.parse().ok()?)),
                    _ => None,
                }
            })
            .collect()
    }

    fn worker_count(&self) -> usize {
        let line = self.wait_line(|l| l.starts_with("steerd: policy "));
        let n = line.split(", ").nth(1).and_then(|s| s.split(' ').next());
        n.and_then(|n| n.parse().ok())
            .expect("worker count in the policy line")
    }

    /// The policy in force, from the `policy X, ...` line.
    pub(crate) fn policy(&self) -> String {
        let line = self.wait_line(|l| l.starts_with("steerd: policy "));
        line["steerd: policy ".len()..]
            .split(',')
            .next()
            .unwrap()
            .to_string()
    }

    /// The newest pid reported for worker `index` (`worker I pid P running on cpu C`).
    pub(crate) fn worker_pid(&self, index: usize) -> u32 {
        let prefix = format!("steerd: worker {index} pid ");
        let line = self
            .lines()
            .into_iter()
            .rev()
            .find(|l| l.starts_with(&prefix) && l.contains(" running on cpu "))
            .expect("worker reported");
        after(&line, &prefix)
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    }

    /// Waits (bounded) until `/health` on the metrics address answers 200: every worker's
    /// loop is built (its root and access log open) and serving, not just started.
    pub(crate) fn wait_healthy(&self) {
        let m = self.metrics.expect("--metrics");
        wait_until("every worker serves", || get(m, "/health").0 == 200);
    }

    /// The newest pid of every planned worker, in plan order.
    pub(crate) fn worker_pids(&self) -> Vec<u32> {
        self.plan()
            .iter()
            .map(|&(i, _)| self.worker_pid(i))
            .collect()
    }

    /// Sends `sig` to the master.
    pub(crate) fn signal(&self, sig: i32) {
        send_signal(self.pid, sig);
    }

    /// Waits (bounded) for the master to exit and returns its status.
    pub(crate) fn wait_exit(&mut self, within: Duration) -> ExitStatus {
        let child = self.child.as_mut().expect("still owned");
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = child.try_wait().expect("try_wait") {
                self.child = None;
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "steerd did not exit within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Current `/metrics` samples, `series -> value`.
    pub(crate) fn metrics(&self) -> HashMap<String, u64> {
        let addr = self.metrics.expect("--metrics");
        let (status, body) = get(addr, "/metrics");
        assert_eq!(status, 200, "{body}");
        parse_metrics(&body)
    }

    /// `steerd_connections_accepted_total` (or another family) for each worker index.
    pub(crate) fn per_worker(&self, family: &str) -> Vec<u64> {
        let m = self.metrics();
        self.plan()
            .iter()
            .map(|&(i, cpu)| {
                let key = format!("{family}{{worker=\"{i}\",cpu=\"{cpu}\",node=\"0\"}}");
                let alt = m.iter().find(|(k, _)| {
                    k.starts_with(&format!("{family}{{worker=\"{i}\",cpu=\"{cpu}\","))
                        && !k.contains("class=")
                });
                m.get(&key)
                    .copied()
                    .or(alt.map(|(_, v)| *v))
                    .unwrap_or_else(|| panic!("no {family} for worker {i}"))
            })
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            send_signal(self.pid, libc::SIGKILL);
            let _ = child.wait();
        }
    }
}

/// Waits (bounded) for a `worker INDEX pid P running` line with a pid other than `old`
/// (the replacement after a death or a HUP) and returns that pid.
pub(crate) fn wait_for_new_pid(server: &Server, index: usize, old: u32) -> u32 {
    let prefix = format!("steerd: worker {index} pid ");
    let line = server.wait_line(|l| {
        l.starts_with(&prefix)
            && l.contains(" running on cpu ")
            && !l.starts_with(&format!("{prefix}{old} "))
    });
    line[prefix.len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// `kill(pid, sig)`.
pub(crate) fn send_signal(pid: u32, sig: i32) {
    let pid = rustix::process::Pid::from_raw(pid as i32).expect("pid");
    let sig = rustix::process::Signal::from_named_raw(sig).expect("signal");
    let _ = rustix::process::kill_process(pid, sig);
}

/// The children of `pid` (from `/proc/PID/task/PID/children`).
pub(crate) fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// True while `/proc/PID` exists and is not a zombie.
pub(crate) fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

/// What the process is doing, for a failure's message: its state and the kernel's
/// `wchan` and `syscall` (proc(5)); under user-mode QEMU these are the emulator's.
pub(crate) fn doing(pid: u32) -> String {
    let read = |f: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/{f}"))
            .map_or_else(|e| format!("({e})"), |t| t.trim().to_string())
    };
    let stat = read("stat");
    let state = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .next();
    format!(
        "pid {pid}: state {}, wchan {}, syscall {}",
        state.unwrap_or("?"),
        read("wchan"),
        read("syscall")
    )
}

/// A field of `/proc/PID/status`, such as `Cpus_allowed_list`.
pub(crate) fn status_field(pid: u32, field: &str) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
        .unwrap_or_default()
}

fn after<'a>(line: &'a str, marker: &str) -> &'a str {
    line.split_once(marker).map(|(_, r)| r.trim()).unwrap_or("")
}

/// `series value` lines of the Prometheus text format, comments skipped; integers only.
pub(crate) fn parse_metrics(body: &str) -> HashMap<String, u64> {
    samples_as(body).collect()
}

/// `series value` lines of the Prometheus text format with any number as value (floats
/// such as `_sum` and `process_start_time_seconds`), in the order served.
pub(crate) fn parse_samples(body: &str) -> Vec<(String, f64)> {
    samples_as(body).collect()
}

/// The samples whose value parses as a `T`.
fn samples_as<T: std::str::FromStr>(body: &str) -> impl Iterator<Item = (String, T)> + '_ {
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k.to_string(), v.parse().ok()?))
        })
}

/// One `GET path` with `Connection: close` on a fresh connection: (status, body).
pub(crate) fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    try_get(addr, path).unwrap_or_else(|e| panic!("GET {path} from {addr}: {e}"))
}

/// [`get`], with the error (no connection, or no whole answer within [`PATIENCE`]).
pub(crate) fn try_get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, PATIENCE)?;
    s.set_read_timeout(Some(PATIENCE))?;
    try_request(&mut s, path)
}

/// Writes `GET path` with `Connection: close` on `s` and reads the whole response.
pub(crate) fn request(s: &mut TcpStream, path: &str) -> (u16, String) {
    try_request(s, path).unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// [`request`], with the error.
fn try_request(s: &mut TcpStream, path: &str) -> std::io::Result<(u16, String)> {
    // One write: a server may answer (and close) as soon as the head is complete.
    let head = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    s.write_all(head.as_bytes())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    Ok(parse_response(&raw))
}

/// Reads until the peer closes; (status, body). Panics on a reset.
pub(crate) fn read_response(s: &mut TcpStream) -> (u16, String) {
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read response");
    parse_response(&raw)
}

/// A whole response's (status, body).
fn parse_response(raw: &[u8]) -> (u16, String) {
    let text = String::from_utf8_lossy(raw).into_owned();
    let status = text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// The CPUs this test process may use.
pub(crate) fn allowed_cpus() -> Vec<usize> {
    let set = rustix::thread::sched_getaffinity(None).expect("affinity");
    (0..rustix::thread::CpuSet::MAX_CPU)
        .filter(|&c| set.is_set(c))
        .collect()
}

/// The first two allowed CPUs, or `None` after printing why the test skips.
pub(crate) fn two_cpus() -> Option<(usize, usize)> {
    match allowed_cpus()[..] {
        [a, b, ..] => Some((a, b)),
        _ => {
            crate::support::skip::skip_or_fail(
                &crate::support::skip::this_test(),
                "needs two allowed CPUs",
            );
            None
        }
    }
}

/// Pins the calling thread to `cpu`.
pub(crate) fn pin_thread(cpu: usize) {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set).expect("pin the client thread");
}

/// Runs `f` on a fresh thread pinned to `cpu` and returns its result.
pub(crate) fn on_cpu<T: Send + 'static>(cpu: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(move || {
        pin_thread(cpu);
        f()
    })
    .join()
    .expect("client thread")
}

/// True when running as root (uid 0).
pub(crate) fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// True when this run can start steerd with `--user nobody`: it is root, and the system
/// has a user `nobody`.
pub(crate) fn can_become_nobody() -> bool {
    is_root() && std::fs::read_to_string("/etc/passwd").is_ok_and(|p| p.contains("\nnobody:"))
}

/// A directory removed on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    /// A fresh directory under the system temp dir, world-readable.
    pub(crate) fn new(tag: &str) -> TempDir {
        TempDir::new_in(&std::env::temp_dir(), tag)
    }

    /// A fresh directory under `parent`, world-readable.
    pub(crate) fn new_in(parent: &Path, tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = parent.join(format!("steerd-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        TempDir(dir)
    }

    /// Its path.
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// Writes each `(path, body)` under it, making the directories on the way.
    pub(crate) fn write_all(&self, files: &[(&str, &str)]) {
        for (path, body) in files {
            let file = self.0.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, body).unwrap();
        }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Why steering cannot be checked here, or `None` when it can: asks the kernel once per
/// process to attach a one-instruction program with `SO_ATTACH_REUSEPORT_CBPF` to a fresh
/// `SO_REUSEPORT` socket. User-mode QEMU (7.2) does not translate that option and answers
/// `ENOPROTOOPT`, as does a kernel built without it; the server then falls back to the hash.
pub(crate) fn cbpf_refused() -> Option<&'static str> {
    static ANSWER: std::sync::OnceLock<Option<&'static str>> = std::sync::OnceLock::new();
    *ANSWER.get_or_init(|| {
        use rustix::net::{socket, sockopt, AddressFamily, SocketType};
        let sock = socket(AddressFamily::INET, SocketType::STREAM, None).expect("socket");
        sockopt::set_socket_reuseport(&sock, true).expect("SO_REUSEPORT");
        let ret0 = [asm_bpf::Insn {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: 0,
        }];
        match steerd::sys::attach_reuseport_cbpf(std::os::fd::AsFd::as_fd(&sock), &ret0) {
            Err(e) if e.raw_os_error() == Some(libc::ENOPROTOOPT) => {
                Some("the kernel (or emulator) refuses SO_ATTACH_REUSEPORT_CBPF: ENOPROTOOPT")
            }
            _ => None,
        }
    })
}

/// True (after printing `skipped NAME: why`) when the test `name` asserts steering and
/// the kernel here refuses the steering program ([`cbpf_refused`]).
pub(crate) fn skip_without_steering(name: &str) -> bool {
    let refused = cbpf_refused();
    if let Some(why) = refused {
        crate::support::skip::skip_or_fail(name, why);
    }
    refused.is_some()
}

/// Polls `cond` every 20 ms for at most [`PATIENCE`]; fails naming `what`.
pub(crate) fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `cmd` (stderr captured) until it exits, bounded by [`PATIENCE`] (then killed and
/// failed): the exit code and stderr.
pub(crate) fn run_to_exit(cmd: &mut Command) -> (i32, String) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + PATIENCE;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} kept running");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The sum over every series of metric `family` (such as `steerd_connections_open`).
pub(crate) fn family_sum(metrics: &HashMap<String, u64>, family: &str) -> u64 {
    let prefix = format!("{family}{{");
    metrics
        .iter()
        .filter(|(k, _)| k.starts_with(&prefix))
        .map(|(_, v)| *v)
        .sum()
}

/// `steerd ARGS` started as systemd's socket activation would, with `fd` passed as its
/// one socket (`sh -c 'LISTEN_PID=$$ … exec steerd ARGS 3<&FD'`: the shell's pid is
/// steerd's after `exec`, and the redirection puts the socket at descriptor 3).
pub(crate) fn with_socket(fd: &std::os::fd::OwnedFd, args: &str) -> Command {
    use std::os::fd::AsRawFd;
    let script = format!(
        "LISTEN_PID=$$ LISTEN_FDS=1 LISTEN_FDNAMES=http exec {} {args} 3<&{}",
        binary(),
        fd.as_raw_fd()
    );
    // bash, not sh: dash takes only one-digit descriptors in `3<&N`, and the test process
    // (one binary, tests on parallel threads) often holds the socket above 9.
    let mut cmd = Command::new("bash");
    cmd.args(["-c", &script]);
    cmd
}

/// The one-shot runner's bound holds: a command that never ends (a server) is killed at
/// the limit and reported with its state, and it does not wait for the limit otherwise.
#[test]
fn a_one_shot_command_that_never_ends_is_killed_at_its_limit() {
    let root = TempDir::new("one-shot");
    let dir = root.path().to_str().unwrap();
    let started = Instant::now();
    let hung = run_steerd_within(
        &["serve", dir, "--listen", "127.0.0.1:0"],
        b"",
        Duration::from_secs(3),
    )
    .expect_err("a server does not end by itself");
    assert!(hung.contains("still running, state "), "{hung}");
    assert!(
        started.elapsed() < ONE_SHOT_LIMIT,
        "waited {:?}",
        started.elapsed()
    );
    let out = run_steerd_within(&["help"], b"", ONE_SHOT_LIMIT).expect("help ends");
    assert!(out.status.success() && !out.stdout.is_empty(), "{out:?}");
}
