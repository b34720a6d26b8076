//! Everyday static serving through the real binary on loopback sockets: the rules of
//! docs/serving.md "Everyday serving", one test (or more) per rule.

mod serving_support;

use serving_support::*;
use std::io::{BufReader, Read, Write};

/// A GET or HEAD announcing more body than the server discards (1 MiB) is refused with
/// 413 and the connection is closed at once: the server does not linger reading the
/// body, so the body the client sends afterwards meets a closed socket (reset), unlike
/// the lingering close of `close_with_a_body_still_owed_lingers` in http_serving.rs.
#[test]
fn body_over_the_discard_limit_is_413_and_closes_at_once() {
    let site = Site::new("bin-413");
    let srv = Server::start(&site.root, &["--workers", "1"], &[]);
    for method in ["GET", "HEAD"] {
        let mut s = srv.connect();
        let head =
            format!("{method} /hello.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 1048577\r\n\r\n");
        s.write_all(head.as_bytes()).unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        let resp = read_response(&mut r, method == "HEAD").unwrap();
        assert_eq!(resp.status, 413, "{method}");
        assert_eq!(resp.header("connection"), Some("close"), "{method}");
        let mut rest = Vec::new();
        let _ = r.read_to_end(&mut rest);
        assert!(rest.is_empty(), "{method}: nothing after the 413");
        let sent = s.write_all(&vec![b'x'; 16 << 20]);
        assert!(sent.is_err(), "{method}: the body was read, not refused");
    }
}

/// At the limit the body is still read and discarded and the connection kept.
#[test]
fn body_at_the_discard_limit_is_discarded_and_kept() {
    let site = Site::new("bin-413-limit");
    let srv = Server::start(&site.root, &["--workers", "1"], &[]);
    let mut s = srv.connect();
    let head = "GET /hello.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 1048576\r\n\r\n";
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&vec![b'x'; 1 << 20]).unwrap();
    s.write_all(b"GET /ten.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut r = BufReader::new(s);
    assert_eq!(
        read_response(&mut r, false).unwrap().text(),
        "hello world\n"
    );
    assert_eq!(read_response(&mut r, false).unwrap().text(), "0123456789");
}
