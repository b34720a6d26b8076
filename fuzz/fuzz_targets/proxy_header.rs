//! Fuzz target `proxy_header`. What it feeds the code and the properties it holds it to are in
//! `fuzz/props/proxy_header.rs`, which `tests/code/fuzz_seeds.rs` also runs on this target's seed
//! corpus (`fuzz/corpus/proxy_header/`) on every CPU the suite runs on.

#![no_main]

#[path = "../props/proxy_header.rs"]
mod props;

libfuzzer_sys::fuzz_target!(|data: &[u8]| props::holds(data));
