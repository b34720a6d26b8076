//! Fuzz target `rules`: any bytes as a `--redirect` or `--rewrite` rule (the first line;
//! the first byte's low bit picks which) and a request path with its query (the rest).
//!
//! Never panics, never writes past its buffer. A rule that parses either matches the
//! path or not; when it does, its target is written whole into a buffer four times the
//! longest the rule and path can make (TO may name a capture any number of times), and: a redirect's target is visible ASCII only
//! (no CR, LF, NUL, space or byte over 0x7e: nothing that could end or split a
//! `Location` line), beginning with `/` or `http`; a rewrite's target begins with `/` and
//! holds every byte the rule wrote, no query. A buffer too small gives `None`, never a
//! cut target.

use steerd::site::rules::{Action, Captures, Rule};

/// The properties above, for one input (the fuzz target and tests/code/fuzz_seeds.rs call it).
pub(super) fn holds(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let (rule, request) = match memchr_newline(rest) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &b""[..]),
    };
    let Ok(text) = core::str::from_utf8(rule) else {
        return;
    };
    let Ok(rule) = Rule::parse(text, first & 1 == 1, "fuzz") else {
        return;
    };
    let (path, query) = match request.iter().position(|&b| b == b'?') {
        Some(q) => (&request[..q], Some(&request[q + 1..])),
        None => (request, None),
    };
    let mut caps = Captures::default();
    if !rule.matches(path, &mut caps) {
        return;
    }
    // Every `$N` of TO (two bytes of the rule at least) may stand for the whole path,
    // percent-encoded (three bytes a byte), as often as TO repeats it; the query follows.
    let room = 4 * (text.len() * (3 * path.len() + 3) + 3 * request.len()) + 16;
    let mut out = vec![0u8; room];
    let n = rule
        .write_target(path, &caps, query, &mut out)
        .expect("the target fits a buffer this large");
    let target = &out[..n];
    match rule.action {
        Action::Redirect(code) => {
            assert!([301, 302, 303, 307, 308].contains(&code));
            assert!(
                target.iter().all(|&b| (0x21..=0x7e).contains(&b)),
                "{target:?}"
            );
            assert!(target.starts_with(b"/") || target.starts_with(b"http"));
        }
        Action::Rewrite => assert!(target.starts_with(b"/"), "{target:?}"),
        // Rule::parse makes no proxy rule (`--proxy` has its own parser).
        Action::Proxy => unreachable!("a proxy rule from Rule::parse"),
    }
    if n > 0 {
        let mut small = vec![0u8; n - 1];
        assert_eq!(rule.write_target(path, &caps, query, &mut small), None);
    }
}

fn memchr_newline(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}
