//! Request path: percent-decoding, then dot-segment removal, into a caller buffer.
//!
//! Input: the path part of an origin-form target (starts with "/", no "?", every byte
//! already in the RFC 3986 class) and an output buffer at least as long. Output: the
//! decoded, normalised path in the buffer, or the [`ErrorKind`] to answer with 400.
//!
//! Order matters for safety: the path is decoded exactly once, *then* normalised, so
//! `%2e%2e` is a `..` segment and `%2f` is a "/" separator (as lighttpd's default does),
//! and neither can smuggle a climb past normalisation (CVE-2021-41773/42013). Nothing
//! decodes the result again: `%252e` stays the three bytes `%2e`.
//!
//! Rules: `%` must be followed by two hex digits; an escape that decodes to NUL, another
//! control byte or DEL is refused. Dot segments are removed per RFC 3986 §5.2.4; a `..`
//! that would climb above the root is refused, not clamped. Empty segments are merged
//! (`//` is `/`, as nginx's `merge_slashes on`). A trailing "/" (or a final `.`/`..`)
//! leaves the result ending in "/", which the file layer needs for the directory
//! redirect. This module does not look at the filesystem.

use super::error::ErrorKind;
use super::scan::{bytes_equal, word};

/// The decoded, normalised form of `raw`: `raw` itself when it is already normal (no
/// copy), else decoded and normalised into `out`. `out` shorter than `raw` gives
/// `TargetTooLong`.
#[inline(always)]
#[cfg(test)]
pub(crate) fn normalize<'a>(raw: &'a [u8], out: &'a mut [u8]) -> Result<&'a [u8], ErrorKind> {
    if out.len() < raw.len() {
        return Err(ErrorKind::TargetTooLong);
    }
    if raw.first() != Some(&b'/') {
        return rewrite(raw, out);
    }
    normalize_rooted(raw, out)
}

/// [`normalize`] for a caller that has checked that `raw` starts with "/" and that
/// `out` is at least as long.
#[inline(always)]
pub(crate) fn normalize_rooted<'a>(
    raw: &'a [u8],
    out: &'a mut [u8],
) -> Result<&'a [u8], ErrorKind> {
    if is_normal(raw) {
        return Ok(raw);
    }
    rewrite(raw, out)
}

/// The slow path of [`normalize`]: decode, then remove dot segments, in `out`.
#[inline(never)]
fn rewrite<'a>(raw: &[u8], out: &'a mut [u8]) -> Result<&'a [u8], ErrorKind> {
    let decoded = decode(raw, out)?;
    let n = remove_dot_segments(out, decoded)?;
    Ok(&out[..n])
}

/// Fast path: a path (starting with "/") without "%", "//" or "/." is already decoded
/// and normal (it has no empty, `.` or `..` segment), so it is used as is. Checked 8
/// bytes at a time: the "/" flags shifted up one byte meet the "/" or "." flags of the
/// next. The last word overlaps the one before it (the pairs it shares were checked
/// there); a path shorter than a word goes one byte at a time. The naive oracle is
/// [`rewrite`]: a path called normal comes back from it unchanged (tested below).
#[inline(always)]
fn is_normal(raw: &[u8]) -> bool {
    if raw.len() < 8 {
        return is_normal_short(raw);
    }
    is_normal_long(raw)
}

/// [`is_normal`] for 8 bytes or more. Out of line: inlined into the parser its
/// constants do not stay in registers (a word cost 47 instructions there, 20 here).
#[inline(never)]
fn is_normal_long(raw: &[u8]) -> bool {
    let n = raw.len();
    let mut at = 0;
    let mut slash_before = 0;
    loop {
        if at + 8 > n {
            // The pair of bytes n - 9 and n - 8 lay inside the word before.
            at = n - 8;
            slash_before = 0;
        }
        let w = u64::from_le_bytes(word(raw, at));
        let slash = bytes_equal(w, b'/');
        let after_slash = (slash << 8) | slash_before;
        if bytes_equal(w, b'%') | (after_slash & (slash | bytes_equal(w, b'.'))) != 0 {
            return false;
        }
        if at + 8 >= n {
            return true;
        }
        slash_before = slash >> 56;
        at += 8;
    }
}

/// [`is_normal`] for fewer than 8 bytes, one at a time.
#[inline(always)]
fn is_normal_short(raw: &[u8]) -> bool {
    let (mut prev_slash, tail) = match raw {
        // The leading "/" needs no check of its own.
        [b'/', tail @ ..] => (true, tail),
        _ => (false, raw),
    };
    for &b in tail {
        if b == b'%' || (prev_slash && (b == b'/' || b == b'.')) {
            return false;
        }
        prev_slash = b == b'/';
    }
    true
}

