//! Wide scanning: where a field value or a request-target ends, and where a head ends.
//!
//! Input: the receive buffer and a start offset. Output: the offset of the byte that ends
//! the run, `None` when the buffer ends first (more bytes needed), or the error the first
//! offending byte causes. Nothing here reads past the slice.
//!
//! Design. A header value is mostly printable ASCII ended by CR. Instead of a table
//! lookup per byte, [`value_end`] loads 8 bytes as a little-endian `u64` and asks two
//! SWAR questions at once ("is any byte below 0x20?", "is any byte 0x7F?") with the
//! classic carry tricks: for `n <= 0x80`, `(w - 0x01..01 * n) & !w & 0x80..80` is
//! non-zero iff some byte of `w` is below `n`, and its lowest set bit marks the first
//! such byte exactly (a borrow only corrupts the bytes above a true hit). Bytes >= 0x80
//! (`obs-text`) never trip either test. When a word trips, the first flagged byte is
//! looked at alone: CR ends the value, HTAB is allowed, anything else is an error. The
//! tail shorter than a word goes byte by byte through the same table, which is the naive
//! oracle the property test compares against.
//!
//! The request-target has a richer class (RFC 3986), so [`target_end`] checks 8 table
//! lookups per iteration with one branch, and falls back to one byte at a time near the
//! end of the run.
//!
//! [`find_head_end`] is the slowloris guard (picohttpparser's `last_len`): each call looks
//! only at bytes not seen before, so a client sending one byte at a time costs O(n).

