//! A minimal HTTP/1.1 client for the serving tests: one framed response (status line,
//! headers, a `Content-Length` or chunked body) at a time, so keep-alive and pipelining
//! can be checked.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// One parsed response.
#[derive(Debug, Clone)]
pub(crate) struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Reads one response from `r`; `head_only` for a HEAD request or a 304.
pub(crate) fn read_response(r: &mut impl BufRead, head_only: bool) -> std::io::Result<Response> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "closed",
        ));
    }
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line)?;
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        let (n, v) = l
            .split_once(':')
            .ok_or_else(|| std::io::Error::other("bad header"))?;
        headers.push((n.to_string(), v.trim().to_string()));
    }
    let mut resp = Response {
        status,
        headers,
        body: Vec::new(),
    };
    let chunked = resp
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
    if !head_only && status != 304 && chunked {
        resp.body = read_chunked(r)?;
    } else if !head_only && status != 304 {
        let len: usize = resp
            .header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        resp.body = vec![0; len];
        r.read_exact(&mut resp.body)?;
    }
    Ok(resp)
}

/// A chunked body (RFC 9112 §7.1), strictly: hex sizes without extensions, CRLF after
/// each chunk, no trailers.
pub(crate) fn read_chunked(r: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let bad = |what: &str| std::io::Error::other(format!("bad chunked body: {what}"));
    let mut body = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        r.read_line(&mut line)?;
        let size = line
            .strip_suffix("\r\n")
            .and_then(|s| usize::from_str_radix(s, 16).ok())
            .ok_or_else(|| bad(&line))?;
        let mut chunk = vec![0; size + 2];
        r.read_exact(&mut chunk)?;
        if size == 0 {
            return match &chunk[..] {
                b"\r\n" => Ok(body),
                _ => Err(bad("trailer after the last chunk")),
            };
        }
        if !chunk.ends_with(b"\r\n") {
            return Err(bad("no CRLF after a chunk"));
        }
        body.extend_from_slice(&chunk[..size]);
    }
}

/// Sends `req` on a new connection and reads one response; no read waits over 10 s.
pub(crate) fn exchange(addr: SocketAddr, req: &str) -> Response {
    exchange_within(addr, req, Duration::from_secs(10))
}

/// [`exchange`] with reads that may wait up to `timeout` each (a response that may be
/// slow to come, such as a listing of 100,000 entries under an emulator).
pub(crate) fn exchange_within(addr: SocketAddr, req: &str, timeout: Duration) -> Response {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(timeout)).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    let head_only = req.starts_with("HEAD ");
    read_response(&mut BufReader::new(s), head_only).unwrap()
}

/// `GET path` with Host and `Connection: close`, plus extra header lines.
pub(crate) fn get(addr: SocketAddr, path: &str, extra: &str) -> Response {
    exchange(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: t\r\n{extra}Connection: close\r\n\r\n"),
    )
}

/// Whether the peer closed: a read returns EOF (or a reset) within the timeout.
pub(crate) fn closed_within(s: &mut TcpStream, t: Duration) -> bool {
    s.set_read_timeout(Some(t)).unwrap();
    let mut b = [0u8; 4096];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}
