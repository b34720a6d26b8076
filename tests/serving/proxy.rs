//! `--proxy 'GLOB UPSTREAM'` through the real binary: the rule in the rules' list (flags,
//! the configuration file, host blocks), what `check` and `check --explain` say of it,
//! the refusals of a bad upstream and of the limits' flags, and what a client meets on a
//! proxied path and beside it.

use crate::support;

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};
use support::client::*;
use support::server::{run_steerd, Server, TempDir};
use support::upstream::{refusing_spec, Answer, Listen, Seen, Upstream};

fn serve(root: &Path, args: &[&str]) -> Server {
    let mut all = vec!["--workers", "1"];
    all.extend_from_slice(args);
    Server::start_in(root, &all, &[])
}

/// `steerd check ARGS`: its exit status and standard output and error.
fn check(args: &[&str]) -> (bool, String, String) {
    let mut all = vec!["check"];
    all.extend_from_slice(args);
    let out = run_steerd(&all, b"");
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.success(), text(out.stdout), text(out.stderr))
}

#[test]
fn check_explain_names_the_upstream_that_answers() {
    let dir = TempDir::new("proxy-explain");
    dir.write_all(&[("index.html", "home\n")]);
    let root = dir.path().to_str().unwrap();
    let rules = [
        "--proxy",
        "/api/** unix:/run/steerd-test-app.sock",
        "--proxy",
        "/ws http://127.0.0.1:9001",
        "--redirect",
        "/old /index.html",
    ];
    let explain = |path: &str| {
        let mut args = rules.to_vec();
        args.extend([root, "--explain", path]);
        let (ok, out, err) = check(&args);
        assert!(ok, "{err}");
        out
    };
    let api = explain("/api/v1/settings");
    assert!(
        api.contains("rule: --proxy /api/** unix:/run/steerd-test-app.sock (proxy /api/**)"),
        "{api}"
    );
    assert!(
        api.contains("answer: forwarded to unix:/run/steerd-test-app.sock"),
        "{api}"
    );
    let ws = explain("/ws");
    assert!(
        ws.contains("answer: forwarded to http://127.0.0.1:9001"),
        "{ws}"
    );
    let file = explain("/index.html");
    assert!(
        file.contains("rule: none") && file.contains("answer: 200"),
        "{file}"
    );
    let mut args = rules.to_vec();
    args.push(root);
    let (ok, out, err) = check(&args);
    let both = out + &err;
    assert!(ok, "{both}");
    assert!(
        both.contains("forwards to unix:/run/steerd-test-app.sock, which cannot be reached"),
        "check warns of a socket that is not there: {both}"
    );
}

#[test]
fn a_host_block_and_the_file_carry_proxy_rules() {
    let dir = TempDir::new("proxy-file");
    dir.write_all(&[("a/index.html", "a\n"), ("b/index.html", "b\n")]);
    let at = |sub: &str| dir.path().join(sub).to_str().unwrap().to_string();
    let conf = dir.path().join("steerd.conf");
    let text = format!(
        "max-body 64k\nproxy-timeout 5\nhost a.test\nroot {}\nproxy /api/** http://127.0.0.1:8001\n\
         host b.test\nroot {}\n",
        at("a"),
        at("b")
    );
    std::fs::write(&conf, text).unwrap();
    let f = conf.to_str().unwrap();
    let explain = |host: &str| {
        let args = ["--config", f, "--explain", "/api/x", "--explain-host", host];
        let (ok, out, err) = check(&args);
        assert!(ok, "{err}");
        out
    };
    let a = explain("a.test");
    assert!(a.contains(&format!("rule: {f}:5 (proxy /api/**)")), "{a}");
    assert!(
        a.contains("answer: forwarded to http://127.0.0.1:8001"),
        "{a}"
    );
    let b = explain("b.test");
    assert!(b.contains("rule: none") && !b.contains("forwarded"), "{b}");
}

#[test]
fn bad_upstreams_and_limits_are_refused_by_name() {
    for (args, needle) in [
        (
            ["--proxy", "/api/** localhost:8080"],
            "expected unix:/path/to.sock or http://IP:PORT",
        ),
        (["--proxy", "/api/** http://localhost:80"], "IP literal"),
        (["--proxy", "/api/** unix:run/app.sock"], "must be absolute"),
        (["--proxy", "/api/**"], "expected GLOB UPSTREAM"),
        (
            ["--max-body", "lots"],
            "--max-body \"lots\": expected bytes",
        ),
        (["--proxy-timeout", "-1"], "--proxy-timeout"),
        (["--proxy-max-conns", "0"], "--proxy-max-conns \"0\""),
    ] {
        let (ok, out, err) = check(&args);
        assert!(!ok, "{args:?} accepted: {out}");
        assert!(err.contains(needle), "{args:?}: {err}");
        if args[0] == "--proxy" {
            assert!(err.contains(&format!("--proxy {:?}", args[1])), "{err}");
        }
    }
}

