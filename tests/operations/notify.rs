//! sd_notify through the real binary, with a `NOTIFY_SOCKET` this test owns (a path
//! socket and an abstract one): `READY=1` once every worker serves, `RELOADING=1` with
//! `MONOTONIC_USEC` and then `READY=1` around a HUP, `MAINPID=` of the new master after a
//! USR2 upgrade, `STOPPING=1` on a stop, `STATUS=` lines along the way.

use crate::support;

use std::os::unix::net::UnixDatagram;
use std::process::Command;
use std::time::{Duration, Instant};
use support::server::*;

/// The datagrams received on the test's socket.
struct Manager {
    sock: UnixDatagram,
    seen: Vec<String>,
}

impl Manager {
    /// Waits (bounded) for a datagram satisfying `pred`; returns it. Every datagram is
    /// kept in `seen`.
    fn expect(&mut self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no {what} datagram; got {:?}", self.seen);
            self.sock.set_read_timeout(Some(left)).unwrap();
            let mut buf = [0u8; 4096];
            let Ok(n) = self.sock.recv(&mut buf) else {
                continue;
            };
            let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
            self.seen.push(msg.clone());
            if pred(&msg) {
                return msg;
            }
        }
    }
}

fn has_line(msg: &str, line: &str) -> bool {
    msg.lines().any(|l| l == line)
}

fn start(notify_socket: &str, extra: &[&str]) -> Server {
    let root = TempDir::new("notify");
    std::fs::write(root.path().join("index.html"), b"x\n").unwrap();
    let mut s = Server::spawn(
        Command::new(binary())
            .args(["serve", &root.path().display().to_string()])
            .args(["--listen", "127.0.0.1:0", "--workers", "2"])
            .args(extra)
            .env("NOTIFY_SOCKET", notify_socket),
    );
    s.root = Some(root);
    s
}

#[test]
fn ready_reloading_stopping_on_a_path_socket() {
    let dir = TempDir::new("notify-sock");
    let path = dir.path().join("notify");
    let mut m = Manager {
        sock: UnixDatagram::bind(&path).unwrap(),
        seen: vec![],
    };
    let mut server = start(&path.display().to_string(), &[]);
    let ready = m.expect("READY=1", |d| has_line(d, "READY=1"));
    assert!(ready.contains("STATUS="), "{ready}");
    assert_eq!(get(server.addr, "/index.html").0, 200, "serving when ready");

    let before = monotonic_usec();
    server.signal(libc::SIGHUP);
    let reloading = m.expect("RELOADING=1", |d| has_line(d, "RELOADING=1"));
    let usec: u64 = reloading
        .lines()
        .find_map(|l| l.strip_prefix("MONOTONIC_USEC="))
        .unwrap_or_else(|| panic!("MONOTONIC_USEC in {reloading:?}"))
        .parse()
        .unwrap();
    assert!(usec >= before && usec <= monotonic_usec(), "{reloading}");
    m.expect("READY=1 after the reload", |d| has_line(d, "READY=1"));

    server.signal(libc::SIGQUIT);
    m.expect("STOPPING=1", |d| has_line(d, "STOPPING=1"));
    assert!(server.wait_exit(PATIENCE).success());
}

/// An upgrade keeps the main PID (the master re-executes in place): `RELOADING=1` when
/// it begins, `READY=1` from the same PID once the new workers serve, never `MAINPID=`.
#[test]
fn an_upgrade_keeps_the_main_pid_on_an_abstract_socket() {
    use std::os::linux::net::SocketAddrExt;
    let name = format!("steerd-notify-test-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let mut m = Manager {
        sock: UnixDatagram::bind_addr(&addr).unwrap(),
        seen: vec![],
    };
    // As root, with --user: the re-executed master runs as the user it became, with no
    // privilege to bind or to change users, and needs none.
    let nobody = can_become_nobody();
    let user: &[&str] = if nobody { &["--user", "nobody"] } else { &[] };
    let mut server = start(&format!("@{name}"), user);
    m.expect("READY=1", |d| has_line(d, "READY=1"));
    let workers = server.worker_pids();
    server.signal(libc::SIGUSR2);
    m.expect("RELOADING=1 for the upgrade", |d| {
        has_line(d, "RELOADING=1") && d.contains("STATUS=upgrading")
    });
    m.expect("READY=1 after the upgrade", |d| has_line(d, "READY=1"));
    assert!(
        !m.seen.iter().any(|d| d.contains("MAINPID=")),
        "no MAINPID: {:?}",
        m.seen
    );
    assert!(alive(server.pid), "the same master");
    let deadline = Instant::now() + PATIENCE;
    while server.worker_pids().iter().any(|p| workers.contains(p)) {
        assert!(Instant::now() < deadline, "the old workers did not retire");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(get(server.addr, "/index.html").0, 200, "and serves");
    server.signal(libc::SIGTERM);
    m.expect("STOPPING=1", |d| has_line(d, "STOPPING=1"));
    assert!(server.wait_exit(PATIENCE).success());
}

/// `CLOCK_MONOTONIC` in microseconds.
fn monotonic_usec() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000 + t.tv_nsec as u64 / 1000
}
