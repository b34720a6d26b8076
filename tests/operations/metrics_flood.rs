//! A flood of silent connections to the `--metrics` port must not make real `/health`
//! probes fail (a failing liveness probe restarts a Kubernetes pod), through the real
//! binary: up to 200 silent connections held open and re-opened as steerd closes them,
//! while 100 probes, each a fresh connection sending its request at once, must all be
//! answered 200.
//!
//! And a heavier one: silent connections from 127.0.0.2 as fast as [`FLOOD_THREADS`]
//! threads can open them (each connecting without waiting for the handshake, so an
//! overflowing accept queue does not slow the flood down, and aborting its oldest
//! connection with a reset, so no port waits in TIME_WAIT), probes from 127.0.0.3. A
//! listener whose accept queue is 128 long overflows under it and a probe whose SYN is
//! dropped on every retry fails; one whose queue is `somaxconn` long and emptied at each
//! wake answers them all. What the flood reaches depends on the machine: on this
//! project's 2-vCPU guest, shared with other builds (load average about 11), 6,000 to
//! 12,000 connections a second, not the 15,000 to 20,000 at which 2 of 100 probes
//! failed against the 128-long queue. That build then failed the test in one run of
//! three (1 probe; 15 of 100 needed a SYN retry), this one in none of three (up to 10
//! retried: its debug build, starved of CPU, lets even the long queue fill now and
//! then). So the test checks its own strength instead of a rate: the
//! listener's accept queue (a listening socket's `rx_queue` in `/proc/net/tcp`) must be
//! seen holding more than 128 connections at once, which a queue of 128 could not; a
//! flood that never gets there proves nothing, and the test says so (a skip, which fails
//! under CI) rather than passing. Last, a connection from 127.0.0.4, which `--deny`
//! names, is closed unanswered: the address lists apply to the metrics listener.

use crate::support;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::server::*;

/// Silent connections held open at once.
const SILENT: usize = 200;
/// Probes sent during the flood.
const PROBES: usize = 100;
/// How long one probe may take: a generous deadline (Kubernetes' default `timeoutSeconds` is
/// 1 s; a loaded CI machine or an emulator can take longer without the server being at fault).
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// The flood's bound, whatever the probes do.
const FLOOD_MAX: Duration = Duration::from_secs(30);

