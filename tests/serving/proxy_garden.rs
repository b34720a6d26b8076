//! The HTTP Garden's payloads (`tests/data/http_garden/`, one finding per file, listed in
//! its `INDEX`) sent to `steerd --proxy '/* UPSTREAM'` in front of a recording upstream.
//!
//! Each payload goes on its own client connection. What the client sent is read by an
//! independent strict reader (the test upstream's own, `support/upstream_parse.rs`) into
//! the requests a careful origin would see, up to the first it cannot read or the first
//! that asks to close. Then, for each payload:
//!
//! - the upstream never gets bytes it cannot parse as a request;
//! - every request it gets, the client gets a proxied answer for (the upstream names the
//!   request in a field of its answer), and the client gets no proxied answer for a
//!   request the upstream did not get: the two lists are equal, in order;
//! - the requests the upstream gets are a prefix of what the client sent, by method,
//!   target and body (a GET or HEAD body may be dropped): never a request line the client
//!   did not send as one, such as bytes of a body or of a refused request.
//!
//! A control request through each server first proves that forwarding works, so a server
//! that forwards nothing cannot pass. The payloads are spread over a few servers, each
//! with its own upstream, run side by side; each server takes its payloads in turn.

use crate::support;

use std::io::{Cursor, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use support::server::Server;
use support::upstream::{Answer, Listen, Seen, Upstream};
use support::upstream_parse::{read_request, Received};

/// Servers run side by side, each with its own upstream.
const SERVERS: usize = 4;
/// How long a client connection may stay silent before its answers are taken as all
/// there are (only once every request the upstream got has its answer).
const QUIET: Duration = Duration::from_millis(400);
/// The longest any payload's exchange may take on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(20);

/// The upstream's answer names the request it got.
fn naming(seen: &Seen) -> Answer {
    let saw = format!("X-Upstream-Saw: {} {}", seen.method(), seen.target());
    Answer::Fixed(200, vec![saw], b"proxied\n".to_vec())
}

fn garden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/http_garden")
}

/// Every payload of the index: (file name, finding, bytes).
fn payloads() -> Vec<(String, String, Vec<u8>)> {
    let index = std::fs::read_to_string(garden().join("INDEX")).expect("the garden index");
    let list: Vec<_> = index
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut fields = l.split('\t');
            let file = fields.next().unwrap_or_default().to_string();
            let finding = fields.next().unwrap_or_default().to_string();
            let bytes = std::fs::read(garden().join(&file)).expect("a listed payload");
            (file, finding, bytes)
        })
        .collect();
    assert!(list.len() >= 72, "the index lists {} payloads", list.len());
    list
}

/// The requests a strict origin reads from `payload`, in order, up to the first it
/// cannot read or the first that closes the connection.
fn requests_sent(payload: &[u8]) -> Vec<Seen> {
    let mut stream = Cursor::new(payload.to_vec());
    let mut buf = Vec::new();
    let mut sent = Vec::new();
    while let Received::Request(seen, keep) = read_request(&mut stream, &mut buf) {
        sent.push(seen);
        if !keep {
            break;
        }
    }
    sent
}

/// The values of every `X-Upstream-Saw` line the client received, in order.
fn proxied_answers(received: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(received)
        .split("\r\n")
        .filter_map(|l| l.split_once(':'))
        .filter(|(n, _)| n.eq_ignore_ascii_case("x-upstream-saw"))
        .map(|(_, v)| v.trim().to_string())
        .collect()
}

