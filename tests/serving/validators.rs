//! Validators that survive reproducible builds (docs/serving.md "Validators"): content
//! ETags the same for the same bytes everywhere, the recheck that notices a change in
//! place under a normalized mtime, and unknown dates (no `Last-Modified`, no date
//! conditionals). Through the real binary on loopback.

use crate::support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};
use support::bounds::latency_bound;
use support::client::*;
use support::in_process::*;
use support::server::{binary, Server};

/// Sets `path`'s mtime to `secs` after the epoch, as a build tool that normalizes it.
fn set_mtime(path: &Path, secs: u64) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
        .unwrap();
}

/// The content tag the docs promise: `"` + `sha256sum FILE | cut -c1-32` + `"`, from
/// coreutils' `sha256sum` as the oracle.
fn sha256_tag(path: &Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().unwrap();
    assert!(out.status.success(), "sha256sum {}", path.display());
    format!("\"{}\"", &String::from_utf8_lossy(&out.stdout)[..32])
}

fn serve(root: &Path, flags: &[&str]) -> Server {
    let mut args = vec!["--workers", "1"];
    args.extend_from_slice(flags);
    Server::start_in(root, &args, &[])
}

/// GETs `path` until its ETag is known (a large file's hash is computed in slices per
/// loop turn): bounded at 10 s and 2,000 requests.
fn etag_when_known(srv: &Server, path: &str) -> (Response, u32) {
    let start = Instant::now();
    for tries in 1..=2000 {
        let r = get(srv.addr, path, "");
        assert_eq!(r.status, 200, "{path}");
        if r.header("etag").is_some() {
            return (r, tries);
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{path}: no ETag");
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("{path}: no ETag after 2000 requests");
}

/// A file rewritten in place with the same size and its mtime put back to 1 (what Nix
/// does to every file) is served anew after the one-second recheck: new bytes, a new
/// ETag, and the old ETag no longer answered 304.
#[test]
fn a_same_size_change_under_mtime_1_gets_new_bytes_and_a_new_etag() {
    let site = Site::new("val-same-size");
    let page = site.root.join("index.html");
    std::fs::write(&page, "version 1\n").unwrap();
    set_mtime(&page, 1);
    let srv = serve(&site.root, &[]);
    let first = get(srv.addr, "/", "");
    assert_eq!(first.text(), "version 1\n");
    let old = first.header("etag").expect("an ETag").to_string();
    let again = get(srv.addr, "/", &format!("If-None-Match: {old}\r\n"));
    assert_eq!(again.status, 304);

    std::fs::write(&page, "version 2\n").unwrap();
    set_mtime(&page, 1);
    let changed = Instant::now();
    let fresh = loop {
        let r = get(srv.addr, "/", "");
        if r.text() == "version 2\n" {
            break r;
        }
        assert_eq!(r.text(), "version 1\n");
        assert!(
            changed.elapsed() < Duration::from_secs(10),
            "still the old bytes 10 s after the change"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = changed.elapsed();
    latency_bound(
        "a_same_size_change_under_mtime_1_gets_new_bytes_and_a_new_etag",
        took < Duration::from_secs(2),
        &format!("new bytes {took:?} after the change (the recheck is every 1 s)"),
    );
    let new = fresh.header("etag").expect("an ETag").to_string();
    assert_ne!(new, old);
    let first_bytes = site.base.join("version-1.txt");
    std::fs::write(&first_bytes, "version 1\n").unwrap();
    assert_eq!(
        old,
        sha256_tag(&first_bytes),
        "the first tag was the first bytes'"
    );
    assert_eq!(new, sha256_tag(&page));
    let stale = get(srv.addr, "/", &format!("If-None-Match: {old}\r\n"));
    assert_eq!((stale.status, stale.text().as_str()), (200, "version 2\n"));
    let current = get(srv.addr, "/", &format!("If-None-Match: {new}\r\n"));
    assert_eq!(current.status, 304);
}

/// Two servers over copies of one tree whose mtimes differ give every file one ETag, so
/// a client moved between replicas still gets its 304; a large file (held as a
/// descriptor, hashed in slices) included, once its hash is known.
#[test]
fn two_servers_over_copies_with_different_mtimes_give_one_etag() {
    let (a, b) = (Site::new("val-replica-a"), Site::new("val-replica-b"));
    for (site, secs) in [(&a, 1_000_000_000), (&b, 1_600_000_000)] {
        for name in ["hello.txt", "big.bin"] {
            set_mtime(&site.root.join(name), secs);
        }
    }
    let (sa, sb) = (serve(&a.root, &[]), serve(&b.root, &[]));
    for path in ["/hello.txt", "/big.bin"] {
        let (ra, _) = etag_when_known(&sa, path);
        let (rb, _) = etag_when_known(&sb, path);
        let tag = ra.header("etag").unwrap();
        assert_eq!(Some(tag), rb.header("etag"), "{path}");
        assert_ne!(ra.header("last-modified"), rb.header("last-modified"));
        let file = a.root.join(&path[1..]);
        assert_eq!(tag, sha256_tag(&file), "{path}");
        assert_eq!(ra.body, std::fs::read(&file).unwrap(), "{path}");
        let moved = get(sb.addr, path, &format!("If-None-Match: {tag}\r\n"));
        assert_eq!(moved.status, 304, "{path}");
    }
}

/// Dates a build tool gave (at or before 1980-01-02, or `SOURCE_DATE_EPOCH`) are unknown:
/// no `Last-Modified`, and `If-Modified-Since` never answers 304 for them, while
/// `If-None-Match` still does. A real date keeps both.
#[test]
fn epoch_mtimes_give_no_last_modified() {
    const EPOCH: u64 = 1_700_000_000;
    let site = Site::new("val-epoch");
    let unknown = [("zero.txt", 0), ("one.txt", 1), ("dos.txt", 315_532_800)];
    let unknown = unknown.into_iter().chain([("sde.txt", EPOCH)]);
    let mut cmd = Command::new(binary());
    cmd.arg("serve")
        .arg(&site.root)
        .args(["--listen", "127.0.0.1:0", "--workers", "1"])
        .env("SOURCE_DATE_EPOCH", EPOCH.to_string());
    for (name, secs) in unknown.clone() {
        std::fs::write(site.root.join(name), format!("{name} {secs}\n")).unwrap();
        set_mtime(&site.root.join(name), secs);
    }
    set_mtime(&site.root.join("hello.txt"), EPOCH + 1);
    let srv = Server::spawn(&mut cmd);
    let ims = "If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT\r\n";
    for (name, _) in unknown {
        let path = format!("/{name}");
        let r = get(srv.addr, &path, "");
        assert_eq!(r.status, 200, "{name}");
        assert_eq!(r.header("last-modified"), None, "{name}");
        let tag = r.header("etag").expect("an ETag").to_string();
        assert_eq!(get(srv.addr, &path, ims).status, 200, "{name}");
        let inm = format!("If-None-Match: {tag}\r\n");
        assert_eq!(get(srv.addr, &path, &inm).status, 304, "{name}");
        let range = format!("Range: bytes=0-0\r\nIf-Range: {}\r\n", &ims[19..48]);
        assert_eq!(get(srv.addr, &path, &range).status, 200, "{name}");
    }
    let known = get(srv.addr, "/hello.txt", "");
    assert_eq!(
        known.header("last-modified"),
        Some("Tue, 14 Nov 2023 22:13:21 GMT")
    );
    assert_eq!(get(srv.addr, "/hello.txt", ims).status, 304);
}

/// `--etag mtime` keeps the former tag, `"<mtime hex>.<nanoseconds hex>-<size hex>"`.
#[test]
fn etag_mtime_keeps_the_mtime_and_size_tag() {
    let site = Site::new("val-mtime");
    set_mtime(&site.root.join("hello.txt"), 0x5f3e_8c1a);
    let srv = serve(&site.root, &["--etag", "mtime"]);
    let r = get(srv.addr, "/hello.txt", "");
    assert_eq!(r.header("etag"), Some("\"5f3e8c1a.0-c\""));
}

/// A bad `--etag` or `SOURCE_DATE_EPOCH` is refused at start with one line naming it.
#[test]
fn bad_etag_and_source_date_epoch_are_refused() {
    let site = Site::new("val-bad");
    let root = site.root.to_str().unwrap();
    for (flag, env) in [("weak", None), ("content", Some("yesterday"))] {
        let mut cmd = Command::new(binary());
        cmd.args(["serve", root, "--listen", "127.0.0.1:0", "--etag", flag]);
        if let Some(v) = env {
            cmd.env("SOURCE_DATE_EPOCH", v);
        }
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        let named = if env.is_some() {
            "SOURCE_DATE_EPOCH \"yesterday\""
        } else {
            "--etag \"weak\""
        };
        assert!(err.contains(named) && err.lines().count() <= 2, "{err}");
    }
}
