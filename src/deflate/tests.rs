//! The encoder against an oracle: every output is decoded by `miniz_oxide` (and one by
//! the system's `gzip -d`), its trailer checked, and the output of every slicing of the
//! input compared byte for byte with the one-shot output.

use super::{crc32, gzip, GzipEncoder};

/// Decodes a gzip member of our shape (10-byte header, no optional fields), checking the
/// header, the CRC and the size; the decoded bytes.
fn gunzip(gz: &[u8]) -> Vec<u8> {
    assert!(gz.len() >= 18, "too short: {} bytes", gz.len());
    assert_eq!(&gz[..10], &super::HEADER);
    let (body, trailer) = gz[10..].split_at(gz.len() - 18);
    let data = miniz_oxide::inflate::decompress_to_vec(body).expect("deflate stream decodes");
    assert_eq!(trailer[..4], crc32(0, &data).to_le_bytes(), "CRC-32");
    assert_eq!(trailer[4..], (data.len() as u32).to_le_bytes(), "ISIZE");
    data
}

fn round_trip(input: &[u8]) -> Vec<u8> {
    let gz = gzip(input);
    assert!(
        gunzip(&gz) == input,
        "decoded bytes differ ({} bytes in)",
        input.len()
    );
    gz
}

/// xorshift64*: reproducible bytes without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
    /// Text-like bytes: words from a small vocabulary, with copies of earlier stretches.
    fn text(&mut self, n: usize) -> Vec<u8> {
        const WORDS: [&str; 12] = [
            "<div ",
            "class=",
            "\"nav\"",
            "function ",
            "{ return ",
            "}\n",
            "0",
            "42",
            " ",
            "steerd",
            "\t",
            "é",
        ];
        let mut v = Vec::with_capacity(n + 300);
        while v.len() < n {
            if v.len() > 300 && self.below(4) == 0 {
                let from = self.below(v.len() - 1);
                let len = (3 + self.below(300)).min(v.len() - from);
                v.extend_from_within(from..from + len);
            } else {
                v.extend_from_slice(WORDS[self.below(WORDS.len())].as_bytes());
            }
        }
        v.truncate(n);
        v
    }
}

/// The same input in writes cut at random places, some of them empty.
fn sliced(input: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    let mut e = GzipEncoder::new();
    let mut rest = input;
    while !rest.is_empty() {
        let max = [1, 7, 300, 5000, 70_000][rng.below(5)];
        let (now, after) = rest.split_at(rng.below(max + 1).min(rest.len()));
        e.write(now, &mut out);
        rest = after;
    }
    e.finish(&mut out);
    out
}

#[test]
fn edge_inputs_round_trip() {
    let mut rng = Rng(7);
    round_trip(b"");
    round_trip(b"a");
    round_trip(b"ab");
    round_trip(b"abc");
    round_trip(b"abcabcabc");
    round_trip(&[0u8; 1 << 20]);
    round_trip(&rng.bytes(1 << 20));
    round_trip(&rng.text(3 << 20));
}

#[test]
fn empty_input_is_the_shortest_member() {
    // A fixed block holding only the end of block: 3 + 7 bits, 2 bytes.
    assert_eq!(gzip(b"").len(), 10 + 2 + 8);
    let mut out = Vec::new();
    let mut e = GzipEncoder::new();
    e.write(b"", &mut out);
    e.finish(&mut out);
    assert_eq!(out, gzip(b""));
}

/// Runs of one byte are 258-byte copies at distance 1: about 2 bits per 258 bytes.
#[test]
fn long_runs_use_longest_copies() {
    let gz = round_trip(&[b'x'; 1 << 20]);
    assert!(gz.len() < 1500, "{} bytes for 1 MiB of one byte", gz.len());
    let pattern: Vec<u8> = b"0123456789"
        .iter()
        .cycle()
        .take(100_000)
        .copied()
        .collect();
    assert!(round_trip(&pattern).len() < 400);
}

