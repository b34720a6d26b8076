//! Virtual hosts through the real binary: `--host` and the configuration file's host
//! blocks, each host with its own root and settings; names matched without case and port;
//! 421 for a name no host lists, `host *` for the rest; the same path in two roots never
//! answered from the other's; `--allowed-host` against a rebinding name and the
//! listeners' IP literals (IPv4 and IPv6); HUP adding and removing a host, and keeping
//! each host's response counts with its name.

use crate::support;

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use support::client::{exchange, Response};
use support::server::{binary, run_steerd, wait_for_new_pid, wait_until, Server, TempDir};
use support::skip::skip_or_fail;

/// Two roots, `a/` and `b/`, with the same paths holding different bytes.
pub(super) fn two_roots(tag: &str) -> TempDir {
    let dir = TempDir::new(tag);
    dir.write_all(&[
        ("a/same.txt", "from a\n"),
        ("a/index.html", "a home\n"),
        ("b/same.txt", "from b, longer\n"),
        ("b/index.html", "b home\n"),
    ]);
    dir
}

/// `GET path` with `Host: host`, closing.
pub(super) fn get_as(addr: SocketAddr, host: &str, path: &str) -> Response {
    exchange(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
    )
}

pub(super) fn serve(args: &[&str]) -> Server {
    let mut cmd = Command::new(binary());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--workers", "1"])
        .args(args);
    Server::spawn(&mut cmd)
}

pub(super) fn path_of(dir: &TempDir, sub: &str) -> String {
    dir.path().join(sub).display().to_string()
}

/// A configuration file `site.conf` in `dir` holding `text`.
pub(super) fn conf(dir: &TempDir, text: &str) -> PathBuf {
    let p = dir.path().join("site.conf");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn hosts_from_the_file_and_flags_serve_their_roots_and_settings() {
    let dir = two_roots("hosts-two");
    let log = dir.path().join("access.log");
    let file = conf(
        &dir,
        &format!(
            "header X-Site: default\n\
             host a.test www.a.test\n\
             root {}\n\
             cache-control /**=max-age=60\n\
             header X-Only-A: yes\n",
            path_of(&dir, "a")
        ),
    );
    // Given as an absolute name: the same name.
    let b = format!("B.test.={}", path_of(&dir, "b"));
    let srv = serve(&[
        "--config",
        file.to_str().unwrap(),
        "--host",
        &b,
        "--access-log",
        log.to_str().unwrap(),
        "--log-format",
        "json",
    ]);
    let a = get_as(srv.addr, "a.test", "/same.txt");
    assert_eq!((a.status, a.text()), (200, "from a\n".into()));
    assert_eq!(a.header("cache-control"), Some("max-age=60"));
    assert_eq!(a.header("x-only-a"), Some("yes"));
    assert_eq!(a.header("x-site"), Some("default"), "the defaults extend");
    let b = get_as(srv.addr, "b.test", "/same.txt");
    assert_eq!((b.status, b.text()), (200, "from b, longer\n".into()));
    assert_eq!(b.header("cache-control"), None, "{:?}", b.headers);
    assert_eq!(b.header("x-only-a"), None);
    assert_eq!(b.header("x-site"), Some("default"));
    // Case and port are not part of the name.
    // Nor is a trailing dot: `a.test.` is the absolute form of `a.test` (RFC 1034 §3.1).
    for host in [
        "A.TEST",
        "www.A.test:8080",
        "a.test:1",
        "a.test.",
        "WWW.a.test.:80",
    ] {
        assert_eq!(
            get_as(srv.addr, host, "/same.txt").text(),
            "from a\n",
            "{host}"
        );
    }
    assert_eq!(
        get_as(srv.addr, "B.Test:80", "/same.txt").text(),
        "from b, longer\n"
    );
    // A name no host lists, and no Host at all (HTTP/1.0).
    let r = get_as(srv.addr, "c.test", "/same.txt");
    assert_eq!((r.status, r.header("connection")), (421, Some("close")));
    let r = exchange(srv.addr, "GET /same.txt HTTP/1.0\r\n\r\n");
    assert_eq!(r.status, 421);
    wait_until("eight lines logged", || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .count()
            >= 10
    });
    let log = std::fs::read_to_string(&log).unwrap();
    let hosts: Vec<&str> = log
        .lines()
        .map(|l| {
            l.split("\"host\":\"")
                .nth(1)
                .map_or("-", |h| &h[..h.find('"').unwrap()])
        })
        .collect();
    assert_eq!(
        hosts,
        [
            "a.test", "b.test", "a.test", "a.test", "a.test", "a.test", "a.test", "b.test", "-",
            "-"
        ],
        "{log}"
    );
}

