//! `--proxy 'GLOB UPSTREAM'` through the real binary: the rule in the rules' list (flags,
//! the configuration file, host blocks), what `check` and `check --explain` say of it,
//! the refusals of a bad upstream and of the limits' flags, and what a client meets on a
//! proxied path and beside it.

use crate::support;

use std::path::Path;
use support::client::*;
use support::server::{run_steerd, Server, TempDir};

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
    let gone = dir.path().join("no-upstream.sock");
    let rule = format!("/api/** unix:{}", gone.display());
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