/// Random bytes do not shrink: stored blocks keep them to a few bytes per 16 KiB.
#[test]
fn incompressible_input_is_stored() {
    let data = Rng(3).bytes(1 << 20);
    let gz = round_trip(&data);
    assert!(
        gz.len() <= data.len() + 18 + 5 * (data.len() / 16_000 + 1),
        "{} bytes",
        gz.len()
    );
}

/// Random stretches repeated 32,000 bytes later are found as copies from that far back.
#[test]
fn far_copies_decode() {
    let mut rng = Rng(11);
    let chunk = rng.bytes(32_000);
    let mut data = chunk.clone();
    data.extend_from_slice(&chunk);
    data.extend_from_slice(&rng.bytes(1000));
    // 32,000 bytes back again, from the second copy, across the window's slide.
    data.extend_from_slice(&chunk[1000..6000]);
    let gz = round_trip(&data);
    assert!(
        gz.len() < 32_000 + 1000 + 2000,
        "{} bytes: the repeat was not found",
        gz.len()
    );
}

#[test]
fn any_slicing_gives_the_same_bytes() {
    let mut rng = Rng(0x5eed);
    for case in 0..40 {
        let n = [0, 1, 2, 3, 257, 262, 4096, 40_000, 70_000, 200_000][case % 10];
        let input = if case % 3 == 0 {
            rng.bytes(n)
        } else {
            rng.text(n)
        };
        let whole = round_trip(&input);
        for _ in 0..3 {
            assert!(sliced(&input, &mut rng) == whole, "case {case}: {n} bytes");
        }
    }
}

/// Copies that cross the boundary between writes, written one byte at a time.
#[test]
fn copies_across_writes_match_one_write() {
    let mut data = Rng(5).text(5000);
    data.extend_from_within(100..400);
    data.extend_from_slice(&[b'z'; 600]);
    let whole = round_trip(&data);
    let mut out = Vec::new();
    let mut e = GzipEncoder::new();
    for b in data.chunks(1) {
        e.write(b, &mut out);
    }
    e.finish(&mut out);
    assert!(out == whole);
}

/// Runs the system's `gzip` with `args` on `input`; None (after the skip line) when it
/// cannot be run.
fn system_gzip(args: &[&str], input: &[u8]) -> Option<Vec<u8>> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let child = Command::new("gzip")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        crate::test_skip::skip_or_fail(&crate::test_skip::this_test(), "no gzip on PATH");
        return None;
    };
    let mut stdin = child.stdin.take()?;
    let feed = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&feed));
    let out = child.wait_with_output().expect("gzip runs");
    writer
        .join()
        .expect("writer")
        .expect("gzip reads its input");
    assert!(out.status.success(), "gzip {args:?}: {}", out.status);
    Some(out.stdout)
}

/// Text of the repository itself: the example site and the docs.
fn text_files() -> Vec<(String, Vec<u8>)> {
    let root = env!("CARGO_MANIFEST_DIR");
    let names = [
        "site/index.html",
        "site/app.js",
        "site/style.css",
        "README.md",
        "docs/design.md",
        "docs/serving.md",
        "src/http/parse.rs",
    ];
    names
        .iter()
        .map(|n| {
            (
                n.to_string(),
                std::fs::read(format!("{root}/{n}")).expect(n),
            )
        })
        .collect()
}

/// The system's `gzip -d` reads what we write, and for text our output is within 115%
/// of `gzip -6`'s (the bound).
#[test]
fn system_gzip_decodes_and_sizes_compare() {
    for (name, data) in text_files() {
        let ours = round_trip(&data);
        let Some(decoded) = system_gzip(&["-d", "-c"], &ours) else {
            return;
        };
        assert!(decoded == data, "{name}: gzip -d gives other bytes");
        let Some(theirs) = system_gzip(&["-6", "-n", "-c"], &data) else {
            return;
        };
        assert!(
            ours.len() * 100 <= theirs.len() * 115,
            "{name}: {} bytes against gzip -6's {}",
            ours.len(),
            theirs.len()
        );
    }
}
