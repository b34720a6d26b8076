//! The dashboard on the `--metrics` address, through the real binary and a real browser:
//! the page is sent gzip-compressed (or as written, for a client that does not accept
//! gzip), `HEAD` of every path is `GET` without the body, `/status.json` is one
//! JSON object, and headless
//! Chromium, opened on a running steerd under load, shows every worker with non-zero
//! requests and the locality steering gives it; 128 CPUs on 8 nodes (a fixture machine)
//! lay out as nodes side by side.

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;
use support::chromium::{attr, chromium, load, tags_with, Loaded};
use support::server::*;

const PAGE: &str = include_str!("../../src/dashboard/page.html");

/// One GET with extra header lines; the raw reply (head and body).
fn raw_get(addr: SocketAddr, path: &str, headers: &str) -> Vec<u8> {
    raw_request(addr, "GET", path, headers)
}

/// One request with extra header lines; the raw reply, read to the close.
fn raw_request(addr: SocketAddr, method: &str, path: &str, headers: &str) -> Vec<u8> {
    let mut s = TcpStream::connect_timeout(&addr, PATIENCE).expect("connect");
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let head = format!("{method} {path} HTTP/1.1\r\nHost: test\r\n{headers}\r\n");
    s.write_all(head.as_bytes()).expect("write");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read");
    raw
}

fn split_reply(raw: &[u8]) -> (String, &[u8]) {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head")
        + 4;
    (
        String::from_utf8_lossy(&raw[..end]).into_owned(),
        &raw[end..],
    )
}

