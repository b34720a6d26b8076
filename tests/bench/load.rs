//! `steerd bench load` through the real binary against in-test std responders on
//! loopback: exact counts when the server answers a known number of requests, and each
//! failure counted under its own kind. Every run is bounded (0.3 s, 1 s for the exact
//! counts, which must survive a loaded machine) and every server
//! thread stops by itself within a few seconds.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello, world!";

/// What the test server does with each request head it reads.
#[derive(Clone, Copy)]
enum Behaviour {
    /// Answer OK until `budget` responses have gone out over all connections, then
    /// close every connection without answering (and stop accepting).
    Budget(u64),
    /// Read the request, close without a response.
    CloseEarly,
    /// Answer with these bytes (then close when `close` is set).
    Send(&'static [u8], bool),
}

/// A std-only server on 127.0.0.1:0, one thread per connection, alive for `life`.
fn serve(behaviour: Behaviour, life: Duration) -> (u16, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let answered = Arc::new(AtomicU64::new(0));
    let count = answered.clone();
    std::thread::spawn(move || {
        let end = Instant::now() + life;
        while Instant::now() < end {
            if let Behaviour::Budget(b) = behaviour {
                if count.load(Ordering::SeqCst) >= b {
                    break; // dropping the listener refuses what comes next
                }
            }
            match listener.accept() {
                Ok((s, _)) => {
                    let count = count.clone();
                    std::thread::spawn(move || connection(s, behaviour, &count, end));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    });
    (port, answered)
}

fn connection(mut s: TcpStream, behaviour: Behaviour, count: &AtomicU64, end: Instant) {
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut buf = [0u8; 4096];
    let mut pending = 0usize;
    while Instant::now() < end {
        let n = match s.read(&mut buf[pending..]) {
            Ok(0) => return,
            Ok(n) => n,
            Err(_) => continue,
        };
        pending += n;
        let Some(head_end) = find_head_end(&buf[..pending]) else {
            continue;
        };
        buf.copy_within(head_end..pending, 0);
        pending -= head_end;
        match behaviour {
            Behaviour::Budget(b) => {
                if count.fetch_add(1, Ordering::SeqCst) >= b {
                    count.fetch_sub(1, Ordering::SeqCst);
                    return;
                }
                if s.write_all(OK).is_err() {
                    return;
                }
            }
            Behaviour::CloseEarly => return,
            Behaviour::Send(bytes, close) => {
                count.fetch_add(1, Ordering::SeqCst);
                if s.write_all(bytes).is_err() || close {
                    return;
                }
            }
        }
    }
}

fn find_head_end(b: &[u8]) -> Option<usize> {
    b.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Runs the binary's load with JSON output (0.3 s unless `extra` gives `-d`: a flag
/// given twice is refused) and returns the merged section.
fn load(port: u16, extra: &[&str]) -> String {
    let url = format!("http://127.0.0.1:{port}/x");
    let duration: &[&str] = match extra.contains(&"-d") {
        true => &[],
        false => &["-d", "0.3s"],
    };
    let args = [&["bench", "load", &url, "--json"], duration, extra].concat();
    let out = crate::support::server::run_steerd(&args, b"");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "load failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let merged = text.split("\"merged\":").nth(1).expect("merged section");
    merged.split("\"per_thread\"").next().unwrap().to_string()
}

/// The integer after `"key":` in `json`.
fn field(json: &str, key: &str) -> u64 {
    let pat = format!("\"{key}\":");
    let at = json
        .find(&pat)
        .unwrap_or_else(|| panic!("no {key} in {json}"))
        + pat.len();
    let digits: String = json[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap()
}

#[test]
fn counts_are_exact_when_the_server_answers_a_fixed_number() {
    let (port, answered) = serve(Behaviour::Budget(500), Duration::from_secs(6));
    let m = load(port, &["-c", "4", "-t", "2", "-d", "3s"]);
    assert_eq!(field(&m, "requests"), 500, "{m}");
    assert_eq!(answered.load(Ordering::SeqCst), 500);
    assert_eq!(field(&m, "bytes"), 500 * OK.len() as u64, "{m}");
    assert_eq!(field(&m, "status"), 0);
    assert_eq!(field(&m, "garbage"), 0);
    // After the budget the server hangs up mid-request and then refuses connections.
    assert!(
        field(&m, "eof") + field(&m, "connect") + field(&m, "read") > 0,
        "{m}"
    );
}

#[test]
fn close_mode_opens_a_connection_per_request() {
    // A thread per connection on a loaded machine, or under an emulator (67 in a second
    // under qemu-aarch64 with the machine busy): give the 100 five seconds. The budget
    // ends the answers, not the clock.
    let (port, answered) = serve(Behaviour::Budget(100), Duration::from_secs(8));
    let m = load(port, &["-c", "2", "-t", "1", "--close", "-d", "5s"]);
    assert_eq!(field(&m, "requests"), 100, "{m}");
    assert_eq!(answered.load(Ordering::SeqCst), 100);
    // One connect per request (plus the failed ones after the budget).
    let connect = m.split("\"connect\":{").nth(1).unwrap();
    assert!(field(connect, "count") >= 100, "{m}");
}

#[test]
fn server_closing_early_is_counted_as_eof() {
    let (port, _) = serve(Behaviour::CloseEarly, Duration::from_secs(2));
    let m = load(port, &["-c", "2", "-t", "1"]);
    assert_eq!(field(&m, "requests"), 0);
    assert!(field(&m, "eof") > 0, "{m}");
}

#[test]
fn garbage_framing_and_status_are_counted_by_kind() {
    let (port, _) = serve(
        Behaviour::Send(b"SSH-2.0-OpenSSH_9.2\r\n", true),
        Duration::from_secs(2),
    );
    let m = load(port, &["-c", "2", "-t", "1"]);
    assert!(
        field(&m, "garbage") > 0 && field(&m, "requests") == 0,
        "{m}"
    );

    let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
    let (port, _) = serve(Behaviour::Send(chunked, false), Duration::from_secs(2));
    let m = load(port, &["-c", "2", "-t", "1"]);
    assert!(
        field(&m, "framing") > 0 && field(&m, "requests") == 0,
        "{m}"
    );

    let five = b"HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nbusy";
    let (port, answered) = serve(Behaviour::Send(five, false), Duration::from_secs(2));
    let m = load(port, &["-c", "2", "-t", "1"]);
    let requests = field(&m, "requests");
    assert!(requests > 0, "{m}");
    assert_eq!(
        field(&m, "status"),
        requests,
        "every response was a 503: {m}"
    );
    assert!(answered.load(Ordering::SeqCst) >= requests);
}

#[test]
fn refused_connections_are_connect_errors() {
    // Bind then drop: the port is (almost certainly) closed for the next 0.3 s.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let m = load(port, &["-c", "2", "-t", "1"]);
    assert_eq!(field(&m, "requests"), 0);
    assert!(field(&m, "connect") > 0, "{m}");
}

#[test]
fn open_loop_sends_at_the_rate_asked() {
    let _measuring = crate::support::serial::exclusive();
    let (port, _) = serve(Behaviour::Send(OK, false), Duration::from_secs(2));
    let m = load(port, &["-c", "4", "-t", "1", "--rate", "1000"]);
    // 0.3 s at 1000/s: 300 due. Each was answered, is in flight at the end (at most one
    // per connection), or was still waiting for a free connection (`unsent`); a closed
    // loop would have sent thousands.
    let (r, unsent) = (field(&m, "requests"), field(&m, "unsent"));
    assert!(r <= 300, "{r} requests: {m}");
    assert!(
        (296..=301).contains(&(r + unsent)),
        "{r} answered + {unsent} unsent: {m}"
    );
}

#[test]
fn text_report_has_every_section() {
    let (port, _) = serve(Behaviour::Send(OK, false), Duration::from_secs(2));
    let url = format!("http://127.0.0.1:{port}/");
    let args = [
        "bench", "load", &url, "-d", "0.2", "-c", "2", "-t", "2", "--pin", "0",
    ];
    let out = crate::support::server::run_steerd(&args, b"");
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "requests/s:",
        "bytes/s:",
        "errors: 0",
        "request ",
        "connect ",
        "ttfb ",
        "p99.9",
        "client cpu:",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    let bad = crate::support::server::run_steerd(&["bench", "load", "ftp://x/"], b"");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).starts_with("steerd: bench: load:"));
}
