//! The server's user-space work per request, counted in instructions: `serve_loop`
//! in a thread of this process, driven over loopback by a client thread, for
//! `scripts/serve-instructions.sh` to run under callgrind.
//!
//! Why: on these shared 2-vCPU guests the time a request costs swings by ±10% between
//! runs, and a change worth 2% of a request cannot be seen in seconds. Callgrind counts
//! the instructions the loop executes in user space (system calls count as the few
//! instructions around them): the same binary and workload give the same count whatever
//! else the machine does, so a change is measured exactly, as instructions per request.
//! The kernel's share is not in it; `scripts/per-request.sh` and `steerd bench ab`
//! measure the whole.
//!
//! Workloads, each over a listener set up as the server's (`TCP_DEFER_ACCEPT` on, so a
//! connection is accepted with its request), one 13-byte file:
//! - `keep-alive`: one connection, one request at a time (`GET /f.txt`, a Host line);
//! - `close`: one connection per request, `Connection: close`;
//! - `options`: keep-alive with `Accept-Encoding: gzip`, a precompressed sidecar,
//!   two `--header` lines, a `--cache-control` rule and a combined access log;
//! - `responder-keep-alive`, `responder-close`: the same clients against
//!   `steerd bench responder` (one CPU), the floor: a canned answer, no parsing;
//! - `hosts-keep-alive`, `hosts-close`: `keep-alive` and `close` with the configuration
//!   docs/benchmarks.md compares in `bench ab`: 20 hosts of two names each (the request's
//!   last, so its name is looked up among 39 others), and on every host an `--allow` list
//!   of 50 networks (49 that never match, then 127.0.0.0/8) and a `--rate-limit` no
//!   request reaches (each takes a token).
//!
//! With `STEERD_BENCH_RULES=N`, the site has N `--redirect`/`--rewrite` rules that no
//! request matches (the cost of rules to a request they do not concern).
//!
//! Run: `cargo bench --bench serve_path -- WORKLOAD REQUESTS` prints the wall time per
//! request (noise on this machine; the script reads callgrind's counts instead).
//!
//! Under valgrind: rustix finds the vDSO through `prctl(PR_GET_AUXV)`, which returns the
//! kernel's auxiliary vector, whose vDSO valgrind does not map into the program, and the
//! first `clock_gettime` faults. So this harness first installs a seccomp filter (written
//! in bpf_asm, assembled by the project's own `asm-bpf`) that answers that one `prctl`
//! with `EINVAL`: rustix then reads `/proc/self/auxv`, which valgrind serves from its own
//! copy, and falls back to the system call. Nothing else is filtered.

// The one unsafe block installs the seccomp filter above; the server code it measures
// is the crate's own, which keeps unsafe in `src/sys`.
#![allow(unsafe_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use steerd::config::{Logging, Timeouts};
use steerd::cpuset::CpuId;
use steerd::serve_loop::{self, Control, LoopConfig, Tuning};
use steerd::stats::WorkerCounters;

/// What the client does, and how the server is configured for it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Workload {
    KeepAlive,
    Close,
    Options,
    ResponderKeepAlive,
    ResponderClose,
    HostsKeepAlive,
    HostsClose,
}

impl Workload {
    fn parse(s: &str) -> Option<Workload> {
        match s {
            "keep-alive" => Some(Workload::KeepAlive),
            "close" => Some(Workload::Close),
            "options" => Some(Workload::Options),
            "responder-keep-alive" => Some(Workload::ResponderKeepAlive),
            "responder-close" => Some(Workload::ResponderClose),
            "hosts-keep-alive" => Some(Workload::HostsKeepAlive),
            "hosts-close" => Some(Workload::HostsClose),
            _ => None,
        }
    }

    fn closes(self) -> bool {
        matches!(
            self,
            Workload::Close | Workload::ResponderClose | Workload::HostsClose
        )
    }

    fn request(self, addr: SocketAddr) -> String {
        let extra = match self {
            Workload::KeepAlive | Workload::ResponderKeepAlive | Workload::HostsKeepAlive => "",
            Workload::Close | Workload::ResponderClose | Workload::HostsClose => {
                "Connection: close\r\n"
            }
            Workload::Options => "Accept-Encoding: gzip\r\n",
        };
        format!("GET /f.txt HTTP/1.1\r\nHost: {addr}\r\n{extra}\r\n")
    }
}

/// A temporary root with the 13-byte file and its gzip sidecar.
struct Root(PathBuf);

