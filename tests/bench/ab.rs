//! `steerd bench ab` end to end through the real binary: two `steerd bench responder`
//! command lines on one loopback port, 2 rounds of 0.3 s, and the report must carry
//! every run line and every summary line. Also the responder itself, checked with a
//! plain std client in both modes.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;
use support::free_port;
use support::responder::responder;

const BIN: &str = env!("CARGO_BIN_EXE_steerd");

#[test]
fn ab_of_two_responders_prints_runs_and_statistics() {
    let _measuring = crate::support::serial::exclusive();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let url = format!("http://127.0.0.1:{port}/");
    let responder = |cpus: &str| -> Vec<String> {
        [
            BIN,
            "bench",
            "responder",
            "--listen",
            &listen,
            "--cpus",
            cpus,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let mut args: Vec<String> = [
        "bench", "ab", "--rounds", "2", "--warmup", "0.3s", "-d", "1s", "-c", "4", "-t", "1", &url,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push("--".into());
    args.extend(responder("0"));
    args.push("--".into());
    args.extend(responder("0"));
    let out = Command::new(BIN).args(&args).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "round 1 A:",
        "round 1 B:",
        "round 2 A:",
        "round 2 B:",
        "== requests/s",
        "== p99 latency (us)",
        "== server CPU per request (us)",
        "    N           Min           Max        Median           Avg        Stddev",
        "B/A per round:",
        "permutation test on paired differences (exact): p = ",
        "split n/a",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    let verdicts = text.matches("Difference at 95.0% confidence").count()
        + text
            .matches("No difference proven at 95.0% confidence")
            .count();
    assert_eq!(verdicts, 5, "one verdict per metric:\n{text}");
    // Every run served requests without errors and measured some server CPU.
    for line in text.lines().filter(|l| l.starts_with("round ")) {
        assert!(line.contains("errors 0"), "{line}");
        assert!(!line.contains(": 0 req/s"), "{line}");
    }
    // Nothing is left listening once ab returns: it stopped every server it started.
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "a server outlived ab"
    );
}

#[test]
fn ab_rejects_a_missing_b_command() {
    let out = Command::new(BIN)
        .args(["bench", "ab", "http://127.0.0.1:1/", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("steerd: bench: ab:"));
}

#[test]
fn responder_answers_every_request_on_a_keep_alive_connection() {
    let r = responder(&[]);
    let port = r.port;
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    // Two requests in one write, then one split across writes.
    s.write_all(b"GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n")
        .unwrap();
    s.write_all(b"GET / HTTP/1.1\r\n\r").unwrap();
    std::thread::sleep(Duration::from_millis(20));
    s.write_all(b"\n").unwrap();
    let one = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello, world!".len();
    let mut got = vec![0u8; one * 3];
    s.read_exact(&mut got).unwrap();
    assert_eq!(got.windows(13).filter(|w| w == b"Hello, world!").count(), 3);
}

#[test]
fn responder_close_mode_answers_and_closes() {
    close_mode_answers(&["--close"]);
    if !support::server::skip_without_steering("responder_close_mode_answers_and_closes --steer") {
        close_mode_answers(&["--close", "--steer"]);
    }
}

fn close_mode_answers(extra: &[&str]) {
    let r = responder(extra);
    let port = r.port;
    for _ in 0..3 {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut all = Vec::new();
        s.read_to_end(&mut all).unwrap();
        let text = String::from_utf8(all).unwrap();
        assert!(
            text.starts_with("HTTP/1.1 200 OK\r\n") && text.ends_with("\r\n\r\nHello, world!"),
            "{text}"
        );
        assert!(text.contains("Connection: close"));
    }
}

#[test]
fn responder_sends_the_response_file_after_its_spin() {
    let dir = tempdir("responder-file");
    let file = dir.join("response.bin");
    let canned = b"HTTP/1.1 200 OK\r\nX-From: file\r\nContent-Length: 5\r\n\r\nhello";
    std::fs::write(&file, canned).unwrap();
    let path = file.to_str().unwrap();
    // Keep-alive: pipelined heads, a copy of the file's bytes for each.
    let r = responder(&["--response", path, "--spin", "20000000"]);
    let mut s = TcpStream::connect(("127.0.0.1", r.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(&b"GET / HTTP/1.1\r\n\r\n".repeat(2)).unwrap();
    let mut got = vec![0u8; canned.len() * 2];
    s.read_exact(&mut got).unwrap();
    assert_eq!(got, canned.repeat(2));
    // The spin is work: 20M steps per request reach 3 clock ticks (30 ms) of the
    // process's CPU time within 40 requests (a few in a release build, one in a debug
    // build), which 40 bare answers come nowhere near.
    let mut requests = 2;
    while cpu_ticks(r.pid()) < 3 && requests < 40 {
        s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        s.read_exact(&mut got[..canned.len()]).unwrap();
        requests += 1;
    }
    let ticks = cpu_ticks(r.pid());
    assert!(
        ticks >= 3,
        "{requests} spins of 20M steps took {ticks} ticks"
    );
    // Close mode sends the same bytes, then closes.
    let r = responder(&["--close", "--response", path]);
    let mut s = TcpStream::connect(("127.0.0.1", r.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    assert_eq!(all, canned);
}

/// Responses the socket will not take whole are not cut silently: the responder closes
/// the connection, so a client sees the end instead of a stream that lost its place.
#[test]
fn responder_closes_when_a_response_does_not_fit() {
    let dir = tempdir("responder-big");
    let file = dir.join("big.bin");
    let body = vec![b'z'; 60 * 1024];
    let mut big = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    big.extend_from_slice(&body);
    std::fs::write(&file, &big).unwrap();
    let r = responder(&["--response", file.to_str().unwrap()]);
    let mut s = TcpStream::connect(("127.0.0.1", r.port)).unwrap();
    // 200 heads in one write: 12 MB of responses, more than the socket buffers hold.
    s.write_all(&b"GET / HTTP/1.1\r\n\r\n".repeat(200)).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got)
        .expect("the responder closed the connection");
    assert!(got.len() < big.len() * 200, "{} bytes", got.len());
    assert!(got.starts_with(&big), "whole responses first");
}

#[test]
fn responder_refuses_a_response_file_that_is_not_one() {
    let dir = tempdir("responder-bad");
    let not_http = dir.join("page.html");
    std::fs::write(&not_http, b"<html>hello</html>\n").unwrap();
    let no_end = dir.join("cut.bin");
    std::fs::write(&no_end, b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n").unwrap();
    let missing = dir.join("missing.bin");
    for (file, why) in [
        (&not_http, "not an HTTP/1.1 response"),
        (&no_end, "not an HTTP/1.1 response"),
        (&missing, "No such file"),
    ] {
        let out = support::responder::command(&["--response", file.to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.starts_with("steerd: bench: responder: --response"),
            "{err}"
        );
        assert!(err.contains(why), "{err}");
    }
}

/// User plus system clock ticks of process `pid` (proc(5), fields 14 and 15).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    // Field 3 (state) is after_name's first: utime is field 14, stime 15.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn tempdir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("steerd-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn ab_json_carries_runs_and_verdicts() {
    let _measuring = crate::support::serial::exclusive();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let url = format!("http://127.0.0.1:{port}/");
    let side = [
        BIN,
        "bench",
        "responder",
        "--listen",
        &listen,
        "--cpus",
        "0",
    ];
    let mut args = vec![
        "bench", "ab", "--rounds", "2", "--cold", "-d", "0.2s", "-c", "2", "-t", "1", "--json",
        &url, "--",
    ];
    args.extend(side);
    args.push("--");
    args.extend(side);
    let out = Command::new(BIN).args(&args).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    assert!(
        text.starts_with('{') && text.trim_end().ends_with('}'),
        "{text}"
    );
    assert_eq!(text.matches("\"side\":").count(), 4, "{text}");
    for want in [
        "\"name\":\"requests/s\"",
        "\"significant\":",
        "\"ratio_low\":",
        "\"p\":",
    ] {
        assert!(text.contains(want), "missing {want} in {text}");
    }
}

#[test]
fn stats_reproduces_ministat_on_its_example() {
    let dir = std::env::temp_dir().join(format!("steerd-bench-stats-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (dir.join("iguana"), dir.join("chameleon"));
    std::fs::write(&a, "50\n200\n150\n400\n750\n400\n150\n").unwrap();
    std::fs::write(&b, "# chameleon\n150\n400\n720\n500\n930\n").unwrap();
    let out = Command::new(BIN)
        .args(["bench", "stats"])
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .take(2)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["A", "7", "50", "750", "200", "300", "238.048"]);
    assert_eq!(rows[1], ["B", "5", "150", "930", "500", "540", "299.082"]);
    assert!(
        text.contains("No difference proven at 95.0% confidence"),
        "{text}"
    );
}

#[test]
fn ab_quotes_a_server_that_fails_to_start() {
    let url = format!("http://127.0.0.1:{}/", free_port());
    let out = Command::new(BIN)
        .args(["bench", "ab", "--rounds", "1", "-d", "0.1s", &url])
        .args([
            "--",
            "sh",
            "-c",
            "echo listen failed: boom >&2; exit 3",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("before accepting") && err.contains("listen failed: boom"),
        "{err}"
    );
}
