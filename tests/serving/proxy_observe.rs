//! What steerd shows and adds around a forwarded request, through the real binary: the
//! json log's `upstream` and `upstream_us`, `/metrics`'s counts by upstream and outcome,
//! the `--cors` and `--header` lines on relayed answers, and the gates in front of proxied
//! paths (basic auth, the address list, the Host list, `--rate-limit`), each of which
//! leaves the upstream untouched.

use crate::support;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::client::*;
use support::server::{Server, TempDir, PATIENCE};
use support::upstream::{refusing_spec, Answer, Listen, Seen, Upstream};

fn serve(root: &Path, args: &[&str]) -> Server {
    let mut all = vec!["--workers", "1"];
    all.extend_from_slice(args);
    Server::start_in(root, &all, &[])
}

/// A site with `index.html`.
fn site(tag: &str) -> TempDir {
    let dir = TempDir::new(tag);
    dir.write_all(&[("index.html", "home\n")]);
    dir
}

/// A site (`tag`) forwarding `/api/**` to `up` and `/down/**` to an address nothing
/// listens at (`down`), with `more` arguments.
fn api_and_down(tag: &str, up: &Upstream, down: Listen, more: &[&str]) -> (TempDir, Server) {
    let dir = site(tag);
    let api = format!("/api/** {}", up.spec());
    let down = format!("/down/** {}", refusing_spec(down));
    let mut args = vec!["--proxy", &api, "--proxy", &down];
    args.extend_from_slice(more);
    let srv = serve(dir.path(), &args);
    (dir, srv)
}

fn made(_: &Seen) -> Answer {
    Answer::Fixed(201, vec!["X-App: 7".into()], b"made it\n".to_vec())
}

/// The json lines of `log` once there are `n` (bounded wait: lines are written within
/// about a second).
fn json_lines(log: &Path, n: usize) -> Vec<serde_json::Value> {
    let began = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.lines().count() >= n {
            return text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
                .collect();
        }
        assert!(
            began.elapsed() < PATIENCE,
            "{} lines:\n{text}",
            log.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn line_for<'a>(lines: &'a [serde_json::Value], target: &str) -> &'a serde_json::Value {
    let request = |v: &serde_json::Value| v["request"].as_str().unwrap_or_default().to_string();
    lines
        .iter()
        .find(|v| request(v).contains(target))
        .unwrap_or_else(|| panic!("no line for {target} in {lines:?}"))
}

#[test]
fn the_json_log_names_the_upstream_and_its_time() {
    let up = Upstream::start(Listen::Unix, made);
    let logs = TempDir::new("observe-log-file");
    let log = logs.path().join("access.log");
    let json = [
        "--access-log",
        log.to_str().unwrap(),
        "--log-format",
        "json",
    ];
    let (_dir, srv) = api_and_down("observe-log", &up, Listen::Tcp, &json);
    assert_eq!(get(srv.addr, "/api/v1?relayed", "").status, 201);
    assert_eq!(get(srv.addr, "/index.html?file", "").status, 200);
    assert_eq!(get(srv.addr, "/down/x?refused", "").status, 502);
    let lines = json_lines(&log, 3);
    let relayed = line_for(&lines, "?relayed");
    assert_eq!(relayed["upstream"], up.spec().as_str());
    assert!(relayed["upstream_us"].is_u64(), "{relayed}");
    assert!(
        relayed["upstream_us"].as_u64() <= relayed["duration_us"].as_u64(),
        "the head came before the end: {relayed}"
    );
    let refused = line_for(&lines, "?refused");
    assert_eq!(refused["status"], 502);
    assert!(refused["upstream"]
        .as_str()
        .unwrap()
        .starts_with("http://127.0.0.1:"));
    assert!(refused["upstream_us"].is_u64(), "{refused}");
    let file = line_for(&lines, "?file").as_object().unwrap();
    let mut keys: Vec<&str> = file.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let mut before = [
        "time",
        "client",
        "request",
        "status",
        "body_bytes",
        "referer",
        "user_agent",
        "worker",
        "cpu",
        "local",
        "duration_us",
        "cut_short",
        "user",
    ];
    before.sort_unstable();
    assert_eq!(keys, before, "a file's line is as it was");
}

