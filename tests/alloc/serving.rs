//! Zero heap allocation per request after start-up, shown with a counting global
//! allocator: the serve loop runs in a thread of this test; only allocations made on that
//! thread are counted. After a warm-up, many requests of every kind (keep-alive, close,
//! pipelined, HEAD, Range, 304, 301, 404, 405 (with a chunked and a counted body read
//! and dropped), errors that close, a large file by
//! sendfile, cached and uncached files, with the access log on in `json`, the format
//! with the most fields, and trusted proxy networks with `--real-ip-recursive`, so a
//! chain of `X-Forwarded-For` hops over two field lines is walked)
//! must allocate nothing; and the same with every everyday-serving option on (sidecars,
//! 406, fallback, error pages, headers, Cache-Control, media-type overrides, CORS,
//! dotfiles, directory listings: HTML over several passes and pieces, JSON, HEAD, 304),
//! and through `--basic-auth` after the first check (remembered credentials, 401s, hash
//! checks of new guesses and the 429s past the budget).

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use steerd::config::{Cidr, LogFormat, LogTarget, Logging};
use steerd::serve_loop::Tuning;
use support::alloc::{allocations, watch_this_thread};
use support::in_process::*;

/// Requests per [`round`].
const PER_ROUND: usize = 33;

/// Thirty-one requests on four connections, each read until the server closes.
fn round(addr: std::net::SocketAddr, buf: &mut [u8]) {
    // keep-alive with pipelining and every kind of answer, closed by the last request.
    let reqs: &[u8] = b"GET /hello.txt HTTP/1.1\r\nHost: t\r\n\
        X-Forwarded-For: 203.0.113.9, 10.0.0.2\r\nX-Forwarded-For: 10.0.0.1\r\n\r\n\
        HEAD /index.html HTTP/1.1\r\nHost: t\r\n\r\n\
        GET /ten.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=2-5\r\n\r\n\
        GET /ten.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=20-\r\n\r\n\
        GET /ten.bin HTTP/1.1\r\nHost: t\r\nIf-None-Match: *\r\n\r\n\
        GET /ten.bin HTTP/1.1\r\nHost: t\r\nIf-Match: \"x\"\r\n\r\n\
        GET /dir?q=1 HTTP/1.1\r\nHost: t\r\n\r\n\
        GET /missing HTTP/1.1\r\nHost: t\r\n\r\n\
        DELETE /x HTTP/1.1\r\nHost: t\r\n\r\n\
        POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n\
        POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc\
        GET /hello.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc\
        GET /big.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(reqs).unwrap();
    while s.read(buf).unwrap() > 0 {}
    // A request that closes after a 400 (lingering close).
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nBad Header: 1\r\n\r\n")
        .unwrap();
    while s.read(buf).unwrap_or(0) > 0 {}
    // HTTP/1.0, one request per connection.
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /hello.txt HTTP/1.0\r\n\r\n").unwrap();
    while s.read(buf).unwrap() > 0 {}
    // More pipelined requests than one turn's budget (the connection yields and is driven
    // again), ending with a 301 whose head outgrows the head area (it closes).
    let mut reqs = b"GET /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n".repeat(17);
    reqs.extend_from_slice(b"GET /dir?");
    reqs.extend_from_slice(&[b'q'; 900]);
    reqs.extend_from_slice(b" HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&reqs).unwrap();
    while s.read(buf).unwrap() > 0 {}
}

#[test]
fn no_allocation_per_request_after_warm_up() {
    // The tests of this binary share the counter: one at a time (`main.rs`).
    let _one = crate::support::serial::exclusive();
    let site = Site::new("alloc");
    let mut cfg = config(&site.root);
    cfg.logging = Logging {
        access_log: LogTarget::File(site.base.join("access.log")),
        log_format: LogFormat::Json,
        real_ip_from: vec![
            Cidr::new("127.0.0.0".parse().unwrap(), 8).unwrap(),
            Cidr::new("10.0.0.0".parse().unwrap(), 8).unwrap(),
        ],
        real_ip_recursive: true,
        proxy_protocol: false,
    };
    let srv = InProc::start_marked(cfg, Tuning::default(), || watch_this_thread(true));
    let mut buf = vec![0u8; 1 << 16];
    for _ in 0..3 {
        round(srv.addr, &mut buf);
    }
    let before = allocations();
    assert!(
        before > 0,
        "the counter sees the server thread's start-up allocations"
    );
    let rounds = 200;
    for _ in 0..rounds {
        round(srv.addr, &mut buf);
    }
    let after = allocations();
    assert_eq!(
        after - before,
        0,
        "allocations over {} requests",
        rounds * PER_ROUND
    );
    drop(srv); // stops the loop, which flushes the log
    let log = std::fs::read_to_string(site.base.join("access.log")).unwrap();
    assert_eq!(
        log.lines().count(),
        (rounds + 3) * PER_ROUND,
        "one line per request"
    );
    assert!(
        log.contains("\"request\":\"GET /big.bin HTTP/1.1\",\"status\":200,"),
        "{}",
        &log[..log.len().min(500)]
    );
    assert!(
        log.contains("\"client\":\"203.0.113.9\""),
        "the chain was walked past both proxies: {}",
        &log[..log.len().min(500)]
    );
}

/// Requests per [`site_round`].
const SITE_PER_ROUND: usize = 33;

/// Entries of the listed directory: names long enough that a listing takes several
/// passes of a [`LISTING_NAMES`] arena and many pieces of output.
const LISTED: usize = 1000;

/// Bytes of each listing slot's name arena here: 1,000 names of 195 bytes take four
/// passes or more (the default arena holds them in one).
const LISTING_NAMES: usize = 64 * 1024;

/// A name longer than the file cache's key limit: served uncached, sidecar included.
fn long_name() -> String {
    format!("{}.js", "l".repeat(200))
}

/// Thirty-three requests on one connection exercising every everyday-serving option,
/// gzip compressed once by the server included (`/site.css`: compressed in the warm-up,
/// then sent from memory whole, as a range, as a 304 and to a HEAD; `/bundle.js`, over
/// the cache's memory limit: hashed and compressed into `--compress-cache` in the
/// warm-up, then sent from its `.gz` whole and as a range), and the rules (two redirects
/// with captures, a rewrite, a `--try-ext` hit).
fn site_round(addr: std::net::SocketAddr, buf: &mut [u8]) {
    let long = long_name();
    let reqs = format!(
        "GET /app.js HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\n\r\n\
         GET /app.js HTTP/1.1\r\nHost: t\r\nAccept-Encoding: br;q=0.5, zstd\r\n\r\n\
         GET /site.css HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\n\r\n\
         GET /site.css HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\nRange: bytes=3-9\r\n\r\n\
         GET /site.css HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\nIf-None-Match: *\r\n\r\n\
         HEAD /site.css HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip, br\r\n\r\n\
         GET /bundle.js HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\n\r\n\
         GET /bundle.js HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\nRange: bytes=5-\r\n\r\n\
         GET /app.js HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /app.js HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\nRange: bytes=0-1\r\n\r\n\
         GET /app.js HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\nIf-None-Match: *\r\n\r\n\
         GET /app.js HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\nRange: bytes=99-\r\n\r\n\
         GET /hello.txt HTTP/1.1\r\nHost: t\r\nAccept-Encoding: identity;q=0\r\n\r\n\
         GET /deep/route HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\n\r\n\
         GET /missing.js HTTP/1.1\r\nHost: t\r\n\r\n\
         DELETE /x HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /dir/ HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\n\r\n\
         GET /{long} HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\n\r\n\
         GET /{long} HTTP/1.1\r\nHost: t\r\n\r\n\
         HEAD /app.js HTTP/1.1\r\nHost: t\r\nAccept-Encoding: br\r\n\r\n\
         GET /a.md HTTP/1.1\r\nHost: t\r\n\r\n\
         OPTIONS /app.js HTTP/1.1\r\nHost: t\r\nOrigin: http://a.test\r\n\
         Access-Control-Request-Method: GET\r\nAccess-Control-Request-Headers: x-a\r\n\r\n\
         GET /app.js HTTP/1.1\r\nHost: t\r\nOrigin: http://a.test\r\n\r\n\
         GET /.env HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /listed/ HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /listed/ HTTP/1.1\r\nHost: t\r\nAccept: application/json\r\n\r\n\
         HEAD /empty-dir/ HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /empty-dir/ HTTP/1.1\r\nHost: t\r\nIf-None-Match: *\r\n\r\n\
         GET /old/a/b%20c?q=1 HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /go/x HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /spa/deep/x HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /hello HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /app.js HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n"
    );
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(reqs.as_bytes()).unwrap();
    while s.read(buf).unwrap() > 0 {}
}

/// Requests per [`hosts_round`].
const HOSTS_PER_ROUND: usize = 4;

/// Four requests on one connection naming the hosts: the second host's file, the first
/// host's by another spelling, the second's again (its cache entry), then a name no host
/// lists (421, which closes).
fn hosts_round(addr: std::net::SocketAddr, buf: &mut [u8]) {
    let reqs = "GET /hello.txt HTTP/1.1\r\nHost: u\r\n\r\n\
                GET /hello.txt HTTP/1.1\r\nHost: T:80\r\n\r\n\
                GET /hello.txt HTTP/1.1\r\nHost: U:8080\r\n\r\n\
                GET /hello.txt HTTP/1.1\r\nHost: nobody.test\r\n\r\n";
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(reqs.as_bytes()).unwrap();
    while s.read(buf).unwrap() > 0 {}
}

#[test]
fn no_allocation_per_request_with_every_site_option() {
    // The tests of this binary share the counter: one at a time (`main.rs`).
    let _one = crate::support::serial::exclusive();
    let site = Site::new("alloc-site");
    let r = &site.root;
    std::fs::write(r.join("app.js"), "console.log(1);\n").unwrap();
    for ext in ["gz", "br", "zst"] {
        std::fs::write(r.join(format!("app.js.{ext}")), ext).unwrap();
    }
    std::fs::write(r.join("dir/index.html.gz"), "gz").unwrap();
    std::fs::write(r.join(long_name()), "long").unwrap();
    std::fs::write(r.join(format!("{}.gz", long_name())), "gz").unwrap();
    std::fs::write(r.join("404.html"), "custom 404").unwrap();
    std::fs::write(r.join("a.md"), "# md").unwrap();
    std::fs::write(r.join("site.css"), "body { margin: 0 }\n".repeat(200)).unwrap();
    std::fs::write(r.join("bundle.js"), "let a = b + c;\n".repeat(10_000)).unwrap();
    std::fs::create_dir(site.base.join("gz")).unwrap();
    let gz_cache = site.base.join("gz").display().to_string();
    std::fs::write(r.join(".env"), "SECRET").unwrap();
    std::fs::create_dir(r.join("listed")).unwrap();
    for i in 0..LISTED {
        std::fs::write(r.join(format!("listed/{i:04}-{}", "n".repeat(190))), "x").unwrap();
    }
    let mut flags = steerd::args::site::SiteArgs::default();
    // 3 KiB of policy: every slot's head area grows to hold it.
    let csp = format!(
        "Content-Security-Policy: default-src {}",
        "x".repeat(3 * 1024)
    );
    for (flag, value) in [
        ("--header", &csp[..]),
        ("--header", "X-Frame-Options: DENY"),
        ("--header", "Strict-Transport-Security: max-age=63072000"),
        ("--cache-control", "/assets/**=max-age=31536000, immutable"),
        ("--cache-control", "*.js=max-age=60"),
        ("--cache-control", "**/*.html=no-cache"),
        ("--error-page", "404=/404.html"),
        ("--error-page", "405=/404.html"),
        ("--error-page", "406=/404.html"),
        ("--fallback", "/index.html"),
        ("--fallback-skip", "js,css"),
        ("--mime", "md=text/markdown"),
        ("--cors", "http://a.test"),
        ("--dotfiles", "deny"),
        ("--compress-cache", &gz_cache),
        ("--redirect", "/old/** /new/$1"),
        ("--redirect", "/go/* https://ex.test/$1?k 308"),
        ("--rewrite", "/spa/** /hello.txt"),
        ("--try-ext", "txt"),
        ("--allow", "loopback"),
        ("--deny", "10.0.0.0/8"),
        ("--rate-limit", "1000000"),
        ("--max-rate", "1024M"),
    ] {
        flags.set(flag, value).unwrap();
    }
    flags.list_dirs = true;
    let mut cfg = config(&site.root);
    cfg.logging.access_log = LogTarget::File(site.base.join("access.log"));
    cfg.site = flags.rules();
    // A second host, "u", with a root of its own.
    let other = Site::new("alloc-site-u");
    std::fs::write(other.root.join("hello.txt"), "host u\n").unwrap();
    let names = [vec!["t".to_string()], vec!["u".to_string()]];
    let others = vec![(open_root(&other.root), flags.rules())];
    cfg.hosts = steerd::serve_loop::LoopHosts::named(&names, others);
    let mut tuning = Tuning::default();
    tuning.listing_names = LISTING_NAMES;
    let srv = InProc::start_marked(cfg, tuning, || watch_this_thread(true));
    let mut buf = vec![0u8; 1 << 16];
    for _ in 0..3 {
        site_round(srv.addr, &mut buf);
        hosts_round(srv.addr, &mut buf);
    }
    let before = allocations();
    let rounds = 200;
    for _ in 0..rounds {
        site_round(srv.addr, &mut buf);
        hosts_round(srv.addr, &mut buf);
    }
    let after = allocations();
    assert_eq!(
        after - before,
        0,
        "allocations over {} requests",
        rounds * (SITE_PER_ROUND + HOSTS_PER_ROUND)
    );
    drop(srv);
    let log = std::fs::read_to_string(site.base.join("access.log")).unwrap();
    let per_round = SITE_PER_ROUND + HOSTS_PER_ROUND;
    assert_eq!(log.lines().count(), (rounds + 3) * per_round);
    assert_eq!(
        log.matches("\" 421 ").count(),
        rounds + 3,
        "the unknown name"
    );
    assert_eq!(
        log.matches("\" 200 7 ").count(),
        2 * (rounds + 3),
        "host u's file"
    );
    for status in [
        " 200 ", " 204 ", " 206 ", " 301 ", " 304 ", " 308 ", " 404 ", " 405 ", " 406 ", " 416 ",
    ] {
        assert!(log.contains(status), "{status} missing from the log");
    }
    // The gzip bytes were what the measured rounds sent: fewer than the files' bytes.
    for (path, identity) in [("/site.css", 3_800), ("/bundle.js", 150_000)] {
        let gzipped = answers_under(&log, path, identity);
        assert!(gzipped >= rounds, "{gzipped} gzip answers of {path}");
    }
    for listing in [
        "\"GET /spa/deep/x HTTP/1.1\" 200 ",
        "\"GET /hello HTTP/1.1\" 200 ",
        "\"GET /listed/ HTTP/1.1\" 200 ",
        "\"HEAD /empty-dir/ HTTP/1.1\" 200 ",
        "\"GET /empty-dir/ HTTP/1.1\" 304 ",
    ] {
        assert!(log.contains(listing), "{listing} missing from the log");
    }
}

/// How many 200s of `GET path` the combined-format `log` shows with fewer than `bytes`
/// bytes of body.
fn answers_under(log: &str, path: &str, bytes: u32) -> usize {
    let request = format!("\"GET {path} HTTP/1.1\" 200 ");
    let sizes = log
        .lines()
        .filter_map(|l| l.split_once(&request)?.1.split(' ').next());
    sizes
        .filter(|n| n.parse::<u32>().is_ok_and(|n| n < bytes))
        .count()
}

/// Requests per [`auth_round`].
const AUTH_PER_ROUND: usize = 8;

/// Eight requests on one connection through `--basic-auth`: remembered credentials
/// (served, a dotfile's 404, a 405), none (401), a wrong password already checked
/// (401 from memory), a new wrong guess (checked, or 429 once the budget is spent), a
/// skipped path, a CORS preflight.
fn auth_round(addr: std::net::SocketAddr, buf: &mut [u8], guess: u32) {
    // bob:U*U and bob:wrong in base64; the guess is new each round.
    let good = "Authorization: Basic Ym9iOlUqVQ==\r\n";
    let wrong = "Authorization: Basic Ym9iOndyb25n\r\n";
    let reqs = format!(
        "GET /hello.txt HTTP/1.1\r\nHost: t\r\n{good}\r\n\
         GET /.env HTTP/1.1\r\nHost: t\r\n{good}\r\n\
         DELETE /x HTTP/1.1\r\nHost: t\r\n{good}\r\n\
         GET /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /hello.txt HTTP/1.1\r\nHost: t\r\n{wrong}\r\n\
         GET /hello.txt HTTP/1.1\r\nHost: t\r\nAuthorization: Basic Ym9iOn{guess:05}\r\n\r\n\
         GET /favicon.ico HTTP/1.1\r\nHost: t\r\n\r\n\
         OPTIONS /hello.txt HTTP/1.1\r\nHost: t\r\nOrigin: http://a.test\r\n\
         Access-Control-Request-Method: GET\r\nConnection: close\r\n\r\n"
    );
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(reqs.as_bytes()).unwrap();
    while s.read(buf).unwrap() > 0 {}
}

#[test]
fn no_allocation_per_request_with_basic_auth() {
    // The tests of this binary share the counter: one at a time (`main.rs`).
    let _one = crate::support::serial::exclusive();
    let site = Site::new("alloc-auth");
    std::fs::write(site.root.join("favicon.ico"), "icon").unwrap();
    std::fs::write(site.root.join(".env"), "SECRET").unwrap();
    let mut flags = steerd::args::site::SiteArgs::default();
    for (flag, value) in [
        ("--basic-auth", "/unread/in/this/test"),
        ("--basic-auth-skip", "/favicon.ico"),
        ("--cors", "http://a.test"),
    ] {
        flags.set(flag, value).unwrap();
    }
    let mut cfg = config(&site.root);
    cfg.logging.access_log = LogTarget::File(site.base.join("access.log"));
    cfg.site = flags.rules();
    // "U*U" under bcrypt cost 4 (libxcrypt).
    let file = b"bob:$2b$04$CCCCCCCCCCCCCCCCCCCCC.K7Qr0se1MxuggH4aP4YgB.U2Em1pGSK\n";
    let users = steerd::auth::Credentials::parse(file, [7; 16]).unwrap();
    cfg.auth = vec![Some(std::sync::Arc::new(users))];
    let srv = InProc::start_marked(cfg, Tuning::default(), || watch_this_thread(true));
    let mut buf = vec![0u8; 1 << 16];
    for i in 0..3 {
        auth_round(srv.addr, &mut buf, i);
    }
    let before = allocations();
    let rounds = 100;
    for i in 0..rounds {
        auth_round(srv.addr, &mut buf, 10 + i);
    }
    let after = allocations();
    assert_eq!(
        after - before,
        0,
        "allocations over {} requests",
        rounds as usize * AUTH_PER_ROUND
    );
    drop(srv);
    let log = std::fs::read_to_string(site.base.join("access.log")).unwrap();
    assert_eq!(log.lines().count(), (rounds as usize + 3) * AUTH_PER_ROUND);
    for status in [" 200 ", " 204 ", " 401 ", " 404 ", " 429 "] {
        assert!(log.contains(status), "{status} missing from the log");
    }
}
