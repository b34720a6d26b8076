//! Fuzz target `chunked`: any bytes, read two ways.
//!
//! As a chunked body: never panics; the answer (the data, the bytes consumed, whether the
//! body ended, or the error) is the same whole, split once in the middle, and (for short
//! inputs) one byte at a time; a body that has not ended and has no error consumed all
//! of its input; bytes after the end are never consumed.
//!
//! As a body to frame: the input cut into chunks whose sizes the input itself picks,
//! each size line from `chunk_line`, some with an extension, then `LAST_CHUNK`, decodes
//! back to the input whatever the arrival split, and consumes exactly the framed bytes.

use steerd::http::chunked::{chunk_line, ChunkError, Dechunk, LAST_CHUNK};

/// The data decoded, the bytes consumed, and whether the body ended; or the error.
pub(crate) type Outcome = Result<(Vec<u8>, usize, bool), ChunkError>;

/// Decodes `input` arriving up to each of `cuts` in turn, then whole. Bytes not consumed
/// stay in front of the next arrival, as in a receive buffer. (`tests/http/chunked.rs`
/// runs its vectors through this too.)
pub(crate) fn decode_at(input: &[u8], cuts: &[usize]) -> Outcome {
    let mut d = Dechunk::new();
    let (mut data, mut at) = (Vec::new(), 0);
    for &received in cuts.iter().chain([input.len()].iter()) {
        let received = received.clamp(at, input.len());
        loop {
            let (n, got) = d.next(&input[at..received])?;
            assert!(n <= received - at, "consumed more than it was given");
            if n == 0 {
                break;
            }
            data.extend_from_slice(got);
            at += n;
        }
    }
    Ok((data, at, d.is_done()))
}

/// The properties above, for one input (the fuzz target and tests/code/fuzz_seeds.rs call it).
pub(crate) fn holds(data: &[u8]) {
    raw_is_split_stable(data);
    framed_round_trips(data);
}

fn raw_is_split_stable(data: &[u8]) {
    let whole = decode_at(data, &[]);
    assert_eq!(decode_at(data, &[data.len() / 2]), whole);
    if data.len() <= 256 {
        let every: Vec<usize> = (1..data.len()).collect();
        assert_eq!(decode_at(data, &every), whole);
    }
    if let Ok((_, consumed, done)) = &whole {
        assert!(
            *done || *consumed == data.len(),
            "a valid prefix left bytes unread"
        );
    }
}

fn framed_round_trips(body: &[u8]) {
    let mut framed = Vec::new();
    let mut line = [0u8; 18];
    let mut at = 0;
    let mut pick = body
        .iter()
        .fold(7u32, |h, &b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    while at < body.len() {
        pick ^= pick << 13;
        pick ^= pick >> 17;
        pick ^= pick << 5;
        let size = 1 + pick as usize % 64;
        let piece = &body[at..body.len().min(at + size)];
        let n = chunk_line(piece.len() as u64, &mut line);
        framed.extend_from_slice(&line[..n - 2]);
        if pick % 3 == 0 {
            framed.extend_from_slice(b";ext=\"v\"");
        }
        framed.extend_from_slice(b"\r\n");
        framed.extend_from_slice(piece);
        framed.extend_from_slice(b"\r\n");
        at += piece.len();
    }
    framed.extend_from_slice(LAST_CHUNK);
    let want = Ok((body.to_vec(), framed.len(), true));
    let cuts: Vec<usize> = body
        .iter()
        .map(|&b| usize::from(b) * 7 % (framed.len() + 1))
        .collect();
    let mut sorted = cuts.clone();
    sorted.sort_unstable();
    assert_eq!(decode_at(&framed, &[]), want);
    assert_eq!(decode_at(&framed, &sorted), want);
    // Bytes after the body stay where they are.
    framed.extend_from_slice(b"GET / HTTP/1.1\r\n");
    assert_eq!(decode_at(&framed, &sorted), want);
}
