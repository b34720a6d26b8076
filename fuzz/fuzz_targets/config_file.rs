//! Fuzz target `config_file`. What it feeds the code and the properties it holds it to are in
//! `fuzz/props/config_file.rs`, which `tests/code/fuzz_seeds.rs` also runs on this target's seed
//! corpus (`fuzz/corpus/config_file/`) on every CPU the suite runs on.

#![no_main]

#[path = "../props/config_file.rs"]
mod props;

libfuzzer_sys::fuzz_target!(|data: &[u8]| props::holds(data));
