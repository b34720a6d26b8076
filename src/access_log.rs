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
//!
//! Where the buffer goes when written: a destination whose writes may wait for a disk
//! (a file, or standard output that is one) is written by the worker's log thread
//! ([`writer`]: the buffer handed over, bounded, lines dropped and counted when the bound
//! is reached, never a blocked loop); the syslog socket and standard output as a pipe or
//! terminal are written on the loop, as they never wait for a disk.

pub(crate) mod dest;
mod writer;

pub(crate) use dest::Dest;
use writer::Writer;

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
    /// Where the loop writes the buffer itself ([`Dest::Off`] when the writer does).
    dest: Dest,
    /// The thread that writes a destination that may wait for the disk.
    writer: Option<Writer>,
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
        let (dest, writer) = match dest.waits_for_disk() {
            true => match Writer::start(dest, BUF) {
                Ok(w) => (Dest::Off, Some(w)),
                Err(dest) => (dest, None),
            },
            false => (dest, None),
        };
        Ok(AccessLog {
            dest,
            writer,
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
            writer: None,
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
        !self.buf.is_empty()
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

    /// Writes the buffered lines, or hands them to the writer (collecting the lines its
    /// earlier writes dropped). Out of line: once per 48 to 64 KiB of lines or per
    /// 500 ms, so the loop turn that checks whether it is due stays small.
    #[inline(never)]
    pub(crate) fn flush(&mut self) {
        if self.len > 0 {
            self.dropped += match &self.writer {
                Some(w) => w.hand(&mut self.buf, self.len) + w.take_dropped(),
                None => self.dest.write(&self.buf[..self.len]),
            };
        }
        self.len = 0;
        self.oldest_ms = None;
    }

    /// The lines dropped since the last call (a failed or short write, or no room with
    /// the writer), for the metric. The writer's own drops are collected at each hand-over
    /// and at [`AccessLog::close`], so the metric learns of them then.
    pub(crate) fn take_dropped(&mut self) -> u64 {
        core::mem::take(&mut self.dropped)
    }

    /// Flushes, then opens the destination again (after a rotation moved the old file):
    /// at once on the loop, or by the writer after the lines before.
    pub(crate) fn reopen(&mut self) -> io::Result<()> {
        self.flush();
        match &self.writer {
            Some(w) => {
                w.reopen();
                Ok(())
            }
            None => self.dest.reopen(),
        }
    }

    /// At exit: flushes and waits (bounded) for the writer to write everything; what
    /// it could not is in [`AccessLog::take_dropped`]. Out of line: the loop's body
    /// stays as small as it was.
    #[cold]
    #[inline(never)]
    pub(crate) fn close(&mut self) {
        self.flush();
        if let Some(w) = &mut self.writer {
            w.finish();
            self.dropped += w.take_dropped();
        }
    }

    /// Waits until the writer has written what it was handed (tests read the file).
    #[cfg(test)]
    pub(crate) fn settle(&self) {
        if let Some(w) = &self.writer {
            assert!(
                w.settle(std::time::Duration::from_secs(10)),
                "log writer stuck"
            );
        }
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests;
