//! Fuzz target `deflate`: any bytes as a file to gzip, written in any slicing.
//!
//! Never panics. The member decodes (miniz_oxide as the oracle) to exactly the input,
//! its trailer holds the input's CRC-32 and length, and the bytes written in pieces are
//! the bytes of the one-shot `gzip`.
//!
//! Input layout: one byte of repeat count (the rest of the input is taken 1 to 32 times,
//! so that a short input still reaches the window's slide at 64 KiB, copies across
//! blocks and the longest copies), one byte that seeds the cut lengths, then the data.

use steerd::deflate::{crc32, gzip, GzipEncoder};

/// The properties above, for one input (the fuzz target and tests/code/fuzz_seeds.rs call it).
pub(super) fn holds(data: &[u8]) {
    let (repeat, seed, body) = match data {
        [r, s, body @ ..] => (1 + (*r as usize & 31), *s as u32, body),
        _ => (1, 0, data),
    };
    let input: Vec<u8> = body.repeat(repeat);
    let whole = gzip(&input);
    assert_eq!(sliced(&input, seed), whole, "slicing changed the output");
    assert!(whole.len() >= 18 && whole[..3] == [0x1f, 0x8b, 8]);
    let body_end = whole.len() - 8;
    let decoded = miniz_oxide::inflate::decompress_to_vec(&whole[10..body_end])
        .unwrap_or_else(|e| panic!("deflate stream does not decode: {e:?}"));
    assert!(decoded == input, "decodes to other bytes");
    assert_eq!(
        whole[body_end..body_end + 4],
        crc32(0, &input).to_le_bytes()
    );
    assert_eq!(whole[body_end + 4..], (input.len() as u32).to_le_bytes());
}

/// The input in writes whose lengths (0 included) follow a small generator from `seed`.
fn sliced(input: &[u8], seed: u32) -> Vec<u8> {
    let mut state = seed.wrapping_mul(2_654_435_761) | 1;
    let mut out = Vec::new();
    let mut e = GzipEncoder::new();
    let mut rest = input;
    while !rest.is_empty() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let max = [0, 1, 2, 300, 4000, 70_000][(state % 6) as usize];
        let cut = ((state >> 8) as usize % (max + 1)).min(rest.len());
        let (now, after) = rest.split_at(cut);
        e.write(now, &mut out);
        rest = after;
    }
    e.finish(&mut out);
    out
}
