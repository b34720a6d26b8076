//! Access log lines: `combined` and `common` as nginx and Apache write them, and `json`,
//! formatted into a caller's buffer.
//!
//! Stage: the worker, when a response finishes or is cut short. Input: a [`Record`]
//! (what happened to one request), the [`LogClock`] of the current second, and a buffer.
//! Output: one line ending in `\n` and its length, never more than [`LINE_MAX`] bytes:
//! the variable fields are cut at fixed budgets ([`TARGET_BUDGET`], [`FIELD_BUDGET`]),
//! never inside an escape sequence. No allocation, no panic on any input. It does not
//! write anywhere (the access log does) nor read the clock.
//!
//! ```text
//! combined  127.0.0.1 - - [01/Dec/2026:00:16:22 +0000] "GET /a HTTP/1.1" 200 1234 "http://r/" "curl/8"
//! common    127.0.0.1 - - [01/Dec/2026:00:16:22 +0000] "GET /a HTTP/1.1" 200 1234
//! json      {"time":"2026-12-01T00:16:22Z","client":"127.0.0.1","request":"GET /a HTTP/1.1",
//!            "status":200,"body_bytes":1234,"referer":"http://r/","user_agent":"curl/8",
//!            "worker":0,"cpu":2,"local":true,"duration_us":85,"cut_short":false,
//!            "user":null}   (one line; `"rule":"FILE:LINE"` after `user` when a
//!            rule answered; `"upstream":"unix:/run/app.sock","upstream_us":412` last
//!            when a `--proxy` rule forwarded the request)
//! ```
//!
//! The bytes are those of the body actually written (nginx's `$body_bytes_sent`: `0`
//! when none). The user (the third field; `user` in `json`) is the one `--basic-auth`
//! accepted for the request, `-` (`null`) otherwise. An absent `Referer` or `User-Agent` is `-` (`null` in `json`); a request
//! that did not parse shows its first line as received (`-` if empty). Quoted fields are
//! escaped as nginx escapes them ([`escape`]). Times are UTC (`+0000`).

pub(crate) mod clock;
pub(crate) mod escape;
pub(crate) mod syslog;

mod clf;
mod json_line;

pub(crate) use crate::config::LogFormat;
pub(crate) use clock::LogClock;

use crate::http::response::Writer;
use crate::http::Method;
use core::net::IpAddr;

/// Longest line written, newline included.
pub(crate) const LINE_MAX: usize = 16 * 1024;
/// Output bytes the request-target (or an unparsed request line) may take, escaped.
pub(crate) const TARGET_BUDGET: usize = 8 * 1024;
/// Output bytes a `Referer`, `User-Agent` or user value may take, escaped.
pub(crate) const FIELD_BUDGET: usize = 2 * 1024;
/// Longest method token (`OPTIONS` and `CONNECT`; the parser knows no longer one).
const METHOD_MAX: usize = 7;

/// The request as the log shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RequestLine<'a> {
    /// A parsed request line.
    Parsed {
        /// Method (the parser only lets known methods through).
        method: Method,
        /// Request-target as sent.
        target: &'a [u8],
        /// Minor HTTP version (`HTTP/1.x`).
        minor: u8,
    },
    /// A request refused before it parsed: its first line as received (perhaps empty).
    Raw(&'a [u8]),
}

/// What one line says about one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Record<'a> {
    /// The client's address (the real one behind a trusted proxy), if known.
    pub(crate) client: Option<IpAddr>,
    /// The request.
    pub(crate) request: RequestLine<'a>,
    /// Status sent.
    pub(crate) status: u16,
    /// Body bytes actually written.
    pub(crate) body_bytes: u64,
    /// `Referer` value, if sent.
    pub(crate) referer: Option<&'a [u8]>,
    /// `User-Agent` value, if sent.
    pub(crate) user_agent: Option<&'a [u8]>,
    /// The user `--basic-auth` accepted for this request, if any.
    pub(crate) user: Option<&'a [u8]>,
    /// Where the `--redirect` or `--rewrite` that answered was given (json only, and only
    /// when one did: `"rule":"site.conf:12"`).
    pub(crate) rule: Option<&'a [u8]>,
    /// The name of the host that answered (json only, and only with hosts:
    /// `"host":"a.example"`).
    pub(crate) host: Option<&'a [u8]>,
    /// The upstream a `--proxy` rule forwarded the request to (json only, and only for a
    /// forwarded request: `"upstream":"unix:/run/app.sock"`).
    pub(crate) upstream: Option<&'a [u8]>,
    /// Microseconds from the start of the exchange with the upstream (its connect) to its
    /// response head, or to steerd's own 502, 503 or 504 in its place (json only, with
    /// `upstream`; `null` when neither came: the client went away first).
    pub(crate) upstream_us: Option<u64>,
    /// The worker's index.
    pub(crate) worker: u32,
    /// The CPU the worker runs on.
    pub(crate) cpu: u32,
    /// The connection arrived on the worker's own CPU.
    pub(crate) local: bool,
    /// Microseconds from the request's first byte to the end of its response.
    pub(crate) duration_us: u64,
    /// The response ended before all of it was written.
    pub(crate) cut_short: bool,
}

/// Writes one line for `rec` at the start of `buf`; returns its length. A `buf` shorter
/// than [`LINE_MAX`] may get an incomplete line (pieces that do not fit are left out).
pub(crate) fn format_line(
    format: LogFormat,
    rec: &Record<'_>,
    clock: &LogClock,
    buf: &mut [u8],
) -> usize {
    let mut out = Writer::new(buf);
    match format {
        LogFormat::Combined => clf::write(rec, clock, true, &mut out),
        LogFormat::Common => clf::write(rec, clock, false, &mut out),
        LogFormat::Json => json_line::write(rec, clock, &mut out),
    }
    out.put(b"\n");
    out.written()
}

/// The request text both formats show: `METHOD TARGET HTTP/1.x`, or the raw line.
fn request_text(
    req: &RequestLine<'_>,
    out: &mut Writer<'_>,
    escape: fn(&[u8], &mut Writer<'_>, usize),
) {
    match *req {
        RequestLine::Parsed {
            method,
            target,
            minor,
        } => {
            escape(method.as_str().as_bytes(), out, METHOD_MAX * 6);
            out.put(b" ");
            escape(target, out, TARGET_BUDGET);
            out.put(b" HTTP/1.");
            out.put(&[b'0' + minor.min(9)]);
        }
        RequestLine::Raw(b"") => {
            out.put(b"-");
        }
        RequestLine::Raw(line) => escape(line, out, TARGET_BUDGET),
    }
}

/// Appends an address: an IPv4 one digit by digit (the usual case, once per line, where
/// `core::fmt` cost a tenth of a worker's user time), any other through `core::fmt`.
fn put_ip(out: &mut Writer<'_>, ip: IpAddr) {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, d] = v4.octets();
            out.num(a.into()).put(b".").num(b.into()).put(b".");
            out.num(c.into()).put(b".").num(d.into());
        }
        IpAddr::V6(_) => {
            let _ = core::fmt::write(out, format_args!("{ip}"));
        }
    }
}

#[cfg(test)]
mod tests;
