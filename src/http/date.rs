//! HTTP dates (RFC 9110 §5.6.7): IMF-fixdate formatting, parsing of the three accepted
//! forms, and a per-worker cached `Date` value refreshed once per second.
//!
//! Input: seconds since the Unix epoch (UTC), or the raw bytes of a date header value.
//! Output: the 29-byte IMF-fixdate text, or the seconds a header value names.
//! It does not read the clock itself (the loop passes the time in) and never allocates.
//!
//! Parsing accepts, as §5.6.7 requires of recipients:
//! - IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT` (the only form we send),
//! - obsolete RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT`: a two-digit year below 70 is read
//!   as 20yy, otherwise 19yy (the spec's "more than 50 years in the future" rule, fixed
//!   at the epoch so it does not depend on today's date),
//! - obsolete asctime `Sun Nov  6 08:49:37 1994`.
//!
//! The weekday is checked for shape only, not against the date (the RFC does not ask for it).

/// Length of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub(crate) const IMF_LEN: usize = 29;

const DAYS: [&[u8; 3]; 7] = [b"Thu", b"Fri", b"Sat", b"Sun", b"Mon", b"Tue", b"Wed"];
const MONTHS: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];
const LONG_DAYS: [&[u8]; 7] = [
    b"Monday",
    b"Tuesday",
    b"Wednesday",
    b"Thursday",
    b"Friday",
    b"Saturday",
    b"Sunday",
];

/// Proleptic Gregorian (year, month 1..=12, day 1..=31) of a day count since 1970-01-01.
/// The era arithmetic follows the well-known "days from civil" derivation.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the inverse of the above).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(month);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn two(out: &mut [u8], v: u32) {
    out[0] = b'0' + (v / 10 % 10) as u8;
    out[1] = b'0' + (v % 10) as u8;
}

/// Formats `secs` (Unix time, UTC) as IMF-fixdate. Years outside 0..=9999 are clamped,
/// which no file system timestamp we serve reaches.
pub fn format_imf(secs: i64) -> [u8; IMF_LEN] {
    let secs = secs.clamp(-62_167_219_200, 253_402_300_799);
    let days = secs.div_euclid(86_400);
    let tod = secs.rem_euclid(86_400) as u32;
    let (year, month, day) = civil_from_days(days);
    let mut out = *b"Thu, 01 Jan 1970 00:00:00 GMT";
    out[..3].copy_from_slice(DAYS[days.rem_euclid(7) as usize]);
    two(&mut out[5..7], day);
    out[8..11].copy_from_slice(MONTHS[month as usize - 1]);
    let y = year as u32;
    two(&mut out[12..14], y / 100);
    two(&mut out[14..16], y % 100);
    two(&mut out[17..19], tod / 3600);
    two(&mut out[20..22], tod / 60 % 60);
    two(&mut out[23..25], tod % 60);
    out
}

/// Bytes of [`format_minutes`]' text.
pub(crate) const MINUTES_LEN: usize = 16;

/// Formats `secs` (Unix time, UTC) as `YYYY-MM-DD HH:MM`, the modification time a
/// directory listing shows; clamped as [`format_imf`] is.
pub(crate) fn format_minutes(secs: i64) -> [u8; MINUTES_LEN] {
    let secs = secs.clamp(-62_167_219_200, 253_402_300_799);
    let tod = secs.rem_euclid(86_400) as u32;
    let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
    let mut out = *b"1970-01-01 00:00";
    let y = year as u32;
    two(&mut out[0..2], y / 100);
    two(&mut out[2..4], y % 100);
    two(&mut out[5..7], month);
    two(&mut out[8..10], day);
    two(&mut out[11..13], tod / 3600);
    two(&mut out[14..16], tod / 60 % 60);
    out
}

fn digits(b: &[u8]) -> Option<u32> {
    if b.is_empty() || b.len() > 4 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0, |acc, d| acc * 10 + u32::from(d - b'0')))
}

/// The number (1..=12) of a month's three-letter English abbreviation (`Jan` ..= `Dec`).
pub(crate) fn month(b: &[u8]) -> Option<u32> {
    MONTHS
        .iter()
        .position(|m| &m[..] == b)
        .map(|i| i as u32 + 1)
}

/// `HH:MM:SS` to seconds of the day.
fn time_of_day(b: &[u8]) -> Option<i64> {
    if b.len() != 8 || b[2] != b':' || b[5] != b':' {
        return None;
    }
    let (h, m, s) = (digits(&b[0..2])?, digits(&b[3..5])?, digits(&b[6..8])?);
    // Leap second 60 is allowed by the grammar (second = 2DIGIT); it maps onto the next.
    (h < 24 && m < 60 && s <= 60).then(|| i64::from(h * 3600 + m * 60 + s))
}

