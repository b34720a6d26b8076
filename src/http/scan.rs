//! Wide scanning: where a field value or a request-target ends, and where a head ends.
//!
//! Input: the receive buffer and a start offset. Output: the offset of the byte that ends
//! the run, `None` when the buffer ends first (more bytes needed), or the error the first
//! offending byte causes. Nothing here reads past the slice.
//!
//! Design. A header value is mostly printable ASCII ended by CR. Instead of a table
//! lookup per byte, [`value_end`] skips 16 bytes per step that hold no control and no
//! DEL: on x86-64 with one SSE2 test (`sse2_controls`; SSE2 is in the x86-64
//! baseline), elsewhere with two little-endian `u64` words asking two SWAR questions at
//! once ("is any byte below 0x20?", "is any byte 0x7F?") with the classic carry tricks:
//! for `n <= 0x80`, `(w - 0x01..01 * n) & !w & 0x80..80` is
//! non-zero iff some byte of `w` is below `n`, and its lowest set bit marks the first
//! such byte exactly (a borrow only corrupts the bytes above a true hit). Bytes >= 0x80
//! (`obs-text`) never trip either test. When a step trips, the first flagged byte is
//! looked at alone: CR ends the value, HTAB is allowed, anything else is an error. The
//! tail shorter than a word goes byte by byte through the same table, which is the naive
//! oracle the property test compares against.
//!
//! The request-target and field names have richer classes (RFC 3986, `tchar`), so
//! [`class_end`] walks them through a table, 8 lookups per bounds check.
//!
//! [`find_head_end`] is the slowloris guard (picohttpparser's `last_len`): each call looks
//! only at bytes not seen before, so a client sending one byte at a time costs O(n).

use super::error::ErrorKind;
use super::tables::{FIELD_VALUE, PATH_PLAIN, TARGET, TOKEN};

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The 8 bytes at `at` as a little-endian word, if all 8 are in `buf`.
#[inline(always)]
fn word_at(buf: &[u8], at: usize) -> Option<u64> {
    let bytes = buf.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

/// High bit set in exactly the bytes of `w` equal to `c` (no borrow between bytes:
/// `(y & 0x7F) + 0x7F` sets a byte's high bit iff its low 7 bits are not all zero).
#[inline(always)]
pub(crate) fn bytes_equal(w: u64, c: u8) -> u64 {
    let y = w ^ (ONES * u64::from(c));
    !(((y & !HIGHS) + !HIGHS) | y) & HIGHS
}

/// High bit set in every byte of `w` below 0x20 or equal to 0x7F (exact for the lowest).
#[inline(always)]
fn controls(w: u64) -> u64 {
    let below_space = w.wrapping_sub(ONES * 0x20) & !w;
    let del = w ^ (ONES * 0x7f);
    let is_del = del.wrapping_sub(ONES) & !del;
    (below_space | is_del) & HIGHS
}

/// Advances from `at` over whole words holding no control byte and no DEL; stops at
/// the first such byte, or where less than a word is left (the caller goes on byte by
/// byte). On x86-64 the words are 16 bytes compared with SSE2 (part of the x86-64
/// baseline, so no runtime detection); elsewhere they are SWAR `u64`s.
#[inline(always)]
fn skip_plain(buf: &[u8], at: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    return skip_plain_sse2(buf, at);
    #[cfg(not(target_arch = "x86_64"))]
    return skip_plain_swar(buf, at);
}

/// The portable `skip_plain`: two `u64` per step.
#[inline(always)]
fn skip_plain_swar(buf: &[u8], mut at: usize) -> usize {
    while let (Some(a), Some(b)) = (word_at(buf, at), word_at(buf, at + 8)) {
        let (ca, cb) = (controls(a), controls(b));
        if ca | cb != 0 {
            let skip = if ca != 0 {
                ca.trailing_zeros()
            } else {
                64 + cb.trailing_zeros()
            };
            return at + (skip / 8) as usize;
        }
        at += 16;
    }
    if let Some(a) = word_at(buf, at) {
        let ca = controls(a);
        return at
            + if ca == 0 {
                8
            } else {
                (ca.trailing_zeros() / 8) as usize
            };
    }
    at
}

/// `skip_plain` with SSE2 (`sse2_controls`), 16 bytes per step.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn skip_plain_sse2(buf: &[u8], mut at: usize) -> usize {
    // Most values end within the first 16 bytes: that step is peeled off the loop. (A
    // 32-byte step after it ran fewer instructions on the long values but was slower
    // on the bench.)
    if let Some(chunk) = buf.get(at..at + 16) {
        let Ok(chunk) = chunk.try_into() else {
            return at;
        };
        let flagged = sse2_controls(chunk);
        if flagged != 0 {
            return at + flagged.trailing_zeros() as usize;
        }
        at += 16;
    }
    while let Some(chunk) = buf.get(at..at + 16) {
        let Ok(chunk) = chunk.try_into() else { break };
        let flagged = sse2_controls(chunk);
        if flagged != 0 {
            return at + flagged.trailing_zeros() as usize;
        }
        at += 16;
    }
    // Fewer than 16 bytes left: the buffer's last 16 bytes, the ones before `at` shifted
    // out (a head is nearly always longer than 16 bytes; a shorter buffer goes SWAR).
    let len = buf.len();
    let Some(last) = len.checked_sub(16).and_then(|from| buf.get(from..)) else {
        return skip_plain_swar(buf, at);
    };
    let Ok(last) = last.try_into() else {
        return skip_plain_swar(buf, at);
    };
    let flagged = sse2_controls(last) >> (at + 16 - len);
    if flagged != 0 {
        return at + flagged.trailing_zeros() as usize;
    }
    len
}

