//! Checks on the source and the build: the layers, the static ELF, the fuzz seed corpora.

mod allowed_skips;
pub(crate) mod fuzz_seeds;
mod layers;
mod static_binary;
