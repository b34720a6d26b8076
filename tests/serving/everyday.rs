//! Everyday static serving through the real binary on loopback sockets: the rules of
//! docs/serving.md "Everyday serving", one test (or more) per rule.

use crate::support;

use std::io::{BufReader, Read, Write};
use support::client::*;
use support::in_process::*;
use support::server::Server;

/// A GET or HEAD announcing more body than the server discards (1 MiB) is refused with
/// 413 and the connection is closed at once: the server does not linger reading the
/// body, so the body the client sends afterwards meets a closed socket (reset), unlike
/// the lingering close of `close_with_a_body_still_owed_lingers` in http_serving.rs.
#[test]
fn body_over_the_discard_limit_is_413_and_closes_at_once() {
    let site = Site::new("bin-413");
    let srv = Server::start_in(&site.root, &["--workers", "1"], &[]);
    for method in ["GET", "HEAD"] {
        let mut s = srv.connect();
        let head =
            format!("{method} /hello.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 1048577\r\n\r\n");
        s.write_all(head.as_bytes()).unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        let resp = read_response(&mut r, method == "HEAD").unwrap();
        assert_eq!(resp.status, 413, "{method}");
        assert_eq!(resp.header("connection"), Some("close"), "{method}");
        let mut rest = Vec::new();
        let _ = r.read_to_end(&mut rest);
        assert!(rest.is_empty(), "{method}: nothing after the 413");
        let sent = s.write_all(&vec![b'x'; 16 << 20]);
        assert!(sent.is_err(), "{method}: the body was read, not refused");
    }
}

/// At the limit the body is still read and discarded and the connection kept.
#[test]
fn body_at_the_discard_limit_is_discarded_and_kept() {
    let site = Site::new("bin-413-limit");
    let srv = Server::start_in(&site.root, &["--workers", "1"], &[]);
    let mut s = srv.connect();
    let head = "GET /hello.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 1048576\r\n\r\n";
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&vec![b'x'; 1 << 20]).unwrap();
    s.write_all(b"GET /ten.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut r = BufReader::new(s);
    assert_eq!(
        read_response(&mut r, false).unwrap().text(),
        "hello world\n"
    );
    assert_eq!(read_response(&mut r, false).unwrap().text(), "0123456789");
}

// ---- helpers ----

/// The test site plus pre-compressed sidecars with recognisable (fake) contents: the
/// server never decodes them, so each representation is told apart by its bytes.
fn site_with_sidecars(name: &str) -> Site {
    let site = Site::new(name);
    let r = &site.root;
    std::fs::write(r.join("app.js"), "console.log('identity');\n").unwrap();
    std::fs::write(r.join("app.js.gz"), "GZ:app.js").unwrap();
    std::fs::write(r.join("app.js.br"), "BR:app.js").unwrap();
    std::fs::write(r.join("app.js.zst"), "ZSTD:app.js").unwrap();
    std::fs::write(r.join("dir/index.html.gz"), "GZ:dir/index.html").unwrap();
    site
}

/// `GET path` with `Accept-Encoding: ae` (no field when `ae` is None) and extra lines.
fn get_ae(srv: &Server, path: &str, ae: Option<&str>, extra: &str) -> Response {
    let ae = ae
        .map(|v| format!("Accept-Encoding: {v}\r\n"))
        .unwrap_or_default();
    get(srv.addr, path, &format!("{ae}{extra}"))
}

fn serve(site: &Site, flags: &[&str]) -> Server {
    let mut args = vec!["--workers", "1"];
    args.extend_from_slice(flags);
    Server::start_in(&site.root, &args, &[])
}

/// Runs the binary to completion: (exit status, stderr).
fn run(args: &[&str]) -> (i32, String) {
    let out = crate::support::server::run_steerd(args, b"");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), err)
}

// ---- 1. pre-compressed files ----

