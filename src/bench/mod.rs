//! `steerd bench`: load generator and A/B statistics.

pub mod hist;
pub mod stats;
