//! The access log through the real binary on real sockets: a real log tool (goaccess)
//! reads `combined` and `common`, cut-short responses show the bytes really written, the
//! three destinations (file, inherited standard output under `--user`, syslog through a
//! test-owned socket), and the real client address (X-Forwarded-For, its last hop or
//! walked past a chain of proxies; PROXY v1 and v2, whole, in pieces, malformed, from
//! untrusted peers).

use crate::support;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use support::server::*;

/// The lines of `path` once it has at least `n` (bounded wait: the log is written within
/// about a second).
fn wait_lines(path: &Path, n: usize) -> Vec<String> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        if lines.len() >= n {
            return lines;
        }
        assert!(
            Instant::now() < deadline,
            "{} has {} lines, waited for {n}:\n{text}",
            path.display(),
            lines.len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The JSON line whose request contains `needle`, once it is logged.
fn json_line(path: &Path, needle: &str) -> serde_json::Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if let Some(l) = text.lines().find(|l| l.contains(needle)) {
            return serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
        }
        assert!(Instant::now() < deadline, "no line with {needle}:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Writes `raw` on a fresh connection and reads until the server closes.
fn exchange_raw(addr: SocketAddr, raw: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect_timeout(&addr, PATIENCE).expect("connect");
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(raw).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

fn statuses(resp: &[u8]) -> Vec<u16> {
    let text = String::from_utf8_lossy(resp);
    text.match_indices("HTTP/1.1 ")
        .filter_map(|(i, _)| text.get(i + 9..i + 12)?.parse().ok())
        .collect()
}

/// A mixed run on `addr`: 200, 206, 304, 404, 405, HEAD, HTTP/1.0, pipelined requests,
/// user agents and referers with quotes, backslashes and non-ASCII bytes. Returns how
/// many requests were answered.
fn mixed_run(addr: SocketAddr, root: &Path) -> usize {
    std::fs::write(root.join("a.txt"), vec![b'a'; 1000]).unwrap();
    let one = |extra: &[u8], line: &str| -> Vec<u16> {
        let mut raw = format!("{line}\r\nHost: t\r\nConnection: close\r\n").into_bytes();
        raw.extend_from_slice(extra);
        raw.extend_from_slice(b"\r\n");
        statuses(&exchange_raw(addr, &raw))
    };
    let mut seen = Vec::new();
    seen.extend(one(
        b"User-Agent: Mozilla/5.0 \"quoted\" (X11)\r\n",
        "GET /index.html HTTP/1.1",
    ));
    seen.extend(one(
        b"Range: bytes=0-9\r\nUser-Agent: back\\slash\\\r\n",
        "GET /a.txt HTTP/1.1",
    ));
    seen.extend(one(
        b"If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT\r\nReferer: http://r/\"x\"\r\n",
        "GET /a.txt HTTP/1.1",
    ));
    seen.extend(one(
        b"User-Agent: caf\xc3\xa9 \xe2\x82\xac\r\n",
        "GET /missing HTTP/1.1",
    ));
    seen.extend(one(b"Content-Length: 0\r\n", "POST /a.txt HTTP/1.1"));
    seen.extend(one(b"User-Agent: \"\\\"\r\n", "HEAD /a.txt HTTP/1.1"));
    let old = exchange_raw(addr, b"GET /a.txt HTTP/1.0\r\nUser-Agent: old\r\n\r\n");
    seen.extend(
        String::from_utf8_lossy(&old)
            .starts_with("HTTP/1.1 200")
            .then_some(200),
    );
    let pipelined = b"GET /a.txt?1 HTTP/1.1\r\nHost: t\r\nUser-Agent: p \\x22\r\n\r\n\
        GET /index.html?2 HTTP/1.1\r\nHost: t\r\n\r\n\
        GET /a.txt?3 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    seen.extend(statuses(&exchange_raw(addr, pipelined)));
    let mut kinds = seen.clone();
    kinds.sort();
    kinds.dedup();
    assert_eq!(kinds, [200, 206, 304, 404, 405], "{seen:?}");
    seen.len()
}

/// goaccess's totals for `log` read as `format`: (total, valid, failed).
fn goaccess(log: &Path, format: &str) -> Option<(u64, u64, u64)> {
    let out = log.with_extension("report.json");
    let run = std::process::Command::new("goaccess")
        .arg(log)
        .arg(format!("--log-format={format}"))
        .args(["--no-global-config", "-o"])
        .arg(&out)
        .stdin(std::process::Stdio::null())
        .output();
    let Ok(run) = run else {
        crate::support::skip::skip_or_fail(
            &crate::support::skip::this_test(),
            "goaccess is not installed (.ci/run installs it)",
        );
        return None;
    };
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let g = &report["general"];
    let n = |k: &str| g[k].as_u64().unwrap_or_else(|| panic!("{k} in {g}"));
    Some((
        n("total_requests"),
        n("valid_requests"),
        n("failed_requests"),
    ))
}

fn goaccess_reads(log_format: &str, goaccess_format: &str) {
    let dir = TempDir::new("goaccess");
    let log = dir.path().join("access.log");
    let server = Server::start(&[
        "--workers",
        "2",
        "--access-log",
        log.to_str().unwrap(),
        "--log-format",
        log_format,
    ]);
    let sent = mixed_run(server.addr, server.root.as_ref().unwrap().path());
    let lines = wait_lines(&log, sent);
    assert_eq!(lines.len(), sent, "{lines:#?}");
    let at = |tag: &str| lines.iter().position(|l| l.contains(tag));
    let order = [at("/a.txt?1 "), at("/index.html?2 "), at("/a.txt?3 ")];
    assert!(
        order.iter().all(Option::is_some) && order.is_sorted(),
        "{lines:#?}"
    );
    if log_format == "combined" {
        assert!(
            lines.iter().any(|l| l.contains("\\\"quoted\\\"")),
            "{lines:#?}"
        );
    }
    let Some((total, valid, failed)) = goaccess(&log, goaccess_format) else {
        return;
    };
    assert_eq!(
        (total, valid, failed),
        (sent as u64, sent as u64, 0),
        "{lines:#?}"
    );
}

#[test]
fn goaccess_reads_combined() {
    goaccess_reads("combined", "COMBINED");
}

#[test]
fn goaccess_reads_common() {
    goaccess_reads("common", "COMMON");
}

fn json_server(extra: &[&str]) -> (Server, TempDir, PathBuf) {
    let dir = TempDir::new("jsonlog");
    let log = dir.path().join("access.log");
    let mut args = vec![
        "--workers",
        "1",
        "--access-log",
        log.to_str().unwrap(),
        "--log-format",
        "json",
    ];
    args.extend_from_slice(extra);
    let log_arg = log.clone();
    (Server::start(&args), dir, log_arg)
}

fn big_file(root: &Path, name: &str, len: u64) -> PathBuf {
    let p = root.join(name);
    std::fs::File::create(&p).unwrap().set_len(len).unwrap();
    p
}

#[test]
fn an_aborted_download_logs_the_bytes_really_sent() {
    const SIZE: u64 = 64 << 20;
    let (server, _dir, log) = json_server(&[]);
    big_file(server.root.as_ref().unwrap().path(), "big.bin", SIZE);
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut got = 0;
    let mut buf = vec![0u8; 64 << 10];
    while got < 256 << 10 {
        got += s.read(&mut buf).unwrap();
    }
    // Close with a reset: the server's next send fails.
    let sock = rustix::fd::AsFd::as_fd(&s);
    rustix::net::sockopt::set_socket_linger(sock, Some(Duration::ZERO)).unwrap();
    drop(s);
    let v = json_line(&log, "/big.bin");
    let body = v["body_bytes"].as_u64().unwrap();
    assert_eq!(v["status"], 200);
    assert_eq!(v["cut_short"], true, "{v}");
    assert!(
        body < SIZE && body + 1024 >= got as u64,
        "{body} logged, {got} received"
    );
    let cut: u64 = server
        .per_worker("steerd_responses_cut_short_total")
        .iter()
        .sum();
    assert!(cut >= 1, "counted in the metrics");
}

#[test]
fn a_file_truncated_under_the_transfer_logs_what_was_sent() {
    const SIZE: u64 = 64 << 20;
    let (server, _dir, log) = json_server(&[]);
    let path = big_file(server.root.as_ref().unwrap().path(), "shrinks.bin", SIZE);
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(b"GET /shrinks.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut first = vec![0u8; 64 << 10];
    let n = s.read(&mut first).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let mut rest = Vec::new();
    s.read_to_end(&mut rest)
        .expect("the server closes after what it could send");
    let received = &[&first[..n], &rest[..]].concat();
    let head_end = received.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let body = (received.len() - head_end) as u64;
    assert!(body < SIZE, "the response ended early: {body}");
    let v = json_line(&log, "/shrinks.bin");
    assert_eq!(v["body_bytes"].as_u64(), Some(body), "{v}");
    assert_eq!(v["cut_short"], true, "{v}");
}

#[test]
fn xff_names_the_client_only_for_trusted_peers() {
    let (trusting, _d1, log) = json_server(&["--real-ip-from", "127.0.0.0/8"]);
    let req = b"GET /index.html?xff HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 1.1.1.1, 2.2.2.2\r\n\
                X-Forwarded-For: 2001:db8::3\r\nConnection: close\r\n\r\n";
    assert_eq!(statuses(&exchange_raw(trusting.addr, req)), [200]);
    assert_eq!(json_line(&log, "?xff")["client"], "2001:db8::3");
    let bad = b"GET /index.html?bad HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 9.9.9.9, unknown\r\n\
                Connection: close\r\n\r\n";
    assert_eq!(statuses(&exchange_raw(trusting.addr, bad)), [200]);
    assert_eq!(json_line(&log, "?bad")["client"], "127.0.0.1");
    let (other, _d2, log2) = json_server(&["--real-ip-from", "10.0.0.0/8"]);
    assert_eq!(statuses(&exchange_raw(other.addr, req)), [200]);
    assert_eq!(json_line(&log2, "?xff")["client"], "127.0.0.1");
}

/// The chain `client, CDN, balancer` from a trusted peer, the CDN and the balancer in
/// `--real-ip-from`: with `--real-ip-recursive` the log names the client; without it,
/// the last address (the balancer's), as before. An element that is not an address
/// stops the walk at the address to its right. The flag alone is refused.
#[test]
fn xff_recursive_walks_past_every_trusted_proxy() {
    let proxies = [
        "--real-ip-from",
        "127.0.0.0/8",
        "--real-ip-from",
        "10.0.0.0/8",
        "--real-ip-from",
        "192.0.2.7",
    ];
    let mut args = proxies.to_vec();
    args.push("--real-ip-recursive");
    let (walking, _d1, log) = json_server(&args);
    let (last_hop, _d2, log2) = json_server(&proxies);
    // client, CDN, balancer; a second line as some proxies write it.
    let req = b"GET /index.html?chain HTTP/1.1\r\nHost: t\r\n\
                X-Forwarded-For: 203.0.113.9, 10.1.2.3\r\nX-Forwarded-For: 192.0.2.7\r\n\
                Connection: close\r\n\r\n";
    let garbage = b"GET /index.html?garbage HTTP/1.1\r\nHost: t\r\n\
                    X-Forwarded-For: 203.0.113.9, unknown, 10.1.2.3, 192.0.2.7\r\n\
                    Connection: close\r\n\r\n";
    for (srv, log, chain, stopped) in [
        (&walking, &log, "203.0.113.9", "10.1.2.3"),
        (&last_hop, &log2, "192.0.2.7", "192.0.2.7"),
    ] {
        assert_eq!(statuses(&exchange_raw(srv.addr, req)), [200]);
        assert_eq!(json_line(log, "?chain")["client"], chain);
        assert_eq!(statuses(&exchange_raw(srv.addr, garbage)), [200]);
        assert_eq!(json_line(log, "?garbage")["client"], stopped);
    }
    let (code, err) = run_to_exit(Command::new(binary()).args(["check", "--real-ip-recursive"]));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with("steerd: args: --real-ip-recursive needs --real-ip-from"),
        "{err}"
    );
}

const REQ: &[u8] = b"GET /index.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";

fn v2(ver_cmd: u8, fam: u8, block: &[u8]) -> Vec<u8> {
    let mut h = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    h.extend_from_slice(&[ver_cmd, fam]);
    h.extend_from_slice(&(block.len() as u16).to_be_bytes());
    h.extend_from_slice(block);
    h
}

fn v2_tcp6(src: &str) -> Vec<u8> {
    let mut b = src.parse::<std::net::Ipv6Addr>().unwrap().octets().to_vec();
    b.extend_from_slice(&[0; 15]);
    b.push(1);
    b.extend_from_slice(&[0x9c, 0x40, 0, 80]);
    b.extend_from_slice(&[0xe0, 0, 2, 7, 7]); // a TLV of a custom type, skipped
    v2(0x21, 0x21, &b)
}

/// Sends `pieces` with pauses between them (so they arrive as separate segments), then
/// reads until the server closes.
fn send_in_pieces(addr: SocketAddr, pieces: &[&[u8]]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    for (i, p) in pieces.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(30));
        }
        s.write_all(p).unwrap();
    }
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

#[test]
fn proxy_headers_from_a_trusted_peer_whole_and_in_pieces() {
    let (server, _d, log) = json_server(&["--proxy-protocol", "--real-ip-from", "127.0.0.0/8"]);
    let with = |h: &[u8], tag: &str| {
        let mut raw = h.to_vec();
        raw.extend_from_slice(&REQ.replace_first(b"/index.html", tag));
        raw
    };
    let v1 = b"PROXY TCP4 203.0.113.9 127.0.0.1 40000 80\r\n";
    assert_eq!(
        statuses(&exchange_raw(server.addr, &with(v1, "/index.html?v1"))),
        [200]
    );
    assert_eq!(json_line(&log, "?v1")["client"], "203.0.113.9");
    let raw = with(&v2_tcp6("2001:db8::9"), "/index.html?v2");
    assert_eq!(statuses(&exchange_raw(server.addr, &raw)), [200]);
    assert_eq!(json_line(&log, "?v2")["client"], "2001:db8::9");
    // In pieces: the v1 line cut twice, the v2 header byte by byte, each piece its own
    // segment (the first one wakes the deferred accept).
    let raw = with(v1, "/index.html?v1split");
    let resp = send_in_pieces(server.addr, &[&raw[..9], &raw[9..30], &raw[30..]]);
    assert_eq!(statuses(&resp), [200]);
    assert_eq!(json_line(&log, "?v1split")["client"], "203.0.113.9");
    let raw = with(&v2_tcp6("2001:db8::a"), "/index.html?v2split");
    let pieces: Vec<&[u8]> = raw[..20].chunks(1).chain([&raw[20..]]).collect();
    assert_eq!(statuses(&send_in_pieces(server.addr, &pieces)), [200]);
    assert_eq!(json_line(&log, "?v2split")["client"], "2001:db8::a");
    // LOCAL (a proxy's health check) and UNKNOWN keep the connection's own address.
    let raw = with(&v2(0x20, 0x00, b""), "/index.html?local");
    assert_eq!(statuses(&exchange_raw(server.addr, &raw)), [200]);
    assert_eq!(json_line(&log, "?local")["client"], "127.0.0.1");
    let raw = with(b"PROXY UNKNOWN\r\n", "/index.html?unknown");
    assert_eq!(statuses(&exchange_raw(server.addr, &raw)), [200]);
    assert_eq!(json_line(&log, "?unknown")["client"], "127.0.0.1");
}

#[test]
fn bad_missing_truncated_or_untrusted_headers_close_without_a_response() {
    let (server, _d, _log) = json_server(&["--proxy-protocol", "--real-ip-from", "127.0.0.0/8"]);
    for raw in [
        REQ,
        b"PROXY TCP4 203.0.113.9 127.0.0.1 040000 80\r\nGET / HTTP/1.1\r\n\r\n",
        b"PROXY TCP4 203.0.113.9 127.0.0.1 40000 80\nGET / HTTP/1.1\r\n\r\n",
        &v2(0x22, 0x11, &[0; 12]),
    ] {
        assert_eq!(
            exchange_raw(server.addr, raw),
            b"",
            "{:?}",
            String::from_utf8_lossy(raw)
        );
    }
    // Truncated: the client stops sending in the middle of the header.
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(b"PROXY TCP4 203.0").unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    assert_eq!(out, b"");
    let refused: u64 = server
        .per_worker("steerd_proxy_headers_refused_total")
        .iter()
        .sum();
    assert!(refused >= 5, "{refused}");
    // A peer outside --real-ip-from may not send one at all.
    let (strict, _d2, _l2) = json_server(&["--proxy-protocol", "--real-ip-from", "10.0.0.0/8"]);
    let mut raw = b"PROXY TCP4 203.0.113.9 127.0.0.1 40000 80\r\n".to_vec();
    raw.extend_from_slice(REQ);
    assert_eq!(exchange_raw(strict.addr, &raw), b"");
}

#[test]
fn syslog_through_a_test_owned_socket() {
    let dir = TempDir::new("syslog");
    let sock = dir.path().join("log.sock");
    let daemon = std::os::unix::net::UnixDatagram::bind(&sock).unwrap();
    daemon.set_read_timeout(Some(PATIENCE)).unwrap();
    let server = Server::start(&[
        "--workers",
        "1",
        "--access-log",
        "syslog",
        "--syslog-socket",
        sock.to_str().unwrap(),
    ]);
    assert_eq!(get(server.addr, "/index.html?syslog").0, 200);
    let mut buf = [0u8; 4096];
    let n = daemon.recv(&mut buf).unwrap();
    let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
    let pid = server.worker_pid(0);
    assert!(msg.starts_with("<30>"), "{msg}");
    assert!(
        msg.contains(&format!(" steerd[{pid}]: 127.0.0.1 - - [")),
        "{msg}"
    );
    assert!(
        msg.ends_with("\"GET /index.html?syslog HTTP/1.1\" 200 18 \"-\" \"-\""),
        "{msg}"
    );
}

#[test]
fn stdout_under_user_nobody_is_the_inherited_descriptor() {
    if !is_root() {
        crate::support::skip::skip_or_fail(
            &crate::support::skip::this_test(),
            "needs root to run as --user nobody",
        );
        return;
    }
    // Standard output is a root-owned 0600 file nobody could open by path.
    let dir = TempDir::new("stdout");
    let out = dir.path().join("stdout.txt");
    let file = std::fs::File::create(&out).unwrap();
    std::fs::set_permissions(&out, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let root = TempDir::new("stdout-root");
    std::fs::write(root.path().join("index.html"), "hi\n").unwrap();
    std::fs::set_permissions(
        root.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let server = Server::spawn_with_stdout(
        std::process::Command::new(binary()).args([
            "serve",
            root.path().to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--workers",
            "1",
            "--user",
            "nobody",
            "--access-log",
            "-",
        ]),
        file,
    );
    assert_eq!(get(server.addr, "/index.html?stdout").0, 200);
    let lines = wait_lines(&out, 1);
    assert!(
        lines[0].contains("\"GET /index.html?stdout HTTP/1.1\" 200 3 "),
        "{lines:?}"
    );
}

trait ReplaceFirst {
    fn replace_first(&self, from: &[u8], to: &str) -> Vec<u8>;
}

impl ReplaceFirst for [u8] {
    fn replace_first(&self, from: &[u8], to: &str) -> Vec<u8> {
        match self.windows(from.len()).position(|w| w == from) {
            Some(i) => [&self[..i], to.as_bytes(), &self[i + from.len()..]].concat(),
            None => self.to_vec(),
        }
    }
}

/// Sends `raw` and waits, reading, until the server closes; returns the first response's
/// status line and the body bytes of the last one (the 408).
fn sent_then_timed_out(addr: SocketAddr, raw: &[u8]) -> (Vec<u16>, u64) {
    let got = exchange_raw(addr, raw);
    let at = got
        .windows(9)
        .rposition(|w| w == b"HTTP/1.1 ")
        .expect("a response");
    let last = &got[at..];
    let head_end = last.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    (statuses(&got), (last.len() - head_end) as u64)
}

/// A head that does not arrive within `--header-timeout` is answered 408, and that
/// answer is logged like any refused head, in every format: the first line as far as it
/// came (`-` when no head had begun: a body being discarded), status 408, and the body
/// bytes the client really received.
#[test]
fn a_408_at_the_header_timeout_is_logged() {
    let cases: [(&[u8], &str, &[u16]); 3] = [
        (
            b"GET /half HTTP/1.1\r\nHost: t\r\n",
            "GET /half HTTP/1.1",
            &[408],
        ),
        (b"GET /pa", "GET /pa", &[408]),
        (
            b"GET /index.html HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc",
            "-",
            &[200, 408],
        ),
    ];
    for format in ["combined", "common", "json"] {
        let dir = TempDir::new("log408");
        let log = dir.path().join("access.log");
        let log_arg = log.display().to_string();
        let server = Server::start(&[
            "--workers",
            "1",
            "--header-timeout",
            "500ms",
            "--access-log",
            &log_arg,
            "--log-format",
            format,
        ]);
        let mut bodies = Vec::new();
        for (raw, _, want) in cases {
            let (seen, body) = sent_then_timed_out(server.addr, raw);
            assert_eq!(seen, want, "{format}: {}", String::from_utf8_lossy(raw));
            assert!(body > 0, "{format}: the 408 has its page");
            bodies.push(body);
        }
        let lines = wait_lines(&log, 4);
        let timed_out: Vec<&String> = lines.iter().filter(|l| l.contains("408")).collect();
        assert_eq!(timed_out.len(), 3, "{format}: {lines:#?}");
        for ((_, request, _), (line, body)) in cases.iter().zip(timed_out.into_iter().zip(bodies)) {
            if format == "json" {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                assert_eq!(v["status"], 408, "{line}");
                assert_eq!(v["request"], *request, "{line}");
                assert_eq!(v["body_bytes"].as_u64(), Some(body), "{line}");
                assert_eq!(v["cut_short"], false, "{line}");
            } else {
                let want = format!("\"{request}\" 408 {body}");
                assert!(line.contains(&want), "{format}: {want} in {line}");
                let tail = if format == "combined" {
                    " \"-\" \"-\""
                } else {
                    ""
                };
                assert!(line.ends_with(&format!("{want}{tail}")), "{line}");
            }
        }
    }
}