#[test]
fn accepted_sidecar_is_served_with_its_coding_and_the_file_type() {
    let site = site_with_sidecars("bin-pre");
    let srv = serve(&site, &[]);
    let r = get_ae(&srv, "/app.js", Some("gzip"), "");
    assert_eq!((r.status, r.text().as_str()), (200, "GZ:app.js"));
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(
        r.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert_eq!(r.header("content-length"), Some("9"));
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));
    // No field: identity, still with Vary.
    let r = get_ae(&srv, "/app.js", None, "");
    assert_eq!(r.text(), "console.log('identity');\n");
    assert_eq!(
        (r.header("content-encoding"), r.header("vary")),
        (None, Some("Accept-Encoding"))
    );
    // A directory's index.html and its sidecar.
    let r = get_ae(&srv, "/dir/", Some("gzip"), "");
    assert_eq!(r.text(), "GZ:dir/index.html");
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    // A file without sidecars has no Vary.
    let r = get_ae(&srv, "/hello.txt", Some("gzip, br"), "");
    assert_eq!(
        (r.text().as_str(), r.header("vary")),
        ("hello world\n", None)
    );
    // HEAD of the coded representation: its length, no body.
    let r = exchange(
        srv.addr,
        "HEAD /app.js HTTP/1.1\r\nHost: t\r\nAccept-Encoding: br\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(
        (r.header("content-encoding"), r.header("content-length")),
        (Some("br"), Some("9"))
    );
}

#[test]
fn tricky_accept_encoding_forms() {
    let site = site_with_sidecars("bin-ae");
    let srv = serve(&site, &[]);
    for (ae, want) in [
        ("GZIP", "GZ:"),
        ("x-gzip", "GZ:"),
        ("*", "BR:"),
        ("gzip, zstd, br", "BR:"),
        ("br;q=0.5, gzip;q=0.8", "GZ:"),
        ("br;Q=0.5 , zstd ; q=0.9", "ZSTD:"),
        ("br;q=0, *", "ZSTD:"),
        ("br;q=2, gzip;q=0.1", "GZ:"),
        ("br;q=1.5", "console"),
        ("br;q= 1", "console"),
        ("gzip;q=0", "console"),
        ("deflate, compress", "console"),
        ("identity, gzip;q=0.5", "console"),
        ("gzip;q=0.5", "GZ:"),
        ("", "console"),
    ] {
        let r = get_ae(&srv, "/app.js", Some(ae), "");
        assert!(r.text().starts_with(want), "{ae:?}: {}", r.text());
        assert_eq!(r.header("vary"), Some("Accept-Encoding"), "{ae:?}");
    }
    // Two field lines make one list.
    let r = get_ae(
        &srv,
        "/app.js",
        Some("br;q=0.1"),
        "Accept-Encoding: zstd;q=0.2\r\n",
    );
    assert_eq!(r.text(), "ZSTD:app.js");
}

#[test]
fn list_order_breaks_ties_and_off_disables() {
    let site = site_with_sidecars("bin-order");
    let srv = serve(&site, &["--precompressed", "gzip,zstd"]);
    assert_eq!(get_ae(&srv, "/app.js", Some("*"), "").text(), "GZ:app.js");
    assert!(get_ae(&srv, "/app.js", Some("br"), "")
        .text()
        .starts_with("console"));
    drop(srv);
    let srv = serve(&site, &["--precompressed", "off"]);
    let r = get_ae(&srv, "/app.js", Some("gzip"), "");
    assert_eq!(
        (r.text().starts_with("console"), r.header("vary")),
        (true, None)
    );
}

#[test]
fn refused_identity_without_a_sidecar_is_406() {
    let site = site_with_sidecars("bin-406");
    let srv = serve(&site, &[]);
    for ae in ["identity;q=0", "*;q=0", "br;q=0, identity;q=0"] {
        assert_eq!(get_ae(&srv, "/hello.txt", Some(ae), "").status, 406, "{ae}");
    }
    let r = get_ae(&srv, "/app.js", Some("*;q=0"), "");
    assert_eq!((r.status, r.header("vary")), (406, Some("Accept-Encoding")));
    let r = get_ae(&srv, "/app.js", Some("gzip, identity;q=0"), "");
    assert_eq!((r.status, r.text().as_str()), (200, "GZ:app.js"));
}

