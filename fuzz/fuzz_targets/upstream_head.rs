//! Fuzz target `upstream_head`. What it feeds the code and the properties it holds it to are in
//! `fuzz/props/upstream_head.rs`, which `tests/code/fuzz_seeds.rs` also runs on this target's seed
//! corpus (`fuzz/corpus/upstream_head/`) on every CPU the suite runs on.

#![no_main]

#[path = "../props/upstream_head.rs"]
mod props;

libfuzzer_sys::fuzz_target!(|data: &[u8]| props::holds(data));
