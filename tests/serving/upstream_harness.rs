//! The test upstream the proxy tests stand on (`support/upstream.rs`), against a plain
//! client: each answer as sent, each request as recorded, what it refuses to parse,
//! keep-alive, and that dropping it stops it.

use std::io::{BufReader, Read, Write};
use std::time::{Duration, Instant};

use crate::support::client::{read_chunked, read_response};
use crate::support::upstream::*;

const BOTH: [Listen; 2] = [Listen::Unix, Listen::Tcp];

fn connect(up: &Upstream) -> Stream {
    let s = Stream::connect(&up.spec()).expect("connect to the test upstream");
    s.set_read_timeout(Duration::from_secs(10));
    s
}

/// Everything the peer sends until it closes.
fn read_to_close(s: &mut Stream) -> Vec<u8> {
    let mut all = Vec::new();
    let _ = s.read_to_end(&mut all);
    all
}

fn fixed(_: &Seen) -> Answer {
    Answer::Fixed(201, vec!["X-Up: yes".into()], b"made".to_vec())
}

#[test]
fn a_fixed_answer_and_the_request_recorded_on_one_kept_connection() {
    for listen in BOTH {
        let up = Upstream::start(listen, fixed);
        let mut r = BufReader::new(connect(&up));
        for n in 1..=2 {
            let req = format!("GET /a?{n} HTTP/1.1\r\nHost: h\r\nX-N: {n}\r\n\r\n");
            r.get_mut().write_all(req.as_bytes()).unwrap();
            let resp = read_response(&mut r, false).unwrap();
            assert_eq!((resp.status, resp.header("x-up")), (201, Some("yes")));
            assert_eq!(resp.body, b"made");
            let seen = &up.seen()[n - 1];
            assert_eq!(seen.head, req.as_bytes());
            assert_eq!(
                (seen.method(), seen.target()),
                ("GET".into(), format!("/a?{n}"))
            );
            assert_eq!(seen.field("x-n"), Some(n.to_string()));
        }
        assert_eq!((up.connections(), up.unparsed()), (1, 0), "{listen:?}");
    }
}

#[test]
fn echo_reports_length_and_digest_of_a_chunked_or_sized_body() {
    let up = Upstream::start(Listen::Tcp, |_| Answer::Echo);
    let mut r = BufReader::new(connect(&up));
    let sized = "POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello";
    let chunked = "PUT /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n\
                   3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n";
    for req in [sized, chunked] {
        r.get_mut().write_all(req.as_bytes()).unwrap();
        let resp = read_response(&mut r, false).unwrap();
        let method = &req[..req.find(' ').unwrap()];
        let want = format!("{method} /up 5 {}\n", sha256_hex(b"hello"));
        assert_eq!(resp.text(), want);
    }
    let seen = up.seen();
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|s| s.body == b"hello"));
    assert_eq!((seen[0].chunked, seen[1].chunked), (false, true));
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn what_a_relay_must_never_send_is_recorded_raw_and_counted() {
    let bad: [&[u8]; 8] = [
        b"GET / HTTP/1.1\nHost: h\r\n\r\n",
        b"GET  / HTTP/1.1\r\nHost: h\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost : h\r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;x\r\na\r\n0\r\n\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: 1\r\n\r\n",
    ];
    let up = Upstream::start(Listen::Unix, fixed);
    for (i, raw) in bad.iter().enumerate() {
        let mut s = connect(&up);
        s.write_all(raw).unwrap();
        assert_eq!(read_to_close(&mut s), b"", "{raw:?} was answered");
        assert_eq!(up.unparsed(), i + 1, "{raw:?}");
        assert_eq!(up.seen()[i].head, *raw);
    }
}

#[test]
fn chunked_close_delimited_and_cut_short_answers() {
    let up = Upstream::start(Listen::Tcp, |seen| match seen.target().as_str() {
        "/chunked" => Answer::Chunked(vec![b"ab".to_vec(), b"cde".to_vec()], Duration::ZERO),
        "/close" => Answer::CloseDelimited(b"until the end".to_vec()),
        _ => Answer::CutShort(10, b"short".to_vec()),
    });
    let mut r = BufReader::new(connect(&up));
    r.get_mut()
        .write_all(b"GET /chunked HTTP/1.1\r\nHost: h\r\n\r\n")
        .unwrap();
    let head = read_response(&mut r, true).unwrap();
    assert_eq!(head.header("transfer-encoding"), Some("chunked"));
    assert_eq!(read_chunked(&mut r).unwrap(), b"abcde");
    for (target, tail) in [
        ("/close", &b"\r\n\r\nuntil the end"[..]),
        ("/cut", b"\r\n\r\nshort"),
    ] {
        let mut s = connect(&up);
        let req = format!("GET {target} HTTP/1.1\r\nHost: h\r\n\r\n");
        s.write_all(req.as_bytes()).unwrap();
        let all = read_to_close(&mut s);
        assert!(
            all.ends_with(tail),
            "{target}: {:?}",
            String::from_utf8_lossy(&all)
        );
        let length = all
            .windows(15)
            .any(|w| w.eq_ignore_ascii_case(b"content-length:"));
        assert_eq!(length, target == "/cut", "{target}");
    }
}

#[test]
fn events_are_spaced_and_an_upgrade_echoes() {
    let gap = Duration::from_millis(150);
    let up = Upstream::start(Listen::Unix, |seen| match seen.target().as_str() {
        "/events" => Answer::Sse(vec!["one".into(), "two".into()], Duration::from_millis(150)),
        _ => Answer::UpgradeEcho,
    });
    let mut s = connect(&up);
    let started = Instant::now();
    s.write_all(b"GET /events HTTP/1.1\r\nHost: h\r\n\r\n")
        .unwrap();
    let all = String::from_utf8(read_to_close(&mut s)).unwrap();
    assert!(
        started.elapsed() >= gap,
        "the gap between events was not kept"
    );
    assert!(all.contains("text/event-stream") && all.ends_with("data: one\n\ndata: two\n\n"));
    let mut s = connect(&up);
    s.write_all(
        b"GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
    )
    .unwrap();
    let mut r = BufReader::new(s);
    assert_eq!(read_response(&mut r, true).unwrap().status, 101);
    for word in [&b"ping"[..], b"\x00\xffbytes"] {
        r.get_mut().write_all(word).unwrap();
        let mut back = vec![0; word.len()];
        r.read_exact(&mut back).unwrap();
        assert_eq!(back, word);
    }
}

#[test]
fn silence_lasts_until_the_upstream_is_dropped() {
    let up = Upstream::start(Listen::Tcp, |_| Answer::Silent);
    let mut s = connect(&up);
    s.write_all(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n").unwrap();
    s.set_read_timeout(Duration::from_millis(300));
    let mut byte = [0u8; 1];
    assert!(s.read(&mut byte).is_err(), "a silent upstream answered");
    assert_eq!(up.seen().len(), 1);
    let spec = up.spec();
    drop(up);
    s.set_read_timeout(Duration::from_secs(10));
    assert_eq!(
        s.read(&mut byte).unwrap_or(0),
        0,
        "the connection outlived its upstream"
    );
    assert!(
        Stream::connect(&spec).is_err(),
        "still listening after the drop"
    );
}

#[test]
fn refusing_specs_refuse() {
    for listen in BOTH {
        let spec = refusing_spec(listen);
        assert!(Stream::connect(&spec).is_err(), "{spec} accepted");
    }
}
