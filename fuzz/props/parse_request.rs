//! Fuzz target `parse_request`: any bytes as a received request head.
//!
//! Never panics, never reads past the input. Whatever the parser says is consistent:
//! an error maps to one of 400/414/431/501/505; a complete head is at most the input,
//! parses the same from exactly its own bytes, is seen by `find_head_end`, and its path
//! is normal (starts with "/", no empty, `.` or `..` segment, no control byte); every
//! prefix shorter than the head is `Partial`.

use steerd::http::{find_head_end, parse_request, Fields, Status, MAX_FIELDS};

/// The outcome as text, and the head length when complete.
fn parse(data: &[u8]) -> (String, Option<usize>) {
    let mut slots = Fields::<MAX_FIELDS>::new();
    let mut path = [0u8; 8192];
    match parse_request(data, &mut slots, &mut path) {
        Ok(Status::Partial) => ("partial".to_string(), None),
        Err(e) => {
            assert!(matches!(e.status(), 400 | 414 | 431 | 501 | 505), "{e:?}");
            (
                format!("{} {} {:?}", e.status(), e.must_close(), e.kind()),
                None,
            )
        }
        Ok(Status::Complete(r)) => {
            assert!(r.head_len <= data.len() && r.fields <= MAX_FIELDS);
            assert!(find_head_end(data, 0).is_some_and(|end| end <= r.head_len));
            if r.path.first() == Some(&b'/') {
                let segments = r.path[1..].split(|&b| b == b'/');
                let count = segments.clone().count();
                for (i, seg) in segments.enumerate() {
                    assert!(seg != b"." && seg != b"..", "{:?}", r.path);
                    assert!(!seg.is_empty() || i + 1 == count, "{:?}", r.path);
                }
                assert!(!r.path.iter().any(|&b| b < 0x20 || b == 0x7f));
            } else {
                assert!(r.path == b"*" || r.path.is_empty(), "{:?}", r.path);
            }
            (format!("{r:?}"), Some(r.head_len))
        }
    }
}

/// The properties above, for one input (the fuzz target and tests/code/fuzz_seeds.rs call it).
pub(super) fn holds(data: &[u8]) {
    let (whole, head_len) = parse(data);
    if let Some(head_len) = head_len {
        assert_eq!(parse(&data[..head_len]).0, whole);
        for cut in [head_len / 2, head_len - 1] {
            assert_eq!(parse(&data[..cut]).0, "partial");
        }
    }
}