#[test]
fn range_applies_to_the_compressed_bytes() {
    let site = site_with_sidecars("bin-range");
    let srv = serve(&site, &[]);
    let r = get_ae(&srv, "/app.js", Some("gzip"), "Range: bytes=3-5\r\n");
    assert_eq!((r.status, r.text().as_str()), (206, "app"));
    assert_eq!(r.header("content-range"), Some("bytes 3-5/9"));
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    let r = get_ae(&srv, "/app.js", Some("gzip"), "Range: bytes=9-\r\n");
    assert_eq!(
        (r.status, r.header("content-range")),
        (416, Some("bytes */9"))
    );
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));
    // The identity file is longer: the same range is satisfiable there.
    let r = get_ae(&srv, "/app.js", None, "Range: bytes=9-\r\n");
    assert_eq!(r.status, 206);
}

#[test]
fn each_representation_has_its_own_etag_for_304_and_if_range() {
    let site = site_with_sidecars("bin-etag");
    let srv = serve(&site, &[]);
    let gz = get_ae(&srv, "/app.js", Some("gzip"), "");
    let plain = get_ae(&srv, "/app.js", None, "");
    let (gz_tag, plain_tag) = (gz.header("etag").unwrap(), plain.header("etag").unwrap());
    assert_ne!(gz_tag, plain_tag);
    let inm = |tag: &str| format!("If-None-Match: {tag}\r\n");
    let r = get_ae(&srv, "/app.js", Some("gzip"), &inm(gz_tag));
    assert_eq!((r.status, r.header("etag")), (304, Some(gz_tag)));
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));
    assert_eq!(get_ae(&srv, "/app.js", None, &inm(gz_tag)).status, 200);
    assert_eq!(get_ae(&srv, "/app.js", None, &inm(plain_tag)).status, 304);
    assert_eq!(
        get_ae(&srv, "/app.js", Some("gzip"), &inm(plain_tag)).status,
        200
    );
    let ir = |tag: &str| format!("Range: bytes=0-1\r\nIf-Range: {tag}\r\n");
    let r = get_ae(&srv, "/app.js", Some("gzip"), &ir(gz_tag));
    assert_eq!((r.status, r.text().as_str()), (206, "GZ"));
    let r = get_ae(&srv, "/app.js", Some("gzip"), &ir(plain_tag));
    assert_eq!((r.status, r.text().as_str()), (200, "GZ:app.js"));
}

#[test]
fn stale_or_escaping_sidecars_are_not_used_and_sidecars_are_files_too() {
    let site = site_with_sidecars("bin-stale");
    let r = &site.root;
    // A sidecar older than its file.
    std::fs::write(r.join("old.css"), "body{}").unwrap();
    std::fs::write(r.join("old.css.gz"), "GZ:stale").unwrap();
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(r.join("old.css.gz"))
        .unwrap()
        .set_modified(past)
        .unwrap();
    // A sidecar that is a symlink out of the root (to a file newer than the target).
    std::fs::write(r.join("leak.txt"), "inside").unwrap();
    std::os::unix::fs::symlink("../secret.txt", r.join("leak.txt.gz")).unwrap();
    std::fs::write(r.join("loop.txt"), "plain").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", r.join("loop.txt.br")).unwrap();
    let srv = serve(&site, &[]);
    let got = get_ae(&srv, "/old.css", Some("gzip"), "");
    assert_eq!((got.text().as_str(), got.header("vary")), ("body{}", None));
    let got = get_ae(&srv, "/leak.txt", Some("gzip"), "");
    assert_eq!(
        (got.text().as_str(), got.header("content-encoding")),
        ("inside", None)
    );
    let got = get_ae(&srv, "/loop.txt", Some("br"), "");
    assert_eq!(got.text(), "plain");
    // A sidecar asked for by name is a plain file of its own type.
    let got = get_ae(&srv, "/app.js.gz", Some("gzip"), "");
    assert_eq!(got.text(), "GZ:app.js");
    assert_eq!(got.header("content-type"), Some("application/gzip"));
    assert_eq!(got.header("content-encoding"), None);
}

