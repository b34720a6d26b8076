//! The three timestamps the log writes, made once per second from the cached `Date`.
//!
//! Input: the IMF-fixdate of the current second (`Sun, 06 Nov 1994 08:49:37 GMT`, which
//! the worker already keeps for its `Date` header) and that second. Output: the same
//! instant as the common log format writes it (`06/Nov/1994:08:49:37 +0000`), as
//! ISO 8601 (`1994-11-06T08:49:37Z`) and as RFC 3164 writes it (`Nov  6 08:49:37`). The
//! fields are moved, not recomputed, so the three cannot disagree with `Date`.

use crate::http::date::{month, DateCache, IMF_LEN};

/// Length of the common log format time.
pub(crate) const CLF_LEN: usize = 26;
/// Length of the ISO 8601 time.
pub(crate) const ISO_LEN: usize = 20;
/// Length of the RFC 3164 time.
pub(crate) const RFC3164_LEN: usize = 15;

/// The log's timestamps of one second.
#[derive(Clone, Debug)]
pub(crate) struct LogClock {
    secs: i64,
    clf: [u8; CLF_LEN],
    iso: [u8; ISO_LEN],
    rfc3164: [u8; RFC3164_LEN],
}

impl LogClock {
    /// The timestamps of the second `date` shows.
    pub(crate) fn new(date: &DateCache) -> LogClock {
        let mut c = LogClock {
            secs: date.secs(),
            clf: [0; CLF_LEN],
            iso: [0; ISO_LEN],
            rfc3164: [0; RFC3164_LEN],
        };
        c.fill(date.text());
        c
    }

    /// Moves to the second `date` shows; rewrites only when the second changed.
    pub(crate) fn update(&mut self, date: &DateCache) {
        if date.secs() != self.secs {
            self.secs = date.secs();
            self.fill(date.text());
        }
    }

    fn fill(&mut self, imf: &[u8; IMF_LEN]) {
        let (day, mon, year, time) = (&imf[5..7], &imf[8..11], &imf[12..16], &imf[17..25]);
        let m = month(mon).unwrap_or(1) as u8;
        self.clf = *b"01/Jan/1970:00:00:00 +0000";
        self.clf[0..2].copy_from_slice(day);
        self.clf[3..6].copy_from_slice(mon);
        self.clf[7..11].copy_from_slice(year);
        self.clf[12..20].copy_from_slice(time);
        self.iso = *b"1970-01-01T00:00:00Z";
        self.iso[0..4].copy_from_slice(year);
        self.iso[5..7].copy_from_slice(&[b'0' + m / 10, b'0' + m % 10]);
        self.iso[8..10].copy_from_slice(day);
        self.iso[11..19].copy_from_slice(time);
        // RFC 3164 §4.1.2: "Mmm dd hh:mm:ss", a day below 10 with a space, not a zero.
        self.rfc3164 = *b"Jan  1 00:00:00";
        self.rfc3164[0..3].copy_from_slice(mon);
        self.rfc3164[4..6].copy_from_slice(day);
        if day[0] == b'0' {
            self.rfc3164[4] = b' ';
        }
        self.rfc3164[7..15].copy_from_slice(time);
    }

    /// `06/Nov/1994:08:49:37 +0000`
    pub(crate) fn clf(&self) -> &[u8; CLF_LEN] {
        &self.clf
    }

    /// `1994-11-06T08:49:37Z`
    pub(crate) fn iso(&self) -> &[u8; ISO_LEN] {
        &self.iso
    }

    /// `Nov  6 08:49:37`
    pub(crate) fn rfc3164(&self) -> &[u8; RFC3164_LEN] {
        &self.rfc3164
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_forms_of_one_second() {
        let c = LogClock::new(&DateCache::new(784_111_777));
        assert_eq!(c.clf(), b"06/Nov/1994:08:49:37 +0000");
        assert_eq!(c.iso(), b"1994-11-06T08:49:37Z");
        assert_eq!(c.rfc3164(), b"Nov  6 08:49:37");
        let c = LogClock::new(&DateCache::new(1_796_084_182)); // 2026-12-01 00:16:22
        assert_eq!(c.clf(), b"01/Dec/2026:00:16:22 +0000");
        assert_eq!(c.iso(), b"2026-12-01T00:16:22Z");
        assert_eq!(c.rfc3164(), b"Dec  1 00:16:22");
    }

    #[test]
    fn rewrites_on_a_new_second_only() {
        let mut d = DateCache::new(0);
        let mut c = LogClock::new(&d);
        d.update(86_400 * 40 + 61);
        c.update(&d);
        assert_eq!(c.clf(), b"10/Feb/1970:00:01:01 +0000");
        assert_eq!(c.iso(), b"1970-02-10T00:01:01Z");
        assert_eq!(c.rfc3164(), b"Feb 10 00:01:01");
    }
}
