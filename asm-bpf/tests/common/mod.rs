//! Shared by the tests: a seeded generator with no dependencies, and the readers of the
//! vector files in `tests/data/`. Each test binary uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// xorshift64*: deterministic, good enough to spread test cases.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// One element of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// A k value that is often small, sometimes an edge, sometimes anything.
    pub fn k(&mut self) -> u32 {
        match self.below(4) {
            0 => self.below(16) as u32,
            1 => *self.pick(&[0, 1, 0xffff, 0x10000, 0xffff_ffff, 0xffff_f000, 0xfff0_0000]),
            2 => 0xffff_f000 + 4 * self.below(17) as u32,
            _ => self.next() as u32,
        }
    }
}

/// A path under `tests/data/`.
pub fn data(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(sub)
}

/// A data file's text.
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The source escapes of the one-line vector files: \n \t \r \\ \xHH.
pub fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let (byte, len) = match b.get(i + 1) {
            Some(b'n') => (b'\n', 2),
            Some(b't') => (b'\t', 2),
            Some(b'r') => (b'\r', 2),
            Some(b'\\') => (b'\\', 2),
            Some(b'x') => (u8::from_str_radix(&s[i + 2..i + 4], 16).expect("\\xHH"), 4),
            _ => panic!("bad escape in {s:?}"),
        };
        out.push(byte);
        i += len;
    }
    out
}

/// The `SOURCE ==> EXPECTED` lines of a vector file.
pub fn cases(file: &str) -> Vec<(Vec<u8>, String)> {
    let text = read(&data(file));
    let cases: Vec<_> = text
        .lines()
        .filter(|l| !l.starts_with("//") && !l.trim().is_empty())
        .map(|l| {
            let (src, expected) = l.rsplit_once(" ==> ").expect("SOURCE ==> EXPECTED");
            (unescape(src), expected.to_string())
        })
        .collect();
    assert!(cases.len() > 50, "{file} has only {} cases", cases.len());
    cases
}
