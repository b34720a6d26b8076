//! Checks on the source and the build: the layers, the static ELF, the fuzz seed corpora.

mod allowed_skips;
mod fuzz_seeds;
mod layers;
mod static_binary;