/// Holds up to [`SILENT`] connections that never send a byte, replacing each one steerd
/// closes, until `stop` or [`FLOOD_MAX`]. Returns how many it opened.
fn flood(addr: SocketAddr, stop: Arc<AtomicBool>) -> usize {
    let started = Instant::now();
    let mut open: Vec<TcpStream> = Vec::with_capacity(SILENT);
    let mut opened = 0;
    while !stop.load(Ordering::Relaxed) && started.elapsed() < FLOOD_MAX {
        // Closed by steerd: EOF or reset. Still open and silent: a peek would block.
        open.retain(still_open);
        while open.len() < SILENT {
            match TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
                Ok(s) => {
                    s.set_nonblocking(true).expect("nonblocking");
                    open.push(s);
                    opened += 1;
                }
                Err(_) => break,
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    opened
}

/// True when a nonblocking peek would block (the connection is open and silent).
fn still_open(s: &TcpStream) -> bool {
    let mut b = [0u8; 1];
    matches!(s.peek(&mut b), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

/// One `/health` probe on a fresh connection, request sent right after connect: the
/// status, or why there was none.
fn probe(addr: SocketAddr) -> Result<u16, String> {
    let s = TcpStream::connect_timeout(&addr, PROBE_TIMEOUT).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(PROBE_TIMEOUT)).unwrap();
    health(s)
}

/// Sends `/health` on `s` and reads the status of the answer.
fn health(mut s: TcpStream) -> Result<u16, String> {
    s.write_all(b"GET /health HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut text = String::new();
    s.read_to_string(&mut text).map_err(|e| e.to_string())?;
    text.get(9..12)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status line: {text:?}"))
}

#[test]
fn health_probes_stay_green_under_a_flood_of_silent_connections() {
    let _measuring = crate::support::serial::exclusive();
    let server = Server::start(&["--deny", "127.0.0.4"]);
    server.wait_healthy();
    let m = server.metrics.expect("--metrics");
    let stop = Arc::new(AtomicBool::new(false));
    let flooder = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || flood(m, stop))
    };
    // Let the flood fill the table first.
    std::thread::sleep(Duration::from_millis(500));
    let mut failed = Vec::new();
    for i in 0..PROBES {
        match probe(m) {
            Ok(200) => {}
            other => failed.push((i, other)),
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    stop.store(true, Ordering::Relaxed);
    let opened = flooder.join().expect("flooder");
    assert!(
        opened > SILENT,
        "the flood opened only {opened} connections: steerd closed none of them"
    );
    // Every probe: a liveness probe is the one client that must never be turned away.
    assert!(
        failed.is_empty(),
        "{} of {PROBES} probes failed under a flood of {opened} silent connections: {failed:?}",
        failed.len()
    );
}

/// Threads of the heavy flood.
const FLOOD_THREADS: usize = 3;
/// Silent connections each flood thread holds at most (the oldest is reset past it).
const HELD_MAX: usize = 1000;
/// Connections the heavy flood opens at most, over all threads.
const FLOOD_COUNT: usize = 1_500_000;
/// The accept queue of the listener the flood must overflow to tell anything.
const OLD_BACKLOG: usize = 128;

/// A socket bound to `src` that a close resets (`SO_LINGER` 0), connecting to `to`
/// without waiting; `None` if the system refused one (out of ports or descriptors: the
/// flood then pauses a moment).
fn connect_from_nowait(src: Ipv4Addr, to: SocketAddr) -> Option<OwnedFd> {
    use rustix::net::{sockopt, AddressFamily, SocketFlags, SocketType};
    let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
    let fd = rustix::net::socket_with(AddressFamily::INET, SocketType::STREAM, flags, None).ok()?;
    sockopt::set_socket_linger(&fd, Some(Duration::ZERO)).ok()?;
    rustix::net::bind(&fd, &SocketAddrV4::new(src, 0)).ok()?;
    match rustix::net::connect(&fd, &to) {
        Ok(()) | Err(rustix::io::Errno::INPROGRESS) => Some(fd),
        Err(_) => None,
    }
}

/// One flood thread: silent connections from `src` as fast as it can, holding at most
/// [`HELD_MAX`], until `stop`, [`FLOOD_MAX`] or its share of [`FLOOD_COUNT`]. Returns
/// how many it opened.
fn flood_thread(src: Ipv4Addr, to: SocketAddr, stop: &AtomicBool) -> usize {
    let started = Instant::now();
    let mut held = std::collections::VecDeque::with_capacity(HELD_MAX);
    let mut opened = 0;
    while !stop.load(Ordering::Relaxed)
        && started.elapsed() < FLOOD_MAX
        && opened < FLOOD_COUNT / FLOOD_THREADS
    {
        match connect_from_nowait(src, to) {
            Some(fd) => {
                opened += 1;
                if held.len() == HELD_MAX {
                    held.pop_front();
                }
                held.push_back(fd);
            }
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    opened
}

/// The heavy flood on [`FLOOD_THREADS`] threads until `stop`: how many connections it
/// opened and over how long.
fn heavy_flood(src: Ipv4Addr, to: SocketAddr, stop: Arc<AtomicBool>) -> (usize, Duration) {
    let started = Instant::now();
    let threads: Vec<_> = (0..FLOOD_THREADS)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || flood_thread(src, to, &stop))
        })
        .collect();
    let opened = threads.into_iter().map(|t| t.join().expect("flood")).sum();
    (opened, started.elapsed())
}

/// The most connections seen waiting in the accept queue of the IPv4 listener on `port`
/// at once, sampled every 2 ms until `stop`: a listening socket's `rx_queue` in
/// `/proc/net/tcp` is its accept queue, and the listeners come first in that file
/// (`tcp_seq_start`, net/ipv4/tcp_ipv4.c), so a sample reads only their lines.
fn deepest_queue(port: u16, stop: &AtomicBool) -> usize {
    use std::io::BufRead;
    let local = format!(":{port:04X}");
    let mut deepest = 0;
    while !stop.load(Ordering::Relaxed) {
        let Ok(file) = std::fs::File::open("/proc/net/tcp") else {
            return 0;
        };
        for line in std::io::BufReader::new(file).lines().skip(1) {
            let line = line.unwrap_or_default();
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.get(3) != Some(&"0A") {
                break;
            }
            if f[1].ends_with(&local) {
                let rx = f[4].split(':').nth(1).unwrap_or("0");
                deepest = deepest.max(usize::from_str_radix(rx, 16).unwrap_or(0));
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    deepest
}

/// One `/health` probe from `src`: the status, or why there was none.
fn probe_from(src: Ipv4Addr, to: SocketAddr) -> Result<u16, String> {
    use rustix::net::{sockopt, AddressFamily, SocketType};
    let fd = rustix::net::socket(AddressFamily::INET, SocketType::STREAM, None)
        .map_err(|e| e.to_string())?;
    for t in [sockopt::Timeout::Send, sockopt::Timeout::Recv] {
        sockopt::set_socket_timeout(&fd, t, Some(PROBE_TIMEOUT)).map_err(|e| e.to_string())?;
    }
    rustix::net::bind(&fd, &SocketAddrV4::new(src, 0)).map_err(|e| e.to_string())?;
    rustix::net::connect(&fd, &to).map_err(|e| e.to_string())?;
    health(TcpStream::from(fd))
}

/// The loopback addresses `last` names (127.0.0.`last`), or the skip when one cannot be
/// bound here.
fn sources<const N: usize>(name: &str, last: [u8; N]) -> Option<[Ipv4Addr; N]> {
    let all = last.map(|l| Ipv4Addr::new(127, 0, 0, l));
    for src in all {
        if let Err(e) = std::net::TcpListener::bind((src, 0)) {
            support::skip::skip_or_fail(name, &format!("cannot bind {src}: {e}"));
            return None;
        }
    }
    Some(all)
}

#[test]
fn probes_from_one_address_pass_a_heavy_flood_from_another() {
    let name = "probes_from_one_address_pass_a_heavy_flood_from_another";
    let Some([flooder, prober]) = sources(name, [2, 3]) else {
        return;
    };
    let _measuring = crate::support::serial::exclusive();
    let server = Server::start(&[]);
    server.wait_healthy();
    let m = server.metrics.expect("--metrics");
    let stop = Arc::new(AtomicBool::new(false));
    let flood = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || heavy_flood(flooder, m, stop))
    };
    let queue = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || deepest_queue(m.port(), &stop))
    };
    std::thread::sleep(Duration::from_millis(500));
    let mut failed = Vec::new();
    // Probes that took a second or more: their first SYN was dropped (the kernel's
    // first retry comes after its initial RTO of one second).
    let mut retried = 0;
    for i in 0..PROBES {
        let sent = Instant::now();
        match probe_from(prober, m) {
            Ok(200) => {}
            other => failed.push((i, other)),
        }
        retried += usize::from(sent.elapsed() >= Duration::from_secs(1));
        std::thread::sleep(Duration::from_millis(25));
    }
    stop.store(true, Ordering::Relaxed);
    let (opened, took) = flood.join().expect("flooder");
    let deepest = queue.join().expect("queue sampler");
    let rate = opened as f64 / took.as_secs_f64();
    eprintln!(
        "heavy flood: {opened} connections in {took:.1?} ({rate:.0}/s), accept queue up to \
         {deepest}, {retried} of {PROBES} probes retried, {} failed",
        failed.len()
    );
    assert!(
        failed.is_empty(),
        "{} of {PROBES} probes failed under {opened} silent connections ({rate:.0}/s, accept \
         queue up to {deepest}): {failed:?}",
        failed.len()
    );
    // A queue of N holds N + 1 (`sk_acceptq_is_full` is `>`, include/net/sock.h).
    if deepest <= OLD_BACKLOG + 1 {
        let why = format!(
            "the flood ({rate:.0} connections a second) never queued more than {deepest} \
             connections: an accept queue of {OLD_BACKLOG} would have held it, so the probes \
             passing tells nothing"
        );
        support::skip::skip_or_fail(name, &why);
    }
}

#[test]
fn the_address_lists_apply_on_the_metrics_address() {
    let name = "the_address_lists_apply_on_the_metrics_address";
    let Some([allowed, denied]) = sources(name, [3, 4]) else {
        return;
    };
    let server = Server::start(&["--deny", "127.0.0.4"]);
    server.wait_healthy();
    let m = server.metrics.expect("--metrics");
    assert_eq!(probe_from(allowed, m), Ok(200));
    assert_eq!(
        probe_from(denied, m).ok(),
        None,
        "--deny holds on the metrics address"
    );
}
