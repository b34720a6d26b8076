//! Speed and size of our gzip encoder on the files named on the command line, for
//! `scripts/compress-bench.sh`, which sets them beside `gzip -1` and `gzip -6`.
//!
//! Each file is read whole and compressed ROUNDS times (default 5) in one `write` and
//! the `finish`; the output is checked to be the same each time. Printed, one line per
//! file, tab-separated: the path, the input bytes, the output bytes, and the best round's
//! speed in MB/s of input (10^6 bytes). One core, this machine, this moment.
//!
//! Run: `cargo bench --bench compress -- [--rounds N] FILE...`.

use std::hint::black_box;
use std::time::Instant;
use steerd::deflate::gzip;

fn main() {
    let mut args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let mut rounds = 5;
    if args.first().is_some_and(|a| a == "--rounds") {
        rounds = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(5);
        args.drain(..2.min(args.len()));
    }
    for path in &args {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut best = f64::INFINITY;
        let mut size = None;
        for _ in 0..rounds {
            let start = Instant::now();
            let out = gzip(black_box(&data));
            best = best.min(start.elapsed().as_secs_f64());
            assert!(
                size.is_none_or(|s| s == out.len()),
                "{path}: output changed"
            );
            size = Some(out.len());
        }
        let mbps = data.len() as f64 / best / 1e6;
        println!("{path}\t{}\t{}\t{mbps:.1}", data.len(), size.unwrap_or(0));
    }
}
