//! The parser never allocates: a counting global allocator watches every parse of every
//! vector (valid and invalid, whole and split at every byte) plus the generated limit
//! cases, and the count must stay zero.

use crate::support;
use crate::support::http_cases;

use support::alloc::{allocations, watch_this_thread};

use steerd::http::{find_head_end, parse_request, Fields, Status, MAX_FIELDS};

/// Parses `buf` with stack buffers only; returns a summary so the work is not optimised out.
fn parse_quietly(buf: &[u8]) -> usize {
    let mut slots = Fields::<MAX_FIELDS>::new();
    let mut path = [0u8; 8192];
    let found = find_head_end(buf, 0).unwrap_or(0);
    match parse_request(buf, &mut slots, &mut path) {
        Ok(Status::Complete(r)) => r.head_len + r.path.len() + found,
        Ok(Status::Partial) => 1,
        Err(e) => usize::from(e.status()) + usize::from(e.must_close()) + e.reason().len(),
    }
}

#[test]
fn parsing_never_allocates() {
    let mut inputs: Vec<Vec<u8>> = http_cases::all_cases()
        .into_iter()
        .map(|c| c.input)
        .collect();
    let mut long = b"GET /".to_vec();
    long.resize(9000, b'a');
    inputs.push(long);
    let mut many = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
    for i in 0..120 {
        many.extend_from_slice(format!("X-{i}: {}\r\n", "v".repeat(150)).as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    inputs.push(many);

    // The tests of this binary share the counter: one at a time (`main.rs`).
    let _one = support::serial::exclusive();
    let before = allocations();
    watch_this_thread(true);
    let mut total = 0usize;
    for input in &inputs {
        // Every prefix of the vectors; the two big generated heads at a coarser step.
        let step = if input.len() > 1000 { 97 } else { 1 };
        for k in (0..=input.len()).step_by(step).chain([input.len()]) {
            total = total.wrapping_add(parse_quietly(&input[..k]));
        }
    }
    watch_this_thread(false);
    let counted = allocations() - before;
    assert!(total > 0);
    assert_eq!(counted, 0, "the parser allocated {counted} times");

    // The counter works: an allocation made while watching is seen.
    watch_this_thread(true);
    let boxed = std::hint::black_box(Box::new(7u64));
    watch_this_thread(false);
    drop(boxed);
    assert_eq!(
        allocations() - before - counted,
        1,
        "the counting allocator missed an allocation"
    );
}

/// The relay's parsers never allocate: the chunked decoder on bodies fed in pieces, and
/// the response head parser with its end-to-end walk on every prefix of some heads.
#[test]
fn relay_parsing_never_allocates() {
    use steerd::http::chunked::{chunk_line, Dechunk};
    use steerd::http::upstream_head::{end_to_end, parse};
    let bodies: [&[u8]; 4] = [
        b"5;a=\"b\"\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n",
        b"ffffffffffffffff\r\nabc",
        b"5\nhello",
        b"0\r\nX : 1\r\n\r\n",
    ];
    let heads: [&[u8]; 3] = [
        b"HTTP/1.1 200 OK\r\nConnection: x-a, close\r\nX-A: 1\r\nContent-Length: 5\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n",
    ];
    let _one = support::serial::exclusive();
    let before = allocations();
    watch_this_thread(true);
    let mut total = 0usize;
    for body in bodies {
        for piece in [1, 3, body.len()] {
            // Bytes arrive `piece` at a time; what was not consumed stays in front.
            let mut d = Dechunk::new();
            let (mut at, mut arrived) = (0, 0);
            loop {
                match d.next(&body[at..arrived]) {
                    Ok((0, _)) if arrived == body.len() => break,
                    Ok((0, _)) => arrived = body.len().min(arrived + piece),
                    Ok((n, data)) => {
                        total += data.len();
                        at += n;
                    }
                    Err(_) => break,
                }
            }
        }
    }
    let mut line = [0u8; 18];
    total += chunk_line(0xabc, &mut line);
    for head in heads {
        for k in 0..=head.len() {
            if let Ok(Some(h)) = parse(&head[..k], false) {
                total += end_to_end(&head[..k], &h, true).count();
            }
        }
    }
    watch_this_thread(false);
    let counted = allocations() - before;
    assert!(total > 0);
    assert_eq!(counted, 0, "the relay parsers allocated {counted} times");
}
