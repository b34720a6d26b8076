//! The draining rule of a worker that stops or retires, on the serve loop itself: no
//! connection that may carry a request is closed under it. The next request on a
//! kept-alive connection is answered, with `Connection: close`, and the connection closes
//! after that response; a connection left idle closes at its keep-alive deadline, not at
//! once. Neither a stop nor a retirement shuts the listener: the master and the
//! successors hold the same socket (the master shuts it on a server-wide stop, which
//! `tests/operations/zeroloss.rs` checks through the binary).

use crate::support;

use std::io::{BufReader, Write};
use std::time::Duration;
use support::client::*;
use support::in_process::*;

/// Drains with `control` (an `InProc` control value: 1 stops gracefully, 4 retires).
fn drain_with(control: u8, retire: bool) {
    let site = Site::new(if retire { "retire" } else { "drain" });
    let mut cfg = config(&site.root);
    cfg.timeouts.keepalive = Duration::from_secs(2);
    let srv = InProc::start(cfg, steerd::serve_loop::Tuning::default());
    let mut early = srv.connect();
    let mut late = srv.connect();
    for s in [&mut early, &mut late] {
        s.write_all(b"GET /ten.bin HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let r = read_response(&mut BufReader::new(s.try_clone().unwrap()), false).unwrap();
        assert_eq!(r.header("Connection"), None, "kept alive before the drain");
    }
    srv.set_control(control);
    let refused = std::net::TcpStream::connect(srv.addr).is_err();
    assert!(
        !refused,
        "the loop leaves the listener listening (retire: {retire})"
    );
    // A request that was on its way when the drain began is answered, then closed.
    early
        .write_all(b"GET /ten.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = read_response(&mut BufReader::new(early.try_clone().unwrap()), false).unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Connection"), Some("close"));
    assert!(closed_within(&mut early, Duration::from_secs(1)));
    // The idle one waits for its keep-alive deadline (2 s after its last response).
    assert!(closed_within(&mut late, Duration::from_secs(4)));
}

#[test]
fn a_graceful_stop_answers_the_next_request_with_close_and_leaves_the_listener_listening() {
    drain_with(1, false);
}

#[test]
fn a_retiring_loop_answers_the_next_request_with_close_and_leaves_the_listener() {
    drain_with(4, true);
}

/// A full connection table makes room as nginx does: the connection idle the longest is
/// closed, and the new one is served at once instead of waiting in the backlog.
#[test]
fn a_full_table_closes_the_oldest_idle_connection() {
    let site = Site::new("full");
    let mut cfg = config(&site.root);
    cfg.max_conns = 2;
    let srv = InProc::start(cfg, steerd::serve_loop::Tuning::default());
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut s = srv.connect();
        s.write_all(b"GET /ten.bin HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        read_response(&mut BufReader::new(s.try_clone().unwrap()), false).unwrap();
        held.push(s);
    }
    let mut third = srv.connect();
    third
        .write_all(b"GET /ten.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    third
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let r = read_response(&mut BufReader::new(third.try_clone().unwrap()), false).unwrap();
    assert_eq!(r.status, 200, "served without waiting for a slot");
    assert!(
        closed_within(&mut held[0], Duration::from_secs(2)),
        "the oldest idle connection made room"
    );
    held[1]
        .write_all(b"GET /ten.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = read_response(&mut BufReader::new(held[1].try_clone().unwrap()), false).unwrap();
    assert_eq!(r.status, 200, "the newer idle connection was kept");
}