#[test]
fn files_beside_proxied_paths_are_unchanged() {
    let dir = TempDir::new("proxy-files");
    dir.write_all(&[("index.html", "home\n")]);
    let rule = format!("/api/** {}", refusing_spec(Listen::Unix));
    let srv = serve(dir.path(), &["--proxy", &rule]);
    let r = get(srv.addr, "/index.html", "");
    assert_eq!((r.status, r.text().as_str()), (200, "home\n"));
    let post = exchange(
        srv.addr,
        "POST /index.html HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nab",
    );
    assert_eq!(post.status, 405, "a file still refuses POST");
    let r = get(srv.addr, "/api/v1", "");
    assert_eq!(r.status, 502, "nothing listens at the upstream");
}

/// A site with `index.html` served by steerd, `/api/**` forwarded to `up`.
fn in_front(tag: &str, up: &Upstream, more: &[&str]) -> (TempDir, Server) {
    let dir = TempDir::new(tag);
    dir.write_all(&[("index.html", "home\n")]);
    let rule = format!("/api/** {}", up.spec());
    let mut args = vec!["--proxy", rule.as_str()];
    args.extend_from_slice(more);
    let srv = serve(dir.path(), &args);
    (dir, srv)
}

fn fixed(_: &Seen) -> Answer {
    let lines = [
        "X-App: 7",
        "Connection: X-Private",
        "X-Private: hop",
        "Keep-Alive: timeout=5",
    ];
    Answer::Fixed(201, lines.map(String::from).to_vec(), b"made it\n".to_vec())
}

#[test]
fn a_get_is_relayed_over_a_unix_socket_and_a_loopback_port() {
    for listen in [Listen::Unix, Listen::Tcp] {
        let up = Upstream::start(listen, fixed);
        let (_dir, srv) = in_front("proxy-get", &up, &[]);
        let r = get(srv.addr, "/api/v1/thing?x=1", "");
        assert_eq!(r.status, 201, "{listen:?}");
        assert_eq!(r.text(), "made it\n");
        assert_eq!(r.header("x-app"), Some("7"));
        for hop in ["x-private", "keep-alive", "connection"] {
            let value = r.header(hop);
            assert!(
                value.is_none() || value == Some("close"),
                "{hop} relayed: {value:?}"
            );
        }
        let seen = up.seen();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].request_line(), b"GET /api/v1/thing?x=1 HTTP/1.1");
        assert_eq!(get(srv.addr, "/index.html", "").text(), "home\n");
        assert_eq!(up.seen().len(), 1, "a file is not forwarded");
    }
}

