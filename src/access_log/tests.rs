//! The log through real destinations: a file (written by the log thread, with a
//! rotation), and a test-owned datagram socket standing in for `/dev/log`.

use super::*;
use crate::log_line::RequestLine;
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("steerd-alog-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn rec(target: &'static [u8]) -> Record<'static> {
    Record {
        client: Some("127.0.0.1".parse().unwrap()),
        request: RequestLine::Parsed {
            method: crate::http::Method::Get,
            target,
            minor: 1,
        },
        status: 200,
        body_bytes: 7,
        referer: None,
        user_agent: Some(b"t"),
        user: None,
        rule: None,
        host: None,
        upstream: None,
        upstream_us: None,
        worker: 0,
        cpu: 0,
        local: true,
        duration_us: 1,
        cut_short: false,
    }
}

const DATE: i64 = 1_796_084_182; // 2026-12-01 00:16:22 UTC

#[test]
fn file_lines_wait_for_the_flush_then_follow_a_rotation() {
    let d = dir("file");
    let path = d.join("access.log");
    let date = DateCache::new(DATE);
    let target = LogTarget::File(path.clone());
    let mut log = AccessLog::open(&target, LogFormat::Common, &date).unwrap();
    log.record(&rec(b"/a"), 1000);
    log.tick(&date, 1000 + FLUSH_AFTER_MS - 1);
    log.settle();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "",
        "still buffered"
    );
    log.tick(&date, 1000 + FLUSH_AFTER_MS);
    log.settle();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "127.0.0.1 - - [01/Dec/2026:00:16:22 +0000] \"GET /a HTTP/1.1\" 200 7\n"
    );
    std::fs::rename(&path, d.join("old.log")).unwrap();
    log.record(&rec(b"/b"), 2000);
    log.reopen().unwrap();
    log.record(&rec(b"/c"), 2000);
    drop(log);
    let old = std::fs::read_to_string(d.join("old.log")).unwrap();
    let new = std::fs::read_to_string(&path).unwrap();
    assert!(old.contains("/a ") && old.contains("/b ") && !old.contains("/c "));
    assert!(new.contains("/c ") && new.lines().count() == 1, "{new}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_full_buffer_is_written_before_the_next_line() {
    let d = dir("full");
    let path = d.join("access.log");
    let date = DateCache::new(DATE);
    let mut log = AccessLog::open(&LogTarget::File(path.clone()), LogFormat::Json, &date).unwrap();
    let n = 2 * BUF / 200;
    for _ in 0..n {
        log.record(&rec(b"/some/longer/path/to/fill/the/buffer/quickly"), 0);
    }
    log.settle();
    let written = std::fs::read_to_string(&path).unwrap().lines().count();
    assert!(
        written > 0 && written < n,
        "{written} of {n} written before any tick"
    );
    log.flush();
    log.settle();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), n);
    assert_eq!(
        log.take_dropped(),
        0,
        "nothing dropped on a disk that keeps up"
    );
    for line in text.lines() {
        let _: serde_json::Value = serde_json::from_str(line).unwrap();
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn syslog_datagrams_one_per_line() {
    let d = dir("syslog");
    let sock_path = d.join("log.sock");
    let daemon = UnixDatagram::bind(&sock_path).unwrap();
    daemon
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let date = DateCache::new(DATE);
    let target = LogTarget::Syslog(sock_path.clone());
    let mut log = AccessLog::open(&target, LogFormat::Combined, &date).unwrap();
    log.record(&rec(b"/one"), 0);
    log.record(&rec(b"/two"), 0);
    log.flush();
    let pid = std::process::id();
    let mut buf = [0u8; 4096];
    for path in ["/one", "/two"] {
        let n = daemon.recv(&mut buf).unwrap();
        let got = std::str::from_utf8(&buf[..n]).unwrap();
        assert_eq!(
            got,
            format!(
                "<30>Dec  1 00:16:22 steerd[{pid}]: 127.0.0.1 - - [01/Dec/2026:00:16:22 +0000] \
                 \"GET {path} HTTP/1.1\" 200 7 \"-\" \"t\""
            )
        );
    }
    // The daemon restarts: a new socket at the same path; the next flush reconnects.
    drop(daemon);
    std::fs::remove_file(&sock_path).unwrap();
    let daemon = UnixDatagram::bind(&sock_path).unwrap();
    daemon
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    log.record(&rec(b"/three"), 0);
    log.flush();
    let n = daemon.recv(&mut buf).unwrap();
    assert!(std::str::from_utf8(&buf[..n])
        .unwrap()
        .contains("GET /three "));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_missing_syslog_socket_is_an_error_at_open() {
    let d = dir("nosock");
    let target = LogTarget::Syslog(d.join("absent.sock"));
    let e = AccessLog::open(&target, LogFormat::Combined, &DateCache::new(0)).err();
    assert_eq!(e.map(|e| e.kind()), Some(io::ErrorKind::NotFound));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn off_records_nothing() {
    let mut log = AccessLog::off();
    assert!(!log.enabled());
    log.record(&rec(b"/x"), 0);
    log.flush();
}

#[test]
fn a_write_after_a_cut_line_starts_on_a_fresh_line() {
    let d = dir("torn");
    let path = d.join("access.log");
    // What a short write on a full disk leaves behind: a line without its end.
    std::fs::write(&path, b"whole\ncut off mid-li").unwrap();
    let mut dest = Dest::open(&LogTarget::File(path.clone())).unwrap();
    assert_eq!(dest.write(b"next\nand more\n"), 0);
    assert_eq!(dest.write(b"last\n"), 0);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text, "whole\ncut off mid-li\nnext\nand more\nlast\n");
}

#[test]
fn a_fifo_is_refused_by_check_and_open_without_waiting() {
    let d = dir("fifo");
    let fifo = d.join("access.fifo");
    let mode = rustix::fs::Mode::from_raw_mode(0o600);
    rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, mode).unwrap();
    let target = LogTarget::File(fifo.clone());
    let err = dest::check(&target).unwrap_err().to_string();
    assert!(err.starts_with("is a FIFO; "), "{err}");
    let err = Dest::open(&target).unwrap_err().to_string();
    assert!(err.starts_with("is a FIFO; "), "{err}");
    assert_eq!(dest::not_regular(&fifo), Some(dest::Kind::Fifo));
    assert_eq!(dest::not_regular(&d.join("absent")), None);
}

#[test]
fn a_file_is_written_off_the_loop_and_a_socket_on_it() {
    let d = dir("where");
    let date = DateCache::new(DATE);
    let file = AccessLog::open(&LogTarget::File(d.join("a.log")), LogFormat::Common, &date);
    assert!(
        file.unwrap().writer.is_some(),
        "a file may wait for its disk"
    );
    let sock_path = d.join("log.sock");
    let _daemon = UnixDatagram::bind(&sock_path).unwrap();
    let sock = AccessLog::open(&LogTarget::Syslog(sock_path), LogFormat::Common, &date);
    assert!(sock.unwrap().writer.is_none(), "a datagram never waits");
    let _ = std::fs::remove_dir_all(&d);
}
