//! The RFC 3164 framing of a log line sent to the local syslog daemon (`/dev/log`).
//!
//! Input: the [`LogClock`] of this second and the sender's process id. Output: the frame
//! head `<30>Dec  1 00:16:22 steerd[4242]: ` that precedes the line in its datagram.
//! PRI 30 is facility daemon (3) × 8 + severity informational (6) (RFC 3164 §4.1.1);
//! the timestamp is `Mmm dd hh:mm:ss` (§4.1.2, UTC here); the hostname is left out, as
//! the C library's `syslog(3)` does for a local socket (the daemon adds it); the tag is
//! `steerd` and the content begins with `[pid]: ` (§5.3). The datagram has no newline.

use super::LogClock;
use crate::http::response::Writer;

/// Facility daemon, severity informational.
pub(crate) const PRI: &[u8] = b"<30>";
/// The tag that names us in the system log.
pub(crate) const TAG: &[u8] = b"steerd";
/// Longest frame head: PRI, time, tag, pid, punctuation.
pub(crate) const HEAD_MAX: usize = 4 + 15 + 1 + 6 + 1 + 10 + 3;

/// Writes the frame head for a line sent now by process `pid`.
pub(crate) fn frame_head(clock: &LogClock, pid: u32, out: &mut Writer<'_>) {
    out.put(PRI);
    out.put(clock.rfc3164());
    out.put(b" ");
    out.put(TAG);
    out.put(b"[");
    out.num(u64::from(pid));
    out.put(b"]: ");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::date::DateCache;

    #[test]
    fn rfc3164_head() {
        let clock = LogClock::new(&DateCache::new(1_796_084_182));
        let mut buf = [0u8; HEAD_MAX];
        let mut out = Writer::new(&mut buf);
        frame_head(&clock, 4242, &mut out);
        let n = out.written();
        assert_eq!(&buf[..n], b"<30>Dec  1 00:16:22 steerd[4242]: ");
        let mut out = Writer::new(&mut buf);
        frame_head(&clock, u32::MAX, &mut out);
        assert_eq!(out.written(), HEAD_MAX, "the longest pid fits");
    }
}