#[test]
fn host_star_answers_names_no_block_lists() {
    let dir = two_roots("hosts-star");
    let a = format!("a.test={}", path_of(&dir, "a"));
    let any = format!("*={}", path_of(&dir, "b"));
    let srv = serve(&["--host", &a, "--host", &any]);
    assert_eq!(get_as(srv.addr, "a.test", "/same.txt").text(), "from a\n");
    for host in ["other.test", "127.0.0.1", "[::1]:9"] {
        let r = get_as(srv.addr, host, "/same.txt");
        assert_eq!(
            (r.status, r.text()),
            (200, "from b, longer\n".into()),
            "{host}"
        );
    }
}

/// `n` alternating requests for `/same.txt` on one keep-alive connection, each checked.
fn alternate(addr: SocketAddr, n: usize) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut r = std::io::BufReader::new(s.try_clone().unwrap());
    for i in 0..n {
        let (host, want) = match i % 2 {
            0 => ("a.test", "from a\n"),
            _ => ("b.test", "from b, longer\n"),
        };
        write!(s, "GET /same.txt HTTP/1.1\r\nHost: {host}\r\n\r\n").unwrap();
        let resp = support::client::read_response(&mut r, false).unwrap();
        assert_eq!(
            (resp.status, resp.text()),
            (200, want.to_string()),
            "request {i}"
        );
    }
}

#[test]
fn the_same_path_in_two_roots_never_crosses() {
    let dir = two_roots("hosts-cross");
    let a = format!("a.test={}", path_of(&dir, "a"));
    let b = format!("b.test={}", path_of(&dir, "b"));
    let srv = serve(&["--host", &a, "--host", &b]);
    // Both files enter their host's cache in the first two requests; the rest are hits.
    alternate(srv.addr, 40);
    // And on a second connection, where each request starts in the other host.
    alternate(srv.addr, 11);
}

/// Requests for `/same.txt` on one keep-alive connection, each with its Host, and the
/// status and body each must get (`""`: any body).
fn hosts_in_turn(addr: SocketAddr, turns: &[(&str, u16, &str)]) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut r = std::io::BufReader::new(s.try_clone().unwrap());
    for (i, &(host, status, body)) in turns.iter().enumerate() {
        write!(s, "GET /same.txt HTTP/1.1\r\nHost: {host}\r\n\r\n").unwrap();
        let resp = support::client::read_response(&mut r, false).unwrap();
        assert_eq!(resp.status, status, "request {i}: {host}");
        if !body.is_empty() {
            assert_eq!(resp.text(), body, "request {i}: {host}");
        }
    }
}

/// A keep-alive connection's next request is matched against the name its previous one
/// matched first: every other spelling of that name (case, port, trailing dot) still
/// answers, another host's name switches host, and a name that only begins with it is
/// 421 (after which the connection closes, and a new one is served again).
#[test]
fn a_keep_alive_connection_switches_hosts_between_requests() {
    let dir = two_roots("hosts-switch");
    let a = format!("a.test={}", path_of(&dir, "a"));
    let b = format!("b.test,www.b.test={}", path_of(&dir, "b"));
    let srv = serve(&["--host", &a, "--host", &b]);
    let (fa, fb) = ("from a\n", "from b, longer\n");
    hosts_in_turn(
        srv.addr,
        &[
            ("a.test", 200, fa),
            ("a.test", 200, fa),
            ("a.test:8080", 200, fa),
            ("A.Test", 200, fa),
            ("b.test", 200, fb),
            ("www.b.test", 200, fb),
            ("b.test.:80", 200, fb),
            ("a.test.", 200, fa),
            ("a.test", 200, fa),
        ],
    );
    for unknown in ["a.test.evil", "a.testx", "a.tes", "a.test..", "c.test"] {
        hosts_in_turn(srv.addr, &[("a.test", 200, fa), (unknown, 421, "")]);
        hosts_in_turn(srv.addr, &[(unknown, 421, "")]);
        hosts_in_turn(srv.addr, &[("b.test", 200, fb), ("a.test", 200, fa)]);
    }
}

/// True when `[::1]` takes connections here.
fn has_ipv6_loopback() -> bool {
    std::net::TcpListener::bind("[::1]:0").is_ok()
}

