//! `steerd bench`: load generator and A/B statistics.