#[test]
fn forwarded_fields_are_set_and_hop_by_hop_ones_removed() {
    let up = Upstream::start(Listen::Unix, fixed);
    let (_dir, srv) = in_front("proxy-fields", &up, &[]);
    let extra = "Connection: keep-alive, X-Secret\r\nX-Secret: s\r\nTE: trailers\r\n\
                 Keep-Alive: 5\r\nProxy-Authorization: x\r\nX-Forwarded-For: 6.6.6.6\r\n\
                 X-Forwarded-Host: evil.test\r\nX-Kept: yes\r\n";
    let mut s = TcpStream::connect(srv.addr).unwrap();
    let req = format!("GET /api/f HTTP/1.1\r\nHost: app.test\r\n{extra}\r\n");
    s.write_all(req.as_bytes()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut rd = BufReader::new(s);
    assert_eq!(read_response(&mut rd, false).unwrap().status, 201);
    let seen = &up.seen()[0];
    for gone in [
        "x-secret",
        "te",
        "keep-alive",
        "proxy-authorization",
        "connection",
    ] {
        assert_eq!(seen.field(gone), None, "{gone} forwarded");
    }
    assert_eq!(seen.fields("x-forwarded-for"), ["127.0.0.1"]);
    assert_eq!(seen.fields("x-forwarded-host"), ["app.test"]);
    assert_eq!(seen.fields("x-forwarded-proto"), ["http"]);
    assert_eq!(seen.field("x-kept").as_deref(), Some("yes"));
    assert_eq!(seen.field("host").as_deref(), Some("app.test"));
    // The connection persisted: a second request on it is answered too.
    let again = "GET /api/g HTTP/1.1\r\nHost: app.test\r\n\r\n";
    rd.get_mut().write_all(again.as_bytes()).unwrap();
    assert_eq!(read_response(&mut rd, false).unwrap().status, 201);
    assert_eq!(up.seen().len(), 2);
}

#[test]
fn a_trusted_peer_keeps_its_forwarded_fields() {
    let up = Upstream::start(Listen::Tcp, fixed);
    let (_dir, srv) = in_front("proxy-trusted", &up, &["--real-ip-from", "127.0.0.0/8"]);
    let r = get(
        srv.addr,
        "/api/t",
        "X-Forwarded-For: 203.0.113.9\r\nX-Forwarded-Proto: https\r\n",
    );
    assert_eq!(r.status, 201);
    let seen = &up.seen()[0];
    assert_eq!(seen.fields("x-forwarded-for"), ["203.0.113.9, 127.0.0.1"]);
    assert_eq!(seen.fields("x-forwarded-proto"), ["https"]);
}

#[test]
fn an_upstream_that_refuses_is_502_for_both_kinds() {
    for listen in [Listen::Unix, Listen::Tcp] {
        let dir = TempDir::new("proxy-502");
        let rule = format!("/api/** {}", refusing_spec(listen));
        let srv = serve(dir.path(), &["--proxy", &rule]);
        let r = get(srv.addr, "/api/x", "");
        assert_eq!(r.status, 502, "{listen:?}");
        assert!(r.text().contains("502 Bad Gateway"));
    }
}

#[test]
fn no_head_within_the_proxy_timeout_is_504() {
    let up = Upstream::start(Listen::Unix, |_| Answer::Silent);
    let (_dir, srv) = in_front("proxy-504", &up, &["--proxy-timeout", "500ms"]);
    let r = get(srv.addr, "/api/slow", "");
    assert_eq!(r.status, 504);
    assert_eq!(r.header("connection"), Some("close"));
}

#[test]
fn chunked_and_close_delimited_bodies_arrive_whole() {
    fn answer(seen: &Seen) -> Answer {
        let pieces = vec![b"one ".to_vec(), b"two ".to_vec(), vec![b'x'; 40_000]];
        match seen.target().as_str() {
            "/api/chunked" => Answer::Chunked(pieces, Duration::from_millis(20)),
            _ => Answer::CloseDelimited(vec![b'y'; 100_000]),
        }
    }
    let up = Upstream::start(Listen::Unix, answer);
    let (_dir, srv) = in_front("proxy-bodies", &up, &[]);
    let r = get(srv.addr, "/api/chunked", "");
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), 8 + 40_000);
    assert!(r.body.starts_with(b"one two xx"));
    let r = get(srv.addr, "/api/close", "");
    assert_eq!(
        r.header("transfer-encoding"),
        Some("chunked"),
        "re-framed for 1.1"
    );
    assert_eq!(r.body, vec![b'y'; 100_000]);
    // HTTP/1.0 reads it to the close.
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.write_all(b"GET /api/close HTTP/1.0\r\n\r\n").unwrap();
    let mut all = Vec::new();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.read_to_end(&mut all).unwrap();
    assert!(
        all.starts_with(b"HTTP/1.0 200 "),
        "{:?}",
        String::from_utf8_lossy(&all[..40])
    );
    assert!(all.ends_with(&[b'y'; 1000]));
}

#[test]
fn a_body_cut_short_closes_the_client_connection() {
    let up = Upstream::start(Listen::Unix, |_| {
        Answer::CutShort(1000, b"partial".to_vec())
    });
    let (_dir, srv) = in_front("proxy-cut", &up, &[]);
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.write_all(b"GET /api/cut HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut all = Vec::new();
    let _ = s.read_to_end(&mut all);
    let text = String::from_utf8_lossy(&all);
    assert!(text.contains("Content-Length: 1000"), "{text}");
    assert!(text.ends_with("partial"), "closed after what came: {text}");
}

#[test]
fn an_sse_event_reaches_the_client_at_once() {
    let gap = Duration::from_secs(3);
    fn events(_: &Seen) -> Answer {
        let list = vec![
            "data: first\n\n".to_string(),
            "data: second\n\n".to_string(),
        ];
        Answer::Sse(list, Duration::from_secs(3))
    }
    let up = Upstream::start(Listen::Unix, events);
    let (_dir, srv) = in_front("proxy-sse", &up, &[]);
    let mut s = TcpStream::connect(srv.addr).unwrap();
    let began = Instant::now();
    s.write_all(b"GET /api/events HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("data: first") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed before the first event");
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got);
    assert!(
        !text.contains("second"),
        "the first event waited for the second: {text}"
    );
    assert!(
        began.elapsed() < gap,
        "the first event came only after the gap"
    );
}