fn assemble(year: u32, month: u32, day: u32, tod: i64) -> Option<i64> {
    let dim = [
        31,
        28 + u32::from(is_leap(year)),
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if day == 0 || day > dim[month as usize - 1] {
        return None;
    }
    Some(days_from_civil(i64::from(year), month, day) * 86_400 + tod)
}

fn is_leap(y: u32) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

/// `Sun, 06 Nov 1994 08:49:37 GMT`
fn parse_imf(s: &[u8]) -> Option<i64> {
    if s.len() != IMF_LEN || &s[3..5] != b", " || s[7] != b' ' || s[11] != b' ' {
        return None;
    }
    if s[16] != b' ' || &s[25..] != b" GMT" || !DAYS.iter().any(|d| d[..] == s[..3]) {
        return None;
    }
    let day = digits(&s[5..7])?;
    let year = digits(&s[12..16])?;
    assemble(year, month(&s[8..11])?, day, time_of_day(&s[17..25])?)
}

/// `Sunday, 06-Nov-94 08:49:37 GMT`
fn parse_rfc850(s: &[u8]) -> Option<i64> {
    let comma = memchr::memchr(b',', s)?;
    let rest = &s[comma..];
    if !LONG_DAYS.contains(&&s[..comma]) || rest.len() != 24 || &rest[..2] != b", " {
        return None;
    }
    if rest[4] != b'-' || rest[8] != b'-' || rest[11] != b' ' || &rest[20..] != b" GMT" {
        return None;
    }
    let yy = digits(&rest[9..11])?;
    let year = if yy < 70 { 2000 + yy } else { 1900 + yy };
    assemble(
        year,
        month(&rest[5..8])?,
        digits(&rest[2..4])?,
        time_of_day(&rest[12..20])?,
    )
}

/// `Sun Nov  6 08:49:37 1994`
fn parse_asctime(s: &[u8]) -> Option<i64> {
    if s.len() != 24 || s[3] != b' ' || s[7] != b' ' || s[10] != b' ' || s[19] != b' ' {
        return None;
    }
    if !DAYS.iter().any(|d| d[..] == s[..3]) {
        return None;
    }
    let day = match s[8] {
        b' ' => digits(&s[9..10])?,
        _ => digits(&s[8..10])?,
    };
    assemble(
        digits(&s[20..24])?,
        month(&s[4..7])?,
        day,
        time_of_day(&s[11..19])?,
    )
}

/// The Unix time a date header value names, in any of the three forms; `None` for
/// anything else (an invalid date is ignored by the conditional logic, RFC 9110 §13.1.3).
pub fn parse_http_date(s: &[u8]) -> Option<i64> {
    parse_imf(s)
        .or_else(|| parse_rfc850(s))
        .or_else(|| parse_asctime(s))
}

/// The `Date` value for the current second, reformatted only when the second changes.
#[derive(Clone, Debug)]
pub(crate) struct DateCache {
    secs: i64,
    text: [u8; IMF_LEN],
}

impl DateCache {
    /// A cache showing `now` (Unix seconds).
    pub(crate) fn new(now: i64) -> DateCache {
        DateCache {
            secs: now,
            text: format_imf(now),
        }
    }

    /// Moves the cache to `now`; formats only if the second changed.
    pub(crate) fn update(&mut self, now: i64) {
        if now != self.secs {
            self.secs = now;
            self.text = format_imf(now);
        }
    }

    /// The IMF-fixdate text of the cached second.
    pub(crate) fn text(&self) -> &[u8; IMF_LEN] {
        &self.text
    }

    /// The cached second.
    pub(crate) fn secs(&self) -> i64 {
        self.secs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minutes_agree_with_the_imf_text() {
        let t = 784_111_777; // 1994-11-06 08:49:37 UTC
        assert_eq!(&format_minutes(t), b"1994-11-06 08:49");
        assert_eq!(&format_minutes(0), b"1970-01-01 00:00");
        assert_eq!(&format_minutes(-1), b"1969-12-31 23:59");
        assert_eq!(&format_minutes(i64::MAX), b"9999-12-31 23:59");
        assert_eq!(&format_minutes(i64::MIN), b"0000-01-01 00:00");
    }

    #[test]
    fn rfc_example_in_all_three_forms() {
        let t = 784_111_777; // 1994-11-06 08:49:37 UTC
        assert_eq!(&format_imf(t), b"Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(parse_http_date(b"Sun, 06 Nov 1994 08:49:37 GMT"), Some(t));
        assert_eq!(parse_http_date(b"Sunday, 06-Nov-94 08:49:37 GMT"), Some(t));
        assert_eq!(parse_http_date(b"Sun Nov  6 08:49:37 1994"), Some(t));
    }

    #[test]
    fn format_parse_round_trip_over_centuries() {
        let mut t: i64 = -2_208_988_800; // 1900
        while t < 4_102_444_800 {
            // 2100
            let text = format_imf(t);
            assert_eq!(
                parse_http_date(&text),
                Some(t),
                "{}",
                String::from_utf8_lossy(&text)
            );
            t += 7_777_777;
        }
    }

    #[test]
    fn leap_days_and_epoch() {
        assert_eq!(&format_imf(0), b"Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(&format_imf(951_782_400), b"Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(parse_http_date(b"Thu, 29 Feb 2001 00:00:00 GMT"), None);
        assert!(parse_http_date(b"Mon, 29 Feb 2100 00:00:00 GMT").is_none());
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            &b""[..],
            b"Sun, 06 Nov 1994 08:49:37 UTC",
            b"Sun, 06 Nov 1994 24:00:00 GMT",
            b"Sun, 6 Nov 1994 08:49:37 GMT",
            b"Sun, 06 Foo 1994 08:49:37 GMT",
            b"Sunday, 06-Nov-1994 08:49:37 GMT",
            b"Funday, 06-Nov-94 08:49:37 GMT",
            b"Sun Nov 06 08:49:37 94",
            b"Sun, 06 Nov 1994 08:49:37 GMT ",
            b"\xff\xff\xff, 06 Nov 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse_http_date(bad), None, "{:?}", bad);
        }
    }

    #[test]
    fn cache_reformats_only_on_a_new_second() {
        let mut c = DateCache::new(0);
        c.update(0);
        assert_eq!(c.text(), b"Thu, 01 Jan 1970 00:00:00 GMT");
        c.update(61);
        assert_eq!(c.text(), b"Thu, 01 Jan 1970 00:01:01 GMT");
        assert_eq!(c.secs(), 61);
    }
}
