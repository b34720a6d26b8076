//! The master's own bookkeeping through the real binary: silent `/metrics` clients never
//! stall supervision or a real scrape, and the open-connections gauge of a worker that
//! died (or an old generation after HUP) does not stay counted.

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use support::server::*;

/// A keep-alive connection with one answered request: the worker counts it open.
fn open_connection(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect_timeout(&addr, PATIENCE).expect("connect");
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(b"GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n")
        .expect("write");
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.ends_with(b"hello from steerd\n") {
        let n = s.read(&mut buf).expect("read");
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    s
}

/// Sum of `steerd_connections_open` over every worker.
fn open_gauge(server: &Server) -> u64 {
    family_sum(&server.metrics(), "steerd_connections_open")
}

/// Polls the gauge (bounded) until it equals `want`; returns the last value seen.
fn gauge_settles_at(server: &Server, want: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let now = open_gauge(server);
        if now == want || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn silent_metrics_clients_delay_neither_a_respawn_nor_a_scrape() {
    let _measuring = crate::support::serial::exclusive();
    let server = Server::start(&["--workers", "1"]);
    let metrics = server.metrics.expect("metrics address");
    let silent: Vec<TcpStream> = (0..20)
        .map(|_| TcpStream::connect_timeout(&metrics, PATIENCE).expect("connect"))
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    let old = server.worker_pid(0);
    let start = Instant::now();
    send_signal(old, libc::SIGKILL);
    let scrape = std::thread::spawn(move || {
        let (status, body) = get(metrics, "/metrics");
        (status, body, start.elapsed())
    });
    let new = wait_for_new_pid(&server, 0, old);
    let respawned = start.elapsed();
    let (status, body, scraped) = scrape.join().expect("scrape thread");
    assert_ne!(new, old);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("steerd_worker_respawns_total"), "{body}");
    // Each silent client once held the master for a second in turn: ~19 s for the
    // scrape. Generous bounds (a loaded machine may take seconds), still half of that.
    assert!(
        respawned < Duration::from_secs(9),
        "respawn took {respawned:?}"
    );
    assert!(scraped < Duration::from_secs(9), "scrape took {scraped:?}");
    drop(silent);
}

#[test]
fn a_killed_workers_open_connections_leave_the_gauge() {
    let workers = allowed_cpus().len().min(2).to_string();
    let server = Server::start(&["--workers", &workers]);
    let clients: Vec<TcpStream> = (0..6).map(|_| open_connection(server.addr)).collect();
    assert_eq!(gauge_settles_at(&server, 6), 6);
    let n: usize = workers.parse().unwrap();
    let old: Vec<u32> = (0..n).map(|i| server.worker_pid(i)).collect();
    for &pid in &old {
        send_signal(pid, libc::SIGKILL);
    }
    for (i, &pid) in old.iter().enumerate() {
        wait_for_new_pid(&server, i, pid);
    }
    drop(clients);
    assert_eq!(
        gauge_settles_at(&server, 0),
        0,
        "the dead workers' count stayed"
    );
    // The new workers count from zero.
    let _c = open_connection(server.addr);
    assert_eq!(gauge_settles_at(&server, 1), 1);
}

/// After HUP the old and the new generation count into different blocks: killing the
/// old workers with connections open removes exactly their count.
#[test]
fn after_hup_an_old_generation_killed_with_open_connections_leaves_the_gauge() {
    let server = Server::start(&["--workers", "1"]);
    let before: Vec<TcpStream> = (0..3).map(|_| open_connection(server.addr)).collect();
    assert_eq!(gauge_settles_at(&server, 3), 3);
    let old = server.worker_pid(0);
    // Stopped, the old worker cannot close its connections when QUIT arrives.
    send_signal(old, libc::SIGSTOP);
    server.signal(libc::SIGHUP);
    wait_for_new_pid(&server, 0, old);
    let after = open_connection(server.addr);
    assert_eq!(gauge_settles_at(&server, 4), 4, "both generations counted");
    send_signal(old, libc::SIGKILL);
    assert_eq!(
        gauge_settles_at(&server, 1),
        1,
        "only the new generation's connection remains"
    );
    drop((before, after));
}
