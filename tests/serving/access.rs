//! Who may connect and how much, through the binary: `--allow`/`--deny` from different
//! 127.x source addresses and from IPv6 addresses in a network namespace of the test's
//! own, `private`, a trusted proxy's clients held to the list (X-Forwarded-For and PROXY
//! v2, 403), `--rate-limit` under a burst (429 with Retry-After, another address
//! unaffected, the bucket refilling), `--max-rate` pacing a 1 MB download.
//!
//! One worker each, so one table of buckets answers every connection.

use crate::support;

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use support::server::{Server, TempDir};

const IO_TIMEOUT: Duration = Duration::from_secs(10);

fn site(tag: &str) -> TempDir {
    let dir = TempDir::new(tag);
    dir.write_all(&[("index.html", "home\n")]);
    dir
}

fn serve(root: &TempDir, args: &[&str]) -> Server {
    let mut all = vec!["--workers", "1", "--metrics", "127.0.0.1:0"];
    all.extend_from_slice(args);
    Server::start_in(root.path(), &all, &[])
}

/// A TCP connection from `src` to `to`, every wait bounded by [`IO_TIMEOUT`].
fn connect_from(src: IpAddr, to: SocketAddr) -> std::io::Result<TcpStream> {
    use rustix::net::{sockopt, AddressFamily, SocketType};
    let family = match src {
        IpAddr::V4(_) => AddressFamily::INET,
        IpAddr::V6(_) => AddressFamily::INET6,
    };
    let fd = rustix::net::socket(family, SocketType::STREAM, None)?;
    sockopt::set_socket_timeout(&fd, sockopt::Timeout::Send, Some(IO_TIMEOUT))?;
    sockopt::set_socket_timeout(&fd, sockopt::Timeout::Recv, Some(IO_TIMEOUT))?;
    rustix::net::bind(&fd, &SocketAddr::new(src, 0))?;
    rustix::net::connect(&fd, &to)?;
    Ok(TcpStream::from(fd))
}

/// The whole answer to `head` sent from `src` (`Connection: close`), or `None` when the
/// server closed the connection without a byte (refused at accept).
fn exchange(src: IpAddr, to: SocketAddr, head: &[u8]) -> Option<String> {
    let mut s = connect_from(src, to).unwrap_or_else(|e| panic!("connect from {src}: {e}"));
    // The write may meet a connection already closed: what matters is what is read.
    let _ = s.write_all(head);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    (!raw.is_empty()).then(|| String::from_utf8_lossy(&raw).into_owned())
}

/// The status of `GET /` from `src`; 0 when refused at accept.
fn status_from(src: IpAddr, to: SocketAddr) -> u16 {
    let head = b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    exchange(src, to, head).map_or(0, |t| status_of(&t))
}

fn status_of(text: &str) -> u16 {
    text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0)
}

fn v4(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
}

/// Whether this machine lets a socket bind 127.0.0.2 to 127.0.0.4.
fn can_bind_sources(name: &str) -> bool {
    for last in 2..=4 {
        if let Err(e) = std::net::TcpListener::bind((v4(last), 0)) {
            support::skip::skip_or_fail(name, &format!("cannot bind 127.0.0.{last}: {e}"));
            return false;
        }
    }
    true
}

#[test]
fn allow_and_deny_by_source_address() {
    if !can_bind_sources("allow_and_deny_by_source_address") {
        return;
    }
    let dir = site("access-lists");
    let srv = serve(&dir, &["--allow", "127.0.0.0/30", "--deny", "127.0.0.2"]);
    assert_eq!(status_from(v4(1), srv.addr), 200, "allowed");
    assert_eq!(status_from(v4(3), srv.addr), 200, "allowed");
    assert_eq!(status_from(v4(2), srv.addr), 0, "denied: closed at accept");
    assert_eq!(status_from(v4(4), srv.addr), 0, "in no --allow network");
    support::server::wait_until("the refusals are counted", || {
        srv.metric("steerd_connections_refused_access_total") == 2
    });
    let only_deny = serve(&dir, &["--deny", "127.0.0.4"]);
    assert_eq!(
        status_from(v4(3), only_deny.addr),
        200,
        "no --allow: all pass"
    );
    assert_eq!(status_from(v4(4), only_deny.addr), 0);
}

#[test]
fn private_and_loopback_name_the_local_ranges() {
    if !can_bind_sources("private_and_loopback_name_the_local_ranges") {
        return;
    }
    let dir = site("access-private");
    for word in ["private", "loopback"] {
        let srv = serve(&dir, &["--allow", word, "--deny", "127.0.0.3/32"]);
        assert_eq!(status_from(v4(2), srv.addr), 200, "{word}");
        assert_eq!(
            status_from(v4(3), srv.addr),
            0,
            "{word}: the deny still holds"
        );
    }
    let elsewhere = serve(&dir, &["--allow", "10.0.0.0/8"]);
    assert_eq!(status_from(v4(1), elsewhere.addr), 0);
}

