//! Fuzz target `file_answer`: any bytes as the field values a file's answer reads
//! (`Range`, `If-Range`, `If-Match`, `If-None-Match`, `If-Modified-Since`,
//! `If-Unmodified-Since`, `Accept-Encoding` lines) against any file length and mtime.
//!
//! Never panics. A 206 range lies inside the file; a date that parses, printed as an
//! IMF-fixdate, parses back to the same time; a chosen coding is one the file has and the
//! operator listed; `If-None-Match: *` always means 304 and `If-Match: *` never means 412.
//! These are the helpers `conn::file` calls (`http::{range, conditional, date,
//! encoding}`); the request parser's own target is `parse_request`.
//!
//! Input layout: 8 bytes of length, 8 of mtime, one byte of usable sidecars and one of
//! `--precompressed` order, then the values separated by NUL (a byte the parser refuses
//! in a field value, so no value it passes on is lost; obs-text 0x80-0xFF is kept).

use steerd::http::conditional::{none_match_hits, not_modified, precondition_fails};
use steerd::http::date::{format_imf, parse_http_date};
use steerd::http::encoding::{AcceptEncoding, Choice, Coding, CodingSet, Precompressed};
use steerd::http::range::{evaluate, if_range_holds, RangeAnswer};

const ORDERS: [&str; 6] = ["br,zstd,gzip", "gzip", "zstd,br", "off", "gzip,br", "br"];
const ETAG: &[u8] = b"\"6b0e9803.2b495cf-d\"";

fn word(data: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    if let Some(b) = data.get(at..at + 8) {
        w.copy_from_slice(b);
    }
    u64::from_le_bytes(w)
}

fn check_range(value: &[u8], len: u64) {
    match evaluate(value, len) {
        RangeAnswer::Partial { first, last } => {
            assert!(first <= last && last < len, "{first}-{last} of {len}");
        }
        RangeAnswer::Full | RangeAnswer::Unsatisfiable => {}
    }
}

fn check_date(value: &[u8]) {
    if let Some(t) = parse_http_date(value) {
        assert_eq!(parse_http_date(&format_imf(t)), Some(t), "{t}");
    }
}

fn check_encoding(lines: &[&[u8]], sidecars: u8, order: u8) {
    let mut usable = CodingSet::EMPTY;
    for (i, c) in Coding::ALL.iter().enumerate() {
        if sidecars & 1 << i != 0 {
            usable = usable.with(*c);
        }
    }
    let order = Precompressed::parse(ORDERS[usize::from(order) % ORDERS.len()]).unwrap();
    let mut accepted = AcceptEncoding::default();
    for line in lines {
        accepted.add(line);
    }
    if let Choice::Coded(c) = accepted.choose(&order, usable) {
        assert!(usable.contains(c) && order.iter().any(|o| o == c), "{c:?}");
    }
}

/// The properties above, for one input (the fuzz target and tests/code/fuzz_seeds.rs call it).
pub(super) fn holds(data: &[u8]) {
    let len = word(data, 0);
    let mtime = Some(word(data, 8) as i64);
    let etag = Some(ETAG);
    let (sidecars, order) = (data.get(16).copied(), data.get(17).copied());
    let rest = data.get(18..).unwrap_or_default();
    let values: Vec<&[u8]> = rest.split(|&b| b == 0).collect();
    let value = |i: usize| values.get(i).copied().unwrap_or_default();
    check_range(value(0), len);
    check_range(value(0), len % 4096);
    let _ = if_range_holds(value(1), etag, mtime);
    for i in 1..values.len().min(7) {
        check_date(value(i));
    }
    let _ = precondition_fails(Some(value(2)), Some(value(5)), etag, mtime);
    let _ = not_modified(Some(value(3)), Some(value(4)), etag, mtime);
    let _ = none_match_hits(value(3), etag);
    assert!(not_modified(Some(b"*"), Some(value(4)), etag, mtime));
    assert!(!precondition_fails(Some(b"*"), Some(value(5)), etag, mtime));
    // No tag yet and no known date: only `*` matches, and no date field decides.
    assert!(!not_modified(None, Some(value(4)), None, None));
    assert!(!precondition_fails(None, Some(value(5)), None, None));
    assert!(!if_range_holds(value(1), None, None));
    let lines = values.get(6..).unwrap_or_default();
    check_encoding(lines, sidecars.unwrap_or(0), order.unwrap_or(0));
}