#[test]
fn allowed_host_refuses_a_rebinding_name_but_not_the_listeners_literals() {
    const NAME: &str = "allowed_host_refuses_a_rebinding_name_but_not_the_listeners_literals";
    let dir = two_roots("hosts-allowed");
    let v6 = has_ipv6_loopback();
    let mut cmd = Command::new(binary());
    cmd.args(["serve", "--workers", "1", "--listen", "127.0.0.1:0"]);
    if v6 {
        cmd.args(["--listen", "[::1]:0"]);
    }
    cmd.args(["--allowed-host", "nas.test"])
        .arg(dir.path().join("a"));
    let srv = Server::spawn(&mut cmd);
    let addrs = srv.addrs();
    let v4 = addrs[0];
    let ok = |addr: SocketAddr, host: &str| get_as(addr, host, "/same.txt").status;
    assert_eq!(ok(v4, "nas.test"), 200);
    assert_eq!(ok(v4, "NAS.test:8080"), 200);
    assert_eq!(ok(v4, "nas.test."), 200, "the absolute name");
    assert_eq!(ok(v4, "nas.test..:80"), 421);
    assert_eq!(ok(v4, &v4.to_string()), 200, "the listener's IPv4 literal");
    assert_eq!(ok(v4, "127.0.0.1"), 200);
    // A name pointed at 127.0.0.1 by someone else's DNS, and another literal.
    assert_eq!(ok(v4, "rebind.attacker.example"), 421);
    assert_eq!(ok(v4, "127.0.0.2"), 421);
    assert_eq!(ok(v4, "[::1]"), if v6 { 200 } else { 421 });
    if !v6 {
        return skip_or_fail(
            NAME,
            "no IPv6 loopback here: the [::1] listener is not checked",
        );
    }
    let v6 = addrs[1];
    assert_eq!(ok(v6, &v6.to_string()), 200, "the listener's IPv6 literal");
    assert_eq!(ok(v6, "rebind.attacker.example"), 421);
    assert_eq!(ok(v6, "[::2]"), 421);
    // Without the flag every name is served (what the rebinding page relies on).
    let open = serve(&[&path_of(&dir, "a")]);
    assert_eq!(ok(open.addr, "rebind.attacker.example"), 200);
}

#[test]
fn hup_adds_and_removes_a_host() {
    let dir = two_roots("hosts-hup");
    let block = |name: &str, sub: &str| format!("host {name}\nroot {}\n", path_of(&dir, sub));
    let file = conf(&dir, &format!("workers 1\n{}", block("a.test", "a")));
    let srv = {
        let mut cmd = Command::new(binary());
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&file);
        Server::spawn(&mut cmd)
    };
    assert_eq!(get_as(srv.addr, "a.test", "/same.txt").text(), "from a\n");
    assert_eq!(get_as(srv.addr, "b.test", "/same.txt").status, 421);
    let text = format!(
        "workers 1\n{}{}",
        block("a.test", "a"),
        block("b.test", "b")
    );
    std::fs::write(&file, text).unwrap();
    let before = srv.worker_pids();
    srv.signal(libc::SIGHUP);
    wait_for_new_pid(&srv, 0, before[0]);
    wait_until("host b answers", || {
        get_as(srv.addr, "b.test", "/same.txt").text() == "from b, longer\n"
    });
    assert_eq!(get_as(srv.addr, "a.test", "/same.txt").text(), "from a\n");
    std::fs::write(&file, format!("workers 1\n{}", block("b.test", "b"))).unwrap();
    let before = srv.worker_pids();
    srv.signal(libc::SIGHUP);
    wait_for_new_pid(&srv, 0, before[0]);
    wait_until("host a is gone", || {
        get_as(srv.addr, "a.test", "/same.txt").status == 421
    });
}

/// The 2xx responses `/metrics` labels with `host`, summed over workers.
fn host_2xx(srv: &Server, host: &str) -> u64 {
    let label = format!(",class=\"2xx\",host=\"{host}\"}}");
    (srv.metrics().iter())
        .filter(|(k, _)| k.starts_with("steerd_responses_total{") && k.ends_with(&label))
        .map(|(_, v)| v)
        .sum()
}