/// Bit `i` set when byte `i` of `bytes` is a control (below 0x20) or DEL: the header
/// value scanner's inner step, 16 bytes with four SSE2 operations.
/// Bytes >= 0x80 (obs-text) are never flagged: `max_epu8` compares unsigned.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(unsafe_code)]
fn sse2_controls(bytes: &[u8; 16]) -> u32 {
    use core::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of the x86-64 baseline, enabled for every x86_64 target, so
    // these instructions exist; `_mm_loadu_si128` reads exactly the 16 bytes `bytes`
    // borrows and allows any alignment.
    unsafe {
        let v = _mm_loadu_si128(bytes.as_ptr().cast());
        let printable = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x20)), v);
        let del = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f));
        (!_mm_movemask_epi8(printable) | _mm_movemask_epi8(del)) as u32 & 0xffff
    }
}

/// Offset of the CR that ends the field value starting at `at`.
/// `Ok(None)`: the buffer ends first. LF gives `BareLineEnd`; another control or DEL
/// gives `BadFieldValue` (RFC 9110 §5.5; RFC 9112 §2.2).
#[inline(always)]
pub(crate) fn value_end(buf: &[u8], mut at: usize) -> Result<Option<usize>, ErrorKind> {
    loop {
        at = skip_plain(buf, at);
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

/// Offset of the first byte at or after `at` outside `class`, or `None` when the buffer
/// ends first. One bounds check per 8 bytes, then 8 table lookups each with its own
/// early exit (field names are short, so an all-or-nothing 8-byte test mostly fails and
/// costs twice).
#[inline(always)]
pub(crate) fn class_end(buf: &[u8], mut at: usize, class: &[bool; 256]) -> Option<usize> {
    while let Some(w) = buf.get(at..at + 8) {
        for (i, &b) in w.iter().enumerate() {
            if !class[b as usize] {
                return Some(at + i);
            }
        }
        at += 8;
    }
    while let Some(&b) = buf.get(at) {
        if !class[b as usize] {
            return Some(at);
        }
        at += 1;
    }
    None
}

/// Whether every byte of `bytes` is in `class`: 8 lookups per step combined without a
/// branch, the last step overlapping the one before (for short runs that are nearly
/// always valid, such as a Host value).
#[inline(always)]
pub(crate) fn all_in(bytes: &[u8], class: &[bool; 256]) -> bool {
    let in_class = |w: &[u8]| w.iter().fold(true, |ok, &b| ok & class[b as usize]);
    let n = bytes.len();
    if n < 8 {
        return in_class(bytes);
    }
    let mut ok = true;
    let mut at = 0;
    while at + 8 < n {
        ok &= in_class(&bytes[at..at + 8]);
        at += 8;
    }
    ok & in_class(&bytes[n - 8..])
}

/// Whether every byte of `bytes` is an ASCII letter, digit, "-" or ".": the host names
/// nearly every client sends, a subset of [`super::tables::REG_NAME`], so `true` settles
/// it and `false` leaves the answer to the table. 8 to 16 bytes are read as two
/// overlapping 8-byte words; 4 to 7 bytes as two overlapping 4-byte words, each doubled
/// so every byte of the word is one of `bytes`.
/// Each word is classified 8 bytes at a time without a branch (`plain_word`); other
/// lengths answer `false`. The naive oracle is the table walk ([`all_in`]).
#[inline(always)]
pub(crate) fn plain_host(bytes: &[u8]) -> bool {
    let n = bytes.len();
    let (first, last) = match n {
        8..=16 => (u64_at(bytes, 0), u64_at(bytes, n - 8)),
        4..=7 => (u32_twice(bytes, 0), u32_twice(bytes, n - 4)),
        _ => return false,
    };
    plain_word(first) & plain_word(last) == HIGHS
}

#[inline(always)]
fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(word(bytes, at))
}

#[inline(always)]
fn u32_twice(bytes: &[u8], at: usize) -> u64 {
    let w = u64::from(u32::from_le_bytes(word(bytes, at)));
    w | (w << 32)
}

/// High bit set in the bytes of `w` that are an ASCII letter, digit, "-" or ".".
/// For a byte `x < 0x80`, `x + (0x80 - c)` has its high bit set iff `x >= c`, and
/// `x + (0x7F - c)` iff `x > c`, without a carry into the next byte; a byte >= 0x80 may
/// carry into its neighbour, but `!w` clears its own bit, so the word cannot pass.
#[inline(always)]
fn plain_word(w: u64) -> u64 {
    let within = |x: u64, first: u8, last: u8| {
        let at_least = x.wrapping_add(ONES * u64::from(0x80 - first));
        let above = x.wrapping_add(ONES * u64::from(0x7f - last));
        at_least & !above
    };
    // OR 0x20 folds "A".."Z" onto "a".."z" and moves nothing else into that range.
    let letter = within(w | (ONES * 0x20), b'a', b'z');
    (letter | within(w, b'0', b'9') | within(w, b'-', b'.')) & !w & HIGHS
}

/// Offset of the first byte at or after `at` that is not in [`TARGET`] (normally the SP
/// before the version), of the first "?" before it (the same offset when there is
/// none), and whether the part before that "?" is plain (see [`path_end`]); `None` when
/// the buffer ends first.
#[inline(always)]
pub(crate) fn target_end(buf: &[u8], at: usize) -> Option<(usize, usize, bool)> {
    let (path_end, plain) = path_end(buf, at)?;
    if buf[path_end] != b'?' {
        return Some((path_end, path_end, plain));
    }
    Some((query_end(buf, path_end + 1)?, path_end, plain))
}

/// Offset of the first byte at or after `at` that is not in [`super::tables::PATH`],
/// and whether the bytes before it are plain: no "%", no "//" and no "/." (a path that
/// needs neither decoding nor dot-segment removal, `path.rs`'s `is_normal`). The scan
/// stops at each "/" and "%" to note this, so the path is not read a second time.
#[inline(always)]
fn path_end(buf: &[u8], mut at: usize) -> Option<(usize, bool)> {
    let mut plain = true;
    loop {
        at = class_end(buf, at, &PATH_PLAIN)?;
        match buf[at] {
            b'/' => {
                if let b'/' | b'.' = *buf.get(at + 1)? {
                    plain = false;
                }
            }
            b'%' => plain = false,
            _ => return Some((at, plain)),
        }
        at += 1;
    }
}

/// The rest of a target after its "?", kept out of line: queries are rare in the hot
/// path and inlining a second table walk slows the field loop.
#[inline(never)]
fn query_end(buf: &[u8], at: usize) -> Option<usize> {
    class_end(buf, at, &TARGET)
}

/// Offset of the first byte at or after `at` that is not a `tchar` (normally the colon
/// after a field name), or `None` when the buffer ends first. (An SSE2 step that skips
/// letters, digits and "-" first was measured slower on the bench inputs: names are
/// short and the table walk then still has to look at the colon.)
#[inline]
pub(crate) fn token_end(buf: &[u8], at: usize) -> Option<usize> {
    class_end(buf, at, &TOKEN)
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

/// `name | 0x20 == lower` for every byte, for two slices of the same length >= 4 (the
/// caller checks both), compared 8 (or 4) bytes at a time with overlapping words at the
/// end. Equal to `eq_ignore_ascii_case` when `lower` holds only lowercase letters,
/// digits and "-" and `name` no control byte (a field name or value): `b | 0x20` is such
/// a byte only for that byte itself, its uppercase letter, or a control byte.
#[inline(always)]
pub(crate) fn folded_eq(name: &[u8], lower: &[u8]) -> bool {
    // The length of `lower` (a literal at every call) rather than of `name`: once
    // inlined the offsets are constants, so a 4-byte name is one compare, not two.
    let n = lower.len();
    if n < 8 {
        let w = |s: &[u8], at: usize| u32::from_le_bytes(word::<4>(s, at));
        return (w(name, 0) | 0x2020_2020) == w(lower, 0)
            && (w(name, n - 4) | 0x2020_2020) == w(lower, n - 4);
    }
    let w = |s: &[u8], at: usize| u64::from_le_bytes(word::<8>(s, at));
    let same = |at| (w(name, at) | 0x2020_2020_2020_2020) == w(lower, at);
    let mut at = 0;
    while at + 8 < n {
        if !same(at) {
            return false;
        }
        at += 8;
    }
    same(n - 8)
}

/// The `N` bytes of `s` at `at` (zeros if `s` is too short, which callers rule out).
#[inline(always)]
pub(crate) fn word<const N: usize>(s: &[u8], at: usize) -> [u8; N] {
    s.get(at..at + N)
        .and_then(|b| b.try_into().ok())
        .unwrap_or([0; N])
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

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sse2_and_swar_skip_the_same_bytes() {
        let mut s = 0x51_7cc1_b727_220a;
        let specials = [0u8, b'\t', b'\r', 0x1f, 0x20, 0x7e, 0x7f, 0x80, 0xff];
        for _ in 0..20_000 {
            let len = (next(&mut s) % 48) as usize;
            let mut buf = [b'x'; 48];
            for b in buf.iter_mut().take(len) {
                let r = next(&mut s);
                *b = if r % 16 == 0 {
                    specials[(r >> 8) as usize % specials.len()]
                } else {
                    b'a'
                };
            }
            let at = (next(&mut s) as usize) % (len + 1);
            let flagged = |b: u8| b < 0x20 || b == 0x7f;
            for got in [
                skip_plain_sse2(&buf[..len], at),
                skip_plain_swar(&buf[..len], at),
            ] {
                // Everything skipped is plain; the stop is a flagged byte or a short tail.
                assert!(got >= at && got <= len);
                assert!(
                    !buf[at..got].iter().any(|&b| flagged(b)),
                    "{:?} at {at}: {got}",
                    &buf[..len]
                );
                assert!(
                    got == len || flagged(buf[got]) || got + 8 > len,
                    "{:?} at {at}: {got}",
                    &buf[..len]
                );
            }
        }
    }

    #[test]
    fn token_end_agrees_with_the_byte_loop() {
        let mut s = 0x7a3c_91d4_0be8_5f21;
        let alphabet = b"aZ09-_.!~:; \t\r\x00\x7f\x80\xff@`{";
        for _ in 0..50_000 {
            let len = (next(&mut s) % 40) as usize;
            let mut buf = [b'a'; 40];
            for b in buf.iter_mut().take(len) {
                let r = next(&mut s);
                *b = if r % 6 == 0 {
                    alphabet[(r >> 8) as usize % alphabet.len()]
                } else {
                    b"Ab-9"[(r >> 16) as usize % 4]
                };
            }
            let at = (next(&mut s) as usize) % (len + 1);
            let naive = buf[..len]
                .iter()
                .skip(at)
                .position(|&b| !TOKEN[b as usize])
                .map(|i| at + i);
            assert_eq!(
                token_end(&buf[..len], at),
                naive,
                "{:?} at {at}",
                &buf[..len]
            );
        }
    }

    /// `plain_host` never says yes where the table says no, and says yes for every run
    /// of letters, digits, "-" and "." of 4 to 16 bytes.
    #[test]
    fn plain_host_agrees_with_the_table() {
        let mut s = 0x3c6e_f372_fe94_f82b;
        let alphabet = b"aZz09-.:/_~@[]\x00\t\x7f\x80\xff`{ ,%AM";
        for _ in 0..50_000 {
            let len = (next(&mut s) % 40) as usize;
            let mut buf = [b'a'; 40];
            // Every fourth host is plain but for one byte at most, so long plain runs
            // (and a single bad byte in any word of them) are covered too.
            let mostly_plain = next(&mut s) % 4 == 0;
            for b in buf.iter_mut().take(len) {
                let r = next(&mut s);
                *b = if mostly_plain {
                    b"aZz09-.AM"[(r >> 16) as usize % 9]
                } else if r % 5 == 0 {
                    (r >> 8) as u8
                } else {
                    alphabet[(r >> 16) as usize % alphabet.len()]
                };
            }
            if mostly_plain && len > 0 && next(&mut s) % 2 == 0 {
                let r = next(&mut s);
                buf[(r as usize) % len] = alphabet[(r >> 16) as usize % alphabet.len()];
            }
            let host = &buf[..len];
            let plain = host
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
            assert_eq!(
                plain_host(host),
                plain && (4..=16).contains(&len),
                "{host:?}"
            );
            if plain_host(host) {
                assert!(all_in(host, &crate::http::tables::REG_NAME), "{host:?}");
            }
        }
    }

    #[test]
    fn bytes_equal_is_exact_per_byte() {
        let mut s = 0x0123_4567_89ab_cdef;
        for _ in 0..20_000 {
            let w = next(&mut s);
            let c = (next(&mut s) >> 3) as u8;
            let w = if c % 3 == 0 {
                w & !0xff00 | u64::from(c) << 8
            } else {
                w
            };
            let want = w
                .to_le_bytes()
                .iter()
                .enumerate()
                .fold(0, |m, (i, &b)| m | (u64::from(b == c) << (8 * i + 7)));
            assert_eq!(bytes_equal(w, c), want, "{w:#x} {c:#x}");
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
            let naive_q = naive.map(|n| buf[..n].iter().position(|&b| b == b'?').unwrap_or(n));
            let plain = |path: &[u8]| {
                !path.contains(&b'%')
                    && !path
                        .windows(2)
                        .any(|p| p[0] == b'/' && (p[1] == b'/' || p[1] == b'.'))
            };
            let want = naive.zip(naive_q).map(|(n, q)| (n, q, plain(&buf[..q])));
            assert_eq!(target_end(&buf[..len], 0), want, "{:?}", &buf[..len]);
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
