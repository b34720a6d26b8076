//! `--redirect`, `--rewrite`, `--try-ext` and `--https-redirect` through the real binary
//! on loopback sockets (docs/serving.md "Rules and the configuration file"): captures,
//! codes and query strings, the first match answering, a rewrite resolved as a request
//! path (an SPA shell, a dotfile still hidden, the root never left), clean URLs, and the
//! HTTPS redirect believed only from a trusted proxy.

use crate::support;

use std::io::{BufReader, Write};
use std::path::Path;
use support::client::*;
use support::server::{run_steerd, Server, TempDir};

/// A small site: pages moved from `/old/`, an SPA under `/app/`, clean URLs, a secret.
fn site(tag: &str) -> TempDir {
    let dir = TempDir::new(tag);
    dir.write_all(&[
        ("index.html", "home\n"),
        ("about.html", "about page\n"),
        ("docs/intro.html", "intro\n"),
        ("docs.html", "docs page\n"),
        ("app/index.html", "spa shell\n"),
        ("app/main.js", "js\n"),
        ("new/page.html", "new page\n"),
        (".env", "SECRET=1\n"),
    ]);
    dir
}

fn serve(root: &Path, args: &[&str]) -> Server {
    let mut all = vec!["--workers", "1"];
    all.extend_from_slice(args);
    Server::start_in(root, &all, &[])
}

/// Status and `Location` of `GET path`.
fn located(srv: &Server, path: &str) -> (u16, Option<String>) {
    let r = get(srv.addr, path, "");
    (r.status, r.header("location").map(str::to_string))
}

#[test]
fn redirects_capture_keep_the_query_and_use_their_code() {
    let dir = site("rules-redirect");
    let srv = serve(
        dir.path(),
        &[
            "--redirect",
            "/old/** /new/$1",
            "--redirect",
            "/blog/*/*.html /posts/$2-$1 302",
            "--redirect",
            "/search /find?engine=steerd 307",
            "--redirect",
            "/ext/** https://example.org/$1 308",
            "--redirect",
            "/see /elsewhere 303",
        ],
    );
    let at = |p: &str| located(&srv, p);
    assert_eq!(at("/old/page.html"), (301, Some("/new/page.html".into())));
    assert_eq!(
        at("/old/a/b/c"),
        (301, Some("/new/a/b/c".into())),
        "** spans segments"
    );
    assert_eq!(at("/old/x?a=1&b=2"), (301, Some("/new/x?a=1&b=2".into())));
    assert_eq!(
        at("/blog/2024/post.html"),
        (302, Some("/posts/post-2024".into()))
    );
    assert_eq!(
        at("/blog/2024/deep/post.html").0,
        404,
        "* stays in its segment"
    );
    assert_eq!(
        at("/search?q=x"),
        (307, Some("/find?engine=steerd".into())),
        "TO's own query wins"
    );
    assert_eq!(
        at("/ext/a/b?k=v"),
        (308, Some("https://example.org/a/b?k=v".into()))
    );
    assert_eq!(at("/see").0, 303);
    let r = get(srv.addr, "/old/x", "");
    assert!(r.text().contains("301"), "a small page: {}", r.text());
    assert_eq!(r.header("content-length"), Some(&*r.body.len().to_string()));
    assert_eq!(
        get(srv.addr, "/about.html", "").status,
        200,
        "no rule: the file"
    );
}

#[test]
fn the_first_matching_rule_answers_and_rules_come_before_files() {
    let dir = site("rules-first");
    let srv = serve(
        dir.path(),
        &[
            "--redirect",
            "/docs/intro.html /moved-first",
            "--rewrite",
            "/docs/** /about.html",
            "--redirect",
            "/docs/** /never",
        ],
    );
    assert_eq!(
        located(&srv, "/docs/intro.html"),
        (301, Some("/moved-first".into())),
        "shadows a file"
    );
    let r = get(srv.addr, "/docs/other", "");
    assert_eq!(
        (r.status, r.text()),
        (200, "about page\n".into()),
        "the rewrite, not the later redirect"
    );
}

