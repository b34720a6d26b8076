//! `steerd probe URL [--timeout S]`: one HTTP/1.1 GET, exit 0 on a 2xx answer and 1
//! otherwise, with one line either way, so an image holding only the steerd binary can
//! declare a health check (`HEALTHCHECK CMD ["/steerd", "probe", …]`).
//!
//! Input: [`ProbeArgs`]. Output: `URL: STATUS-LINE` on stdout, or `steerd: probe: URL:
//! why` on stderr. The whole exchange (resolve, connect, send, read up to the end of the
//! status line) is bounded by `--timeout`. It reads nothing past the status line and
//! follows no redirect: a 3xx is not healthy.

use super::Failure;
use crate::args::probe::ProbeArgs;
use crate::bench::spec::{Target, TargetError};
use core::fmt;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Longest status line read.
const STATUS_MAX: usize = 512;

/// Why a probe is not healthy; printed after the URL (`steerd: probe: URL: why`).
#[derive(Debug)]
pub(crate) enum ProbeError {
    /// The URL is refused or its host has no address.
    Target(TargetError),
    /// The whole exchange took longer than `--timeout`.
    Timeout(Duration),
    /// The connection was refused or failed.
    Connect(std::io::Error),
    /// The request could not be sent.
    Send(std::io::Error),
    /// The answer could not be read.
    Read(std::io::Error),
    /// The peer closed before a status line.
    Closed,
    /// The first line is no HTTP/1 status line (its first 60 characters).
    NotHttp(String),
    /// An answer, but not 2xx: its status line.
    Unhealthy(String),
}

impl fmt::Display for ProbeError {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeError::Target(e) => write!(f, "{e}"),
            ProbeError::Timeout(t) => write!(f, "no answer within {t:?}"),
            ProbeError::Connect(e) => write!(f, "connect: {e}"),
            ProbeError::Send(e) => write!(f, "send: {e}"),
            ProbeError::Read(e) => write!(f, "read: {e}"),
            ProbeError::Closed => f.write_str("closed without an answer"),
            ProbeError::NotHttp(line) => write!(f, "not an HTTP answer: {line:?}"),
            ProbeError::Unhealthy(line) => f.write_str(line),
        }
    }
}

/// Runs the probe: its status line on stdout when healthy, else a failure naming the URL.
pub(crate) fn main(args: &ProbeArgs) -> Result<i32, Failure> {
    let why = match status_line(args) {
        Ok(line) if is_success(&line) => {
            println!("{}: {line}", args.url);
            return Ok(0);
        }
        Ok(line) => ProbeError::Unhealthy(line),
        Err(why) => why,
    };
    Err(Failure::new("probe", format!("{}: {why}", args.url)))
}

/// `HTTP/1.x 2xx …`: a three-digit status starting with 2 (RFC 9112 §4).
fn is_success(line: &str) -> bool {
    let code = line.as_bytes().get(9..12);
    line.starts_with("HTTP/1.")
        && code.is_some_and(|c| c[0] == b'2' && c.iter().all(u8::is_ascii_digit))
}

/// The answer's status line, without its line end.
fn status_line(args: &ProbeArgs) -> Result<String, ProbeError> {
    let deadline = Instant::now() + args.timeout;
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or(ProbeError::Timeout(args.timeout))
    };
    let target = Target::parse(&args.url).map_err(ProbeError::Target)?;
    let mut s = TcpStream::connect_timeout(&target.addr, left()?).map_err(ProbeError::Connect)?;
    let head = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nUser-Agent: steerd-probe\r\n\r\n",
        target.path, target.host
    );
    s.set_write_timeout(Some(left()?))
        .and_then(|()| s.write_all(head.as_bytes()))
        .map_err(ProbeError::Send)?;
    let mut got = Vec::with_capacity(STATUS_MAX);
    let mut buf = [0u8; 256];
    while !got.contains(&b'\n') && got.len() < STATUS_MAX {
        s.set_read_timeout(Some(left()?.max(Duration::from_millis(1))))
            .map_err(ProbeError::Read)?;
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(ProbeError::Timeout(args.timeout))
            }
            Err(e) => return Err(ProbeError::Read(e)),
        }
    }
    let line = got.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line).trim_end().to_string();
    match line {
        l if l.starts_with("HTTP/1.") => Ok(l),
        l if l.is_empty() => Err(ProbeError::Closed),
        l => Err(ProbeError::NotHttp(l.chars().take(60).collect())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_is_2xx_only() {
        assert!(is_success("HTTP/1.1 200 OK"));
        assert!(is_success("HTTP/1.0 204 No Content"));
        for no in [
            "HTTP/1.1 301 Moved",
            "HTTP/1.1 503 x",
            "HTTP/1.1 2",
            "SSH-2.0 200",
        ] {
            assert!(!is_success(no), "{no}");
        }
    }
}
