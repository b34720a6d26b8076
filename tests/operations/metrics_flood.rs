//! A flood of silent connections to the `--metrics` port must not make real `/health`
//! probes fail (a failing liveness probe restarts a Kubernetes pod), through the real
//! binary: up to 200 silent connections held open and re-opened as steerd closes them,
//! while 100 probes, each a fresh connection sending its request at once, must all be
//! answered 200.

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
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
    let mut s = TcpStream::connect_timeout(&addr, PROBE_TIMEOUT).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(PROBE_TIMEOUT)).unwrap();
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
    let server = Server::start(&[]);
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