#[test]
fn a_rewrite_answers_with_its_target_as_a_request_would() {
    let dir = site("rules-rewrite");
    let srv = serve(
        dir.path(),
        &[
            "--rewrite",
            "/app/** /app/index.html",
            "--rewrite",
            "/secret /.env",
            "--rewrite",
            "/gone /nothing-here.html",
            "--rewrite",
            "/up/** /$1",
            "--error-page",
            "404=/docs.html",
        ],
    );
    let r = get(srv.addr, "/app/settings/profile", "");
    assert_eq!((r.status, r.text()), (200, "spa shell\n".into()));
    assert_eq!(
        r.header("content-type"),
        Some("text/html; charset=utf-8"),
        "the shell's own type"
    );
    assert!(
        r.header("etag").is_some() && r.header("last-modified").is_some(),
        "its validators"
    );
    // Rules come before files: the SPA's assets live outside what its rule covers.
    assert_eq!(get(srv.addr, "/app/main.js", "").text(), "spa shell\n");
    assert_eq!(
        get(srv.addr, "/about.html", "").text(),
        "about page\n",
        "no rule: the file"
    );
    // A dotfile stays hidden behind a rewrite; a missing target is a 404 (with its page).
    let missing = get(srv.addr, "/gone", "");
    assert_eq!(
        (missing.status, missing.text()),
        (404, "docs page\n".into())
    );
    let secret = get(srv.addr, "/secret", "");
    assert_eq!((secret.status, secret.text()), (404, "docs page\n".into()));
    // What a capture brings in stays under the root.
    for path in ["/up/%2e%2e/%2e%2e/etc/passwd", "/up/..%2f..%2fetc/passwd"] {
        let r = get(srv.addr, path, "");
        assert!(!r.text().contains("root:"), "{path}: {}", r.status);
        assert!(r.status == 404 || r.status == 400, "{path}: {}", r.status);
    }
    assert_eq!(get(srv.addr, "/up/about.html", "").text(), "about page\n");
}

#[test]
fn a_rewrite_leaving_the_root_is_refused_at_start() {
    let dir = site("rules-leave");
    for to in ["/../etc/passwd", "/a/../../etc/passwd", "/./x"] {
        let rule = format!("/x {to}");
        let root = dir.path().to_str().unwrap();
        let out = run_steerd(&["check", root, "--rewrite", &rule], b"");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{to}: {err}");
        assert!(
            err.contains("--rewrite") && err.contains("TO leaves the root"),
            "{to}: {err}"
        );
    }
}

#[test]
fn try_ext_answers_clean_urls() {
    let dir = site("rules-try-ext");
    let srv = serve(dir.path(), &["--try-ext", "htm", "--try-ext", "html"]);
    assert_eq!(get(srv.addr, "/about", "").text(), "about page\n");
    assert_eq!(get(srv.addr, "/docs/intro", "").text(), "intro\n");
    // A directory is still a directory (its trailing-slash redirect), not docs.html.
    assert_eq!(located(&srv, "/docs").0, 301);
    assert_eq!(get(srv.addr, "/missing", "").status, 404);
    assert_eq!(get(srv.addr, "/.env", "").status, 404);
    let bare = serve(dir.path(), &[]);
    assert_eq!(get(bare.addr, "/about", "").status, 404, "without the flag");
}

#[test]
fn try_ext_then_the_fallback() {
    let dir = site("rules-try-fallback");
    let srv = serve(
        dir.path(),
        &["--try-ext", "html", "--fallback", "/app/index.html"],
    );
    assert_eq!(get(srv.addr, "/about", "").text(), "about page\n");
    assert_eq!(get(srv.addr, "/nowhere", "").text(), "spa shell\n");
}

/// A captured CR LF never reaches a header: refused by the parser when sent raw,
/// percent-encoded in the `Location` when sent encoded (the decoded path holds them).
#[test]
fn a_captured_cr_lf_never_reaches_a_header() {
    let dir = site("rules-crlf");
    let srv = serve(dir.path(), &["--redirect", "/o/* /n/$1"]);
    let r = get(srv.addr, "/o/a%0D%0ASet-Cookie:%20x=1", "");
    assert!(r.header("set-cookie").is_none(), "{:?}", r.headers);
    if r.status == 301 {
        assert_eq!(r.header("location"), Some("/n/a%0D%0ASet-Cookie:%20x=1"));
    } else {
        assert_eq!(r.status, 400);
    }
    let r = get(srv.addr, "/o/a%20b%3Fc%23d", "");
    assert_eq!(
        (r.status, r.header("location")),
        (301, Some("/n/a%20b%3Fc%23d"))
    );
}

fn forwarded(srv: &Server, proto: &str) -> Response {
    let extra = format!("X-Forwarded-For: 192.0.2.7\r\nX-Forwarded-Proto: {proto}\r\n");
    exchange(
        srv.addr,
        &format!(
            "GET /a/b?x=1 HTTP/1.1\r\nHost: www.example.org\r\n{extra}Connection: close\r\n\r\n"
        ),
    )
}

