//! What one `--basic-auth` hash check costs at each accepted bcrypt cost and at the
//! SHA-crypt round counts that matter (the default, 5000, and the most accepted), so
//! the limits of `src/auth/cost.rs` can be held against the worker's promise of at most
//! 100 ms of hashing in a row (`docs/serving.md`).
//!
//! A check is one [`bcrypt::verify`] or [`sha_crypt::verify`] of a wrong password: the
//! hash is computed whole whatever the answer, so the stored hash text need not match.
//! Each setting is checked ROUNDS times (default 5); the median, lowest and highest are
//! printed in milliseconds. One core, this machine, this moment: figures to compare with
//! the limit, not a promise for other hardware (the limit leaves room for a core several
//! times slower).
//!
//! Run: `cargo bench --bench hash_check [-- ROUNDS]`.

use std::hint::black_box;
use std::time::Instant;
use steerd::auth::cost::{BCRYPT_COST_MAX, SHA_CRYPT_ROUNDS_MAX};
use steerd::crypt::{bcrypt, sha_crypt};

/// A bcrypt hash at `cost` (salt and hash text fixed).
fn bcrypt_hash(cost: u32) -> String {
    format!("$2b${cost:02}$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW")
}

/// A SHA-crypt hash of `variant` (`5` or `6`) at `rounds` (salt and digest fixed).
fn sha_crypt_hash(variant: u8, rounds: u32) -> String {
    let digest = "a".repeat(if variant == b'5' { 43 } else { 86 });
    format!("${}$rounds={rounds}$saltstring${digest}", variant as char)
}

/// Milliseconds of each of `rounds` runs of `check`: median, lowest, highest.
fn time(rounds: usize, check: impl Fn() -> bool) -> (f64, f64, f64) {
    let mut ms: Vec<f64> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            black_box(check());
            start.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    (ms[ms.len() / 2], ms[0], ms[ms.len() - 1])
}

fn show(what: &str, (median, low, high): (f64, f64, f64)) {
    println!("{what:<28} median {median:8.2} ms  (lowest {low:.2}, highest {high:.2})");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(5);
    let password = b"not the password";
    for cost in bcrypt::COST_MIN..=BCRYPT_COST_MAX {
        let hash = bcrypt_hash(cost);
        let (setting, text) = bcrypt::parse(hash.as_bytes()).expect("an accepted cost");
        let t = time(rounds, || {
            bcrypt::verify(&setting, text, black_box(password))
        });
        show(&format!("bcrypt cost {cost}"), t);
    }
    for variant in [b'5', b'6'] {
        for n in [5000, SHA_CRYPT_ROUNDS_MAX] {
            let hash = sha_crypt_hash(variant, n);
            let (setting, digest) = sha_crypt::parse(hash.as_bytes()).expect("accepted rounds");
            let t = time(rounds, || {
                sha_crypt::verify(&setting, digest, black_box(password))
            });
            show(&format!("${}$ rounds={n}", variant as char), t);
        }
    }
}