/// Percent-decodes `raw` into `out` (long enough); returns the decoded length.
fn decode(raw: &[u8], out: &mut [u8]) -> Result<usize, ErrorKind> {
    let Some(first) = memchr::memchr(b'%', raw) else {
        out[..raw.len()].copy_from_slice(raw);
        return Ok(raw.len());
    };
    out[..first].copy_from_slice(&raw[..first]);
    let (mut r, mut w) = (first, first);
    while let Some(&b) = raw.get(r) {
        if b == b'%' {
            let byte = match raw.get(r + 1..r + 3) {
                Some(&[hi, lo]) => hex(hi).zip(hex(lo)).map(|(h, l)| h << 4 | l),
                _ => None,
            };
            match byte {
                Some(d) if d >= 0x20 && d != 0x7f => out[w] = d,
                _ => return Err(ErrorKind::BadEscape),
            }
            r += 3;
        } else {
            out[w] = b;
            r += 1;
        }
        w += 1;
    }
    Ok(w)
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// RFC 3986 §5.2.4 on `buf[..len]` in place (the write end never passes the read end),
/// with empty segments merged and climbing above the root refused.
fn remove_dot_segments(buf: &mut [u8], len: usize) -> Result<usize, ErrorKind> {
    if len == 0 || buf[0] != b'/' {
        return Err(ErrorKind::BadTarget);
    }
    let (mut r, mut w) = (0, 0);
    let mut ends_in_slash = false;
    while r < len {
        let start = r + 1;
        let end = memchr::memchr(b'/', &buf[start..len]).map_or(len, |i| start + i);
        match &buf[start..end] {
            b"" | b"." => ends_in_slash = true,
            b".." => {
                if w == 0 {
                    return Err(ErrorKind::PathAboveRoot);
                }
                w = memchr::memrchr(b'/', &buf[..w]).unwrap_or(0);
                ends_in_slash = true;
            }
            _ => {
                buf[w] = b'/';
                buf.copy_within(start..end, w + 1);
                w += 1 + end - start;
                ends_in_slash = false;
            }
        }
        r = end;
    }
    if ends_in_slash || w == 0 {
        buf[w] = b'/';
        w += 1;
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One xorshift64 step: the tests' seeded source of paths.
    fn next(s: &mut u64) -> u64 {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        *s
    }

    fn norm(raw: &[u8]) -> Result<Vec<u8>, ErrorKind> {
        let mut out = [0u8; 64];
        normalize(raw, &mut out).map(<[u8]>::to_vec)
    }

    /// The fast path's oracle: a path `is_normal` lets through comes back from the
    /// full decode-and-normalise unchanged (the converse need not hold: `/.a` is normal
    /// but takes the slow path).
    #[test]
    fn normal_paths_survive_the_rewrite() {
        let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            next(&mut s);
            let len = 1 + (s % 24) as usize;
            let mut raw = [b'/'; 24];
            for (i, b) in raw.iter_mut().enumerate().take(len).skip(1) {
                *b = b"/a.%2e"[((s >> (2 * i)) % 6) as usize];
            }
            let raw = &raw[..len];
            if is_normal(raw) {
                let mut out = [0u8; 24];
                assert_eq!(rewrite(raw, &mut out), Ok(raw), "{raw:?}");
            }
        }
    }

    /// `is_normal` against its definition written out byte by byte: no "%", and no
    /// "/" followed by "/" or ".", for paths of every length around the word size.
    #[test]
    fn is_normal_agrees_with_the_byte_loop() {
        let mut s: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..50_000 {
            next(&mut s);
            let len = 1 + (s % 40) as usize;
            let mut raw = [b'a'; 40];
            raw[0] = b'/';
            for (i, b) in raw.iter_mut().enumerate().take(len).skip(1) {
                let r = s.rotate_left(5 * i as u32);
                if r % 4 == 0 {
                    *b = b"/./%"[(r >> 8) as usize % 4];
                }
            }
            let raw = &raw[..len];
            let naive = !raw.contains(&b'%')
                && !raw
                    .windows(2)
                    .any(|p| p[0] == b'/' && (p[1] == b'/' || p[1] == b'.'));
            assert_eq!(is_normal(raw), naive, "{}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn paths() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"/", b"/"),
            (b"/a/b", b"/a/b"),
            (b"/a/b/", b"/a/b/"),
            (b"/a//b", b"/a/b"),
            (b"/a/./b", b"/a/b"),
            (b"/a/b/..", b"/a/"),
            (b"/a/b/../c", b"/a/c"),
            (b"/a/.", b"/a/"),
            (b"/a/..", b"/"),
            (b"/.a/..b/...", b"/.a/..b/..."),
            (b"/%41%62", b"/Ab"),
            (b"/a%2fb", b"/a/b"),
            (b"/a/%2e%2E/b", b"/b"),
            (b"/%252e", b"/%2e"),
            (b"/%c3%a9", b"/\xc3\xa9"),
            (b"//", b"/"),
        ];
        for (raw, want) in cases {
            assert_eq!(
                norm(raw).as_deref(),
                Ok(*want),
                "{}",
                String::from_utf8_lossy(raw)
            );
        }
        let bad: &[(&[u8], ErrorKind)] = &[
            (b"/..", ErrorKind::PathAboveRoot),
            (b"/a/../..", ErrorKind::PathAboveRoot),
            (b"/%2e%2e/", ErrorKind::PathAboveRoot),
            (b"/..%2f", ErrorKind::PathAboveRoot),
            (b"/%00", ErrorKind::BadEscape),
            (b"/%0a", ErrorKind::BadEscape),
            (b"/%7f", ErrorKind::BadEscape),
            (b"/%zz", ErrorKind::BadEscape),
            (b"/%4", ErrorKind::BadEscape),
            (b"/%", ErrorKind::BadEscape),
            (b"/a%2", ErrorKind::BadEscape),
        ];
        for (raw, kind) in bad {
            assert_eq!(norm(raw), Err(*kind), "{}", String::from_utf8_lossy(raw));
        }
        assert_eq!(
            normalize(b"/abc", &mut [0u8; 3]),
            Err(ErrorKind::TargetTooLong)
        );
    }
}