/// The upstream's echo of a body: `{method} {target} {length} {sha256}`.
fn echoed(method: &str, target: &str, body: &[u8]) -> String {
    let sum = support::upstream::sha256_hex(body);
    format!("{method} {target} {} {sum}\n", body.len())
}

/// Sends `head` then `body` in pieces on a new connection; the response.
fn upload(srv: &Server, head: &str, body: &[u8]) -> Response {
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    for piece in body.chunks(64 * 1024) {
        s.write_all(piece).unwrap();
    }
    read_response(&mut BufReader::new(s), false).unwrap()
}

#[test]
fn a_3_mb_post_and_a_chunked_2_mb_put_arrive_whole() {
    let up = Upstream::start(Listen::Tcp, |_| Answer::Echo);
    let (_dir, srv) = in_front("proxy-upload", &up, &["--max-body", "4M"]);
    let body: Vec<u8> = (0..3 << 20).map(|i: u32| (i * 7 % 251) as u8).collect();
    let head = format!(
        "POST /api/up HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let r = upload(&srv, &head, &body);
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), echoed("POST", "/api/up", &body));
    let two = &body[..2 << 20];
    let mut chunked = Vec::new();
    for piece in two.chunks(100_000) {
        chunked.extend(format!("{:x}\r\n", piece.len()).bytes());
        chunked.extend(piece);
        chunked.extend(b"\r\n");
    }
    chunked.extend(b"0\r\n\r\n");
    let head = "PUT /api/put HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\
                Connection: close\r\n\r\n";
    let r = upload(&srv, head, &chunked);
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), echoed("PUT", "/api/put", two));
    let seen = up.seen();
    assert_eq!(seen[0].fields("content-length"), [(3 << 20).to_string()]);
    assert!(seen[1].chunked, "a chunked body goes on chunked");
}

#[test]
fn a_body_past_max_body_is_413_before_the_upstream_sees_it() {
    let up = Upstream::start(Listen::Unix, |_| Answer::Echo);
    let (_dir, srv) = in_front("proxy-413", &up, &["--max-body", "64k"]);
    let head = "POST /api/big HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n";
    let r = upload(&srv, head, b"");
    assert_eq!(r.status, 413);
    let small =
        "POST /api/ok HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nConnection: close\r\n\r\n";
    assert_eq!(
        upload(&srv, small, b"hello").text(),
        echoed("POST", "/api/ok", b"hello")
    );
    let big = vec![b'z'; 100_000];
    let mut chunked = format!("{:x}\r\n", big.len()).into_bytes();
    chunked.extend(&big);
    chunked.extend(b"\r\n0\r\n\r\n");
    let head = "POST /api/chunked HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_eq!(upload(&srv, head, &chunked).status, 413);
    // The chunked one was cut off before its last chunk: never a whole request.
    let seen = up.seen();
    assert_eq!(seen[0].request_line(), b"POST /api/ok HTTP/1.1");
    assert!(
        seen.iter().all(|s| s.body.len() < 100_000),
        "a whole body went on"
    );
    assert!(seen
        .iter()
        .all(|s| !s.request_line().starts_with(b"POST /api/big")));
}

#[test]
fn expect_100_continue_is_answered_before_the_body_is_read() {
    let up = Upstream::start(Listen::Unix, |_| Answer::Echo);
    let (_dir, srv) = in_front("proxy-continue", &up, &[]);
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head =
        "POST /api/c HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n";
    s.write_all(head.as_bytes()).unwrap();
    let mut rd = BufReader::new(s);
    let interim = read_response(&mut rd, true).unwrap();
    assert_eq!(interim.status, 100);
    rd.get_mut().write_all(b"data").unwrap();
    let r = read_response(&mut rd, false).unwrap();
    assert_eq!(r.text(), echoed("POST", "/api/c", b"data"));
    assert_eq!(up.seen()[0].field("expect"), None, "steerd answered it");
}

