//! `--send-buffer SIZE` through the real binary: the listeners get `SO_SNDBUF`, which the
//! kernel copies into every accepted connection, so a slow reader of a large file pins at
//! most twice SIZE of send buffer (the kernel doubles the value for its bookkeeping)
//! instead of the autotuned size, up to `net.ipv4.tcp_wmem`'s maximum. The server side's
//! buffer is read with `ss -tmn` (iproute2): `tb` in `skmem`.

use crate::support;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};
use support::server::*;
use support::skip::skip_or_fail;

/// The `tb` (send buffer) of the established TCP socket whose local port is `port`, as
/// `ss -tmn` shows it, or `None` when ss does not list it.
fn server_sndbuf(port: u16) -> Option<u64> {
    let out = Command::new("ss")
        .args([
            "-tmnH",
            "state",
            "established",
            "sport",
            "=",
            &format!(":{port}"),
        ])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let at = text.find(",tb")? + 3;
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// A connection that asks for the 8 MiB file and reads nothing (a slow reader); the
/// server's send buffer of it, once the server has filled it for 300 ms.
fn slow_reader_sndbuf(addr: SocketAddr) -> u64 {
    let mut c = TcpStream::connect(addr).expect("connect");
    c.write_all(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut last = None;
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        last = server_sndbuf(addr.port()).or(last);
    }
    last.expect("ss lists the server's connection")
}

#[test]
fn send_buffer_bounds_each_connections_sndbuf() {
    if Command::new("ss").arg("-V").output().is_err() {
        return skip_or_fail(
            "send_buffer_bounds_each_connections_sndbuf",
            "no ss (iproute2)",
        );
    }
    let root = TempDir::new("send-buffer");
    std::fs::write(root.path().join("big"), vec![b'x'; 8 << 20]).unwrap();

    let bounded = Server::start_in(
        root.path(),
        &["--workers", "1", "--send-buffer", "64k"],
        &[],
    );
    assert_eq!(
        slow_reader_sndbuf(bounded.addr),
        2 * 64 * 1024,
        "SO_SNDBUF 64k, doubled"
    );
    drop(bounded);

    let tuned = Server::start_in(root.path(), &["--workers", "1"], &[]);
    let autotuned = slow_reader_sndbuf(tuned.addr);
    assert!(
        autotuned > 2 * 64 * 1024,
        "without the flag the kernel autotunes a slow reader's buffer past that: {autotuned}"
    );
}
