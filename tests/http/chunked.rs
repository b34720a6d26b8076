//! The chunked decoder (`src/http/chunked.rs`): vectors, each run whole, split at every
//! byte, and one byte at a time; the encoder's lines read back by the decoder.

use steerd::http::chunked::{
    chunk_line, ChunkError, Dechunk, LAST_CHUNK, MAX_EXTENSIONS, MAX_TRAILER,
};

// The fuzz target's properties and decoding helper, loaded once for the suite.
use crate::code::fuzz_seeds::chunked as props;
use props::{decode_at, Outcome};

fn decode(input: &[u8]) -> Outcome {
    decode_at(input, &[])
}

/// `input` decoded whole, in pieces of every size up to 8, and split once at every
/// offset, all with the same answer.
fn decode_every_way(input: &[u8]) -> Outcome {
    let whole = decode(input);
    for piece in 1..=8 {
        let cuts: Vec<usize> = (piece..input.len()).step_by(piece).collect();
        assert_eq!(
            decode_at(input, &cuts),
            whole,
            "{input:?} in pieces of {piece}"
        );
    }
    for cut in 0..=input.len() {
        assert_eq!(decode_at(input, &[cut]), whole, "{input:?} cut at {cut}");
    }
    whole
}

const GOOD: &[(&[u8], &[u8])] = &[
    (b"0\r\n\r\n", b""),
    (b"5\r\nhello\r\n0\r\n\r\n", b"hello"),
    (b"b\r\nhello world\r\n0\r\n\r\n", b"hello world"),
    (b"B\r\nhello world\r\n0\r\n\r\n", b"hello world"),
    (b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", b"abcde"),
    (b"0003\r\nabc\r\n000\r\n\r\n", b"abc"),
    (b"00000000000000000000000000000001\r\nx\r\n0\r\n\r\n", b"x"),
    (b"3;a\r\nabc\r\n0\r\n\r\n", b"abc"),
    (b"3;a=b\r\nabc\r\n0;x=\"y\"\r\n\r\n", b"abc"),
    (b"3; a = b ;c\r\nabc\r\n0\r\n\r\n", b"abc"),
    (b"3;a=\"q\\\"uo;ted\"\r\nabc\r\n0\r\n\r\n", b"abc"),
    (b"3;a=\"\"\r\nabc\r\n0\r\n\r\n", b"abc"),
    (b"3\r\nabc\r\n0\r\nX-T: 1\r\nY:\r\n\r\n", b"abc"),
    (b"3\r\n\r\n\n\r\n0\r\n\r\n", b"\r\n\n"),
];

#[test]
fn good_bodies_decode_the_same_however_split() {
    for &(input, body) in GOOD {
        assert_eq!(
            decode_every_way(input),
            Ok((body.to_vec(), input.len(), true)),
            "{input:?}"
        );
    }
}

#[test]
fn bytes_after_the_body_are_left_alone() {
    let input = b"2\r\nhi\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
    assert_eq!(decode_every_way(input), Ok((b"hi".to_vec(), 12, true)));
    let mut d = Dechunk::new();
    assert_eq!(d.next(b"0\r\n\r\n"), Ok((5, &b""[..])));
    assert_eq!(d.next(b"more"), Ok((0, &b""[..])));
}

#[test]
fn an_unfinished_body_waits() {
    for input in [
        &b""[..],
        b"5",
        b"5\r",
        b"5\r\nhel",
        b"5\r\nhello",
        b"5\r\nhello\r",
        b"5\r\nhello\r\n0\r\n",
        b"5\r\nhello\r\n0\r\nX: y\r\n",
        b"5;a=\"x",
        b"ffffffffffffffff\r\n",
    ] {
        let (_, consumed, done) = decode_every_way(input).expect("valid so far");
        assert_eq!((consumed, done), (input.len(), false), "{input:?}");
    }
}

const BAD: &[(&[u8], ChunkError)] = &[
    // Garden chunk-size findings and their kin: sign, prefix, separators, whitespace.
    (b"\r\n", ChunkError::BadSize),
    (b"+5\r\nhello\r\n0\r\n\r\n", ChunkError::BadSize),
    (b"-0\r\n\r\n", ChunkError::BadSize),
    (b"0x5\r\nhello\r\n0\r\n\r\n", ChunkError::BadSize),
    (b"0_2e\r\n", ChunkError::BadSize),
    (b" 5\r\nhello\r\n", ChunkError::BadSize),
    (b"5 \r\nhello\r\n", ChunkError::BadSize),
    (b"5\t\r\nhello\r\n", ChunkError::BadSize),
    (b"3 ;a=b\r\nabc\r\n", ChunkError::BadSize),
    (b"g\r\n", ChunkError::BadSize),
    (b"1x\r\n", ChunkError::BadSize),
    (b"5\x00\r\n", ChunkError::BadSize),
    // 17 significant hex digits overflow; 33 digits of zeros are too many.
    (b"10000000000000000\r\n", ChunkError::SizeTooLong),
    (b"fffffffffffffffff\r\n", ChunkError::SizeTooLong),
    (
        b"000000000000000000000000000000000\r\n",
        ChunkError::SizeTooLong,
    ),
    // Bare LF and bare CR anywhere in the framing.
    (b"5\nhello\r\n0\r\n\r\n", ChunkError::BadLineEnd),
    (b"5\r\nhello\n0\r\n\r\n", ChunkError::BadLineEnd),
    (b"5\r\nhello\r\n0\n\r\n", ChunkError::BadLineEnd),
    (b"5\r\nhello\r\n0\r\n\n", ChunkError::BadLineEnd),
    (b"5\r\rhello\r\n", ChunkError::BadLineEnd),
    (b"\n", ChunkError::BadLineEnd),
    (b"5\r\nhello\r\r0\r\n\r\n", ChunkError::BadLineEnd),
    (b"0\r\n\rX", ChunkError::BadLineEnd),
    (b"5;a\n", ChunkError::BadLineEnd),
    // Data longer or shorter than its size.
    (b"3\r\nabcd\r\n0\r\n\r\n", ChunkError::BadLineEnd),
    (b"5\r\nabc\r\n0\r\n\r\n", ChunkError::BadLineEnd),
    // Extensions: bare ";", no name, "\r" in BWS, unbalanced quote, NUL, trailing BWS.
    (b"2;\r\nhi\r\n", ChunkError::BadExtension),
    (b"2;=x\r\nhi\r\n", ChunkError::BadExtension),
    (b"2;a=\r\nhi\r\n", ChunkError::BadExtension),
    (b"2; \rx\r\nhi\r\n", ChunkError::BadExtension),
    (b"2;a=\"x\r\nhi\r\n", ChunkError::BadExtension),
    (b"2;a\x00\r\nhi\r\n", ChunkError::BadExtension),
    (b"2;a \r\nhi\r\n", ChunkError::BadExtension),
    (b"2;a=b \r\nhi\r\n", ChunkError::BadExtension),
    (b"2;a b\r\nhi\r\n", ChunkError::BadExtension),
    (b"2;a=b c\r\nhi\r\n", ChunkError::BadExtension),
    (b"2;a=\"b\"c\r\nhi\r\n", ChunkError::BadExtension),
    (b"2;a=\"\x7f\"\r\nhi\r\n", ChunkError::BadExtension),
    // Trailers: obs-fold, whitespace before the colon, no colon, a control in a value.
    (b"0\r\nX: 1\r\n more\r\n\r\n", ChunkError::BadTrailer),
    (b"0\r\n X: 1\r\n\r\n", ChunkError::BadTrailer),
    (b"0\r\nX : 1\r\n\r\n", ChunkError::BadTrailer),
    (b"0\r\nX\r\n\r\n", ChunkError::BadTrailer),
    (b"0\r\n:1\r\n\r\n", ChunkError::BadTrailer),
    (b"0\r\nX: \x01\r\n\r\n", ChunkError::BadTrailer),
    (b"0\r\nX: 1\n\r\n", ChunkError::BadLineEnd),
    (b"0\r\nX: 1\r\r\n", ChunkError::BadLineEnd),
];

#[test]
fn bad_bodies_are_refused_however_split() {
    for &(input, error) in BAD {
        assert_eq!(decode_every_way(input), Err(error), "{input:?}");
    }
}

#[test]
fn extensions_and_trailers_are_bounded() {
    let mut ext = b"1;".to_vec();
    ext.extend(std::iter::repeat_n(b'a', MAX_EXTENSIONS as usize));
    ext.extend_from_slice(b"\r\nx\r\n0\r\n\r\n");
    assert_eq!(decode(&ext), Err(ChunkError::BadExtension));
    // Many small extensions count over the whole body.
    let many = b"1;abcdefg\r\nx\r\n".repeat(MAX_EXTENSIONS as usize / 8 + 1);
    assert_eq!(decode(&many), Err(ChunkError::BadExtension));
    let mut trailer = b"0\r\nX: ".to_vec();
    trailer.extend(std::iter::repeat_n(b'v', MAX_TRAILER as usize));
    trailer.extend_from_slice(b"\r\n\r\n");
    assert_eq!(decode(&trailer), Err(ChunkError::TrailerTooLong));
    let lines = [&b"0\r\n"[..], &b"a:\r\n".repeat(MAX_TRAILER as usize)].concat();
    assert_eq!(decode(&lines), Err(ChunkError::TrailerTooLong));
}

#[test]
fn the_announced_sizes_add_up_before_the_data() {
    let mut d = Dechunk::new();
    assert_eq!(d.next(b"10\r\n"), Ok((4, &b""[..])));
    assert_eq!(d.announced(), 16);
    let mut d = Dechunk::new();
    d.next(b"ffffffffffffffff\r\n").unwrap();
    assert_eq!(d.announced(), u64::MAX);
}

#[test]
fn chunk_lines_are_minimal_hex_and_read_back() {
    let mut out = [0u8; 18];
    for (len, line) in [
        (0u64, &b"0\r\n"[..]),
        (1, b"1\r\n"),
        (15, b"f\r\n"),
        (16, b"10\r\n"),
        (0xabc, b"abc\r\n"),
        (u64::MAX, b"ffffffffffffffff\r\n"),
    ] {
        let n = chunk_line(len, &mut out);
        assert_eq!(&out[..n], line, "{len}");
        let mut d = Dechunk::new();
        assert_eq!(d.next(&out[..n]), Ok((n, &b""[..])));
        assert_eq!(d.announced(), len);
    }
    assert_eq!(LAST_CHUNK, b"0\r\n\r\n");
    assert_eq!(decode_every_way(LAST_CHUNK), Ok((Vec::new(), 5, true)));
}

#[test]
fn the_decoder_is_small() {
    assert_eq!(core::mem::size_of::<Dechunk>(), 24);
}

/// The fuzz target's properties (split stability, the round trip of the input framed at
/// sizes it picks) on every vector.
#[test]
fn the_fuzz_properties_hold_on_every_vector() {
    for input in GOOD.iter().map(|g| g.0).chain(BAD.iter().map(|b| b.0)) {
        props::holds(input);
    }
}
