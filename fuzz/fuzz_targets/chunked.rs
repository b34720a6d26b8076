//! Fuzz target `chunked`. What it feeds the code and the properties it holds it to are in
//! `fuzz/props/chunked.rs`, which `tests/code/fuzz_seeds.rs` also runs on this target's seed
//! corpus (`fuzz/corpus/chunked/`) on every CPU the suite runs on.

#![no_main]

#[path = "../props/chunked.rs"]
mod props;

libfuzzer_sys::fuzz_target!(|data: &[u8]| props::holds(data));
