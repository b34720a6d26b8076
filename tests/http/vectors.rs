//! The request parser against its vector files (`tests/data/http/*.txt`), whole, split
//! at every byte, and placed against a guard page; plus the generated limit cases.

use crate::support;
use crate::support::http_cases;

use http_cases::{all_cases, outcome, render, satisfies};
use steerd::http::{find_head_end, parse_request, Fields, Status, MAX_FIELDS};
use support::guard::GuardedBuf;

#[test]
fn every_vector_gives_its_stated_outcome() {
    let mut failures = Vec::new();
    let cases = all_cases();
    for case in &cases {
        let got = outcome(&case.input);
        if !satisfies(&got, &case.expect) {
            failures.push(format!(
                "line {}: want {}\n         got  {}",
                case.line, case.expect, got
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} vectors failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert!(
        cases.len() > 200,
        "vector files went missing: {}",
        cases.len()
    );
}

/// Bytes arriving one split at a time: every prefix is `partial` or the final outcome,
/// and the final outcome appears exactly from the head's end on.
#[test]
fn every_split_parses_the_same() {
    for case in all_cases() {
        let full = outcome(&case.input);
        for k in 0..case.input.len() {
            let got = outcome(&case.input[..k]);
            assert!(
                got == "partial" || got == full,
                "line {} prefix {k}: {got} (full: {full})",
                case.line
            );
            if let Some(len) = head_len(&full) {
                assert_eq!(got == "partial", k < len, "line {} prefix {k}", case.line);
            }
        }
    }
}

fn head_len(outcome: &str) -> Option<usize> {
    outcome
        .split_whitespace()
        .find_map(|w| w.strip_prefix("len="))
        .map(|n| n.parse().unwrap())
}

/// The server's loop: read in pieces, ask `find_head_end` about the new bytes only, and
/// parse when it says so. Every piece size must reach the same outcome, except that a
/// bare HTTP/0.9 line (`GET /\r\n`, no blank line ever) waits for the server's timeout.
#[test]
fn head_end_finder_drives_the_parser_to_the_same_outcome() {
    for case in all_cases() {
        let full = outcome(&case.input);
        for step in [1, 2, 3, 7, 64] {
            let (mut len, mut scanned) = (0, 0);
            let mut got = "partial".to_string();
            while got == "partial" && len < case.input.len() {
                len = (len + step).min(case.input.len());
                if let Some(end) = find_head_end(&case.input[..len], scanned) {
                    assert!(end <= len);
                    got = outcome(&case.input[..len]);
                }
                scanned = len;
            }
            let waits = got == "partial" && (full == "partial" || full.ends_with("Http09"));
            assert!(
                got == full || waits,
                "line {} step {step}: {got} vs {full}",
                case.line
            );
        }
    }
}

/// picohttpparser's trick: each input (and each prefix) ends where a PROT_NONE page
/// begins, so reading one byte too far faults the test.
#[test]
fn no_read_past_the_end() {
    for case in all_cases() {
        for k in 0..=case.input.len() {
            let guarded = GuardedBuf::new(&case.input[..k]).expect("mmap guard page");
            assert_eq!(outcome(guarded.as_slice()), outcome(&case.input[..k]));
            let _ = find_head_end(guarded.as_slice(), 0);
        }
    }
}

fn request_with_target(target_len: usize) -> Vec<u8> {
    let mut req = b"GET /".to_vec();
    req.resize(4 + target_len, b'a');
    req.extend_from_slice(b" HTTP/1.1\r\nHost: a\r\n\r\n");
    req
}

#[test]
fn long_request_lines() {
    // RFC 9112 §3: at least 8000 octets of request line must be accepted.
    let req = request_with_target(8000);
    assert!(outcome(&req).starts_with("ok "), "{}", outcome(&req));
    assert!(outcome(&request_with_target(8192)).starts_with("ok "));
    assert_eq!(
        outcome(&request_with_target(8193)),
        "414 close TargetTooLong"
    );
    // Too long is known before the line ends: no need to wait for the rest.
    let req = request_with_target(20_000);
    assert_eq!(outcome(&req[..9000]), "414 close TargetTooLong");
    // A path buffer shorter than the path gives 414 too.
    let req = request_with_target(200);
    let mut slots = Fields::<4>::new();
    let mut small = [0u8; 100];
    let got = render(parse_request(&req, &mut slots, &mut small));
    assert_eq!(got, "414 close TargetTooLong");
}

fn request_with_fields(count: usize, value_len: usize) -> Vec<u8> {
    let mut req = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
    for i in 1..count {
        req.extend_from_slice(format!("X-{i}: {}\r\n", "v".repeat(value_len)).as_bytes());
    }
    req.extend_from_slice(b"\r\n");
    req
}

#[test]
fn field_count_and_head_size_limits() {
    assert!(outcome(&request_with_fields(100, 10)).contains(" fields=100 "));
    assert_eq!(
        outcome(&request_with_fields(101, 10)),
        "431 close TooManyFields"
    );
    // Fewer slots than fields: 431 as well, never a silent truncation.
    let req = request_with_fields(17, 1);
    let mut slots = Fields::<16>::new();
    let mut path = [0u8; 64];
    assert_eq!(
        render(parse_request(&req, &mut slots, &mut path)),
        "431 close TooManyFields"
    );
    // A head beyond 16 KiB: 431, complete or not.
    let big = request_with_fields(90, 200);
    assert!(big.len() > 16 * 1024);
    assert_eq!(outcome(&big), "431 close HeadTooLarge");
    assert_eq!(outcome(&big[..16 * 1024]), "431 close HeadTooLarge");
    assert_eq!(outcome(&big[..16 * 1024 - 1]), "partial");
}

#[test]
fn slots_hold_the_fields_in_order() {
    let req = b"GET / HTTP/1.1\r\nHost: a\r\nX-One: 1 \r\nx-two:\t2\r\n\r\n";
    let mut slots = Fields::<MAX_FIELDS>::new();
    let mut path = [0u8; 64];
    let Ok(Status::Complete(r)) = parse_request(req, &mut slots, &mut path) else {
        panic!("parse")
    };
    assert_eq!(r.fields, 3);
    let got: Vec<(&[u8], &[u8])> = slots[..3].iter().map(|h| (h.name, h.value)).collect();
    assert_eq!(
        got,
        [
            (&b"Host"[..], &b"a"[..]),
            (b"X-One", b"1"),
            (b"x-two", b"2")
        ]
    );
}
