//! Byte ranges (RFC 9110 §14): one `bytes=` range to a 206 slice or a 416, and the
//! If-Range precondition.
//!
//! Input: the raw `Range` (and `If-Range`) field values the parser extracted, and the
//! file's length and validators. Output: a [`RangeAnswer`]. No allocation, no I/O.
//!
//! Choices, all permitted by §14.2:
//! - an unknown range unit is ignored (MUST): 200 with the whole file;
//! - a syntactically invalid specifier is ignored (MAY): 200;
//! - **several ranges are ignored: 200 with the whole file** (no multipart/byteranges;
//!   this also removes the overlapping-ranges amplification of CVE-2011-3192);
//! - a single range whose first byte is at or past the end, or a `-0` suffix, or any
//!   range of an empty file, is unsatisfiable: 416 with `Content-Range: bytes */len`.
//! - positions too large for u64 saturate: a huge last-pos or suffix length means "to the
//!   end" (206), a huge first-pos is past the end (416).
//!
//! Range is only evaluated for GET (§14.2: MUST ignore for other methods); the caller
//! checks the method.

/// What a Range field asks of a representation of a given length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeAnswer {
    /// Send the whole representation (no Range, or Range ignored).
    Full,
    /// Send bytes `first..=last` with 206.
    Partial {
        /// First byte.
        first: u64,
        /// Last byte, inclusive, below the length.
        last: u64,
    },
    /// 416 with `Content-Range: bytes */len`.
    Unsatisfiable,
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// 1*DIGIT as u64, saturating at `u64::MAX`; `None` on anything else. Saturation keeps
/// the meaning of a huge position (§14.1.2): a last-pos or suffix-length past any file is
/// clamped to the end, a first-pos past any file is unsatisfiable.
fn number(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0u64, |acc, &d| {
        if !d.is_ascii_digit() {
            return None;
        }
        Some(acc.saturating_mul(10).saturating_add(u64::from(d - b'0')))
    })
}

/// Evaluates a `Range` value against a representation of `len` bytes.
pub fn evaluate(raw: &[u8], len: u64) -> RangeAnswer {
    let raw = trim(raw);
    let Some(eq) = memchr::memchr(b'=', raw) else {
        return RangeAnswer::Full;
    };
    if !trim(&raw[..eq]).eq_ignore_ascii_case(b"bytes") {
        return RangeAnswer::Full;
    }
    let spec = trim(&raw[eq + 1..]);
    if memchr::memchr(b',', spec).is_some() {
        return RangeAnswer::Full;
    }
    let Some(dash) = memchr::memchr(b'-', spec) else {
        return RangeAnswer::Full;
    };
    let (a, b) = (trim(&spec[..dash]), trim(&spec[dash + 1..]));
    if a.is_empty() {
        // suffix-range: the last N bytes.
        return match number(b) {
            None => RangeAnswer::Full,
            Some(0) => RangeAnswer::Unsatisfiable,
            Some(_) if len == 0 => RangeAnswer::Unsatisfiable,
            Some(n) => RangeAnswer::Partial {
                first: len.saturating_sub(n),
                last: len - 1,
            },
        };
    }
    let Some(first) = number(a) else {
        return RangeAnswer::Full;
    };
    let last = match (b.is_empty(), number(b)) {
        (true, _) => u64::MAX,
        (false, Some(l)) if l >= first => l,
        (false, _) => return RangeAnswer::Full,
    };
    if first >= len {
        return RangeAnswer::Unsatisfiable;
    }
    RangeAnswer::Partial {
        first,
        last: last.min(len - 1),
    }
}

/// `If-Range` (§13.1.5): true when the Range may be honoured. An entity-tag must match our
/// (strong) ETag exactly; a weak tag never does. A date must equal Last-Modified exactly.
/// Without an ETag (not known yet) or a date (unknown), nothing matches them.
pub fn if_range_holds(raw: &[u8], etag: Option<&[u8]>, last_modified: Option<i64>) -> bool {
    let raw = trim(raw);
    if raw.starts_with(b"\"") {
        return Some(raw) == etag;
    }
    if raw.starts_with(b"W/") {
        return false;
    }
    last_modified.is_some() && crate::http::date::parse_http_date(raw) == last_modified
}

#[cfg(test)]
mod tests {
    use super::RangeAnswer::*;
    use super::*;

    #[test]
    fn single_ranges() {
        let cases: &[(&[u8], RangeAnswer)] = &[
            (b"bytes=0-3", Partial { first: 0, last: 3 }),
            (b"bytes=-3", Partial { first: 7, last: 9 }),
            (b"bytes=5-", Partial { first: 5, last: 9 }),
            (b"bytes=5-100", Partial { first: 5, last: 9 }),
            (b"bytes=-100", Partial { first: 0, last: 9 }),
            (b"BYTES = 2-2", Partial { first: 2, last: 2 }),
            (b"bytes=10-", Unsatisfiable),
            (b"bytes=10-20", Unsatisfiable),
            (b"bytes=-0", Unsatisfiable),
            (b"items=0-3", Full),
            (b"bytes=0-1,3-4", Full),
            (b"bytes=0--", Full),
            (b"bytes=-2-3", Full),
            (b"bytes=3-1", Full),
            (b"bytes=x-1", Full),
            (b"bytes=", Full),
            (b"bytes", Full),
            (b"bytes=99999999999999999999-", Unsatisfiable),
            (
                b"bytes=99999999999999999999-99999999999999999999",
                Unsatisfiable,
            ),
            (
                b"bytes=0-99999999999999999999",
                Partial { first: 0, last: 9 },
            ),
            (
                b"bytes=3-18446744073709551616",
                Partial { first: 3, last: 9 },
            ),
            (
                b"bytes=-99999999999999999999",
                Partial { first: 0, last: 9 },
            ),
            (
                b"bytes=-18446744073709551615",
                Partial { first: 0, last: 9 },
            ),
        ];
        for (raw, want) in cases {
            assert_eq!(evaluate(raw, 10), *want, "{}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn empty_file_has_no_satisfiable_range() {
        assert_eq!(evaluate(b"bytes=0-", 0), Unsatisfiable);
        assert_eq!(evaluate(b"bytes=-5", 0), Unsatisfiable);
    }

    #[test]
    fn if_range() {
        let lm = Some(784_111_777);
        let (ab, x): (Option<&[u8]>, Option<&[u8]>) = (Some(b"\"a-b\""), Some(b"\"x\""));
        assert!(if_range_holds(b"\"a-b\"", ab, lm));
        assert!(!if_range_holds(b"\"a-c\"", ab, lm));
        assert!(!if_range_holds(b"W/\"a-b\"", ab, lm));
        assert!(!if_range_holds(b"\"a-b\"", None, lm));
        assert!(if_range_holds(b"Sun, 06 Nov 1994 08:49:37 GMT", x, lm));
        assert!(!if_range_holds(b"Sun, 06 Nov 1994 08:49:37 GMT", x, None));
        assert!(!if_range_holds(b"Sun, 06 Nov 1994 08:49:38 GMT", x, lm));
        assert!(!if_range_holds(b"garbage", x, lm));
    }

    /// Naive oracle: every satisfiable answer is inside the file and ordered.
    #[test]
    fn answers_stay_inside_the_file() {
        for len in 0..6u64 {
            for a in 0..8u64 {
                for b in 0..8u64 {
                    let raw = format!("bytes={a}-{b}");
                    if let Partial { first, last } = evaluate(raw.as_bytes(), len) {
                        assert!(first <= last && last < len, "{raw} len {len}");
                    }
                }
            }
        }
    }
}