/// Reloads that reorder, add and remove host blocks leave each host's response counts
/// under its own name: the counter blocks keep the counts of earlier generations, which
/// were counted when the hosts stood in another order.
#[test]
fn hup_keeps_each_hosts_response_counts_with_its_name() {
    let dir = two_roots("hosts-hup-metrics");
    let block = |name: &str, sub: &str| format!("host {name}\nroot {}\n", path_of(&dir, sub));
    let write = |blocks: &[(&str, &str)]| {
        let text: String = blocks.iter().map(|(n, sub)| block(n, sub)).collect();
        conf(&dir, &format!("workers 1\n{text}"))
    };
    let file = write(&[("a.test", "a"), ("b.test", "b")]);
    let srv = serve(&[
        "--metrics",
        "127.0.0.1:0",
        "--config",
        file.to_str().unwrap(),
    ]);
    let ok = |host: &str| get_as(srv.addr, host, "/same.txt").status == 200;
    for host in ["a.test", "a.test", "a.test", "b.test"] {
        assert!(ok(host), "{host}");
    }
    assert_eq!((host_2xx(&srv, "a.test"), host_2xx(&srv, "b.test")), (3, 1));
    let reload = |blocks: &[(&str, &str)]| {
        write(blocks);
        let before = srv.worker_pids();
        srv.signal(libc::SIGHUP);
        wait_for_new_pid(&srv, 0, before[0]);
    };
    // Reordered, with a new host first in line after b: c's answers are counted as they
    // come (the old worker answers 421 until the new one serves).
    reload(&[("b.test", "b"), ("c.test", "a"), ("a.test", "a")]);
    let mut c = 0;
    wait_until("host c answers", || {
        let served = ok("c.test");
        c += u64::from(served);
        served
    });
    assert!(ok("b.test"));
    let seen = |srv: &Server| ["a.test", "b.test", "c.test"].map(|h| host_2xx(srv, h));
    assert_eq!(seen(&srv), [3, 2, c], "a, b, c after the reorder");
    // a removed: its counts stay its own; the next generation counts into the block
    // the first one did, under rows it kept.
    // The old worker answers a until the new one serves: those answers are a's too.
    reload(&[("c.test", "a"), ("b.test", "b")]);
    let mut a = 3;
    wait_until("host a is gone", || {
        let status = get_as(srv.addr, "a.test", "/same.txt").status;
        a += u64::from(status == 200);
        status == 421
    });
    assert!(ok("b.test") && ok("c.test"));
    assert_eq!(seen(&srv), [a, 3, c + 1], "a, b, c after a is removed");
}

#[test]
fn check_refuses_bad_host_blocks_with_file_and_line() {
    let dir = two_roots("hosts-check");
    for (text, needle) in [
        (
            "host a.test\nworkers 2\n",
            ":2: workers is not a site setting",
        ),
        ("host a.test:80\n", ":1: host \"a.test:80\""),
        (
            "host a.test\nroot /a\nroot /b\n",
            ":3: a second value for root in this host block",
        ),
        ("host a.test\nhost A.test\n", "host a.test at "),
        // A block's values are checked as they are applied, still with their line.
        ("host a.test\nheader nope\n", ":2: --header \"nope\""),
    ] {
        let file = conf(&dir, text);
        let out = run_steerd(&["check", "--config", file.to_str().unwrap()], b"");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text:?}: {err}");
        assert!(err.contains(needle), "{text:?}: {err}");
    }
    let out = run_steerd(&["check", "--host", "a.test=/nonexistent/x"], b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("host a.test (--host a.test=/nonexistent/x)"),
        "{err}"
    );
    let a = format!("a.test={}", path_of(&dir, "a"));
    let out = run_steerd(&["check", "--host", &a, "--allowed-host", "b.test"], b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--allowed-host applies without hosts"),
        "{err}"
    );
}

