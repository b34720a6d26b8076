//! Fuzz target `upstream_head`: any bytes as what an upstream sent first.
//!
//! Never panics, never reads past the input. Parsing is prefix-stable: a complete head
//! parses the same from exactly its own bytes and from any longer input, and every
//! shorter prefix of it is incomplete; an incomplete input stays incomplete when cut
//! shorter; an error stays the same error whatever follows. A parsed head has a status of
//! 100 to 599, no body when it answers HEAD, and `end_to_end` yields no hop-by-hop field,
//! no Content-Length, only lines of the head, in order.

use steerd::http::hop::is_hop_by_hop;
use steerd::http::upstream_head::{end_to_end, parse, RespFraming, MAX_RESPONSE_HEAD};

/// The properties above, for one input (the fuzz target and tests/code/fuzz_seeds.rs call it).
pub(super) fn holds(data: &[u8]) {
    let answers_head = data.first().is_some_and(|b| b & 1 == 1);
    let whole = parse(data, answers_head);
    match whole {
        Ok(Some(h)) => {
            assert!(h.head_len <= data.len() && h.head_len <= MAX_RESPONSE_HEAD);
            assert!((100..=599).contains(&h.status));
            assert_eq!(parse(&data[..h.head_len], answers_head), whole);
            for cut in [0, h.head_len / 2, h.head_len - 1] {
                assert_eq!(parse(&data[..cut], answers_head), Ok(None));
            }
            if answers_head {
                assert_eq!(h.framing, RespFraming::None);
            }
            fields_are_end_to_end(data, &h);
        }
        Ok(None) => {
            assert!(data.len() < MAX_RESPONSE_HEAD);
            assert_eq!(parse(&data[..data.len() / 2], answers_head), Ok(None));
        }
        Err(e) => {
            let mut longer = data.to_vec();
            longer.extend_from_slice(b"\r\n\r\nHTTP/1.1 200 OK\r\n\r\n");
            assert_eq!(parse(&longer, answers_head), Err(e));
        }
    }
}

fn fields_are_end_to_end(data: &[u8], h: &steerd::http::upstream_head::RespHead) {
    let head = &data[..h.head_len];
    let mut from = 0;
    for keep_upgrade in [false, true] {
        for (name, value) in end_to_end(data, h, keep_upgrade) {
            let upgrade = keep_upgrade && name.eq_ignore_ascii_case(b"upgrade");
            assert!(upgrade || !is_hop_by_hop(name), "{name:?} forwarded");
            assert!(!name.eq_ignore_ascii_case(b"content-length"));
            // Each field is a slice of the head, after the one before it.
            let at = name.as_ptr() as usize - head.as_ptr() as usize;
            assert!(at >= from && at + name.len() <= head.len());
            let end = value.as_ptr() as usize + value.len() - head.as_ptr() as usize;
            assert!(end <= head.len());
            from = at + name.len();
        }
        from = 0;
    }
}
