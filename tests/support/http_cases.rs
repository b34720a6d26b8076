//! Shared by the parser tests (`http::`, `alloc::http`, `vm::same_everywhere`): the
//! vector file format, and one function that runs a parse and renders its outcome as the
//! same text the vector file states.
//!
//! A vector line is `EXPECT :: INPUT`. INPUT is the request bytes with `\r`, `\n`, `\t`,
//! `\\` and `\xHH` escapes. EXPECT is `partial`, `<status> close|keep <ErrorKind>`, or
//! `ok` followed by `key=value` facts that must all hold (see `describe`).
#![allow(dead_code)]

use steerd::http::{parse_request, Body, Fields, ParseError, Request, Status, MAX_FIELDS};

/// One line of a vector file.
pub(crate) struct Case {
    pub line: usize,
    pub expect: String,
    pub input: Vec<u8>,
}

impl Case {
    pub(crate) fn is_ok(&self) -> bool {
        self.expect.starts_with("ok")
    }
}

pub(crate) fn load(name: &str) -> Vec<Case> {
    let path = format!("{}/tests/data/http/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut cases = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let (expect, input) = line
            .split_once(" ::")
            .unwrap_or_else(|| panic!("{path}:{}: no ' ::'", i + 1));
        let input = input.strip_prefix(' ').unwrap_or(input);
        cases.push(Case {
            line: i + 1,
            expect: expect.trim().to_string(),
            input: unescape(input),
        });
    }
    cases
}

pub(crate) fn all_cases() -> Vec<Case> {
    let mut all = load("requests.txt");
    all.extend(load("smuggling.txt"));
    all
}

fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        match b.get(i + 1) {
            Some(b'r') => out.push(b'\r'),
            Some(b'n') => out.push(b'\n'),
            Some(b't') => out.push(b'\t'),
            Some(b'\\') => out.push(b'\\'),
            Some(b'x') => {
                let hex = std::str::from_utf8(&b[i + 2..i + 4]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 2;
            }
            other => panic!("bad escape {other:?} in {s}"),
        }
        i += 2;
    }
    out
}

/// Parses `buf` with full-size slots and path buffer and renders the outcome.
pub(crate) fn outcome(buf: &[u8]) -> String {
    let mut slots = Fields::<MAX_FIELDS>::new();
    let mut path = [0u8; 8192];
    render(parse_request(buf, &mut slots, &mut path))
}

pub(crate) fn render(result: Result<Status<Request<'_, '_>>, ParseError>) -> String {
    match result {
        Ok(Status::Partial) => "partial".to_string(),
        Ok(Status::Complete(r)) => describe(&r),
        Err(e) => format!(
            "{} {} {:?}",
            e.status(),
            if e.must_close() { "close" } else { "keep" },
            e.kind()
        ),
    }
}

fn text(b: &[u8]) -> String {
    let mut s = String::new();
    for &c in b {
        match c {
            b'\\' => s.push_str("\\\\"),
            0x21..=0x7e => s.push(c as char),
            _ => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    s
}

fn opt(b: Option<&[u8]>) -> String {
    b.map_or("-".to_string(), text)
}

/// Every fact about a request, as `key=value` words; a vector names the ones it checks.
pub(crate) fn describe(r: &Request<'_, '_>) -> String {
    let body = match r.body {
        Body::None => "none".to_string(),
        Body::Length(n) => format!("len:{n}"),
        Body::Chunked => "chunked".to_string(),
    };
    format!(
        "ok method={} path={} query={} minor={} keep={} body={} expect={} host={} range={} inm={} ims={} ifrange={} im={} ius={} fields={} len={}",
        r.method.as_str(),
        text(r.path),
        opt(r.query()),
        r.minor,
        u8::from(r.keep_alive),
        body,
        u8::from(r.expect_continue),
        opt(r.host()),
        opt(r.range()),
        opt(r.if_none_match()),
        opt(r.if_modified_since()),
        opt(r.if_range()),
        opt(r.if_match()),
        opt(r.if_unmodified_since()),
        r.fields,
        r.head_len
    )
}

/// Whether an outcome satisfies a vector's EXPECT: same words for errors; for `ok`,
/// every stated `key=value` is among the outcome's facts.
pub(crate) fn satisfies(outcome: &str, expect: &str) -> bool {
    if !expect.starts_with("ok") {
        return outcome == expect;
    }
    outcome.starts_with("ok")
        && expect
            .split_whitespace()
            .skip(1)
            .all(|fact| outcome.split_whitespace().any(|f| f == fact))
}