/// What `steerd check --config CONFIG --explain PATH --explain-host HOST` prints.
pub(super) fn explain(config: &std::path::Path, host: &str, path: &str) -> String {
    let f = config.to_str().unwrap();
    let args = [
        "check",
        "--config",
        f,
        "--explain",
        path,
        "--explain-host",
        host,
    ];
    let out = run_steerd(&args, b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn check_explain_names_the_host_that_answers() {
    let dir = two_roots("hosts-explain");
    let file = conf(
        &dir,
        &format!(
            "host a.test www.a.test\nroot {}\nredirect /old /same.txt 302\n\
             host b.test\nroot {}\n",
            path_of(&dir, "a"),
            path_of(&dir, "b")
        ),
    );
    let f = file.to_str().unwrap();
    let explain = |host: &str, path: &str| explain(&file, host, path);
    let a = explain("WWW.a.test:8080", "/old");
    assert!(
        a.starts_with(&format!("host: a.test www.a.test ({f}:1)\n")),
        "{a}"
    );
    assert!(a.contains(&format!("rule: {f}:3 (redirect /old)")), "{a}");
    let b = explain("b.test", "/same.txt");
    assert!(b.starts_with(&format!("host: b.test ({f}:4)\n")), "{b}");
    assert!(
        b.contains("rule: none") && b.contains("file: /same.txt (text/plain"),
        "{b}"
    );
    assert!(b.contains(" 15 bytes)"), "b's own file: {b}");
    let c = explain("c.test", "/same.txt");
    assert_eq!(c, "host: none answers c.test\nanswer: 421\n");
}

#[test]
fn a_host_blocks_own_rate_limit_and_deny_apply_to_that_host_alone() {
    let dir = two_roots("hosts-limits");
    let file = conf(
        &dir,
        &format!(
            "workers 1\nhost a.test\nroot {}\nrate-limit 2\nhost b.test\nroot {}\n\
             host c.test\nroot {}\ndeny 127.0.0.0/8\n",
            path_of(&dir, "a"),
            path_of(&dir, "b"),
            path_of(&dir, "a")
        ),
    );
    let srv = {
        let mut cmd = Command::new(binary());
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&file);
        Server::spawn(&mut cmd)
    };
    let statuses = |host: &str| -> Vec<u16> {
        (0..6)
            .map(|_| get_as(srv.addr, host, "/same.txt").status)
            .collect()
    };
    let a = statuses("a.test");
    assert!(
        a.contains(&429) && a[..2] == [200, 200],
        "a's limit of 2: {a:?}"
    );
    assert_eq!(statuses("b.test"), [200; 6], "b has no limit");
    assert_eq!(
        get_as(srv.addr, "c.test", "/same.txt").status,
        403,
        "c's own deny"
    );
    assert_eq!(get_as(srv.addr, "b.test", "/same.txt").status, 200);
}

/// On one keep-alive connection, a request to a host whose lists are the defaults' (the
/// peer was held to them at accept, not again) and then to a host whose own `deny`
/// refuses the peer: 403, the second time too, and the first host still answers.
#[test]
fn a_host_blocks_own_deny_holds_a_connection_that_came_in_for_another_host() {
    use std::io::BufReader;
    let dir = two_roots("hosts-lists-switch");
    let file = conf(
        &dir,
        &format!(
            "workers 1\nallow 127.0.0.0/8\nhost b.test\nroot {}\n\
             host c.test\nroot {}\ndeny 127.0.0.0/8\n",
            path_of(&dir, "b"),
            path_of(&dir, "a")
        ),
    );
    let srv = serve(&["--config", file.to_str().unwrap()]);
    let s = std::net::TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    let mut status = |host: &str| {
        let req = format!("GET /same.txt HTTP/1.1\r\nHost: {host}\r\n\r\n");
        w.write_all(req.as_bytes()).unwrap();
        support::client::read_response(&mut r, false)
            .unwrap()
            .status
    };
    let seen: Vec<u16> = ["b.test", "c.test", "b.test", "c.test"]
        .map(&mut status)
        .to_vec();
    assert_eq!(seen, [200, 403, 200, 403], "b, c's own deny, b, c");
}

#[test]
fn check_warns_of_a_host_blocks_rules_under_its_root() {
    let dir = two_roots("hosts-warn");
    let file = conf(
        &dir,
        &format!(
            "redirect /gone /x 302\nhost a.test\nroot {}\nredirect /same.txt /x 302\n\
             redirect /same.txt /y 302\nhost b.test\nroot {}\n",
            path_of(&dir, "a"),
            path_of(&dir, "b")
        ),
    );
    let out = run_steerd(&["check", "--config", file.to_str().unwrap()], b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let c = file.display();
    let host = format!("steerd: warning: host a.test ({c}:2): rules:");
    for line in [
        format!(
            "{host} {c}:4 (/same.txt) shadows the file /same.txt (and 0 more): the rule \
             answers instead"
        ),
        format!(
            "{host} {c}:5 (/same.txt) never matches: {c}:4 (/same.txt) answers every path it \
             would"
        ),
    ] {
        assert!(err.lines().any(|l| l == line), "{line}\nin\n{err}");
    }
    assert!(
        !err.contains("host b.test"),
        "b's rules are the defaults': {err}"
    );
}
