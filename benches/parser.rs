//! Request-parser benchmark: steerd's parser against httparse on httparse's own inputs.
//!
//! Inputs: `REQ` (the 720-byte "kittyhell" browser request of picohttpparser's bench.c
//! with `|padding=under256` appended to the Cookie) and `REQ_SHORT` (68 bytes), exactly
//! as httparse's `benches/parse.rs` has them; 16 header slots for every parser.
//!
//! Every parser's field lines are passed to `black_box` after each parse, so no
//! compiler can drop the stores of lines nothing reads (a server reads them).
//!
//! Method (STYLE habit 14): rounds alternate the parsers on the same machine in the same
//! run; each round times a fixed batch with `std::time::Instant`; the report is the
//! median and best ns/request per parser, and the median (with interquartile range) of
//! the per-round ratio httparse time / steerd time, so > 1 means steerd is faster.
//!
//! Run: `cargo bench --bench parser` (optionally `-- ROUNDS BATCH`).
//! `PARSER_BENCH_ONLY=REQ_SHORT` runs one input, for profiling.

use std::hint::black_box;
use std::time::Instant;

use steerd::http::{parse_head, parse_request, Fields, Status};

const REQ_SHORT: &[u8] = b"\
GET / HTTP/1.0\r\n\
Host: example.com\r\n\
Cookie: session=60; user_id=1\r\n\r\n";

const REQ: &[u8] = b"\
GET /wp-content/uploads/2010/03/hello-kitty-darth-vader-pink.jpg HTTP/1.1\r\n\
Host: www.kittyhell.com\r\n\
User-Agent: Mozilla/5.0 (Macintosh; U; Intel Mac OS X 10.6; ja-JP-mac; rv:1.9.2.3) Gecko/20100401 Firefox/3.6.3 Pathtraq/0.9\r\n\
Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n\
Accept-Language: ja,en-us;q=0.7,en;q=0.3\r\n\
Accept-Encoding: gzip,deflate\r\n\
Accept-Charset: Shift_JIS,utf-8;q=0.7,*;q=0.7\r\n\
Keep-Alive: 115\r\n\
Connection: keep-alive\r\n\
Cookie: wp_ozh_wsa_visits=2; wp_ozh_wsa_visit_lasttime=xxxxxxxxxx; __utma=xxxxxxxxx.xxxxxxxxxx.xxxxxxxxxx.xxxxxxxxxx.xxxxxxxxxx.x; __utmz=xxxxxxxxx.xxxxxxxxxx.x.x.utmccn=(referral)|utmcsr=reader.livedoor.com|utmcct=/reader/|utmcmd=referral|padding=under256\r\n\r\n";

const SLOTS: usize = 16;

/// One parser under test: parses `input` `batch` times, buffers made once per batch
/// (as a server reuses its slots), and returns the nanoseconds per request.
type Parser = fn(&[u8], u32) -> f64;

fn steerd_request(input: &[u8], batch: u32) -> f64 {
    let mut slots = Fields::<SLOTS>::new();
    let mut path = [0u8; 1024];
    let start = Instant::now();
    for _ in 0..batch {
        match parse_request(black_box(input), &mut slots, &mut path) {
            Ok(Status::Complete(r)) => assert_eq!(black_box(r).head_len, input.len()),
            other => panic!("steerd refused the bench input: {other:?}"),
        }
        // The field lines are kept (the server reads them), as httparse's are below.
        black_box(&slots);
    }
    per_request(start, batch)
}

fn steerd_head(input: &[u8], batch: u32) -> f64 {
    let mut slots = Fields::<SLOTS>::new();
    let start = Instant::now();
    for _ in 0..batch {
        match parse_head(black_box(input), &mut slots) {
            Ok(Status::Complete(h)) => assert_eq!(black_box(h).len, input.len()),
            other => panic!("steerd refused the bench input: {other:?}"),
        }
        black_box(&slots);
    }
    per_request(start, batch)
}

fn httparse_request(input: &[u8], batch: u32) -> f64 {
    let mut slots = [httparse::EMPTY_HEADER; SLOTS];
    let start = Instant::now();
    for _ in 0..batch {
        let mut req = httparse::Request::new(&mut slots);
        match req.parse(black_box(input)) {
            Ok(httparse::Status::Complete(n)) => assert_eq!(black_box(n), input.len()),
            other => panic!("httparse refused the bench input: {other:?}"),
        }
        black_box(&req);
    }
    per_request(start, batch)
}

fn per_request(start: Instant, batch: u32) -> f64 {
    start.elapsed().as_nanos() as f64 / f64::from(batch)
}

fn bench(name: &str, input: &[u8], rounds: usize, batch: u32) {
    let parsers: [(&str, Parser); 3] = [
        ("httparse", httparse_request),
        ("steerd parse_request", steerd_request),
        ("steerd parse_head", steerd_head),
    ];
    let mut times = vec![Vec::with_capacity(rounds); parsers.len()];
    for (_, parse) in &parsers {
        parse(input, batch);
    }
    for round in 0..rounds {
        // Rotate the order each round so no parser always runs first or last.
        for k in 0..parsers.len() {
            let i = (round + k) % parsers.len();
            times[i].push(parsers[i].1(input, batch));
        }
    }
    println!(
        "{name} ({} bytes, {SLOTS} slots, {rounds} rounds x {batch}):",
        input.len()
    );
    for (i, (label, _)) in parsers.iter().enumerate() {
        // Ratio per round (neighbouring batches see the same machine load), then the
        // median and the interquartile range of those ratios.
        let mut ratios: Vec<f64> = times[0].iter().zip(&times[i]).map(|(h, s)| h / s).collect();
        ratios.sort_by(f64::total_cmp);
        let q = |f: f64| ratios[((ratios.len() - 1) as f64 * f) as usize];
        let t = &mut times[i];
        t.sort_by(f64::total_cmp);
        let (min, med) = (t[0], t[t.len() / 2]);
        let gib = input.len() as f64 / min / 1.073_741_824;
        println!(
            "  {label:<22} median {med:7.1} ns/req, best {min:7.1} ({gib:4.2} GiB/s)  speed vs httparse: median {:.2}x (IQR {:.2}..{:.2})",
            q(0.5),
            q(0.25),
            q(0.75)
        );
    }
}

fn main() {
    assert_eq!(REQ.len(), 720, "REQ must be httparse's 720-byte request");
    assert_eq!(
        REQ_SHORT.len(),
        68,
        "REQ_SHORT must be httparse's 68-byte request"
    );
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let rounds = args.first().and_then(|a| a.parse().ok()).unwrap_or(501);
    let batch = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2_000);
    // PARSER_BENCH_ONLY=REQ or REQ_SHORT runs one input (for profiling).
    let only = std::env::var("PARSER_BENCH_ONLY").ok();
    for (name, input) in [("REQ", REQ), ("REQ_SHORT", REQ_SHORT)] {
        if only.as_deref().is_none_or(|o| o == name) {
            bench(name, input, rounds, batch);
        }
    }
}
