//! The master's HTTP answers on the `--metrics` address: the dashboard page (`GET /`),
//! its data (`GET /status.json`, built by [`status`]), the Prometheus text
//! (`GET /metrics`, rendered by `stats::render`) and the health check (`GET /health`:
//! 200 when every planned worker serves, 503 otherwise; for `steerd probe` and
//! orchestrators' readiness checks). `HEAD` of each is answered as `GET` without the body
//! (same status and fields, `Content-Length` included: RFC 9110 §9.3.2), for uptime
//! checkers that use it.
//!
//! Input: a complete (or cut-off) request head and a function that renders a document.
//! Output: the whole HTTP/1.1 reply, `Connection: close`. It does not read or write
//! sockets (`stats/metrics_server.rs` does) and never runs in a worker, so nothing here
//! touches the serving path.
//!
//! The page (`page.html`, plain HTML and JavaScript, no external resources) is built into
//! the binary as written; its gzip form is made once, by the master's first answer that
//! needs it, with steerd's own encoder (`deflate::gzip`, the one `--compress gzip` uses:
//! about a millisecond and 256 KiB of working memory, freed after), and kept. The
//! representation is chosen by the rules the file server applies to its `.gz` sidecars
//! (`http::encoding`): a client that accepts gzip gets the compressed bytes with
//! `Content-Encoding: gzip` (browsers do), any other the page as written (a first `curl`),
//! and only one that refuses both (`identity;q=0`) a 406. Both carry
//! `Vary: Accept-Encoding`. The page costs the binary its size (about 11 KB) once.

pub(crate) mod history;
pub(crate) mod status;

use crate::http::encoding::{AcceptEncoding, Choice, Coding, CodingSet, Precompressed};
use std::borrow::Cow;

/// The dashboard page as written.
pub(crate) const PAGE: &str = include_str!("page.html");

/// The dashboard page gzip-compressed, made on first use (module doc).
fn page_gz() -> &'static [u8] {
    static GZ: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    GZ.get_or_init(|| crate::deflate::gzip(PAGE.as_bytes()))
}

/// A document rendered per request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Document {
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
    Health,
    NotFound,
}

/// The method of a request the master answers; any other gets the 404 of an unknown path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    Get,
    /// `GET` without the body.
    Head,
}

/// The method and route of a request head: `GET` or `HEAD` of `/` (or `/index.html`),
/// `/status.json`, `/metrics` or `/health`, with or without a query, any HTTP version.
fn route(head: &[u8]) -> (Method, Route) {
    let line = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
    let mut parts = line.split(|&b| b == b' ');
    let method = match parts.next() {
        Some(b"GET") => Method::Get,
        Some(b"HEAD") => Method::Head,
        _ => return (Method::Get, Route::NotFound),
    };
    let target = parts.next().unwrap_or(&[]);
    let route = match target.split(|&b| b == b'?').next().unwrap_or(&[]) {
        b"/" | b"/index.html" => Route::Page,
        b"/status.json" => Route::Render(Document::Status),
        b"/metrics" => Route::Render(Document::Metrics),
        b"/health" => Route::Health,
        _ => Route::NotFound,
    };
    (method, route)
}

/// One answer before it is written: status line, the fields after `Content-Type`, body.
struct Answer {
    status: &'static str,
    fields: &'static str,
    body: Cow<'static, [u8]>,
}

impl Answer {
    fn new(status: &'static str, fields: &'static str, body: &'static [u8]) -> Answer {
        let body = Cow::Borrowed(body);
        Answer {
            status,
            fields,
            body,
        }
    }
}

/// The whole reply to `head`; `render` makes the document asked for; `healthy`: every
/// planned worker serves. Out of line: the master's metrics answer is cold code.
#[inline(never)]
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn reply(head: &[u8], healthy: bool, render: impl Fn(Document) -> String) -> Vec<u8> {
    let (method, route) = route(head);
    let a = answer(route, head, healthy, render);
    let body: &[u8] = match method {
        Method::Get => &a.body,
        Method::Head => &[],
    };
    response(a.status, a.fields, a.body.len(), body)
}

const TEXT: &str = "text/plain; charset=utf-8";
const HTML: &str = "text/html; charset=utf-8\r\nVary: Accept-Encoding";
const HTML_GZ: &str = "text/html; charset=utf-8\r\nContent-Encoding: gzip\r\nVary: Accept-Encoding";

fn answer(route: Route, head: &[u8], healthy: bool, render: impl Fn(Document) -> String) -> Answer {
    match route {
        Route::Health if healthy => Answer::new("200 OK", TEXT, b"ok: every worker serves\n"),
        Route::Health => Answer::new(
            "503 Service Unavailable",
            TEXT,
            b"unavailable: not every worker serves\n",
        ),
        Route::Page => match page_coding(head) {
            Choice::Coded(_) => Answer::new("200 OK", HTML_GZ, page_gz()),
            Choice::Identity => Answer::new("200 OK", HTML, PAGE.as_bytes()),
            Choice::NotAcceptable => Answer::new(
                "406 Not Acceptable",
                "text/plain; charset=utf-8\r\nVary: Accept-Encoding",
                b"the dashboard is sent as written or gzip-compressed, and this request \
                  refuses both; its data is at /status.json\n",
            ),
        },
        Route::Render(doc) => Answer {
            status: "200 OK",
            fields: match doc {
                Document::Metrics => "text/plain; version=0.0.4; charset=utf-8",
                Document::Status => "application/json\r\nCache-Control: no-store",
            },
            body: Cow::Owned(render(doc).into_bytes()),
        },
        Route::NotFound => Answer::new(
            "404 Not Found",
            TEXT,
            b"not found: try GET /, /status.json, /metrics or /health\n",
        ),
    }
}

