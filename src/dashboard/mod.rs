//! The master's HTTP answers on the `--metrics` address: the dashboard page (`GET /`),
//! its data (`GET /status.json`, built by [`status`]) and the Prometheus text
//! (`GET /metrics`, rendered by `stats::render`).
//!
//! Input: a complete (or cut-off) request head and a function that renders a document.
//! Output: the whole HTTP/1.1 reply, `Connection: close`. It does not read or write
//! sockets (`stats/metrics_server.rs` does) and never runs in a worker, so nothing here
//! touches the serving path.
//!
//! The page (`page.html`, plain HTML and JavaScript, no external resources) is built into
//! the binary only gzip-compressed (`page.html.gz`, made by `scripts/dashboard-gz.sh` and
//! checked against `page.html` by `tests/dashboard.rs`): a client that accepts gzip gets
//! those bytes with `Content-Encoding: gzip`, so the master needs no compressor or
//! decompressor; any other client gets a 406 that points to `/status.json`.

pub mod status;

use crate::http::encoding::{AcceptEncoding, Choice, Coding, CodingSet, Precompressed};

/// The dashboard page, `gzip -9n` of `page.html`.
pub const PAGE_GZ: &[u8] = include_bytes!("page.html.gz");

/// A document rendered per request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Document {
    /// `/metrics`: the Prometheus text.
    Metrics,
    /// `/status.json`: topology, plan and counters.
    Status,
}

/// What a request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Page,
    Render(Document),
    NotFound,
}

/// The route of a request head: `GET` of `/` (or `/index.html`), `/status.json` or
/// `/metrics`, with or without a query, any HTTP version.
fn route(head: &[u8]) -> Route {
    let line = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
    let mut parts = line.split(|&b| b == b' ');
    if parts.next() != Some(b"GET") {
        return Route::NotFound;
    }
    let target = parts.next().unwrap_or(&[]);
    match target.split(|&b| b == b'?').next().unwrap_or(&[]) {
        b"/" | b"/index.html" => Route::Page,
        b"/status.json" => Route::Render(Document::Status),
        b"/metrics" => Route::Render(Document::Metrics),
        _ => Route::NotFound,
    }
}

/// The whole reply to `head`; `render` makes the document asked for.
pub fn reply(head: &[u8], render: impl Fn(Document) -> String) -> Vec<u8> {
    match route(head) {
        Route::Page if accepts_gzip(head) => response(
            "200 OK",
            "text/html; charset=utf-8\r\nContent-Encoding: gzip\r\nVary: Accept-Encoding",
            PAGE_GZ,
        ),
        Route::Page => response(
            "406 Not Acceptable",
            TEXT,
            b"the dashboard is stored gzip-compressed: ask with Accept-Encoding: gzip \
              (browsers do); its data is at /status.json\n",
        ),
        Route::Render(Document::Metrics) => response(
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            render(Document::Metrics).as_bytes(),
        ),
        Route::Render(Document::Status) => response(
            "200 OK",
            "application/json\r\nCache-Control: no-store",
            render(Document::Status).as_bytes(),
        ),
        Route::NotFound => response(
            "404 Not Found",
            TEXT,
            b"not found: try GET /, /status.json or /metrics\n",
        ),
    }
}

const TEXT: &str = "text/plain; charset=utf-8";

#[inline(never)] // one copy for the five replies
fn response(status: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// True when the head's `Accept-Encoding` lines admit gzip, by the rules the file server
/// applies to its `.gz` sidecars (`http::encoding`: `x-gzip` is gzip, `q=0` refuses, `*`
/// stands for codings not named). No field: false, as for a file.
fn accepts_gzip(head: &[u8]) -> bool {
    let mut accept = AcceptEncoding::default();
    for line in head.split(|&b| b == b'\n').skip(1) {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        if line[..colon]
            .trim_ascii()
            .eq_ignore_ascii_case(b"accept-encoding")
        {
            accept.add(line[colon + 1..].trim_ascii());
        }
    }
    let gzip = CodingSet::EMPTY.with(Coding::Gzip);
    accept.choose(&Precompressed::default(), gzip) == Choice::Coded(Coding::Gzip)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(head: &str) -> String {
        let bytes = reply(head.as_bytes(), |d| format!("{d:?}\n"));
        String::from_utf8_lossy(&bytes).into_owned()
    }

    #[test]
    fn routes_by_method_and_path() {
        assert_eq!(route(b"GET / HTTP/1.1\r\n\r\n"), Route::Page);
        assert_eq!(route(b"GET /index.html?x HTTP/1.0\r\n\r\n"), Route::Page);
        let status = Route::Render(Document::Status);
        assert_eq!(route(b"GET /status.json?t=1 HTTP/1.1\r\n"), status);
        let metrics = Route::Render(Document::Metrics);
        assert_eq!(route(b"GET /metrics HTTP/1.1\r\n\r\n"), metrics);
        assert_eq!(route(b"GET /metrics?x=1 HTTP/1.0\r\n\r\n"), metrics);
        for head in [
            &b"POST /metrics HTTP/1.1\r\n\r\n"[..],
            b"GET /metricsx HTTP/1.1\r\n\r\n",
            b"HEAD / HTTP/1.1\r\n\r\n",
            b"",
        ] {
            assert_eq!(route(head), Route::NotFound);
        }
    }

    #[test]
    fn page_is_gzip_only_with_its_headers() {
        let ok = text("GET / HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip, deflate, br\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains("\r\nContent-Encoding: gzip\r\n"), "{ok}");
        let len = format!("\r\nContent-Length: {}\r\n", PAGE_GZ.len());
        assert!(ok.contains(&len), "{ok}");
        let plain = text("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(
            plain.starts_with("HTTP/1.1 406 Not Acceptable\r\n"),
            "{plain}"
        );
        assert!(plain.ends_with("/status.json\n"), "{plain}");
    }

    #[test]
    fn documents_are_rendered_with_their_types() {
        let s = text("GET /status.json HTTP/1.1\r\n\r\n");
        assert!(s.contains("Content-Type: application/json\r\n"), "{s}");
        assert!(s.ends_with("\r\n\r\nStatus\n"), "{s}");
        let m = text("GET /metrics HTTP/1.1\r\n\r\n");
        assert!(m.contains("text/plain; version=0.0.4"), "{m}");
        assert!(m.ends_with("\r\n\r\nMetrics\n"), "{m}");
        assert!(text("GET /x HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404 Not Found\r\n"));
    }

    #[test]
    fn accept_encoding_weights() {
        let accepts = |v: &str| accepts_gzip(format!("GET / HTTP/1.1\r\n{v}\r\n\r\n").as_bytes());
        for yes in [
            "Accept-Encoding: gzip",
            "accept-encoding:GZIP;q=0.5",
            "Accept-Encoding: br, x-gzip",
            "Accept-Encoding: *",
            "Accept-Encoding: identity\r\nAccept-Encoding: gzip",
        ] {
            assert!(accepts(yes), "{yes}");
        }
        for no in [
            "Host: x",
            "Accept-Encoding: br, deflate",
            "Accept-Encoding: gzip;q=0",
            "Accept-Encoding: gzip; q=0.000, br",
            "Accept-Encoding: *, gzip;q=0",
            "Accept-Encoding: *;q=0",
            "X-Accept-Encoding-Note: gzip",
        ] {
            assert!(!accepts(no), "{no}");
        }
    }
}
