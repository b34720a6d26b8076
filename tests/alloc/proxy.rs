//! Zero heap allocation per proxied request after start-up: the serve loop in a thread
//! of this test forwards `/api/**` to a test upstream on a unix socket (its threads are
//! not counted), and after a warm-up, GETs and small POSTs, each on a client connection
//! of its own and an upstream connection taken from the pool, allocate nothing.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use steerd::serve_loop::Tuning;
use support::alloc::{allocations, watch_this_thread};
use support::in_process::*;
use support::upstream::{Answer, Listen, Upstream};

/// Requests per [`round`].
const PER_ROUND: usize = 10;

/// One request on a connection of its own, read until the server closes; its status.
fn one(addr: std::net::SocketAddr, req: &[u8], buf: &mut [u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(req).unwrap();
    let mut got = 0;
    while let Ok(n) = s.read(&mut buf[got..]) {
        if n == 0 {
            break;
        }
        got += n;
    }
    buf[..got.min(12)].to_vec()
}

fn round(addr: std::net::SocketAddr, buf: &mut [u8]) {
    for i in 0..PER_ROUND {
        let req: &[u8] = match i % 5 {
            4 => {
                b"POST /api/save HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\
                   Connection: close\r\n\r\nhello"
            }
            _ => b"GET /api/status HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        };
        assert_eq!(one(addr, req, buf), b"HTTP/1.1 200");
    }
}

#[test]
fn no_allocation_per_proxied_request_after_warm_up() {
    // The tests of this binary share the counter: one at a time (`main.rs`).
    let _one = crate::support::serial::exclusive();
    let up = Upstream::start(Listen::Unix, |_| Answer::Echo);
    let site = Site::new("alloc-proxy");
    let mut flags = steerd::args::site::SiteArgs::default();
    flags
        .set("--proxy", &format!("/api/** {}", up.spec()))
        .unwrap();
    let mut cfg = config(&site.root);
    cfg.site = flags.rules();
    let srv = InProc::start_marked(cfg, Tuning::default(), || watch_this_thread(true));
    let mut buf = vec![0u8; 1 << 16];
    for _ in 0..3 {
        round(srv.addr, &mut buf);
    }
    let before = allocations();
    let rounds = 50;
    for _ in 0..rounds {
        round(srv.addr, &mut buf);
    }
    let after = allocations();
    assert_eq!(
        after - before,
        0,
        "allocations over {} proxied requests",
        rounds * PER_ROUND
    );
    assert_eq!(up.seen().len(), (rounds + 3) * PER_ROUND);
    assert_eq!(
        up.connections(),
        1,
        "every request took the pooled connection"
    );
    drop(srv);
}