/// The head and `body` of a reply whose representation is `len` bytes long (`body` is
/// empty for `HEAD`).
fn response(status: &str, fields: &str, len: usize, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {fields}\r\nContent-Length: {len}\r\n\
         Connection: close\r\n\r\n"
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// The page's representation for the head's `Accept-Encoding` lines, by the rules the
/// file server applies to its `.gz` sidecars (`http::encoding`: `x-gzip` is gzip, `q=0`
/// refuses, `*` stands for codings not named, identity is acceptable unless refused). No
/// field: the page as written, as for a file.
fn page_coding(head: &[u8]) -> Choice {
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
    accept.choose(&Precompressed::default(), gzip)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(head: &str) -> String {
        let bytes = reply(head.as_bytes(), true, |d| format!("{d:?}\n"));
        String::from_utf8_lossy(&bytes).into_owned()
    }

    #[test]
    fn routes_by_method_and_path() {
        let get = |r| (Method::Get, r);
        assert_eq!(route(b"GET / HTTP/1.1\r\n\r\n"), get(Route::Page));
        assert_eq!(
            route(b"GET /index.html?x HTTP/1.0\r\n\r\n"),
            get(Route::Page)
        );
        let status = Route::Render(Document::Status);
        assert_eq!(route(b"GET /status.json?t=1 HTTP/1.1\r\n"), get(status));
        let metrics = Route::Render(Document::Metrics);
        assert_eq!(route(b"GET /metrics HTTP/1.1\r\n\r\n"), get(metrics));
        assert_eq!(route(b"GET /metrics?x=1 HTTP/1.0\r\n\r\n"), get(metrics));
        assert_eq!(
            route(b"HEAD / HTTP/1.1\r\n\r\n"),
            (Method::Head, Route::Page)
        );
        assert_eq!(
            route(b"HEAD /health HTTP/1.1\r\n\r\n"),
            (Method::Head, Route::Health)
        );
        for head in [
            &b"POST /metrics HTTP/1.1\r\n\r\n"[..],
            b"GET /metricsx HTTP/1.1\r\n\r\n",
            b"head / HTTP/1.1\r\n\r\n",
            b"",
        ] {
            assert_eq!(route(head).1, Route::NotFound);
        }
    }

    #[test]
    fn page_is_gzip_for_those_who_accept_it_and_plain_otherwise() {
        let ok = text("GET / HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip, deflate, br\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains("\r\nContent-Encoding: gzip\r\n"), "{ok}");
        assert!(ok.contains("\r\nVary: Accept-Encoding\r\n"), "{ok}");
        let len = format!("\r\nContent-Length: {}\r\n", page_gz().len());
        assert!(ok.contains(&len), "{ok}");
        for head in [
            "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET / HTTP/1.1\r\nAccept-Encoding: br, deflate\r\n\r\n",
            "GET / HTTP/1.1\r\nAccept-Encoding: gzip;q=0\r\n\r\n",
        ] {
            let plain = text(head);
            assert!(plain.starts_with("HTTP/1.1 200 OK\r\n"), "{plain}");
            assert!(!plain.contains("Content-Encoding"), "{plain}");
            assert!(plain.contains("\r\nVary: Accept-Encoding\r\n"), "{plain}");
            assert!(plain.ends_with(PAGE), "{head:?}");
        }
        let refused = text("GET / HTTP/1.1\r\nAccept-Encoding: identity;q=0, br\r\n\r\n");
        assert!(refused.starts_with("HTTP/1.1 406 "), "{refused}");
        assert!(refused.ends_with("/status.json\n"), "{refused}");
    }

    #[test]
    fn head_is_get_without_the_body() {
        for (path, extra) in [
            ("/", ""),
            ("/", "Accept-Encoding: gzip\r\n"),
            ("/health", ""),
            ("/metrics", ""),
            ("/status.json", ""),
            ("/nothing", ""),
        ] {
            let get = text(&format!("GET {path} HTTP/1.1\r\n{extra}\r\n"));
            let head = text(&format!("HEAD {path} HTTP/1.1\r\n{extra}\r\n"));
            let (get_head, body) = get.split_once("\r\n\r\n").expect("a head");
            assert!(!body.is_empty(), "{path}");
            assert_eq!(head, format!("{get_head}\r\n\r\n"), "{path}");
        }
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
        let coding = |v: &str| page_coding(format!("GET / HTTP/1.1\r\n{v}\r\n\r\n").as_bytes());
        for yes in [
            "Accept-Encoding: gzip",
            "accept-encoding:GZIP;q=0.5",
            "Accept-Encoding: br, x-gzip",
            "Accept-Encoding: *",
            "Accept-Encoding: identity\r\nAccept-Encoding: gzip",
        ] {
            assert_eq!(coding(yes), Choice::Coded(Coding::Gzip), "{yes}");
        }
        for no in [
            "Host: x",
            "Accept-Encoding: br, deflate",
            "Accept-Encoding: gzip;q=0",
            "Accept-Encoding: gzip; q=0.000, br",
            "Accept-Encoding: *, gzip;q=0",
            "X-Accept-Encoding-Note: gzip",
        ] {
            assert_eq!(coding(no), Choice::Identity, "{no}");
        }
        for neither in ["Accept-Encoding: *;q=0", "Accept-Encoding: identity;q=0"] {
            assert_eq!(coding(neither), Choice::NotAcceptable, "{neither}");
        }
    }
}
