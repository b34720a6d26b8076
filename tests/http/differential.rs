//! Differential test: steerd's token-level parser (`parse_head`) against httparse on
//! random and mutated requests. Wherever both accept, both must extract the same method,
//! target, version, fields and head length. Wherever one accepts and the other does not,
//! the reason must be one of the intended strictness differences listed in
//! `docs/parser.md` ("Differences from httparse"), checked here by `explain`.

use crate::support::http_cases;

use steerd::http::{parse_head, ErrorKind, Fields, Status, MAX_FIELDS};

/// Deterministic xorshift64*, so every failure reproduces from the printed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a [u8]]) -> &'a [u8] {
        items[self.below(items.len())]
    }
}

const METHODS: &[&[u8]] = &[
    b"GET",
    b"HEAD",
    b"POST",
    b"FOO",
    b"M-SEARCH",
    b"get",
    b"G.T",
];
const TARGET_BYTES: &[u8] = b"/abz09-._~%?=&;:@!$'()*+,\"<>{}|\\^`#[] \x7f\x80\xc3\xa9";
const NAMES: &[&[u8]] = &[
    b"Host",
    b"Content-Length",
    b"X-A",
    b"accept",
    b"!#$%&'*+-.^_`|~",
    b"Bad Name",
    b"Bad:",
    b"\xa0x",
];
const VALUE_BYTES: &[u8] = b"abc XYZ 019\t,;=\"()/:\x80\xff\x00\x01\x7f\r\n ";
const VERSIONS: &[&[u8]] = &[
    b"HTTP/1.1",
    b"HTTP/1.0",
    b"HTTP/1.2",
    b"HTTP/2.0",
    b"HTTP/1.10",
    b"http/1.1",
    b"HTTP/1.",
];
/// Line ends: mostly CRLF, sometimes bare LF or bare CR.
fn eol(rng: &mut Rng) -> &'static [u8] {
    [&b"\n"[..], b"\r"]
        .get(rng.below(40))
        .copied()
        .unwrap_or(b"\r\n")
}

fn random_request(rng: &mut Rng) -> Vec<u8> {
    let mut r = Vec::new();
    if rng.below(10) == 0 {
        r.extend_from_slice(eol(rng));
    }
    r.extend_from_slice(rng.pick(METHODS));
    r.extend_from_slice(if rng.below(20) == 0 { b"  " } else { b" " });
    r.push(b'/');
    let clean = rng.below(3) != 0;
    for _ in 0..rng.below(20) {
        let b = TARGET_BYTES[rng.below(if clean { 26 } else { TARGET_BYTES.len() })];
        r.push(b);
    }
    r.push(b' ');
    r.extend_from_slice(if rng.below(4) == 0 {
        rng.pick(VERSIONS)
    } else {
        b"HTTP/1.1"
    });
    r.extend_from_slice(eol(rng));
    for _ in 0..rng.below(6) {
        r.extend_from_slice(if rng.below(4) == 0 {
            rng.pick(NAMES)
        } else {
            b"X-Field"
        });
        r.extend_from_slice(if rng.below(10) == 0 { b" :" } else { b":" });
        if rng.below(2) == 0 {
            r.push(b' ');
        }
        let clean = rng.below(3) != 0;
        for _ in 0..rng.below(40) {
            r.push(VALUE_BYTES[rng.below(if clean { 20 } else { VALUE_BYTES.len() })]);
        }
        r.extend_from_slice(eol(rng));
    }
    r.extend_from_slice(eol(rng));
    r
}

fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut m = input.to_vec();
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(m.len() + 1);
        let byte = [b' ', b'\t', b'\r', b'\n', b':', 0, 0x7f, 0x80, b'a', b'/'][rng.below(10)];
        match rng.below(3) {
            0 if at < m.len() => m[at] = byte,
            1 => m.insert(at, byte),
            _ if at < m.len() => {
                m.remove(at);
            }
            _ => {}
        }
    }
    m
}

/// What a parser made of an input, in comparable form.
#[derive(Debug, PartialEq)]
enum Seen {
    Complete {
        method: Vec<u8>,
        target: Vec<u8>,
        minor: u8,
        fields: Vec<(Vec<u8>, Vec<u8>)>,
        len: usize,
    },
    Partial,
    Error(String),
}

fn steerd(input: &[u8]) -> (Seen, Option<ErrorKind>) {
    let mut slots = Fields::<MAX_FIELDS>::new();
    match parse_head(input, &mut slots) {
        Ok(Status::Complete(h)) => {
            let fields = slots[..h.fields]
                .iter()
                .map(|f| (f.name.to_vec(), f.value.to_vec()))
                .collect();
            let seen = Seen::Complete {
                method: h.method.to_vec(),
                target: h.target.to_vec(),
                minor: h.minor,
                fields,
                len: h.len,
            };
            (seen, None)
        }
        Ok(Status::Partial) => (Seen::Partial, None),
        Err(kind) => (Seen::Error(format!("{kind:?}")), Some(kind)),
    }
}

