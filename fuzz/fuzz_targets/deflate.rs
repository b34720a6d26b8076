//! Fuzz target `deflate`. What it feeds the code and the properties it holds it to are in
//! `fuzz/props/deflate.rs`, which `tests/code/fuzz_seeds.rs` also runs on this target's seed
//! corpus (`fuzz/corpus/deflate/`) on every CPU the suite runs on.

#![no_main]

#[path = "../props/deflate.rs"]
mod props;

libfuzzer_sys::fuzz_target!(|data: &[u8]| props::holds(data));
