//! The access log of one worker: lines formatted into a fixed buffer, written when the
//! buffer fills, at least once a second, when asked to reopen, and at exit.
//!
//! Input: a [`Record`] per finished (or cut short) response, the worker's cached `Date`
//! once per loop turn, and the reopen request (SIGUSR1). Output: lines at the
//! destination ([`dest`]) in the format `--log-format` chose ([`crate::log_line`]).
//! The buffer is allocated when the log is opened; recording a line allocates nothing
//! and makes no syscall unless the buffer is full. A line waits at most
//! [`FLUSH_AFTER_MS`] plus one loop wake-up (at most 500 ms) before it is written.
//! A failed write drops the buffered lines (the log must never stall serving); they are
//! counted, and the worker adds the count to its `log_lines_dropped` counter each loop
//! turn ([`AccessLog::take_dropped`]).

pub(crate) mod dest;

pub(crate) use dest::Dest;

use crate::config::{LogFormat, LogTarget};
use crate::http::date::DateCache;
use crate::log_line::{format_line, syslog, LogClock, Record, LINE_MAX};
use std::io;

/// Bytes of the per-worker buffer.
pub(crate) const BUF: usize = 64 * 1024;
/// A buffered line is written once it is this old (checked every loop turn).
pub(crate) const FLUSH_AFTER_MS: u64 = 500;

const ROOM: usize = LINE_MAX + syslog::HEAD_MAX;

/// An open (or disabled) access log.
pub(crate) struct AccessLog {
    dest: Dest,
    format: LogFormat,
    buf: Box<[u8]>,
    len: usize,
    clock: LogClock,
    pid: u32,
    /// Loop time of the oldest line not yet written.
    oldest_ms: Option<u64>,
    /// Lines dropped (or cut) since [`AccessLog::take_dropped`] last asked.
    dropped: u64,
}

impl AccessLog {
    /// Opens `target` as the current process; `date` starts the log's clock.
    pub(crate) fn open(
        target: &LogTarget,
        format: LogFormat,
        date: &DateCache,
    ) -> io::Result<AccessLog> {
        let dest = Dest::open(target)?;
        let size = if dest.is_off() { 0 } else { BUF };
        Ok(AccessLog {
            dest,
            format,
            buf: vec![0; size].into_boxed_slice(),
            len: 0,
            clock: LogClock::new(date),
            pid: rustix::process::getpid().as_raw_nonzero().get() as u32,
            oldest_ms: None,
            dropped: 0,
        })
    }

    /// A log that records nothing.
    #[cfg(test)]
    pub(crate) fn off() -> AccessLog {
        AccessLog {
            dest: Dest::Off,
            format: LogFormat::default(),
            buf: Box::default(),
            len: 0,
            clock: LogClock::new(&DateCache::new(0)),
            pid: 0,
            oldest_ms: None,
            dropped: 0,
        }
    }

    /// Whether lines are recorded.
    pub(crate) fn enabled(&self) -> bool {
        !self.dest.is_off()
    }

    /// The line format.
    pub(crate) fn format(&self) -> LogFormat {
        self.format
    }

    /// Appends one line (writing the buffer first if the line might not fit).
    pub(crate) fn record(&mut self, rec: &Record<'_>, now_ms: u64) {
        if !self.enabled() {
            return;
        }
        if self.buf.len() - self.len < ROOM {
            self.flush();
        }
        let Some(free) = self.buf.get_mut(self.len..) else {
            return;
        };
        let mut head = 0;
        if self.dest.is_syslog() {
            let mut out = crate::http::response::Writer::new(free);
            syslog::frame_head(&self.clock, self.pid, &mut out);
            head = out.written();
        }
        let n = format_line(self.format, rec, &self.clock, &mut free[head..]);
        self.len += head + n;
        self.oldest_ms.get_or_insert(now_ms);
    }

    /// Once per loop turn: follows the clock, and writes lines that have waited long enough.
    pub(crate) fn tick(&mut self, date: &DateCache, now_ms: u64) {
        self.clock.update(date);
        if self
            .oldest_ms
            .is_some_and(|t| now_ms.saturating_sub(t) >= FLUSH_AFTER_MS)
        {
            self.flush();
        }
    }

    /// Writes the buffered lines.
    pub(crate) fn flush(&mut self) {
        if self.len > 0 {
            self.dropped += self.dest.write(&self.buf[..self.len]);
        }
        self.len = 0;
        self.oldest_ms = None;
    }

    /// The lines dropped since the last call (a failed or short write), for the metric.
    pub(crate) fn take_dropped(&mut self) -> u64 {
        core::mem::take(&mut self.dropped)
    }

    /// Flushes, then opens the destination again (after a rotation moved the old file).
    pub(crate) fn reopen(&mut self) -> io::Result<()> {
        self.flush();
        self.dest.reopen()
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests;