impl Root {
    fn new() -> Root {
        let dir = std::env::temp_dir().join(format!("steerd-serve-path-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("f.txt"), "hello, world\n").unwrap();
        // Any bytes do: the server sends a sidecar as it is.
        std::fs::write(dir.join("f.txt.gz"), b"\x1f\x8b\x08\x00gzipped").unwrap();
        Root(dir)
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `n` redirect and rewrite rules none of the workloads' paths matches, in the mix
/// docs/benchmarks.md measures: anchored `**`, anchored `*`, unanchored `*.ext`.
fn rules(root: &Path, n: usize) -> steerd::site::SiteRules {
    let mut args = vec![root.to_str().unwrap().to_string()];
    for i in 0..n {
        let (flag, rule) = match i % 5 {
            0 | 1 => ("--redirect", format!("/old{i}/** /new{i}/$1 301")),
            2 | 3 => ("--rewrite", format!("/app{i}/*/* /app{i}/index.html")),
            _ => ("--redirect", format!("*.ext{i} /moved/$1.html 308")),
        };
        args.extend([flag.to_string(), rule]);
    }
    steerd::args::parse_serve(&args).unwrap().site.rules()
}

/// The hosts workloads' site: 50 allowed networks, the last one the client's, and a
/// rate no request reaches.
fn access_site(root: &Path) -> steerd::site::SiteRules {
    let mut args = vec![root.to_str().unwrap().to_string()];
    for n in 1..50 {
        args.extend(["--allow".to_string(), format!("10.{n}.0.0/16")]);
    }
    args.extend(["--allow", "127.0.0.0/8", "--rate-limit", "1000000"].map(String::from));
    steerd::args::parse_serve(&args).unwrap().site.rules()
}

/// 20 hosts with `access_site`'s rules, all on `root`; the client's (`127.0.0.1`, its
/// Host) is the last. Host 0 is the loop's own root and rules.
fn hosts(root: &Path) -> (steerd::site::SiteRules, serve_loop::LoopHosts) {
    use rustix::fs::{Mode, OFlags};
    let dir = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut names: Vec<Vec<String>> = (1..20)
        .map(|n| vec![format!("h{n}.test"), format!("www.h{n}.test")])
        .collect();
    names.push(vec!["127.0.0.1".to_string(), "www.h20.test".to_string()]);
    let others = (1..20)
        .map(|_| {
            let fd = rustix::fs::open(root, dir, Mode::empty()).unwrap();
            (fd, access_site(root))
        })
        .collect();
    (
        access_site(root),
        serve_loop::LoopHosts::named(&names, others),
    )
}

fn config(root: &Path, workload: Workload) -> LoopConfig {
    use rustix::fs::{Mode, OFlags};
    let dir = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut logging = Logging::default();
    let mut site = Default::default();
    if workload == Workload::Options {
        let log = root.with_extension("log");
        let args: Vec<String> = [
            root.to_str().unwrap(),
            "--precompressed",
            "gzip",
            "--header",
            "X-Content-Type-Options: nosniff",
            "--header",
            "Strict-Transport-Security: max-age=63072000",
            "--cache-control",
            "*.txt=public, max-age=3600",
            "--access-log",
            log.to_str().unwrap(),
            "--log-format",
            "combined",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let parsed = steerd::args::parse_serve(&args).unwrap();
        site = parsed.site.rules();
        logging = parsed.logging;
    }
    if let Some(n) = std::env::var("STEERD_BENCH_RULES")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        site = rules(root, n);
    }
    let mut loop_hosts = serve_loop::LoopHosts::default();
    if matches!(workload, Workload::HostsKeepAlive | Workload::HostsClose) {
        (site, loop_hosts) = hosts(root);
    }
    LoopConfig {
        worker: 0,
        cpu: CpuId::new(0).unwrap(),
        root: rustix::fs::open(root, dir, Mode::empty()).unwrap(),
        max_conns: 256,
        max_conns_per_addr: 256,
        timeouts: Timeouts {
            header: Duration::from_secs(10),
            keepalive: Duration::from_secs(10),
            send: Duration::from_secs(10),
            shutdown: Duration::from_secs(1),
        },
        logging,
        site,
        hosts: loop_hosts,
        auth: Vec::new(),
        proxy: Default::default(),
    }
}

/// The loop in a thread; returns its address and the flag that stops it.
fn start(cfg: LoopConfig) -> (SocketAddr, Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    steerd::sys::set_tcp_defer_accept(listener.as_fd(), 1).unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::spawn(move || {
        let fd = OwnedFd::from(listener);
        let counters = WorkerCounters::default();
        let mut control = || match flag.load(Ordering::Relaxed) {
            true => Control::StopNow,
            false => Control::Run,
        };
        serve_loop::run_tuned(fd.as_fd(), cfg, Tuning::default(), &counters, &mut control).unwrap();
    });
    (addr, stop, thread)
}

/// Reads one whole response (head and Content-Length body) from `s`.
fn read_response(s: &mut TcpStream, buf: &mut Vec<u8>) {
    buf.clear();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = std::str::from_utf8(&buf[..end])
                .unwrap()
                .to_ascii_lowercase();
            let len: usize = head
                .split("\r\n")
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if buf.len() >= end + 4 + len {
                assert!(buf.starts_with(b"HTTP/1.1 200 "), "not a 200");
                return;
            }
        }
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "the server closed mid-response");
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn drive(workload: Workload, addr: SocketAddr, requests: usize) {
    let req = workload.request(addr);
    let mut buf = Vec::with_capacity(1024);
    if workload.closes() {
        for _ in 0..requests {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(req.as_bytes()).unwrap();
            read_response(&mut s, &mut buf);
            let mut rest = Vec::new();
            s.read_to_end(&mut rest).unwrap();
        }
        return;
    }
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    for _ in 0..requests {
        s.write_all(req.as_bytes()).unwrap();
        read_response(&mut s, &mut buf);
    }
}

/// `prctl(PR_GET_AUXV, ...)` fails with `EINVAL`; every other call is allowed. Offsets
/// are those of `struct seccomp_data` (nr at 0, arch at 4, args[0]'s low word at 16 on a
/// little-endian machine); seccomp(2), linux/seccomp.h, linux/prctl.h (`PR_GET_AUXV` is 0x41555856, "AUXV").
fn deny_get_auxv() {
    let (arch, prctl_nr) = if cfg!(target_arch = "x86_64") {
        (0xc000_003e_u32, libc::SYS_prctl)
    } else if cfg!(target_arch = "aarch64") {
        (0xc000_00b7, libc::SYS_prctl)
    } else {
        return;
    };
    let src = format!(
        "ld [4]\n jne #{arch}, allow\n ld [0]\n jne #{prctl_nr}, allow\n \
         ld [16]\n jne #0x41555856, allow\n ret #{}\n allow: ret #{}\n",
        0x0005_0000 | libc::EINVAL as u32,
        0x7fff_0000_u32,
    );
    let prog = asm_bpf::assemble(&src).expect("the filter assembles");
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr().cast::<libc::sock_filter>().cast_mut(),
    };
    // SAFETY: PR_SET_NO_NEW_PRIVS takes integers only. PR_SET_SECCOMP reads `fprog`, which
    // lives across the call and points at `len` instructions of `asm_bpf::Insn`, a
    // `#[repr(C)]` struct with the layout of `struct sock_filter`; the kernel copies them.
    let rc = unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &fprog as *const libc::sock_fprog,
        )
    };
    assert_eq!(rc, 0, "seccomp: {}", std::io::Error::last_os_error());
}