#[test]
fn ambiguous_framing_is_400_with_nothing_sent_upstream() {
    let up = Upstream::start(Listen::Unix, |_| Answer::Echo);
    let (_dir, srv) = in_front("proxy-400", &up, &[]);
    for head in [
        "POST /api/x HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        "POST /api/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
        "POST /api/x HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n folded\r\nContent-Length: 1\r\n\r\na",
    ] {
        let r = exchange(srv.addr, head);
        assert_eq!(r.status, 400, "{head:?}");
    }
    assert!(up.seen().is_empty(), "the upstream saw {:?}", up.seen());
    assert_eq!(up.unparsed(), 0);
}

#[test]
fn a_websocket_upgrade_is_relayed_then_bytes_flow_both_ways() {
    let up = Upstream::start(Listen::Unix, |_| Answer::UpgradeEcho);
    let (_dir, srv) = in_front("proxy-ws", &up, &[]);
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = "GET /api/ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
    s.write_all(head.as_bytes()).unwrap();
    let mut rd = BufReader::new(s);
    let r = read_response(&mut rd, true).unwrap();
    assert_eq!(r.status, 101);
    assert_eq!(r.header("upgrade"), Some("websocket"));
    assert_eq!(r.header("connection"), Some("upgrade"));
    let seen = &up.seen()[0];
    assert_eq!(seen.field("upgrade").as_deref(), Some("websocket"));
    assert_eq!(
        seen.field("sec-websocket-key").as_deref(),
        Some("dGhlIHNhbXBsZSBub25jZQ==")
    );
    for round in 0..3 {
        let msg = format!("frame {round} {}", "x".repeat(round * 30_000));
        rd.get_mut().write_all(msg.as_bytes()).unwrap();
        let mut back = vec![0u8; msg.len()];
        rd.read_exact(&mut back).unwrap();
        assert_eq!(back, msg.as_bytes(), "round {round}");
    }
    rd.get_mut().shutdown(std::net::Shutdown::Write).unwrap();
    assert!(
        closed_within(rd.get_mut(), Duration::from_secs(10)),
        "the tunnel ends"
    );
}

/// Megabytes through a tunnel both ways (the client's bytes to an echoing upstream and
/// back), compared byte for byte: nothing lost, repeated or reordered, whatever the
/// sizes the sockets take at a time.
#[test]
fn a_tunnel_carries_megabytes_both_ways_byte_exact() {
    let up = Upstream::start(Listen::Unix, |_| Answer::UpgradeEcho);
    let (_dir, srv) = in_front("proxy-ws-bulk", &up, &[]);
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head =
        "GET /api/ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
    s.write_all(head.as_bytes()).unwrap();
    let mut rd = BufReader::new(s);
    assert_eq!(read_response(&mut rd, true).unwrap().status, 101);
    const TOTAL: usize = 24 << 20;
    let byte = |i: usize| (i.wrapping_mul(2_654_435_761) >> 13) as u8;
    let mut w = rd.get_ref().try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let block: Vec<u8> = (0..TOTAL).map(byte).collect();
        // Pieces of odd sizes, so no write lines up with a buffer of the relay.
        for piece in block.chunks(65_537) {
            w.write_all(piece).unwrap();
        }
    });
    let mut back = vec![0u8; 1 << 20];
    let mut got = 0;
    while got < TOTAL {
        let n = rd.read(&mut back).unwrap();
        assert!(n > 0, "the tunnel ended after {got} bytes");
        if let Some(i) = (0..n).find(|&i| back[i] != byte(got + i)) {
            panic!("byte {} differs", got + i);
        }
        got += n;
    }
    writer.join().unwrap();
    assert_eq!(got, TOTAL);
    rd.get_mut().shutdown(std::net::Shutdown::Write).unwrap();
    assert!(closed_within(rd.get_mut(), Duration::from_secs(20)));
}

#[test]
fn past_proxy_max_conns_to_one_upstream_is_503() {
    let up = Upstream::start(Listen::Unix, |_| Answer::Silent);
    let more = ["--proxy-max-conns", "1", "--proxy-timeout", "2"];
    let (_dir, srv) = in_front("proxy-503", &up, &more);
    let mut first = TcpStream::connect(srv.addr).unwrap();
    first
        .write_all(b"GET /api/wait HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    // Once the upstream holds the first, a second in flight to it is refused.
    let began = Instant::now();
    while up.connections() == 0 && began.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(get(srv.addr, "/api/other", "").status, 503);
    first
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let r = read_response(&mut BufReader::new(first), false).unwrap();
    assert_eq!(r.status, 504, "the first waited for its head");
    assert_eq!(
        get(srv.addr, "/index.html", "").status,
        200,
        "files are not counted"
    );
}
