//! Fuzz target `check_and_run`. What it feeds the code and the properties it holds it to are in
//! `fuzz/props/check_and_run.rs`, which `tests/code/fuzz_seeds.rs` also runs on this target's seed
//! corpus (`fuzz/corpus/check_and_run/`) on every CPU the suite runs on.

#![no_main]

#[path = "../props/check_and_run.rs"]
mod props;

libfuzzer_sys::fuzz_target!(|data: &[u8]| props::holds(data));