/// Sends `payload` on a fresh connection and reads until the server closes, or until
/// the connection has been quiet for [`QUIET`] with every request the upstream got since
/// `before` answered.
fn exchange(srv: &Server, up: &Upstream, before: usize, payload: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(srv.addr).expect("connect to steerd");
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    // A server may close before reading everything: what it did read is what counts.
    let _ = s.write_all(payload);
    let started = Instant::now();
    let mut quiet_since = Instant::now();
    let mut received = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    while started.elapsed() < PATIENCE {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                received.extend_from_slice(&buf[..n]);
                quiet_since = Instant::now();
            }
            Err(e) if is_timeout(&e) => {
                let forwarded = up.seen().len() - before;
                let answered = proxied_answers(&received).len();
                if quiet_since.elapsed() >= QUIET && answered >= forwarded {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    received
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// `method target` of a request.
fn line(seen: &Seen) -> String {
    format!("{} {}", seen.method(), seen.target())
}

/// What is wrong with one payload's exchange, if anything.
fn judge(name: &str, payload: &[u8], got: &[Seen], received: &[u8]) -> Option<String> {
    let forwarded: Vec<String> = got.iter().map(line).collect();
    let answered = proxied_answers(received);
    if forwarded != answered {
        return Some(format!(
            "{name}: the upstream got {forwarded:?}, the client got answers for {answered:?}"
        ));
    }
    let sent = requests_sent(payload);
    for (i, seen) in got.iter().enumerate() {
        let Some(asked) = sent.get(i) else {
            return Some(format!(
                "{name}: the upstream got {:?}, which the client never sent as a request \
                 (it sent {:?})",
                line(seen),
                sent.iter().map(line).collect::<Vec<_>>()
            ));
        };
        let body_dropped =
            seen.body.is_empty() && matches!(asked.method().as_str(), "GET" | "HEAD");
        if line(seen) != line(asked) || !(seen.body == asked.body || body_dropped) {
            return Some(format!(
                "{name}: request {i} reached the upstream as {:?} with {} body bytes, the \
                 client sent {:?} with {}",
                line(seen),
                seen.body.len(),
                line(asked),
                asked.body.len()
            ));
        }
    }
    None
}

/// One server and its upstream take `share` in turn; returns the failures and how many
/// of the payloads' requests reached the upstream.
fn run_share(share: Vec<(String, String, Vec<u8>)>) -> (Vec<String>, usize) {
    let up = Upstream::start(Listen::Unix, naming);
    let rule = format!("/* {}", up.spec());
    let srv = Server::start(&["--workers", "1", "--proxy", &rule]);
    let control = b"GET /control HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    let received = exchange(&srv, &up, 0, control);
    assert_eq!(
        proxied_answers(&received),
        ["GET /control"],
        "the control request was not proxied: {:?}",
        String::from_utf8_lossy(&received)
    );
    let mut failures = Vec::new();
    let mut forwarded = 0;
    for (name, finding, payload) in share {
        let before = up.seen().len();
        let received = exchange(&srv, &up, before, &payload);
        let got = up.seen().split_off(before);
        forwarded += got.len();
        if up.unparsed() > 0 {
            let raw = got.last().map(|s| s.head.clone()).unwrap_or_default();
            failures.push(format!(
                "{name} ({finding}): the upstream got bytes that are not a request: {:?}",
                String::from_utf8_lossy(&raw)
            ));
            break;
        }
        if let Some(why) = judge(&name, &payload, &got, &received) {
            failures.push(format!("{why} ({finding})"));
        }
    }
    (failures, forwarded)
}

#[test]
fn no_garden_payload_reaches_the_upstream_as_a_request_the_client_did_not_send() {
    let all = payloads();
    let mut shares: Vec<Vec<_>> = (0..SERVERS).map(|_| Vec::new()).collect();
    for (i, p) in all.into_iter().enumerate() {
        shares[i % SERVERS].push(p);
    }
    let runs: Vec<_> = shares
        .into_iter()
        .map(|share| std::thread::spawn(move || run_share(share)))
        .collect();
    let (mut failures, mut forwarded) = (Vec::new(), 0);
    for run in runs {
        let (failed, reached) = run.join().expect("a server's run panicked");
        failures.extend(failed);
        forwarded += reached;
    }
    println!("garden: {forwarded} requests of the payloads reached the upstream");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The oracle reads requests as the test upstream does: a pipelined pair is two, a body
/// is not a request, and reading stops at the first broken request or at a close.
#[test]
fn the_oracle_reads_what_the_client_sent() {
    let two = b"GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n";
    let lines: Vec<String> = requests_sent(two).iter().map(line).collect();
    assert_eq!(lines, ["GET /a", "GET /b"]);
    let body = b"POST /a HTTP/1.1\r\nContent-Length: 16\r\n\r\nGET /b HTTP/1.1\r\n";
    let sent = requests_sent(body);
    assert_eq!((sent.len(), sent[0].body.len()), (1, 16));
    let broken = b"GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\nHost: a\r\n\r\n";
    assert_eq!(requests_sent(broken).len(), 1);
    let listed = b"POST /a HTTP/1.1\r\nTransfer-Encoding: ,chunked\r\n\r\n1\r\nZ\r\n0\r\n\r\n";
    assert_eq!(requests_sent(listed)[0].body, b"Z");
    let other = b"POST /a HTTP/1.1\r\nTransfer-Encoding: \xa0chunked\r\n\r\n0\r\n\r\n";
    assert!(requests_sent(other).is_empty());
    let closing = b"GET /a HTTP/1.1\r\nConnection: close\r\n\r\nGET /b HTTP/1.1\r\n\r\n";
    assert_eq!(requests_sent(closing).len(), 1);
    let smuggled = [Seen {
        head: b"GET /b HTTP/1.1\r\n\r\n".to_vec(),
        ..Seen::default()
    }];
    let answers = b"HTTP/1.1 200 OK\r\nX-Upstream-Saw: GET /b\r\n\r\n";
    assert!(judge("a body", body, &smuggled, answers).is_some());
    let first = [Seen {
        head: b"GET /a HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
        ..Seen::default()
    }];
    assert_eq!(
        judge("answered", two, &first, b"X-Upstream-Saw: GET /a\r\n"),
        None
    );
    assert!(judge("unanswered", two, &first, b"").is_some());
}