fn httparse(input: &[u8]) -> Seen {
    let mut slots = [httparse::EMPTY_HEADER; MAX_FIELDS];
    let mut req = httparse::Request::new(&mut slots);
    match req.parse(input) {
        Ok(httparse::Status::Complete(len)) => Seen::Complete {
            method: req.method.unwrap_or_default().as_bytes().to_vec(),
            target: req.path.unwrap_or_default().as_bytes().to_vec(),
            minor: req.version.unwrap_or(9),
            fields: req
                .headers
                .iter()
                .map(|h| (h.name.as_bytes().to_vec(), h.value.to_vec()))
                .collect(),
            len,
        },
        Ok(httparse::Status::Partial) => Seen::Partial,
        Err(e) => Seen::Error(format!("{e:?}")),
    }
}

fn has_bare_line_end(input: &[u8]) -> bool {
    input.iter().enumerate().any(|(i, &b)| match b {
        b'\n' => i == 0 || input[i - 1] != b'\r',
        b'\r' => input.get(i + 1).is_some_and(|&n| n != b'\n'),
        _ => false,
    })
}

fn has_minor_above_1(input: &[u8]) -> bool {
    input
        .windows(8)
        .any(|w| w.starts_with(b"HTTP/1.") && w[7].is_ascii_digit() && w[7] >= b'2')
}

/// Why steerd and httparse may legitimately disagree on `input`, or `None`.
fn explain(
    input: &[u8],
    ours: &Seen,
    kind: Option<ErrorKind>,
    theirs: &Seen,
) -> Option<&'static str> {
    match (ours, kind, theirs) {
        // RFC 9112 §2.2: strict profile, CRLF only; httparse accepts bare LF.
        (_, Some(ErrorKind::BareLineEnd), _) if has_bare_line_end(input) => {
            Some("bare LF/CR refused")
        }
        // RFC 3986: raw `"<>\^`{|}`, `#`, DEL and non-ASCII are refused in the target.
        (_, Some(ErrorKind::BadTarget), _) => Some("strict target bytes"),
        // RFC 9110 §6.2: HTTP/1.2..1.9 is 1.x; httparse knows only 1.0 and 1.1.
        (Seen::Complete { minor, .. }, None, Seen::Error(e)) if *minor >= 2 && e == "Version" => {
            Some("HTTP/1.x, x >= 2")
        }
        (Seen::Partial, None, Seen::Error(e)) if e == "Version" && has_minor_above_1(input) => {
            Some("HTTP/1.x, x >= 2")
        }
        // RFC 9112 §3 / RFC 9110 §9.1: a method longer than 32 bytes is not one we know.
        (_, Some(ErrorKind::UnknownMethod), _) => Some("method longer than 32 bytes"),
        // Both refuse, for their own reasons, or steerd knows sooner that it must refuse.
        (Seen::Error(_), _, Seen::Error(_) | Seen::Partial) => Some("both refuse"),
        // HTTP/0.9 and other errors httparse only sees as "need more bytes"?
        _ => None,
    }
}

/// Compares one input; returns true when both parsers accepted it (and agreed).
fn compare(input: &[u8], failures: &mut Vec<String>) -> bool {
    let (ours, kind) = steerd(input);
    let theirs = httparse(input);
    if ours == theirs {
        return matches!(ours, Seen::Complete { .. });
    }
    if explain(input, &ours, kind, &theirs).is_some() {
        return false;
    }
    if failures.len() < 20 {
        failures.push(format!(
            "{:?}\n  steerd:   {ours:?}\n  httparse: {theirs:?}",
            String::from_utf8_lossy(input)
        ));
    }
    false
}

#[test]
fn agrees_with_httparse_on_random_requests() {
    let mut rng = Rng(0x5eed_0f57_ee4d);
    let mut failures = Vec::new();
    let mut both_accept = 0;
    for _ in 0..100_000 {
        both_accept += usize::from(compare(&random_request(&mut rng), &mut failures));
    }
    assert!(
        failures.is_empty(),
        "{} disagreements:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The generator must reach the interesting case often enough to mean something.
    assert!(
        both_accept > 10_000,
        "only {both_accept} requests accepted by both"
    );
}

#[test]
fn agrees_with_httparse_on_mutated_vectors() {
    let mut rng = Rng(0x0d1f_fe4e_71a1_5eed);
    let mut failures = Vec::new();
    let mut both_accept = 0;
    for case in http_cases::all_cases() {
        both_accept += usize::from(compare(&case.input, &mut failures));
        for _ in 0..200 {
            both_accept += usize::from(compare(&mutate(&mut rng, &case.input), &mut failures));
        }
    }
    assert!(
        failures.is_empty(),
        "{} disagreements:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        both_accept > 5_000,
        "only {both_accept} inputs accepted by both"
    );
}