/// A file changed after its sidecar was made: once the cache rechecks it (within about a
/// second), the sidecar is stale and the file itself is served.
#[test]
fn a_sidecar_goes_stale_when_its_file_changes() {
    let site = site_with_sidecars("bin-stale-live");
    let srv = serve(&site, &[]);
    assert_eq!(
        get_ae(&srv, "/app.js", Some("gzip"), "").text(),
        "GZ:app.js"
    );
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(30);
    let f = std::fs::File::options()
        .write(true)
        .open(site.root.join("app.js"))
        .unwrap();
    f.set_len(3).unwrap();
    f.set_modified(later).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let r = get_ae(&srv, "/app.js", Some("gzip"), "");
        if r.text() == "con" {
            assert_eq!(
                (r.header("content-encoding"), r.header("vary")),
                (None, None)
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "still {:?}", r.text());
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

// ---- 2. headers, error pages, single-page apps, types ----

#[test]
fn headers_go_on_2xx_3xx_and_304_only() {
    let site = site_with_sidecars("bin-hdr");
    let srv = serve(
        &site,
        &[
            "--header",
            "X-Frame-Options: DENY",
            "--header=X-Test:  a, b ",
        ],
    );
    let ok = get(srv.addr, "/hello.txt", "");
    assert_eq!(ok.header("x-frame-options"), Some("DENY"));
    assert_eq!(ok.header("x-test"), Some("a, b"));
    let tag = ok.header("etag").unwrap().to_string();
    let nm = get(srv.addr, "/hello.txt", &format!("If-None-Match: {tag}\r\n"));
    assert_eq!(
        (nm.status, nm.header("x-frame-options")),
        (304, Some("DENY"))
    );
    let partial = get(srv.addr, "/hello.txt", "Range: bytes=0-1\r\n");
    assert_eq!(
        (partial.status, partial.header("x-test")),
        (206, Some("a, b"))
    );
    let moved = get(srv.addr, "/dir", "");
    assert_eq!(
        (moved.status, moved.header("x-frame-options")),
        (301, Some("DENY"))
    );
    let missing = get(srv.addr, "/missing", "");
    assert_eq!(
        (missing.status, missing.header("x-frame-options")),
        (404, None)
    );
}

/// A policy value of `len` bytes that shows any byte lost, doubled or moved.
fn long_value(len: usize) -> String {
    let alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789'-;: ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut v: String = (0..len)
        .map(|i| alphabet[(i * 7 + i / 61) % alphabet.len()] as char)
        .collect();
    v.replace_range(..1, "<");
    v.replace_range(len - 1.., ">");
    v
}

/// Long `Content-Security-Policy` lines are common (2-4 KB): 3 KiB of `--header` plus a
/// long `--cache-control` value go out intact on a 200 (cached small file, and a file
/// sent with `sendfile`), a 304, a 206 and a long 301 (the spilled head), also one after
/// another on one connection; lines that fit no head area are refused at start in one
/// line, before anything is bound.
#[test]
fn a_3_kib_header_goes_out_intact_and_an_oversized_one_is_refused() {
    let site = site_with_sidecars("bin-csp");
    let csp = long_value(3 * 1024);
    let header = format!("Content-Security-Policy: {csp}");
    let cache = format!("max-age=60, {}", long_value(700));
    let rule = format!("/**={cache}");
    let srv = serve(&site, &["--header", &header, "--cache-control", &rule]);
    let intact = |r: &Response, what: &str| {
        assert_eq!(
            r.header("content-security-policy"),
            Some(&csp[..]),
            "{what}"
        );
        assert_eq!(r.header("cache-control"), Some(&cache[..]), "{what}");
    };
    let ok = get(srv.addr, "/hello.txt", "");
    assert_eq!((ok.status, ok.text().as_str()), (200, "hello world\n"));
    intact(&ok, "200");
    let big = get(srv.addr, "/big.bin", "");
    assert!(
        big.status == 200 && big.body == site.big(),
        "the sendfile body"
    );
    intact(&big, "200 by sendfile");
    let tag = ok.header("etag").unwrap().to_string();
    let nm = get(srv.addr, "/hello.txt", &format!("If-None-Match: {tag}\r\n"));
    assert_eq!(nm.status, 304);
    intact(&nm, "304");
    let partial = get(srv.addr, "/hello.txt", "Range: bytes=0-4\r\n");
    assert_eq!((partial.status, partial.text().as_str()), (206, "hello"));
    intact(&partial, "206");
    let query = "q".repeat(3000);
    let moved = get(srv.addr, &format!("/dir?{query}"), "");
    assert_eq!(moved.status, 301);
    assert_eq!(
        moved.header("location"),
        Some(&format!("/dir/?{query}")[..])
    );
    assert_eq!(
        moved.header("content-security-policy"),
        Some(&csp[..]),
        "301"
    );
    // One connection, four responses in a row through the same head area.
    let mut s = srv.connect();
    let tagged = format!("If-None-Match: {tag}\r\n");
    for extra in ["", &tagged, "Range: bytes=6-10\r\n", ""] {
        let req = format!("GET /hello.txt HTTP/1.1\r\nHost: t\r\n{extra}\r\n");
        s.write_all(req.as_bytes()).unwrap();
    }
    let mut r = BufReader::new(s);
    for want in [200, 304, 206, 200] {
        let resp = read_response(&mut r, false).unwrap();
        assert_eq!(resp.status, want);
        intact(&resp, "kept alive");
    }
    // Too much for any head area: one line, exit 2, nothing bound.
    let root = site.root.display().to_string();
    let huge = format!("Content-Security-Policy: {}", long_value(6 * 1024));
    let (code, err) = run(&["serve", &root, "--listen", "127.0.0.1:0", "--header", &huge]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("steerd: args: --header and --cache-control: the lines add 6171 bytes")
            && err.trim_end().ends_with(" fit"),
        "{err}"
    );
}

#[test]
fn cache_control_by_glob_first_match_wins() {
    let site = site_with_sidecars("bin-cc");
    std::fs::create_dir_all(site.root.join("assets/img")).unwrap();
    std::fs::write(site.root.join("assets/img/a.css"), "a{}").unwrap();
    std::fs::write(site.root.join("b.css"), "b{}").unwrap();
    let srv = serve(
        &site,
        &[
            "--cache-control",
            "/assets/**=public, max-age=31536000, immutable",
            "--cache-control",
            "*.css=max-age=60",
            "--cache-control",
            "**/*.html=no-cache",
        ],
    );
    let cc = |path: &str| {
        get(srv.addr, path, "")
            .header("cache-control")
            .map(str::to_string)
    };
    assert_eq!(
        cc("/assets/img/a.css").as_deref(),
        Some("public, max-age=31536000, immutable")
    );
    assert_eq!(cc("/b.css").as_deref(), Some("max-age=60"));
    assert_eq!(cc("/dir/index.html").as_deref(), Some("no-cache"));
    assert_eq!(cc("/hello.txt"), None);
    assert_eq!(cc("/missing.css"), None, "errors carry no Cache-Control");
    let tag = get(srv.addr, "/b.css", "")
        .header("etag")
        .unwrap()
        .to_string();
    let nm = get(srv.addr, "/b.css", &format!("If-None-Match: {tag}\r\n"));
    assert_eq!(
        (nm.status, nm.header("cache-control")),
        (304, Some("max-age=60"))
    );
}

#[test]
fn error_pages_keep_the_status_and_fall_back_to_the_builtin_page() {
    let site = site_with_sidecars("bin-errpage");
    std::fs::write(site.root.join("404.html"), "<p>custom 404</p>").unwrap();
    std::fs::write(site.root.join("405.txt"), "no such method here").unwrap();
    std::fs::write(site.root.join("416.html"), "bad range").unwrap();
    let srv = serve(
        &site,
        &[
            "--error-page",
            "404=/404.html",
            "--error-page",
            "405=405.txt",
            "--error-page",
            "416=/416.html",
        ],
    );
    let r = get(srv.addr, "/missing", "");
    assert_eq!((r.status, r.text().as_str()), (404, "<p>custom 404</p>"));
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    let r = exchange(
        srv.addr,
        "DELETE /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_eq!((r.status, r.text().as_str()), (405, "no such method here"));
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!(r.header("allow"), Some("GET, HEAD"));
    let r = get(srv.addr, "/hello.txt", "Range: bytes=100-\r\n");
    assert_eq!((r.status, r.text().as_str()), (416, "bad range"));
    assert_eq!(r.header("content-range"), Some("bytes */12"));
    // HEAD: the page's length, no body; keep-alive still works after an error page.
    let mut s = srv.connect();
    s.write_all(
        b"HEAD /missing HTTP/1.1\r\nHost: t\r\n\r\nGET /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n",
    )
    .unwrap();
    let mut rd = BufReader::new(s);
    let h = read_response(&mut rd, true).unwrap();
    assert_eq!((h.status, h.header("content-length")), (404, Some("17")));
    assert_eq!(
        read_response(&mut rd, false).unwrap().text(),
        "hello world\n"
    );
    // The page removed while serving: the built-in page, same status.
    std::fs::remove_file(site.root.join("404.html")).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let r = get(srv.addr, "/missing", "");
        assert_eq!(r.status, 404);
        if r.text().contains("404 Not Found") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the cached page never expired"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// The 408 sent when a head does not arrive within `--header-timeout` carries the
/// operator's page for 408, as other errors do, and still closes.
#[test]
fn the_header_timeout_408_carries_its_error_page() {
    let site = site_with_sidecars("bin-errpage408");
    let srv = serve_with_408_page(&site, b"<p>too slow</p>");
    let started = std::time::Instant::now();
    let r = exchange(srv.addr, "GET /hello.txt HTTP/1.1\r\nHost: t\r\n");
    assert_eq!((r.status, r.text().as_str()), (408, "<p>too slow</p>"));
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(r.header("connection"), Some("close"));
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // Without a page for 408 the built-in one is sent.
    let plain = serve(&site, &["--header-timeout", "300ms"]);
    let r = exchange(plain.addr, "GET /hello.txt HTTP/1.1\r\nHost: t\r\n");
    assert_eq!(r.status, 408);
    assert!(r.text().contains("408 Request Timeout"), "{}", r.text());
}

/// A server with a 300 ms header timeout whose 408 page is `page`.
fn serve_with_408_page(site: &Site, page: &[u8]) -> Server {
    std::fs::write(site.root.join("slow.html"), page).unwrap();
    let flags = [
        "--header-timeout",
        "300ms",
        "--error-page",
        "408=/slow.html",
    ];
    serve(site, &flags)
}

/// A 408 page larger than the socket takes at once is sent whole, as any response is:
/// the rest under the send deadline, then the close.
#[test]
fn a_large_408_page_is_sent_whole() {
    let site = site_with_sidecars("bin-errpage408-large");
    // Larger than loopback's default send and receive buffers together (tcp_wmem and
    // tcp_rmem maxima of 4 and 6 MiB), so the first pass cannot take it all.
    let page: Vec<u8> = (0..24 << 20).map(|i: u32| b'a' + (i % 26) as u8).collect();
    let srv = serve_with_408_page(&site, &page);
    let r = exchange(srv.addr, "GET /hello.txt HTTP/1.1\r\nHost: t\r\n");
    assert_eq!(r.status, 408);
    assert_eq!(r.header("content-length"), Some("25165824"));
    assert_eq!(r.body.len(), page.len());
    assert!(r.body == page, "the page's bytes, in order");
}

/// A file that is also an error page keeps its sidecars whichever way it was loaded
/// first into the cache.
#[test]
fn a_page_loaded_as_an_error_page_keeps_its_sidecars() {
    let site = site_with_sidecars("bin-errpage-sidecar");
    let srv = serve(&site, &["--error-page", "405=/app.js"]);
    let r = exchange(
        srv.addr,
        "DELETE /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(
        (r.status, r.text().as_str()),
        (405, "console.log('identity');\n")
    );
    let r = get_ae(&srv, "/app.js", Some("gzip"), "");
    assert_eq!(
        (r.text().as_str(), r.header("vary")),
        ("GZ:app.js", Some("Accept-Encoding"))
    );
}

#[test]
fn fallback_answers_missing_paths_except_skipped_extensions() {
    let site = site_with_sidecars("bin-fallback");
    std::fs::write(site.root.join("index.html.gz"), "GZ:index").unwrap();
    let srv = serve(
        &site,
        &[
            "--fallback",
            "/index.html",
            "--fallback-skip",
            "js,png",
            "--cache-control",
            "/index.html=no-cache",
        ],
    );
    let r = get(srv.addr, "/deep/link/page", "");
    assert_eq!((r.status, r.text().as_str()), (200, "<h1>home</h1>\n"));
    assert_eq!(
        r.header("cache-control"),
        Some("no-cache"),
        "the fallback's own path"
    );
    let r = get_ae(&srv, "/about", Some("gzip"), "");
    assert_eq!(
        (r.text().as_str(), r.header("content-encoding")),
        ("GZ:index", Some("gzip"))
    );
    assert_eq!(get(srv.addr, "/missing.js", "").status, 404);
    assert_eq!(get(srv.addr, "/img/LOGO.PNG", "").status, 404);
    assert_eq!(get(srv.addr, "/v1.2/x", "").status, 200);
    // Existing files and directory redirects are untouched.
    assert_eq!(get(srv.addr, "/hello.txt", "").text(), "hello world\n");
    assert_eq!(get(srv.addr, "/dir", "").status, 301);
    // Not a GET/HEAD: no fallback.
    let r = exchange(
        srv.addr,
        "POST /about HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 405);
}

#[test]
fn a_missing_fallback_is_refused_at_start_and_404_when_it_goes_away() {
    let site = site_with_sidecars("bin-fb-missing");
    let root = site.root.display().to_string();
    let (code, err) = run(&["check", &root, "--fallback", "/app.html"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("steerd: site: --fallback /app.html: no such file under ROOT"),
        "{err}"
    );
    let (code, err) = run(&[
        "serve",
        &root,
        "--listen",
        "127.0.0.1:0",
        "--fallback",
        "/app.html",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        !err.contains("listening on"),
        "refused before binding: {err}"
    );
    // Present at start, removed later: the request gets 404, never a loop.
    std::fs::write(site.root.join("app.html"), "spa").unwrap();
    let srv = serve(&site, &["--fallback", "/app.html"]);
    assert_eq!(get(srv.addr, "/route", "").text(), "spa");
    std::fs::remove_file(site.root.join("app.html")).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while get(srv.addr, "/route", "").status != 404 {
        assert!(
            std::time::Instant::now() < deadline,
            "the fallback stayed cached"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn mime_overrides_and_the_builtin_table() {
    let site = site_with_sidecars("bin-mime");
    for f in [
        "a.md",
        "b.wasm",
        "c.webmanifest",
        "d.avif",
        "e.mjs",
        "f.woff2",
    ] {
        std::fs::write(site.root.join(f), "x").unwrap();
    }
    let srv = serve(
        &site,
        &[
            "--mime",
            "md=text/markdown; charset=utf-8",
            "--mime",
            ".wasm=application/x-test",
        ],
    );
    let ct = |p: &str| {
        get(srv.addr, p, "")
            .header("content-type")
            .unwrap()
            .to_string()
    };
    assert_eq!(ct("/a.md"), "text/markdown; charset=utf-8");
    assert_eq!(ct("/b.wasm"), "application/x-test");
    assert_eq!(ct("/c.webmanifest"), "application/manifest+json");
    assert_eq!(ct("/d.avif"), "image/avif");
    assert_eq!(ct("/e.mjs"), "text/javascript; charset=utf-8");
    assert_eq!(ct("/f.woff2"), "font/woff2");
}

// ---- 3. a configuration test that means it ----

#[test]
fn check_lists_every_problem_and_exits_non_zero() {
    let site = site_with_sidecars("bin-check");
    let root = site.root.display().to_string();
    let file = site.root.join("hello.txt").display().to_string();
    let missing = site.base.join("nope").display().to_string();
    let (code, _) = run(&["check", &root, "--error-page", "404=/dir/index.html"]);
    assert_eq!(code, 0);
    let (code, err) = run(&["check", &missing]);
    assert_eq!(
        (code, err.trim()),
        (
            1,
            format!("steerd: root: {missing}: No such file or directory (os error 2)").as_str()
        )
    );
    let (code, err) = run(&["check", &file]);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!("steerd: root: {file}: Not a directory")),
        "{err}"
    );
    let (code, err) = run(&[
        "check",
        &root,
        "--error-page",
        "404=/missing.html",
        "--error-page",
        "500=/dir",
        "--fallback",
        "/escape",
        "--access-log",
        "/nonexistent-dir/access.log",
        "--user",
        "no-such-user-steerd",
    ]);
    assert_eq!(code, 1, "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.contains("warning")).collect();
    // Without openat2 (kernels before 5.6, user-mode QEMU) the walk opens a final symlink
    // as the link itself, which is no file: the escape reads as missing there.
    let root_fd = std::fs::File::open(&site.root).expect("open root");
    let escape = if steerd::files::beneath::fallback_in_use(std::os::fd::AsFd::as_fd(&root_fd)) {
        "steerd: site: --fallback /escape: no such file under ROOT"
    } else {
        "steerd: site: --fallback /escape: refused (permissions, or a symlink leaving ROOT)"
    };
    assert_eq!(
        lines,
        [
            "steerd: site: --error-page /missing.html: no such file under ROOT",
            "steerd: site: --error-page /dir: not a regular file",
            escape,
            "steerd: access-log: /nonexistent-dir/access.log: cannot be opened for appending: No such file or directory (os error 2)",
            "steerd: user: user \"no-such-user-steerd\" is not in /etc/passwd",
        ],
        "{err}"
    );
    // Malformed --header and --mime: refused with one line each, exit 2.
    let (code, err) = run(&[
        "check",
        &root,
        "--header",
        "Bad Name: x",
        "--mime",
        "md",
        "--header",
        "X: a\u{1}b",
    ]);
    assert_eq!(code, 2);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(
        lines.iter().all(|l| l.starts_with("steerd: args: --")),
        "{err}"
    );
}

// ---- 5. the README's first command ----

#[test]
fn the_example_site_is_served() {
    let site = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("site");
    let srv = Server::start_in(&site, &["--workers", "1"], &[]);
    let r = get(srv.addr, "/", "");
    assert!(
        r.status == 200 && r.text().contains("steerd"),
        "{}",
        r.text()
    );
    for (coding, suffix) in [("br", "br"), ("zstd", "zst"), ("gzip", "gz")] {
        for f in ["style.css", "app.js"] {
            let want = std::fs::read(site.join(format!("{f}.{suffix}"))).unwrap();
            let r = get(
                srv.addr,
                &format!("/{f}"),
                &format!("Accept-Encoding: {coding}\r\n"),
            );
            assert_eq!(r.header("content-encoding"), Some(coding), "{f}");
            assert!(r.body == want, "{f} {coding}");
        }
    }
}
