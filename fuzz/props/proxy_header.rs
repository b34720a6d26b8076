//! Fuzz target `proxy_header`: any bytes as the start of a connection that must begin
//! with a PROXY protocol header.
//!
//! Never panics, never reads past the input. The answers are consistent with reading
//! the stream in pieces: a complete header is at most the input and at most the longest
//! header of its version, parses the same from exactly its own bytes, and every shorter
//! prefix of it is `Partial`; a `Partial` input stays `Partial` when cut shorter; an
//! error stays an error (the same one) whatever follows.

use steerd::client_addr::proxy_header::{parse_proxy_header, V1_MAX, V2_MAX};
use steerd::http::Status;

/// The properties above, for one input (the fuzz target and tests/code/fuzz_seeds.rs call it).
pub(super) fn holds(data: &[u8]) {
    let whole = parse_proxy_header(data);
    match whole {
        Ok(Status::Complete(h)) => {
            assert!(h.len <= data.len() && h.len <= V1_MAX.max(V2_MAX));
            assert_eq!(parse_proxy_header(&data[..h.len]), whole);
            for cut in [0, h.len / 2, h.len - 1] {
                assert_eq!(parse_proxy_header(&data[..cut]), Ok(Status::Partial));
            }
        }
        Ok(Status::Partial) => {
            assert!(data.len() < V1_MAX.max(V2_MAX));
            assert_eq!(
                parse_proxy_header(&data[..data.len() / 2]),
                Ok(Status::Partial)
            );
        }
        Err(e) => {
            let mut longer = data.to_vec();
            longer.extend_from_slice(b"\r\nGET / HTTP/1.1\r\n\r\n");
            assert_eq!(parse_proxy_header(&longer), Err(e));
        }
    }
}