fn main() {
    deny_get_auxv();
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let workload = args.first().and_then(|s| Workload::parse(s));
    let requests = args.get(1).and_then(|s| s.parse::<usize>().ok());
    let (Some(workload), Some(requests)) = (workload, requests) else {
        eprintln!("usage: serve_path WORKLOAD REQUESTS (scripts/serve-instructions.sh)");
        std::process::exit(2);
    };
    if matches!(
        workload,
        Workload::ResponderKeepAlive | Workload::ResponderClose
    ) {
        // The responder runs until the process ends.
        let addr = start_responder(workload.closes());
        return measure(workload, addr, requests);
    }
    let root = Root::new();
    let (addr, stop, thread) = start(config(&root.0, workload));
    measure(workload, addr, requests);
    stop.store(true, Ordering::Relaxed);
    thread.join().unwrap();
    let _ = std::fs::remove_file(root.0.with_extension("log"));
}

fn measure(workload: Workload, addr: SocketAddr, requests: usize) {
    let t0 = Instant::now();
    drive(workload, addr, requests);
    let per = t0.elapsed().as_nanos() as f64 / requests as f64;
    println!("{requests} requests: {per:.0} ns/request (wall, client and server)");
}

/// `steerd bench responder` on CPU 0 in threads of this process, on a port found free.
fn start_responder(close: bool) -> SocketAddr {
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let args = steerd::args::bench::ResponderArgs {
        listen: addr,
        cpus: vec![CpuId::new(0).unwrap()],
        close,
        steer: false,
        response: None,
        spin: 0,
    };
    std::thread::spawn(move || steerd::bench::reference::main(&args));
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < deadline, "the responder did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    addr
}
