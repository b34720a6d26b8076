//! The access log loses no line when its workers end: lines still buffered (a line waits
//! up to half a second) when a reload (`HUP`) or an upgrade (`USR2`) retires a worker, or
//! when a graceful stop (`TERM`) ends them, are handed to the log's writer and written
//! before the worker exits. Every request of the run is in the file exactly once.

use super::zeroloss::{install_executable, serve_from_copy};
use crate::support::server::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;

/// Requests between two operations.
const EACH: usize = 30;

/// `EACH` requests numbered from `first`, each on a connection of its own.
fn run(addr: SocketAddr, first: usize) {
    for n in first..first + EACH {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        let head = format!("GET /f13?n={n:05} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        s.write_all(head.as_bytes()).unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).unwrap();
        assert!(raw.starts_with(b"HTTP/1.1 200"), "request {n}");
    }
}

#[test]
fn a_reload_an_upgrade_and_a_stop_write_every_buffered_line() {
    let _measuring = crate::support::serial::exclusive();
    let logs = TempDir::new("loghandover");
    let log = logs.path().join("access.log");
    let extra = [
        "--access-log",
        log.to_str().unwrap(),
        "--log-format",
        "common",
    ];
    let (dir, _exe, mut server) = serve_from_copy(&extra);
    run(server.addr, 0);
    server.signal(libc::SIGHUP);
    server.wait_line(|l| l.contains("reload: starting new workers"));
    run(server.addr, EACH);
    let before = server.worker_pids();
    install_executable(Path::new(binary()), dir.path());
    server.signal(libc::SIGUSR2);
    server.wait_line(|l| l.contains("upgrade: this binary took over "));
    wait_until("the workers before the upgrade have all retired", || {
        before.iter().all(|&p| !alive(p))
    });
    run(server.addr, 2 * EACH);
    server.signal(libc::SIGTERM);
    assert!(server.wait_exit(PATIENCE).success(), "a clean stop");
    let text = std::fs::read_to_string(&log).unwrap();
    let mut seen: Vec<usize> = text
        .lines()
        .map(|l| {
            let at = l.find("?n=").unwrap_or_else(|| panic!("no ?n= in {l}"));
            l[at + 3..at + 8].parse().unwrap()
        })
        .collect();
    seen.sort_unstable();
    assert_eq!(
        seen,
        (0..3 * EACH).collect::<Vec<_>>(),
        "every request's line once:\n{text}"
    );
}
