//! Worker entry: verify pinning, build the loop, run it.
