//! `steerd probe URL [--timeout S]`: one HTTP/1.1 GET, exit 0 on a 2xx answer and 1
//! otherwise, with one line either way, so an image holding only the steerd binary can
//! declare a health check (`HEALTHCHECK CMD ["/steerd", "probe", …]`).
//!
//! Input: [`ProbeArgs`]. Output: `URL: STATUS-LINE` on stdout, or `steerd: probe: URL:
//! why` on stderr. The whole exchange (resolve, connect, send, read up to the end of the
//! status line) is bounded by `--timeout`. It reads nothing past the status line and
//! follows no redirect: a 3xx is not healthy.

use crate::args::probe::ProbeArgs;
use crate::bench::spec::Target;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Longest status line read.
const STATUS_MAX: usize = 512;

/// Runs the probe and returns the exit status.
pub fn main(args: &ProbeArgs) -> i32 {
    match status_line(args) {
        Ok(line) if is_success(&line) => {
            println!("{}: {line}", args.url);
            0
        }
        Ok(line) => {
            eprintln!("steerd: probe: {}: {line}", args.url);
            1
        }
        Err(why) => {
            eprintln!("steerd: probe: {}: {why}", args.url);
            1
        }
    }
}

/// `HTTP/1.x 2xx …`: a three-digit status starting with 2 (RFC 9112 §4).
fn is_success(line: &str) -> bool {
    let code = line.as_bytes().get(9..12);
    line.starts_with("HTTP/1.")
        && code.is_some_and(|c| c[0] == b'2' && c.iter().all(u8::is_ascii_digit))
}

/// The answer's status line, without its line end.
fn status_line(args: &ProbeArgs) -> Result<String, String> {
    let deadline = Instant::now() + args.timeout;
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| format!("no answer within {:?}", args.timeout))
    };
    let target = Target::parse(&args.url)?;
    let mut s =
        TcpStream::connect_timeout(&target.addr, left()?).map_err(|e| format!("connect: {e}"))?;
    let head = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nUser-Agent: steerd-probe\r\n\r\n",
        target.path, target.host
    );
    s.set_write_timeout(Some(left()?))
        .and_then(|()| s.write_all(head.as_bytes()))
        .map_err(|e| format!("send: {e}"))?;
    let mut got = Vec::with_capacity(STATUS_MAX);
    let mut buf = [0u8; 256];
    while !got.contains(&b'\n') && got.len() < STATUS_MAX {
        s.set_read_timeout(Some(left()?.max(Duration::from_millis(1))))
            .map_err(|e| format!("read: {e}"))?;
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
                return Err(format!("no answer within {:?}", args.timeout))
            }
            Err(e) => return Err(format!("read: {e}")),
        }
    }
    let line = got.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line).trim_end().to_string();
    if !line.starts_with("HTTP/1.") {
        return Err(if line.is_empty() {
            "closed without an answer".to_string()
        } else {
            format!(
                "not an HTTP answer: {:?}",
                line.chars().take(60).collect::<String>()
            )
        });
    }
    Ok(line)
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