/// What the system's `gzip -d` decodes `gz` to.
fn gunzip(gz: &[u8]) -> Vec<u8> {
    let mut gunzip = std::process::Command::new("gzip")
        .args(["-d", "-c"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("gzip");
    gunzip.stdin.take().unwrap().write_all(gz).unwrap();
    let out = gunzip.wait_with_output().expect("gzip output");
    assert!(out.status.success(), "gzip -d refused the page served");
    out.stdout
}

#[test]
fn page_file_is_small_and_self_contained() {
    assert!(PAGE.len() < 24 * 1024, "page is {} bytes", PAGE.len());
    for external in [
        "src=", "href=", "url(", "@import", "http:", "https:", "//cdn",
    ] {
        assert!(!PAGE.contains(external), "page refers to {external}");
    }
}

#[test]
fn metrics_address_serves_the_gzip_page_status_json_and_metrics() {
    let server = Server::start(&[]);
    let m = server.metrics.expect("metrics");
    let raw = raw_get(m, "/", "Accept-Encoding: gzip, deflate\r\n");
    let (head, body) = split_reply(&raw);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(head.contains("\r\nContent-Encoding: gzip\r\n"), "{head}");
    assert!(
        head.contains("\r\nContent-Type: text/html; charset=utf-8\r\n"),
        "{head}"
    );
    assert!(
        gunzip(body) == PAGE.as_bytes(),
        "the page served does not decode to page.html"
    );
    let again = raw_get(m, "/", "Accept-Encoding: gzip\r\n");
    assert!(
        split_reply(&again).1 == body,
        "the gzip page differs between requests"
    );
    // Without Accept-Encoding (a first `curl`): the page as written, same Vary.
    let plain = raw_get(m, "/", "");
    let (head, body) = split_reply(&plain);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(!head.contains("Content-Encoding"), "{head}");
    assert!(head.contains("\r\nVary: Accept-Encoding\r\n"), "{head}");
    assert!(
        head.contains("\r\nContent-Type: text/html; charset=utf-8\r\n"),
        "{head}"
    );
    assert!(body == PAGE.as_bytes(), "the plain page is not page.html");
    let (status, body) = get(m, "/status.json");
    assert_eq!(status, 200);
    let doc: serde_json::Value = serde_json::from_str(&body).expect("status.json is JSON");
    let plan = server.plan();
    let counters = doc["counters"].as_array().expect("counters");
    assert_eq!(counters.len(), plan.len());
    for (c, (index, cpu)) in counters.iter().zip(&plan) {
        assert_eq!(
            (c["worker"].as_u64(), c["cpu"].as_u64()),
            (Some(*index as u64), Some(*cpu as u64))
        );
        assert_eq!(c["responses"].as_array().map(Vec::len), Some(5));
    }
    assert_eq!(
        doc["listen"][0],
        server.addr.to_string(),
        "the bound address"
    );
    assert_eq!(doc["policy"], server.policy());
    assert_eq!(doc["version"], env!("CARGO_PKG_VERSION"));
    for key in [
        "uptime_ms",
        "cpus",
        "nodes",
        "workers",
        "master_cpu",
        "program",
    ] {
        assert!(doc.get(key).is_some(), "status.json has no {key}");
    }
    assert_eq!(get(m, "/metrics").0, 200);
    assert_eq!(get(m, "/nothing").0, 404);
}

/// Uptime checkers that send `HEAD`: each path answers with GET's status line and
/// fields (`Content-Length` included) and no body; the connection then closes.
#[test]
fn head_of_each_path_answers_as_get_without_the_body() {
    let server = Server::start(&[]);
    let m = server.metrics.expect("metrics");
    server.wait_healthy();
    for (path, extra) in [
        ("/", ""),
        ("/", "Accept-Encoding: gzip\r\n"),
        ("/health", ""),
        ("/metrics", ""),
        ("/status.json", ""),
    ] {
        let raw = raw_request(m, "HEAD", path, extra);
        let (head, body) = split_reply(&raw);
        assert!(
            head.starts_with("HTTP/1.1 200 OK\r\n"),
            "HEAD {path}: {head}"
        );
        assert!(
            body.is_empty(),
            "HEAD {path} sent a body of {} bytes",
            body.len()
        );
        let get = raw_get(m, path, extra);
        let (get_head, get_body) = split_reply(&get);
        // /metrics and /status.json change between two requests: compare the fields but
        // the length, and check the length against HEAD's own.
        let fields = |h: &str| -> Vec<String> {
            h.lines()
                .filter(|l| !l.starts_with("Content-Length:"))
                .map(str::to_string)
                .collect()
        };
        assert_eq!(fields(&head), fields(&get_head), "HEAD {path}");
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("HEAD {path}: no Content-Length in {head}"));
        if path == "/" || path == "/health" {
            assert_eq!(len, get_body.len(), "HEAD {path}");
        } else {
            assert!(len > 0, "HEAD {path}: Content-Length 0");
        }
    }
}

/// With `STEERD_SCREENSHOTS=DIR` set, a PNG of `url` as `DIR/name` (how the pictures in
/// `docs/` are made: `STEERD_SCREENSHOTS=docs cargo test --test tests operations::dashboard::`).
fn screenshot(url: &str, name: &str, window: (u32, u32)) {
    if let Some(dir) = std::env::var_os("STEERD_SCREENSHOTS") {
        let path = std::path::Path::new(&dir).join(name);
        load(url, window, 30_000, Some(&path));
        eprintln!("screenshot {}", path.display());
    }
}

/// The page ran without a script error and shows no data error in its header.
fn assert_no_errors(page: &Loaded) {
    assert!(
        page.script_errors().is_empty(),
        "{:?}",
        page.script_errors()
    );
    let shown = page.dom.contains("<span id=\"err\"></span>");
    assert!(shown, "page reports an error:\n{}", page.dom);
}

/// Pinned client threads, one per worker CPU, each making new connections until `stop`
/// (at most `MAX_REQUESTS` each and `PATIENCE` in all).
fn load_on(
    addr: SocketAddr,
    cpus: &[usize],
    stop: &Arc<AtomicBool>,
) -> Vec<std::thread::JoinHandle<u64>> {
    const MAX_REQUESTS: u64 = 50_000;
    cpus.iter()
        .map(|&cpu| {
            let stop = Arc::clone(stop);
            std::thread::spawn(move || {
                pin_thread(cpu);
                let start = Instant::now();
                let mut n = 0;
                while !stop.load(Ordering::Relaxed)
                    && n < MAX_REQUESTS
                    && start.elapsed() < PATIENCE
                {
                    assert_eq!(get(addr, "/index.html").0, 200);
                    n += 1;
                }
                n
            })
        })
        .collect()
}

#[test]
fn browser_shows_every_worker_with_requests_and_its_locality_under_load() {
    let Some(_) = chromium("browser_shows_every_worker_with_requests_and_its_locality_under_load")
    else {
        return;
    };
    let cpus = allowed_cpus();
    let list = cpus
        .iter()
        .take(2)
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let steered = cpus.len() >= 2 && !skip_without_steering(
        "browser_shows_every_worker_with_requests_and_its_locality_under_load (the locality check)",
    );
    let server = Server::start(&["--steer", "cpu", "--cpus", &list]);
    let m = server.metrics.expect("metrics");
    let plan = server.plan();
    // Every worker has requests before the page opens; more arrive while it refreshes.
    for &(_, cpu) in &plan {
        let addr = server.addr;
        on_cpu(cpu, move || {
            (0..20).for_each(|_| assert_eq!(get(addr, "/index.html").0, 200))
        });
    }
    let before = server.per_worker("steerd_connections_accepted_total");
    let stop = Arc::new(AtomicBool::new(false));
    let clients = load_on(
        server.addr,
        &plan.iter().map(|p| p.1).collect::<Vec<_>>(),
        &stop,
    );
    let url = format!("http://{m}/");
    let page = load(&url, (1000, 700), 30_000, None);
    screenshot(&format!("{url}#program"), "dashboard.png", (1000, 400));
    stop.store(true, Ordering::Relaxed);
    let sent: u64 = clients.into_iter().map(|c| c.join().expect("client")).sum();
    let after = server.per_worker("steerd_connections_accepted_total");
    assert_no_errors(&page);
    assert!(
        page.dom.contains(&server.addr.to_string()),
        "listen address missing"
    );
    assert!(
        page.dom
            .contains(&format!("<b id=\"pol\">{}", server.policy())),
        "policy missing"
    );
    let cells = tags_with(&page.dom, "data-worker=");
    assert_eq!(cells.len(), plan.len(), "{cells:?}");
    let workers = plan.len();
    for (index, cpu) in plan {
        let cell = cells
            .iter()
            .find(|t| attr(t, "id") == Some(&format!("cpu{cpu}")))
            .unwrap_or_else(|| panic!("no cell for cpu {cpu}"));
        assert_eq!(attr(cell, "data-worker"), Some(index.to_string().as_str()));
        let num = |name| {
            attr(cell, name)
                .and_then(|v| v.parse::<u64>().ok())
                .expect(name)
        };
        let (req, acc, loc) = (num("data-req"), num("data-acc"), num("data-loc"));
        assert!(req > 0, "worker {index} shows no requests: {cell}");
        // Responses finished in the last 10 s: a p50 and a p99 from the buckets, and
        // the line of the last minute has its first points.
        let p = |name| attr(cell, name).and_then(|v| v.parse::<f64>().ok());
        let (p50, p99) = (p("data-p50"), p("data-p99"));
        assert!(
            p50.is_some_and(|x| x > 0.0) && p99 >= p50,
            "worker {index}: p50 {p50:?} p99 {p99:?}"
        );
        assert!(
            (before[index]..=after[index]).contains(&acc),
            "worker {index}: page shows {acc} connections, the server counted {} then {}",
            before[index],
            after[index]
        );
        if steered {
            assert_eq!(
                loc, acc,
                "worker {index} on cpu {cpu}: every connection is local"
            );
        }
    }
    let lines = tags_with(&page.dom, "data-points=");
    assert_eq!(lines.len(), workers, "a line per worker: {lines:?}");
    assert!(page.dom.contains("p50 "), "no p50 shown");
    eprintln!("{sent} requests sent while the page refreshed");
}

/// Serves `page` (gzip) at `/` and `status(n)` at `/status.json` (n counts the fetches),
/// one connection at a time, until the listener is dropped with the test.
fn fake_metrics_address(
    page: Vec<u8>,
    status: impl Fn(u64) -> String + Send + 'static,
) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut fetches = 0;
        for conn in listener.incoming() {
            let Ok(mut c) = conn else { continue };
            let _ = c.set_read_timeout(Some(PATIENCE));
            let mut head = Vec::new();
            let mut buf = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let (kind, body) = if head.starts_with(b"GET /status.json") {
                fetches += 1;
                ("application/json", status(fetches).into_bytes())
            } else {
                (
                    "text/html; charset=utf-8\r\nContent-Encoding: gzip",
                    page.clone(),
                )
            };
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = c
                .write_all(reply.as_bytes())
                .and_then(|()| c.write_all(&body));
        }
    });
    addr
}

