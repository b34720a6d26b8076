//! Checks on the source and the build: the layers, the static ELF, the fuzz seed corpora,
//! the request path kept out of the size-optimised cold code.

mod allowed_skips;
mod cold_size;
pub(crate) mod fuzz_seeds;
mod layers;
mod static_binary;