/// `GET /` through the trusted proxy 127.0.0.1 for the client `xff`.
fn forwarded(srv: &Server, xff: &str) -> u16 {
    let head =
        format!("GET / HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: {xff}\r\nConnection: close\r\n\r\n");
    exchange(v4(1), srv.addr, head.as_bytes()).map_or(0, |t| status_of(&t))
}

#[test]
fn a_trusted_proxys_clients_are_held_to_the_list() {
    let dir = site("access-proxy");
    let srv = serve(
        &dir,
        &[
            "--allow",
            "private",
            "--deny",
            "10.9.0.0/16",
            "--real-ip-from",
            "127.0.0.1",
        ],
    );
    assert_eq!(forwarded(&srv, "10.1.2.3"), 200);
    assert_eq!(forwarded(&srv, "192.0.2.7"), 403, "not private");
    assert_eq!(forwarded(&srv, "10.9.0.1"), 403, "denied");
    // A keep-alive connection is held to it per request.
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    for (xff, want) in [
        ("10.1.2.3", "200"),
        ("198.51.100.1", "403"),
        ("10.2.0.1", "200"),
    ] {
        let head = format!("GET / HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: {xff}\r\n\r\n");
        s.write_all(head.as_bytes()).unwrap();
        let mut buf = [0u8; 2048];
        let n = s.read(&mut buf).unwrap();
        let text = String::from_utf8_lossy(&buf[..n]);
        assert!(
            text.starts_with(&format!("HTTP/1.1 {want}")),
            "{xff}: {text}"
        );
    }
    // An untrusted peer's header names nothing: the peer itself is let in.
    let untrusted = serve(
        &dir,
        &["--allow", "private", "--real-ip-from", "10.0.0.0/8"],
    );
    assert_eq!(forwarded(&untrusted, "192.0.2.7"), 200);
}