#[test]
fn a_128_cpu_8_node_machine_lays_out_as_nodes_side_by_side() {
    let Some(_) = chromium("a_128_cpu_8_node_machine_lays_out_as_nodes_side_by_side") else {
        return;
    };
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/sys/epyc-2s-8n-128");
    let out = std::process::Command::new(binary())
        .args(["check", "--json", "--sysfs", fixture, "--procfs"])
        .arg(format!("{fixture}.proc"))
        .output()
        .expect("steerd check");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fixed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("check --json");
    let workers = fixed["workers"].as_array().expect("workers").clone();
    assert_eq!(workers.len(), 128);
    // The page as the binary serves it; the data as a 128-worker server would send it.
    let server = Server::start(&[]);
    let raw = raw_get(
        server.metrics.expect("metrics"),
        "/",
        "Accept-Encoding: gzip\r\n",
    );
    let page = split_reply(&raw).1.to_vec();
    let addr = fake_metrics_address(page, move |n| {
        let mut doc = fixed.clone();
        doc["version"] = env!("CARGO_PKG_VERSION").into();
        doc["uptime_ms"] = (n * 1000).into();
        doc["duration_bounds_ms"] =
            serde_json::json!([5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000]);
        let counters: Vec<serde_json::Value> = workers
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let acc = n * (i as u64 + 1);
                serde_json::json!({
                    "worker": w["index"], "cpu": w["cpu"], "node": w["node"],
                    "accepted": acc, "local": acc - acc * (i as u64 % 2) / 2,
                    "responses": [0, acc * 2, 0, i % 3, 0], "bytes_sent": acc * 4096,
                    "open": i % 5, "stale_events": 0, "accept_pauses": 0, "respawns": i % 7 / 6,
                    "per_second": vec![i; i % 61], "p50_ms": (i % 4 * 20) as f64 + 2.5,
                    "p99_ms": if i % 9 == 0 { None } else { Some(i as f64 * 100.0) }
                })
            })
            .collect();
        doc["counters"] = counters.into();
        doc.to_string()
    });
    let width = 1600;
    let url = format!("http://{addr}/");
    let page = load(&url, (width, 1200), 5_000, None);
    screenshot(&url, "dashboard-128.png", (width, 1200));
    assert_no_errors(&page);
    let nodes = tags_with(&page.dom, "class=\"box node\"");
    assert_eq!(nodes.len(), 8, "{nodes:?}");
    let widths: Vec<u32> = nodes
        .iter()
        .map(|t| {
            let style = attr(t, "style").expect("node width");
            style
                .trim_start_matches("width: ")
                .trim_end_matches("px;")
                .parse()
                .expect(style)
        })
        .collect();
    let row: u32 = widths.iter().map(|w| w + 8).sum();
    assert!(
        row <= width,
        "8 nodes of {widths:?} px do not fit a {width} px window"
    );
    assert_eq!(tags_with(&page.dom, "class=\"box cluster\"").len(), 16);
    assert_eq!(tags_with(&page.dom, "class=\"box core\"").len(), 64);
    let cells = tags_with(&page.dom, "data-worker=");
    assert_eq!(cells.len(), 128);
    for cell in cells {
        let worker: u64 = attr(cell, "data-worker").unwrap().parse().unwrap();
        let req: u64 = attr(cell, "data-req")
            .expect("counts shown")
            .parse()
            .unwrap();
        // 2xx is 2 * (worker + 1) per fetch, 4xx stays at worker % 3.
        let twice = req - worker % 3;
        assert!(twice > 0 && twice % (2 * (worker + 1)) == 0, "{cell}");
        let p50 = (worker % 4 * 20) as f64 + 2.5;
        assert_eq!(
            attr(cell, "data-p50"),
            Some(p50.to_string().as_str()),
            "{cell}"
        );
        let p99 = (worker % 9 != 0).then(|| (worker * 100).to_string());
        assert_eq!(attr(cell, "data-p99"), Some(p99.as_deref().unwrap_or("")));
    }
    // As the buckets allow: within the first bound, between bounds, past the last.
    for shown in [
        "p50 \u{2264}5ms \u{00b7} p99 -",
        "p50 23ms \u{00b7} p99 100ms",
    ] {
        assert!(page.dom.contains(shown), "{shown:?} not shown");
    }
    assert!(
        page.dom.contains("p99 \u{2265}10s"),
        "a p99 at the last bound"
    );
    let lines = tags_with(&page.dom, "data-points=");
    assert_eq!(lines.len(), 128);
    for line in lines {
        let n: usize = attr(line, "data-points").unwrap().parse().unwrap();
        assert!(n <= 60, "{line}");
    }
    assert!(
        page.dom.contains("128 workers on 128 CPUs, 8 nodes"),
        "header"
    );
}

/// The DOM helpers the checks above read the page with.
#[test]
fn dom_helpers_parse_tags_and_attributes() {
    let dom = "<div class=\"cpu\" id=\"cpu3\" data-req=\"12\"><b>x</b></div>";
    let tags = tags_with(dom, "class=\"cpu\"");
    assert_eq!(tags.len(), 1);
    assert_eq!(attr(tags[0], "data-req"), Some("12"));
    assert_eq!(attr(tags[0], "id"), Some("cpu3"));
}
