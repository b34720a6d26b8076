//! The media-type lookup, A/B: the binary search over the sorted built-in table
//! (`site::mime::for_path`) against the linear walk it replaced, over the same table and
//! over the 38-entry table steerd had before, in its old order (html first).
//!
//! Why: a lookup runs once per file described (the metadata cache keeps the answer), so
//! it is not on the per-request path; this shows that growing the table to 142 entries
//! did not make it slower.
//!
//! Each round looks up the paths of a typical page's assets and a few misses
//! ([`PATHS`]) a million times with each method, alternating the three in every round;
//! it prints, per method, the median nanoseconds per lookup over the rounds with the
//! lowest and highest round, and the median (lowest, highest) of its time over the
//! binary search's in the same round.
//!
//! Run: `cargo bench --bench mime_lookup [-- ROUNDS]` (default 15). On a machine shared
//! with other work the times swing; instructions do not: `count METHOD N` runs N lookups
//! of one method (`binary`, `walk`, `old`) and nothing else, for callgrind to count:
//!
//! ```text
//! b=$(ls -t target/release/deps/mime_lookup-* | grep -v '\.d$' | head -1)
//! for m in binary walk old; do for n in 0 1000000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null $b count $m $n 2>&1 |
//!     sed -n "s/.*Collected : /$m $n /p"; done; done
//! ```
//!
//! Instructions per lookup are (Ir at N minus Ir at 0) / N.

use std::hint::black_box;
use std::time::Instant;
use steerd::site::mime::{builtin, for_path, DEFAULT};

/// A page's assets, some in upper case, and misses.
const PATHS: [&[u8]; 16] = [
    b"/index.html",
    b"/assets/app.css",
    b"/assets/app.js",
    b"/assets/chunk.mjs",
    b"/img/logo.png",
    b"/img/photo.JPG",
    b"/img/icon.svg",
    b"/fonts/inter.woff2",
    b"/favicon.ico",
    b"/api/data.json",
    b"/img/hero.webp",
    b"/video/intro.mp4",
    b"/subs/en.vtt",
    b"/README",
    b"/archive.unknown",
    b"/dl/tool.exe",
];

/// The table before: its extensions in their order (the types are the built-in ones).
const OLD_ORDER: [&str; 38] = [
    "html",
    "htm",
    "css",
    "js",
    "mjs",
    "json",
    "map",
    "webmanifest",
    "txt",
    "md",
    "csv",
    "xml",
    "rss",
    "atom",
    "svg",
    "png",
    "jpg",
    "jpeg",
    "gif",
    "webp",
    "avif",
    "ico",
    "bmp",
    "woff",
    "woff2",
    "ttf",
    "otf",
    "wasm",
    "pdf",
    "zip",
    "gz",
    "zst",
    "tar",
    "mp3",
    "ogg",
    "wav",
    "mp4",
    "webm",
];

type Table = Vec<(&'static [u8], &'static [u8])>;

/// A lookup method: path to type.
type Lookup<'a> = &'a dyn Fn(&[u8]) -> &'static [u8];

/// The lookup as it was: the last segment's extension, then the first entry equal to it
/// in any case.
fn linear(table: &Table, path: &[u8]) -> &'static [u8] {
    let name = match memchr::memrchr(b'/', path) {
        Some(i) => &path[i + 1..],
        None => path,
    };
    let Some(dot) = memchr::memrchr(b'.', name) else {
        return DEFAULT;
    };
    let ext = &name[dot + 1..];
    let found = table.iter().find(|(e, _)| e.eq_ignore_ascii_case(ext));
    found.map_or(DEFAULT, |(_, t)| *t)
}

const LOOKUPS: usize = 1_000_000;

/// Nanoseconds per lookup of one round of `look`.
fn round(look: Lookup<'_>) -> f64 {
    let start = Instant::now();
    let mut bytes = 0usize;
    for i in 0..LOOKUPS {
        bytes += look(black_box(PATHS[i % PATHS.len()])).len();
    }
    black_box(bytes);
    start.elapsed().as_nanos() as f64 / LOOKUPS as f64
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(15);
    let full: Table = builtin().to_vec();
    let old: Table = OLD_ORDER
        .iter()
        .map(|e| *full.iter().find(|(x, _)| *x == e.as_bytes()).expect(e))
        .collect();
    // The three agree on every path before anything is timed.
    for p in PATHS {
        assert_eq!(for_path(p), linear(&full, p));
    }
    let binary = |p: &[u8]| for_path(p);
    let walk_full = |p: &[u8]| linear(&full, p);
    let walk_old = |p: &[u8]| linear(&old, p);
    let methods: [(&str, Lookup<'_>); 3] = [
        ("binary search, 142 entries", &binary),
        ("linear walk, 142 entries", &walk_full),
        ("linear walk, the old 38", &walk_old),
    ];
    if let Some(at) = args.iter().position(|a| a == "count") {
        let method = match args.get(at + 1).map(String::as_str) {
            Some("binary") => methods[0].1,
            Some("walk") => methods[1].1,
            Some("old") => methods[2].1,
            other => panic!("count binary|walk|old N, not {other:?}"),
        };
        let n: usize = args.get(at + 2).and_then(|n| n.parse().ok()).unwrap_or(0);
        let mut bytes = 0usize;
        for i in 0..n {
            bytes += method(black_box(PATHS[i % PATHS.len()])).len();
        }
        black_box(bytes);
        return;
    }
    let mut ns = vec![Vec::with_capacity(rounds); methods.len()];
    for r in 0..rounds {
        // Alternate the order so no method always runs first.
        for k in 0..methods.len() {
            let m = (r + k) % methods.len();
            ns[m].push(round(methods[m].1));
        }
    }
    // Each round's time against the binary search's in the same round: paired, so a
    // round slowed by the machine slows both.
    let ratios: Vec<Vec<f64>> = ns
        .iter()
        .map(|v| v.iter().zip(&ns[0]).map(|(t, b)| t / b).collect())
        .collect();
    println!(
        "{rounds} rounds of {LOOKUPS} lookups over {} paths",
        PATHS.len()
    );
    for ((name, _), (v, mut r)) in methods.iter().zip(ns.into_iter().zip(ratios)) {
        let mut v = v;
        let med = median(&mut v);
        let ratio = median(&mut r);
        println!(
            "{name:<28} median {med:5.1} ns/lookup ({:.1} to {:.1}); per round {ratio:.2}x \
             the binary search ({:.2} to {:.2})",
            v[0],
            v[v.len() - 1],
            r[0],
            r[r.len() - 1]
        );
    }
}