/// A unix-socket upstream that answers every request with bytes that are no HTTP head
/// (for `bad_head`), until dropped.
struct Garbage {
    spec: String,
    stop: Arc<AtomicBool>,
    _dir: TempDir,
}

impl Garbage {
    fn start() -> Garbage {
        let dir = TempDir::new("observe-garbage");
        let path = dir.path().join("up.sock");
        let listener = UnixListener::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::spawn(move || {
            let began = Instant::now();
            while !flag.load(Ordering::SeqCst) && began.elapsed() < PATIENCE * 3 {
                let Ok((mut s, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                let _ = s.set_nonblocking(false);
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let _ = s.write_all(b"HTTP/1.1 2x0 Nope\r\n\r\n");
            }
        });
        let spec = format!("unix:{}", path.display());
        Garbage {
            spec,
            stop,
            _dir: dir,
        }
    }
}

impl Drop for Garbage {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// `steerd_proxy_responses_total` by (upstream, outcome), summed over workers.
fn proxy_counts(srv: &Server) -> HashMap<(String, String), u64> {
    let mut out = HashMap::new();
    for (series, n) in srv.metrics() {
        let Some(labels) = series.strip_prefix("steerd_proxy_responses_total{") else {
            continue;
        };
        let value = |key: &str| {
            let at = labels.find(&format!("{key}=\"")).unwrap() + key.len() + 2;
            labels[at..].split('"').next().unwrap().to_string()
        };
        *out.entry((value("upstream"), value("outcome")))
            .or_default() += n;
    }
    out
}

#[test]
fn metrics_count_forwarded_requests_by_upstream_and_outcome() {
    let ok = Upstream::start(Listen::Unix, made);
    let silent = Upstream::start(Listen::Unix, |_| Answer::Silent);
    let cut = Upstream::start(Listen::Tcp, |_| Answer::CutShort(1000, b"part".to_vec()));
    let bad = Garbage::start();
    let refusing = refusing_spec(Listen::Unix);
    let rules = [
        format!("/ok/** {}", ok.spec()),
        format!("/slow/** {}", silent.spec()),
        format!("/cut/** {}", cut.spec()),
        format!("/bad/** {}", bad.spec),
        format!("/down/** {refusing}"),
    ];
    let dir = site("observe-metrics");
    let mut args = vec!["--metrics", "127.0.0.1:0", "--proxy-max-conns", "1"];
    args.extend(["--proxy-timeout", "2"]);
    for r in &rules {
        args.extend(["--proxy", r.as_str()]);
    }
    let srv = serve(dir.path(), &args);
    let before = proxy_counts(&srv);
    assert_eq!(
        before.len(),
        5 * 7,
        "every upstream and outcome from the start: {before:?}"
    );
    assert!(before.values().all(|&n| n == 0));
    assert_eq!(get(srv.addr, "/ok/a", "").status, 201);
    assert_eq!(get(srv.addr, "/ok/b", "").status, 201);
    assert_eq!(get(srv.addr, "/down/x", "").status, 502);
    assert_eq!(get(srv.addr, "/bad/x", "").status, 502);
    let mut s = std::net::TcpStream::connect(srv.addr).unwrap();
    s.write_all(b"GET /cut/x HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let _ = s.read_to_end(&mut Vec::new());
    // One held at the silent upstream; a second to it meanwhile is over the limit.
    let mut held = std::net::TcpStream::connect(srv.addr).unwrap();
    held.write_all(b"GET /slow/a HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let began = Instant::now();
    while silent.connections() == 0 && began.elapsed() < PATIENCE {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(get(srv.addr, "/slow/b", "").status, 503);
    held.set_read_timeout(Some(PATIENCE)).unwrap();
    let r = read_response(&mut std::io::BufReader::new(held), false).unwrap();
    assert_eq!(r.status, 504);
    let want = [
        (ok.spec(), "relayed", 2),
        (refusing.clone(), "refused", 1),
        (bad.spec.clone(), "bad_head", 1),
        (cut.spec(), "cut_short", 1),
        (silent.spec(), "timeout", 1),
        (silent.spec(), "busy", 1),
    ];
    let began = Instant::now();
    let counts = loop {
        let counts = proxy_counts(&srv);
        let all = want
            .iter()
            .all(|(u, o, n)| counts[&(u.clone(), o.to_string())] == *n);
        if all || began.elapsed() > PATIENCE {
            break counts;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    for (upstream, outcome, n) in &want {
        let got = counts[&(upstream.clone(), outcome.to_string())];
        assert_eq!(got, *n, "{upstream} {outcome}: {counts:?}");
    }
    let total: u64 = counts.values().sum();
    assert_eq!(total, 7, "each request counted once: {counts:?}");
}

fn branded(seen: &Seen) -> Answer {
    let lines = [
        "Access-Control-Allow-Origin: *",
        "Access-Control-Allow-Methods: PUT",
        "X-Frame-Options: SAMEORIGIN",
        "Vary: Accept-Encoding",
    ];
    let status = if seen.target().contains("missing") {
        404
    } else {
        200
    };
    Answer::Fixed(status, lines.map(String::from).to_vec(), b"app\n".to_vec())
}

/// Every value of the field `name` in `r`.
fn values(r: &Response, name: &str) -> Vec<String> {
    let named = r
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name));
    named.map(|(_, v)| v.clone()).collect()
}

#[test]
fn cors_and_header_lines_on_relayed_answers() {
    let up = Upstream::start(Listen::Unix, branded);
    let lines = [
        "--cors",
        "https://app.test",
        "--header",
        "X-Frame-Options: DENY",
        "--header",
        "X-Site: 1",
    ];
    let (_dir, srv) = api_and_down("observe-cors", &up, Listen::Unix, &lines);
    let origin = "Origin: https://app.test\r\n";
    let r = get(srv.addr, "/api/x", origin);
    assert_eq!(r.status, 200);
    assert_eq!(
        values(&r, "access-control-allow-origin"),
        ["https://app.test"],
        "the operator's origin, the upstream's gone: {r:?}"
    );
    assert_eq!(values(&r, "access-control-allow-methods"), ["PUT"], "{r:?}");
    assert_eq!(values(&r, "x-frame-options"), ["DENY"], "replaced: {r:?}");
    assert_eq!(values(&r, "x-site"), ["1"]);
    assert!(values(&r, "vary").contains(&"Origin".to_string()), "{r:?}");
    assert!(
        values(&r, "vary").contains(&"Accept-Encoding".to_string()),
        "{r:?}"
    );
    // Another origin gets none, as from a file; a 4xx keeps the upstream's fields and
    // gets no --header line.
    let other = get(srv.addr, "/api/x", "Origin: https://evil.test\r\n");
    assert_eq!(
        values(&other, "access-control-allow-origin"),
        Vec::<String>::new()
    );
    let missing = get(srv.addr, "/api/missing", origin);
    assert_eq!(missing.status, 404);
    assert_eq!(values(&missing, "x-frame-options"), ["SAMEORIGIN"]);
    assert_eq!(values(&missing, "x-site"), Vec::<String>::new());
    assert_eq!(
        values(&missing, "access-control-allow-origin"),
        ["https://app.test"]
    );
    // steerd's own error in the upstream's place carries the origin lines too.
    let bad_gateway = get(srv.addr, "/down/x", origin);
    assert_eq!(bad_gateway.status, 502);
    assert_eq!(
        values(&bad_gateway, "access-control-allow-origin"),
        ["https://app.test"]
    );
    // A preflight for GET is steerd's; one for another method is the upstream's.
    let seen = up.seen().len();
    let preflight = |method: &str| {
        exchange(
            srv.addr,
            &format!(
                "OPTIONS /api/x HTTP/1.1\r\nHost: t\r\n{origin}\
                 Access-Control-Request-Method: {method}\r\nConnection: close\r\n\r\n"
            ),
        )
    };
    let get_preflight = preflight("GET");
    assert_eq!(get_preflight.status, 204);
    assert_eq!(up.seen().len(), seen, "answered by steerd");
    let put_preflight = preflight("PUT");
    assert_eq!(put_preflight.status, 200);
    assert_eq!(up.seen().len(), seen + 1, "forwarded");
    assert_eq!(up.seen()[seen].method(), "OPTIONS");
    assert_eq!(
        values(&put_preflight, "access-control-allow-methods"),
        ["PUT"]
    );
}

/// An htpasswd file with `ann` (password `Hello world!`) in a fresh directory.
fn htpasswd(tag: &str) -> (TempDir, PathBuf) {
    let dir = TempDir::new(tag);
    let file = dir.path().join("htpasswd");
    std::fs::write(&file, format!("{}\n", super::basic_auth::ANN)).unwrap();
    (dir, file)
}

#[test]
fn the_gates_stand_in_front_of_proxied_paths() {
    let up = Upstream::start(Listen::Unix, made);
    let dir = site("observe-gates");
    let api = format!("/api/** {}", up.spec());
    let (_pw, file) = htpasswd("observe-gates-auth");
    let srv = serve(
        dir.path(),
        &[
            "--proxy",
            &api,
            "--basic-auth",
            file.to_str().unwrap(),
            "--real-ip-from",
            "127.0.0.1",
            "--deny",
            "192.0.2.0/24",
            "--rate-limit",
            "1",
            "--allowed-host",
            "app.test",
        ],
    );
    let ann = super::basic_auth::basic("ann", "Hello world!");
    let ask = |host: &str, client: &str, extra: &str| {
        let head = format!(
            "GET /api/x HTTP/1.1\r\nHost: {host}\r\nX-Forwarded-For: {client}\r\n{extra}\
             Connection: close\r\n\r\n"
        );
        exchange(srv.addr, &head).status
    };
    assert_eq!(ask("app.test", "198.51.100.1", ""), 401, "no credentials");
    assert_eq!(ask("app.test", "192.0.2.9", &ann), 403, "a denied client");
    assert_eq!(
        ask("evil.test", "198.51.100.2", &ann),
        421,
        "not an allowed host"
    );
    assert_eq!(up.seen().len(), 0, "nothing refused reached the upstream");
    assert_eq!(ask("app.test", "198.51.100.3", &ann), 201);
    // One a second: of three more at once, at least one is over (each would need a
    // second of its own to pass).
    let more: Vec<u16> = (0..3)
        .map(|_| ask("app.test", "198.51.100.3", &ann))
        .collect();
    let limited = more.iter().filter(|&&s| s == 429).count();
    assert!(limited >= 1, "past --rate-limit: {more:?}");
    assert_eq!(
        up.seen().len(),
        1 + 3 - limited,
        "only the admitted were forwarded"
    );
}

#[test]
fn hup_keeps_each_upstreams_counts_with_its_name() {
    let (a, b, c) = [0, 1, 2]
        .map(|_| Upstream::start(Listen::Unix, made))
        .into();
    let dir = site("observe-hup");
    let file = dir.path().join("site.conf");
    let write = |rules: &[(&str, &Upstream)]| {
        let mut text = String::from("workers 1\n");
        for (path, up) in rules {
            text += &format!("proxy /{path}/** {}\n", up.spec());
        }
        std::fs::write(&file, text).unwrap();
    };
    write(&[("a", &a), ("b", &b)]);
    let srv = serve(
        dir.path(),
        &[
            "--metrics",
            "127.0.0.1:0",
            "--config",
            file.to_str().unwrap(),
        ],
    );
    for path in ["/a/1", "/a/2", "/a/3", "/b/1"] {
        assert_eq!(get(srv.addr, path, "").status, 201, "{path}");
    }
    let relayed = |up: &Upstream| {
        let counts = proxy_counts(&srv);
        counts
            .get(&(up.spec(), "relayed".into()))
            .copied()
            .unwrap_or(0)
    };
    assert_eq!([&a, &b].map(relayed), [3, 1]);
    // Reordered, with a new upstream between: each count stays with its upstream.
    write(&[("b", &b), ("c", &c), ("a", &a)]);
    let before = srv.worker_pids();
    srv.signal(libc::SIGHUP);
    support::server::wait_for_new_pid(&srv, 0, before[0]);
    let mut served_c = 0;
    support::server::wait_until("the new generation forwards /c", || {
        let served = get(srv.addr, "/c/1", "").status == 201;
        served_c += u64::from(served);
        served
    });
    assert_eq!(get(srv.addr, "/b/2", "").status, 201);
    assert_eq!(
        [&a, &b, &c].map(relayed),
        [3, 2, served_c],
        "a, b, c after the reorder"
    );
}

/// A tunnel's bytes reach the client through a pipe, not through steerd's buffers: they
/// are counted all the same, in the access log's `body_bytes` (the bytes after the 101's
/// head) and in `steerd_bytes_sent_total` (head and bytes).
#[test]
fn a_tunnels_bytes_are_counted_in_the_log_and_the_metrics() {
    const TOTAL: usize = 3 << 20;
    let up = Upstream::start(Listen::Unix, |_| Answer::UpgradeEcho);
    let logs = TempDir::new("observe-tunnel-log");
    let log = logs.path().join("access.log");
    let args = [
        "--access-log",
        log.to_str().unwrap(),
        "--log-format",
        "json",
        "--metrics",
        "127.0.0.1:0",
    ];
    let (_dir, srv) = api_and_down("observe-tunnel", &up, Listen::Tcp, &args);
    let mut s = std::net::TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let head = "GET /api/ws?tunnel HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\n\
                Connection: Upgrade\r\n\r\n";
    s.write_all(head.as_bytes()).unwrap();
    let mut rd = std::io::BufReader::new(s);
    // The 101's head, its bytes counted as they come.
    let (mut head_len, mut line) = (0, String::new());
    while line != "\r\n" {
        line.clear();
        let n = std::io::BufRead::read_line(&mut rd, &mut line).unwrap();
        assert!(n > 0, "closed in the head");
        assert!(head_len > 0 || line.starts_with("HTTP/1.1 101 "), "{line}");
        head_len += n;
    }
    assert!(
        rd.buffer().is_empty(),
        "bytes behind the 101 before any were sent"
    );
    let mut w = rd.get_ref().try_clone().unwrap();
    let writer = std::thread::spawn(move || w.write_all(&vec![b'x'; TOTAL]).unwrap());
    let mut back = vec![0u8; 1 << 16];
    let mut got = 0;
    while got < TOTAL {
        let n = rd.read(&mut back).unwrap();
        assert!(n > 0, "the tunnel ended after {got} bytes");
        got += n;
    }
    writer.join().unwrap();
    rd.get_mut().shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(rd.read(&mut back).unwrap(), 0, "the tunnel closes");
    let lines = json_lines(&log, 1);
    let line = line_for(&lines, "?tunnel");
    assert_eq!(line["status"], 101);
    assert_eq!(line["body_bytes"].as_u64(), Some(TOTAL as u64), "{line}");
    let sent: u64 = srv
        .metrics()
        .into_iter()
        .filter(|(series, _)| series.starts_with("steerd_bytes_sent_total"))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(sent, (TOTAL + head_len) as u64, "a {head_len}-byte head");
}
