//! Text compressed once (`--compress gzip`, docs/serving.md "Compression"), through the
//! real binary: every gzip response decodes (Python's zlib as the oracle) to the file,
//! with `Vary`, its own ETag, 304, HEAD and Range on the compressed bytes; a file is
//! compressed once however often it is asked for (`steerd_compressions_total`); a sidecar
//! keeps priority; PNG, tiny files and text that does not shrink stay identity; `q=0`
//! and `--compress off` are obeyed.

use crate::support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::client::*;
use support::in_process::*;
use support::server::Server;

const GZ: &str = "Accept-Encoding: gzip\r\n";

/// The bytes `gzip` decodes to, by Python's zlib (`wbits` 31: a gzip member).
fn gunzip(data: &[u8]) -> Vec<u8> {
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import sys, zlib; sys.stdout.buffer.write(zlib.decompress(sys.stdin.buffer.read(), 31))",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "zlib refused the stream: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Text of `len` bytes that compresses about as real JavaScript does.
fn script(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 64);
    let mut i = 0u32;
    while out.len() < len {
        let line = format!("function f{i}(a, b) {{ return a * {} + b; }}\n", i % 97);
        out.extend_from_slice(line.as_bytes());
        i += 1;
    }
    out.truncate(len);
    out
}

/// The test site with `/app.js`, a script of `len` bytes.
fn site_with_script(name: &str, len: usize) -> (Site, Vec<u8>) {
    let site = Site::new(name);
    let js = script(len);
    std::fs::write(site.root.join("app.js"), &js).unwrap();
    (site, js)
}

fn serve(root: &Path, flags: &[&str]) -> Server {
    let mut args = vec!["--workers", "1", "--metrics", "127.0.0.1:0"];
    args.extend_from_slice(flags);
    Server::start_in(root, &args, &[])
}