#[test]
fn https_redirect_believes_only_a_trusted_proxy() {
    let dir = site("rules-https");
    let trusted = serve(
        dir.path(),
        &["--https-redirect", "--real-ip-from", "127.0.0.0/8"],
    );
    let r = forwarded(&trusted, "http");
    assert_eq!(r.status, 308);
    assert_eq!(
        r.header("location"),
        Some("https://www.example.org/a/b?x=1")
    );
    assert_eq!(
        forwarded(&trusted, "https").status,
        404,
        "already HTTPS: served"
    );
    assert_eq!(
        get(trusted.addr, "/about.html", "").status,
        200,
        "no X-Forwarded-Proto"
    );
    let untrusted = serve(
        dir.path(),
        &["--https-redirect", "--real-ip-from", "10.0.0.0/8"],
    );
    assert_eq!(
        forwarded(&untrusted, "http").status,
        404,
        "the field is ignored"
    );
}

/// A PROXY v2 header from 127.0.0.1 naming 192.0.2.7, with `tlvs` after the addresses.
fn proxy_v2(tlvs: &[u8]) -> Vec<u8> {
    let mut h = b"\r\n\r\n\0\r\nQUIT\n\x21\x11".to_vec();
    h.extend_from_slice(&(12 + tlvs.len() as u16).to_be_bytes());
    h.extend_from_slice(&[192, 0, 2, 7, 127, 0, 0, 1, 0x30, 0x39, 0, 80]);
    h.extend_from_slice(tlvs);
    h
}

#[test]
fn https_redirect_through_proxy_v2_reads_the_ssl_tlv() {
    let dir = site("rules-https-pp2");
    let srv = serve(
        dir.path(),
        &[
            "--https-redirect",
            "--proxy-protocol",
            "--real-ip-from",
            "127.0.0.1",
        ],
    );
    let ask = |tlvs: &[u8]| {
        let mut s = srv.connect();
        let mut bytes = proxy_v2(tlvs);
        bytes.extend_from_slice(
            b"GET /about.html HTTP/1.1\r\nHost: h.test\r\nConnection: close\r\n\r\n",
        );
        s.write_all(&bytes).unwrap();
        read_response(&mut BufReader::new(s), false).unwrap()
    };
    let plain = ask(b"");
    assert_eq!(
        (plain.status, plain.header("location")),
        (308, Some("https://h.test/about.html"))
    );
    // PP2_TYPE_SSL with PP2_CLIENT_SSL: the client came over TLS.
    assert_eq!(ask(&[0x20, 0, 5, 0x01, 0, 0, 0, 0]).status, 200);
}

#[test]
fn https_redirect_needs_a_trusted_proxy() {
    let out = run_steerd(&["check", "--https-redirect"], b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--https-redirect needs --real-ip-from"),
        "{err}"
    );
}

#[test]
fn bad_rules_are_refused_naming_the_flag() {
    for (flag, value, needle) in [
        ("--redirect", "/a", "expected FROM TO [CODE]"),
        ("--redirect", "/a /b 200", "CODE \"200\""),
        ("--redirect", "/a/* /b/$2", "TO uses $2"),
        ("--redirect", "/a b", "TO must be a path"),
        ("--rewrite", "/a /b 301", "expected FROM TO"),
        ("--try-ext", ".", "expected an extension"),
    ] {
        let out = run_steerd(&["check", flag, value], b"");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(
            err.contains(flag) && err.contains(needle),
            "{flag} {value}: {err}"
        );
    }
}

#[test]
fn the_json_log_names_the_rule() {
    let dir = site("rules-log");
    let log = dir.path().join("../rules-log-access.log");
    let log_arg = log.to_str().unwrap().to_string();
    let srv = serve(
        dir.path(),
        &[
            "--redirect",
            "/old/** /new/$1",
            "--access-log",
            &log_arg,
            "--log-format",
            "json",
        ],
    );
    assert_eq!(get(srv.addr, "/old/x", "").status, 301);
    assert_eq!(get(srv.addr, "/about.html", "").status, 200);
    // The worker writes its buffer out within a second of a line (bounded wait).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut text = String::new();
    while text.lines().count() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
        text = std::fs::read_to_string(&log).unwrap_or_default();
    }
    drop(srv);
    let _ = std::fs::remove_file(&log);
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["rule"], "--redirect /old/** /new/$1");
    assert!(lines[1].get("rule").is_none(), "{text}");
}
