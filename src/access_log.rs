//! The access log: one line per request, buffered in a fixed buffer and written at most
//! once per loop turn (or when the buffer fills), reopened on request (SIGUSR1).
//!
//! Input: what the connection knows when it starts a response (peer, request line,
//! status, bytes the response carries). Output: appended lines, format
//! `ADDR - - [DATE] "METHOD TARGET HTTP/1.x" STATUS BYTES` where DATE is the cached
//! IMF-fixdate. No allocation per line: the buffer is allocated when the log is opened.
//! A failed write drops the buffered lines (the log must never stall serving).

use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};
use std::net::SocketAddr;
use std::path::PathBuf;

const BUF: usize = 64 * 1024;
/// The longest line kept; a longer request target is cut.
const LINE_MAX: usize = 9 * 1024;

/// What one line says.
pub struct Entry<'a> {
    /// Client address, if known.
    pub peer: Option<SocketAddr>,
    /// Method token (or `-` when the request did not parse).
    pub method: &'a [u8],
    /// Request-target as sent.
    pub target: &'a [u8],
    /// Minor HTTP version.
    pub minor: u8,
    /// Status sent.
    pub status: u16,
    /// Bytes of the response (head and body).
    pub bytes: u64,
}

/// An open (or disabled) access log.
pub struct AccessLog {
    path: Option<PathBuf>,
    fd: Option<OwnedFd>,
    buf: Vec<u8>,
}

struct Fixed<'a> {
    buf: &'a mut Vec<u8>,
}

impl core::fmt::Write for Fixed<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        if self.buf.len() + s.len() > self.buf.capacity() {
            return Err(core::fmt::Error);
        }
        self.buf.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

impl AccessLog {
    /// Opens `path` for appending (`None`: logging off).
    pub fn open(path: Option<PathBuf>) -> std::io::Result<AccessLog> {
        let mut log = AccessLog {
            fd: None,
            buf: Vec::with_capacity(if path.is_some() { BUF } else { 0 }),
            path,
        };
        log.reopen()?;
        Ok(log)
    }

    /// Whether lines are recorded.
    pub fn enabled(&self) -> bool {
        self.path.is_some()
    }

    /// Flushes, then opens the path again (after a rotation moved the old file away).
    pub fn reopen(&mut self) -> std::io::Result<()> {
        self.flush();
        if let Some(p) = &self.path {
            let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE | OFlags::CLOEXEC;
            self.fd = Some(rustix::fs::open(p, flags, Mode::from_raw_mode(0o644))?);
        }
        Ok(())
    }

    /// Appends one line (flushing first if it might not fit).
    pub fn record(&mut self, e: &Entry<'_>, date: &[u8]) {
        if !self.enabled() {
            return;
        }
        if self.buf.len() + LINE_MAX > BUF {
            self.flush();
        }
        let target = &e.target[..e.target.len().min(8 * 1024)];
        let mut w = Fixed { buf: &mut self.buf };
        let _ = match e.peer {
            Some(p) => core::fmt::write(&mut w, format_args!("{}", p.ip())),
            None => core::fmt::write(&mut w, format_args!("-")),
        };
        self.buf.extend_from_slice(b" - - [");
        self.buf.extend_from_slice(date);
        self.buf.extend_from_slice(b"] \"");
        self.buf.extend_from_slice(e.method);
        self.buf.push(b' ');
        self.buf.extend_from_slice(target);
        self.buf.extend_from_slice(b" HTTP/1.");
        self.buf.push(b'0' + e.minor.min(9));
        self.buf.extend_from_slice(b"\" ");
        let mut w = Fixed { buf: &mut self.buf };
        let _ = core::fmt::write(&mut w, format_args!("{} {}\n", e.status, e.bytes));
    }

    /// Writes the buffered lines (one `write`, retried on a short write).
    pub fn flush(&mut self) {
        let Some(fd) = &self.fd else {
            self.buf.clear();
            return;
        };
        let mut done = 0;
        while done < self.buf.len() {
            match rustix::io::write(fd, &self.buf[done..]) {
                Ok(0) | Err(_) => break,
                Ok(n) => done += n,
            }
        }
        self.buf.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_reopen() {
        let dir = std::env::temp_dir().join(format!("steerd-log-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("access.log");
        let _ = std::fs::remove_file(&path);
        let mut log = AccessLog::open(Some(path.clone())).unwrap();
        let e = Entry {
            peer: Some("127.0.0.1:5000".parse().unwrap()),
            method: b"GET",
            target: b"/a?b",
            minor: 1,
            status: 200,
            bytes: 123,
        };
        log.record(&e, b"Sun, 06 Nov 1994 08:49:37 GMT");
        log.flush();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "127.0.0.1 - - [Sun, 06 Nov 1994 08:49:37 GMT] \"GET /a?b HTTP/1.1\" 200 123\n"
        );
        std::fs::rename(&path, dir.join("old.log")).unwrap();
        log.reopen().unwrap();
        log.record(&e, b"d");
        log.flush();
        assert!(std::fs::read_to_string(&path)
            .unwrap()
            .starts_with("127.0.0.1 - - [d]"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
