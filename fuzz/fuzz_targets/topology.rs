//! Fuzz target `topology`. What it feeds the code and the properties it holds it to are in
//! `fuzz/props/topology.rs`, which `tests/code/fuzz_seeds.rs` also runs on this target's seed
//! corpus (`fuzz/corpus/topology/`) on every CPU the suite runs on.

#![no_main]

#[path = "../props/topology.rs"]
mod props;

libfuzzer_sys::fuzz_target!(|data: &[u8]| props::holds(data));