/// GETs `path` with gzip accepted until the answer is gzip (the first requests get the
/// identity bytes while the one compression runs): bounded at 10 s.
fn first_gzip(srv: &Server, path: &str) -> Response {
    let start = Instant::now();
    loop {
        let r = get(srv.addr, path, GZ);
        assert_eq!(r.status, 200);
        assert_eq!(r.header("vary"), Some("Accept-Encoding"), "{path}");
        if r.header("content-encoding") == Some("gzip") {
            return r;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{path}: no gzip");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A 40 KB script asked for 50 times with gzip is compressed once; every answer decodes
/// to the file; the compressed representation has its own ETag (304 on it), HEAD and
/// Range over the compressed bytes.
#[test]
fn text_is_compressed_once_and_every_answer_decodes_to_the_file() {
    let (site, js) = site_with_script("gz-once", 40_000);
    let srv = serve(&site.root, &[]);
    let plain = get(srv.addr, "/app.js", "");
    assert_eq!(plain.body, js);
    assert_eq!(plain.header("vary"), Some("Accept-Encoding"));
    let first = first_gzip(&srv, "/app.js");
    let gz = first.body.clone();
    assert_eq!(gunzip(&gz), js);
    assert!(
        gz.len() * 10 <= js.len() * 9,
        "{} of {}",
        gz.len(),
        js.len()
    );
    let tag = first.header("etag").unwrap().to_string();
    assert_ne!(Some(tag.as_str()), plain.header("etag"));
    for _ in 0..50 {
        let r = get(srv.addr, "/app.js", GZ);
        assert_eq!(r.header("content-encoding"), Some("gzip"));
        assert_eq!(r.header("etag"), Some(tag.as_str()));
        assert_eq!(r.body, gz, "one compression, the same bytes");
    }
    assert_eq!(srv.metric("steerd_compressions_total"), 1);
    let nm = get(
        srv.addr,
        "/app.js",
        &format!("{GZ}If-None-Match: {tag}\r\n"),
    );
    assert_eq!((nm.status, nm.header("etag")), (304, Some(tag.as_str())));
    let identity_asks = get(srv.addr, "/app.js", &format!("If-None-Match: {tag}\r\n"));
    assert_eq!(identity_asks.status, 200, "the gzip tag is not identity's");
    let head = exchange(
        srv.addr,
        "HEAD /app.js HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n",
    );
    let len = gz.len().to_string();
    assert_eq!(head.header("content-length"), Some(len.as_str()));
    assert_eq!(head.header("content-encoding"), Some("gzip"));
    assert!(head.body.is_empty());
    let part = get(srv.addr, "/app.js", &format!("{GZ}Range: bytes=10-99\r\n"));
    assert_eq!(part.status, 206);
    let range = format!("bytes 10-99/{}", gz.len());
    assert_eq!(part.header("content-range"), Some(range.as_str()));
    assert_eq!(part.body, &gz[10..100]);
    assert_eq!(srv.metric("steerd_compressions_total"), 1);
}

/// `gzip;q=0` refuses gzip; identity preferred over gzip gets identity; `--compress off`
/// compresses nothing and adds no `Vary`.
#[test]
fn q_values_and_compress_off_are_obeyed() {
    let (site, js) = site_with_script("gz-q", 20_000);
    let srv = serve(&site.root, &[]);
    first_gzip(&srv, "/app.js");
    for ae in [
        "gzip;q=0",
        "gzip;q=0, br",
        "identity, gzip;q=0.5",
        "br, zstd",
    ] {
        let r = get(srv.addr, "/app.js", &format!("Accept-Encoding: {ae}\r\n"));
        assert_eq!((r.header("content-encoding"), &r.body), (None, &js), "{ae}");
    }
    let r = get(
        srv.addr,
        "/app.js",
        "Accept-Encoding: br;q=1, gzip;q=0.1\r\n",
    );
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    let off = serve(&site.root, &["--compress", "off"]);
    for _ in 0..20 {
        let r = get(off.addr, "/app.js", GZ);
        assert_eq!(
            (r.header("content-encoding"), r.header("vary")),
            (None, None)
        );
        assert_eq!(r.body, js);
    }
    assert_eq!(off.metric("steerd_compressions_total"), 0);
}

/// A gzip sidecar keeps priority; a PNG, a file under 1 KiB and text that does not
/// shrink by 10% stay identity; `--compress-types` sets the list, never to PNG.
#[test]
fn sidecars_win_and_images_tiny_files_and_incompressible_text_stay_identity() {
    let site = Site::new("gz-identity");
    let r = &site.root;
    std::fs::write(r.join("side.js"), script(8_000)).unwrap();
    std::fs::write(r.join("side.js.gz"), "SIDECAR").unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let noise: Vec<u8> = (0..20_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect();
    std::fs::write(r.join("img.png"), &noise).unwrap();
    std::fs::write(r.join("noise.txt"), &noise).unwrap();
    std::fs::write(r.join("tiny.css"), "a{b:c}\n".repeat(100)).unwrap();
    std::fs::write(r.join("data.bin"), script(8_000)).unwrap();
    let srv = serve(&site.root, &[]);
    for _ in 0..20 {
        let side = get(srv.addr, "/side.js", GZ);
        assert_eq!(side.text(), "SIDECAR");
        assert_eq!(side.header("content-encoding"), Some("gzip"));
        for path in ["/img.png", "/noise.txt", "/tiny.css", "/data.bin"] {
            let got = get(srv.addr, path, GZ);
            assert_eq!(got.header("content-encoding"), None, "{path}");
            assert_eq!(
                got.body,
                std::fs::read(r.join(&path[1..])).unwrap(),
                "{path}"
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(srv.metric("steerd_compressions_total"), 0);
    let list = "application/octet-stream,image/png";
    let wide = serve(&site.root, &["--compress-types", list]);
    let bin = first_gzip(&wide, "/data.bin");
    assert_eq!(gunzip(&bin.body), script(8_000));
    let png = get(wide.addr, "/img.png", GZ);
    assert_eq!(
        png.header("content-encoding"),
        None,
        "PNG is never compressed"
    );
}

/// A 2 MB script under `--compress-cache DIR`: hashed, then compressed once into
/// `DIR/<content hash>.gz` (written anonymously and linked whole) and answered 50 times
/// from it by `sendfile`, each answer decoding to the file; a second server over the
/// same directory serves that file without compressing again.
#[test]
fn a_2_mb_script_is_answered_50_times_from_one_compression_in_the_cache_dir() {
    let (site, js) = site_with_script("gz-2mb", 2_000_000);
    let dir = site.base.join("gz-cache");
    std::fs::create_dir(&dir).unwrap();
    let cache = dir.to_str().unwrap();
    let srv = serve(&site.root, &["--compress-cache", cache]);
    let first = first_gzip(&srv, "/app.js");
    assert_eq!(gunzip(&first.body), js);
    let tag = first.header("etag").unwrap().to_string();
    let plain = get(srv.addr, "/app.js", "");
    let plain_tag = plain.header("etag").expect("hashed by now");
    assert_eq!(tag, format!("{}-gzip\"", &plain_tag[..plain_tag.len() - 1]));
    for _ in 0..50 {
        let r = get(srv.addr, "/app.js", GZ);
        assert_eq!(r.header("content-encoding"), Some("gzip"));
        assert_eq!(r.body, first.body, "one compression, the same bytes");
    }
    assert_eq!(srv.metric("steerd_compressions_total"), 1);
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, [format!("{}.gz", &plain_tag[1..33])]);
    let part = get(srv.addr, "/app.js", &format!("{GZ}Range: bytes=-100\r\n"));
    assert_eq!(part.status, 206);
    assert_eq!(part.body, &first.body[first.body.len() - 100..]);
    let again = serve(&site.root, &["--compress-cache", cache]);
    let r = first_gzip(&again, "/app.js");
    assert_eq!(r.header("etag"), Some(tag.as_str()));
    assert_eq!(r.body, first.body);
    assert_eq!(again.metric("steerd_compressions_total"), 0);
}

/// A `--compress-cache` that is not a writable directory is refused at start.
#[test]
fn a_compress_cache_that_is_no_directory_is_refused() {
    let site = Site::new("gz-bad-cache");
    let file = site.root.join("hello.txt");
    let out = Command::new(support::server::binary())
        .arg("serve")
        .arg(&site.root)
        .args(["--listen", "127.0.0.1:0", "--compress-cache"])
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("--compress-cache") && err.contains("hello.txt"),
        "{err}"
    );
}