/// A PROXY v2 header from 127.0.0.1 naming `client`.
fn proxy_v2(client: [u8; 4]) -> Vec<u8> {
    let mut h = b"\r\n\r\n\0\r\nQUIT\n\x21\x11\x00\x0c".to_vec();
    h.extend_from_slice(&client);
    h.extend_from_slice(&[127, 0, 0, 1, 0x30, 0x39, 0, 80]);
    h.extend_from_slice(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    h
}

#[test]
fn a_proxy_v2_client_is_held_to_the_list() {
    let dir = site("access-pp2");
    let srv = serve(
        &dir,
        &[
            "--allow",
            "private",
            "--proxy-protocol",
            "--real-ip-from",
            "127.0.0.1",
        ],
    );
    let status = |client| exchange(v4(1), srv.addr, &proxy_v2(client)).map_or(0, |t| status_of(&t));
    assert_eq!(status([192, 168, 7, 7]), 200);
    assert_eq!(status([192, 0, 2, 7]), 403);
}

/// Sends `n` requests on one keep-alive connection from `src`; each answer's status
/// and `Retry-After`.
fn burst(src: IpAddr, to: SocketAddr, n: usize) -> Vec<(u16, Option<String>)> {
    let mut s = connect_from(src, to).expect("connect");
    let mut out = Vec::new();
    for _ in 0..n {
        s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        let mut buf = [0u8; 4096];
        let got = s.read(&mut buf).unwrap();
        let text = String::from_utf8_lossy(&buf[..got]).into_owned();
        let retry = text
            .lines()
            .find_map(|l| l.strip_prefix("Retry-After: ").map(str::to_string));
        out.push((status_of(&text), retry));
    }
    out
}

#[test]
fn a_burst_past_the_rate_limit_is_429_and_the_bucket_refills() {
    if !can_bind_sources("a_burst_past_the_rate_limit_is_429_and_the_bucket_refills") {
        return;
    }
    let dir = site("access-rate");
    let srv = serve(&dir, &["--rate-limit", "5"]);
    let first = burst(v4(2), srv.addr, 7);
    let statuses: Vec<u16> = first.iter().map(|r| r.0).collect();
    // Five at once (the burst), then none: a sixth within the same instant is refused.
    assert_eq!(&statuses[..5], [200; 5], "{first:?}");
    assert_eq!(statuses[5], 429, "{first:?}");
    assert_eq!(first[5].1.as_deref(), Some("1"), "Retry-After: {first:?}");
    assert_eq!(first[0].1, None);
    assert_eq!(
        status_from(v4(3), srv.addr),
        200,
        "another address is not limited"
    );
    std::thread::sleep(Duration::from_millis(1200));
    let later = burst(v4(2), srv.addr, 1);
    assert_eq!(later[0].0, 200, "the bucket refilled: {later:?}");
}

#[test]
fn max_rate_paces_a_download() {
    let dir = site("access-pace");
    let body = vec![b'x'; 1 << 20];
    std::fs::write(dir.path().join("big.bin"), &body).unwrap();
    let srv = serve(&dir, &["--max-rate", "200k"]);
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let started = Instant::now();
    s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let took = started.elapsed();
    assert!(
        raw.len() > 1 << 20,
        "the whole file came: {} bytes",
        raw.len()
    );
    // 1 MiB at 200 KiB/s is 5.1 s. The kernel's pacing lets the first window out at
    // once and was measured about 1.6 times the rate on loopback (3.3 s): half the
    // set rate's time is the bound (unpaced, the download takes milliseconds).
    let at_rate = Duration::from_secs_f64(body.len() as f64 / (200.0 * 1024.0));
    assert!(took >= at_rate / 2, "1 MiB at 200k took only {took:?}");
}

/// Moves this thread (only) into a network namespace of its own, with `lo` up and
/// `addrs` on it; `Err` says why not (not root, no `ip`).
fn own_netns(addrs: &[&str]) -> Result<(), String> {
    use rustix::thread::UnshareFlags;
    // SAFETY: NEWNET alone changes this thread's network namespace; no descriptor table
    // is unshared, so no descriptor of another thread becomes unusable here.
    #[allow(unsafe_code)]
    unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWNET) }
        .map_err(|e| format!("unshare(CLONE_NEWNET): {e}"))?;
    let ip = |args: &[&str]| {
        let out = std::process::Command::new("ip").args(args).output();
        match out {
            Ok(o) if o.status.success() => Ok(()),
            Ok(o) => Err(format!(
                "ip {args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            )),
            Err(e) => Err(format!("ip: {e}")),
        }
    };
    ip(&["link", "set", "lo", "up"])?;
    for a in addrs {
        ip(&["-6", "addr", "add", a, "dev", "lo", "nodad"])?;
    }
    Ok(())
}

#[test]
fn allow_and_deny_ipv6_sources_in_a_network_namespace() {
    let name = "allow_and_deny_ipv6_sources_in_a_network_namespace";
    // A namespace belongs to the thread that made it, and to the processes it spawns.
    let outcome = std::thread::spawn(|| {
        own_netns(&["2001:db8::2/128", "fd00::5/128", "fd00::6/128"])?;
        let dir = site("access-v6");
        let srv = serve(
            &dir,
            &[
                "--listen", "[::1]:0", "--allow", "private", "--deny", "fd00::5",
            ],
        );
        let to = *srv
            .addrs()
            .iter()
            .find(|a| a.is_ipv6())
            .expect("[::1] listener");
        let from = |s: &str| status_from(s.parse().unwrap(), to);
        Ok::<_, String>([
            ("::1", from("::1")),
            ("fd00::6", from("fd00::6")),
            ("fd00::5", from("fd00::5")),
            ("2001:db8::2", from("2001:db8::2")),
        ])
    })
    .join()
    .expect("the namespace thread");
    let seen = match outcome {
        Ok(seen) => seen,
        Err(why) => return support::skip::skip_or_fail(name, &why),
    };
    let want = [200, 200, 0, 0];
    for ((src, got), want) in seen.iter().zip(want) {
        assert_eq!(*got, want, "from {src}: {seen:?}");
    }
}

#[test]
fn behind_a_trusted_proxy_each_client_has_its_own_bucket() {
    let dir = site("access-rate-xff");
    let srv = serve(&dir, &["--rate-limit", "2", "--real-ip-from", "127.0.0.1"]);
    let statuses = |xff: &str| -> Vec<u16> { (0..3).map(|_| forwarded(&srv, xff)).collect() };
    assert_eq!(
        statuses("192.0.2.1"),
        [200, 200, 429],
        "the client, not the proxy"
    );
    assert_eq!(
        statuses("192.0.2.2"),
        [200, 200, 429],
        "another client of the proxy"
    );
}

#[test]
fn check_explains_whether_an_address_is_let_in() {
    let dir = site("access-explain");
    let file = dir.path().join("site.conf");
    std::fs::write(&file, "allow private\ndeny 10.1.0.0/16\n").unwrap();
    let conf = file.display().to_string();
    let explain = |addr: &str| {
        let out =
            support::server::run_steerd(&["check", "--config", &conf, "--explain-addr", addr], b"");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let at = |line: u32| format!("{conf}:{line}");
    assert_eq!(
        explain("10.1.2.3"),
        format!(
            "address: 10.1.2.3\naccess: refused by deny 10.1.0.0/16 ({})\n",
            at(2)
        )
    );
    assert_eq!(
        explain("fd00::1"),
        format!(
            "address: fd00::1\naccess: admitted by allow fc00::/7 ({})\n",
            at(1)
        )
    );
    assert!(explain("203.0.113.5").contains("access: refused: in no --allow network"));
    let bad = support::server::run_steerd(&["check", "--explain-addr", "nope"], b"");
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && err.contains("--explain-addr \"nope\""),
        "{err}"
    );
    let open = support::server::run_steerd(&["check", "--explain-addr", "203.0.113.5"], b"");
    let text = String::from_utf8_lossy(&open.stdout);
    assert!(text.contains("admitted (no --allow given)"), "{text}");
}