use super::error::ErrorKind;
use super::tables::{FIELD_VALUE, TARGET};

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The 8 bytes at `at` as a little-endian word, if all 8 are in `buf`.
#[inline(always)]
fn word_at(buf: &[u8], at: usize) -> Option<u64> {
    let bytes = buf.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

/// High bit set in every byte of `w` below 0x20 or equal to 0x7F (exact for the lowest).
#[inline(always)]
fn controls(w: u64) -> u64 {
    let below_space = w.wrapping_sub(ONES * 0x20) & !w;
    let del = w ^ (ONES * 0x7f);
    let is_del = del.wrapping_sub(ONES) & !del;
    (below_space | is_del) & HIGHS
}

/// Offset of the CR that ends the field value starting at `at`.
/// `Ok(None)`: the buffer ends first. LF gives `BareLineEnd`; another control or DEL
/// gives `BadFieldValue` (RFC 9110 §5.5; RFC 9112 §2.2).
#[inline]
pub fn value_end(buf: &[u8], mut at: usize) -> Result<Option<usize>, ErrorKind> {
    loop {
        if let (Some(a), Some(b)) = (word_at(buf, at), word_at(buf, at + 8)) {
            let (ca, cb) = (controls(a), controls(b));
            if ca | cb == 0 {
                at += 16;
                continue;
            }
            let skip = if ca != 0 {
                ca.trailing_zeros()
            } else {
                64 + cb.trailing_zeros()
            };
            at += (skip / 8) as usize;
        } else if let Some(a) = word_at(buf, at) {
            let ca = controls(a);
            if ca == 0 {
                at += 8;
                continue;
            }
            at += (ca.trailing_zeros() / 8) as usize;
        }
        let Some(&b) = buf.get(at) else {
            return Ok(None);
        };
        match b {
            b'\r' => return Ok(Some(at)),
            b'\n' => return Err(ErrorKind::BareLineEnd),
            _ if FIELD_VALUE[b as usize] => at += 1,
            _ => return Err(ErrorKind::BadFieldValue),
        }
    }
}

/// Offset of the first byte at or after `at` that is not in [`TARGET`] (normally the SP
/// before the version), or `None` when the buffer ends first.
#[inline]
pub fn target_end(buf: &[u8], mut at: usize) -> Option<usize> {
    let ok = |b: u8| TARGET[b as usize];
    while let Some(w) = buf.get(at..at + 8) {
        if ok(w[0]) & ok(w[1]) & ok(w[2]) & ok(w[3]) & ok(w[4]) & ok(w[5]) & ok(w[6]) & ok(w[7]) {
            at += 8;
        } else {
            break;
        }
    }
    while let Some(&b) = buf.get(at) {
        if !ok(b) {
            return Some(at);
        }
        at += 1;
    }
    None
}

/// Where to try parsing: the offset just past the blank line that ends a head, or just
/// past a bare LF or a CR followed by something else (the parser will then refuse it,
/// rather than the server waiting for a CRLFCRLF that a broken client never sends).
/// `already_scanned` is how many bytes earlier calls looked at: only bytes from there on
/// (and the 3 before, for a terminator split across reads) are read, so repeated calls as
/// bytes arrive cost O(n) in total. A blank line before any request line also counts;
/// the parser skips such lines (RFC 9112 §2.2) and answers `Partial`.
pub fn find_head_end(buf: &[u8], already_scanned: usize) -> Option<usize> {
    let mut at = already_scanned.saturating_sub(3).min(buf.len());
    while let Some(found) = memchr::memchr2(b'\r', b'\n', &buf[at..]) {
        let i = at + found;
        if buf[i] == b'\r' {
            match buf.get(i + 1) {
                Some(b'\n') | None => {}
                Some(_) => return Some(i + 1),
            }
        } else {
            let bare_lf = i == 0 || buf[i - 1] != b'\r';
            let blank_line = i >= 3 && &buf[i - 3..i] == b"\r\n\r";
            if bare_lf || blank_line {
                return Some(i + 1);
            }
        }
        at = i + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Naive oracle for `value_end`: one byte at a time through the table.
    fn value_end_naive(buf: &[u8], at: usize) -> Result<Option<usize>, ErrorKind> {
        for (i, &b) in buf.iter().enumerate().skip(at) {
            match b {
                b'\r' => return Ok(Some(i)),
                b'\n' => return Err(ErrorKind::BareLineEnd),
                _ if FIELD_VALUE[b as usize] => {}
                _ => return Err(ErrorKind::BadFieldValue),
            }
        }
        Ok(None)
    }

    /// Deterministic xorshift, so failures reproduce without a seed file.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn value_end_agrees_with_the_byte_loop() {
        let mut s = 0x9e37_79b9_7f4a_7c15;
        let specials = [0u8, b'\t', b'\r', b'\n', 0x1f, 0x7f, 0x80, 0xff, b' ', b'a'];
        for _ in 0..20_000 {
            let len = (next(&mut s) % 40) as usize;
            let mut buf = [b'x'; 40];
            for b in buf.iter_mut().take(len) {
                let r = next(&mut s);
                *b = if r % 4 == 0 {
                    specials[(r >> 8) as usize % specials.len()]
                } else {
                    (r >> 16) as u8
                };
            }
            let at = (next(&mut s) as usize) % (len + 1);
            assert_eq!(
                value_end(&buf[..len], at),
                value_end_naive(&buf[..len], at),
                "{:?}",
                &buf[..len]
            );
        }
    }

    #[test]
    fn target_end_agrees_with_the_byte_loop() {
        let mut s = 0x2545_f491_4f6c_dd1d;
        for _ in 0..20_000 {
            let len = (next(&mut s) % 40) as usize;
            let mut buf = [b'a'; 40];
            for b in buf.iter_mut().take(len) {
                let r = next(&mut s);
                *b = if r % 8 == 0 {
                    (r >> 8) as u8
                } else {
                    b"/a.%?b"[(r >> 8) as usize % 6]
                };
            }
            let naive = buf[..len].iter().position(|&b| !TARGET[b as usize]);
            assert_eq!(target_end(&buf[..len], 0), naive);
        }
    }

    #[test]
    fn head_end_found_once_whatever_the_read_sizes() {
        let head = b"GET / HTTP/1.1\r\nHost: a\r\n\r\nrest";
        for step in 1..head.len() {
            let mut seen = 0;
            let mut found = None;
            let mut len = 0;
            while found.is_none() && len < head.len() {
                len = (len + step).min(head.len());
                found = find_head_end(&head[..len], seen);
                seen = len;
            }
            assert_eq!(found, Some(27), "step {step}");
        }
        assert_eq!(find_head_end(b"GET / HTTP/1.1\nHost", 0), Some(15));
        assert_eq!(find_head_end(b"GET / HTTP/1.1\rX", 0), Some(15));
        assert_eq!(find_head_end(b"GET / HTTP/1.1\r", 0), None);
    }
}
