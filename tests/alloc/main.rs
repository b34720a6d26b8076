//! Zero allocations: the parser on every vector, the relay parsers (chunked bodies,
//! response heads), and the serve loop per request, proxied requests included.
//!
//! A binary of its own because it installs a counting `#[global_allocator]`
//! (`support/alloc.rs`) for the whole process; both modules count only the allocations of
//! the thread under test into one process-wide counter, so they may share this binary but
//! not the main one, and each holds `support::serial::exclusive` while it counts. The bench
//! client's count (`tests/bench_alloc.rs`) watches every thread, so it has a binary alone.

#[path = "../support/mod.rs"]
mod support;

mod http;
mod proxy;
mod serving;

#[global_allocator]
static GLOBAL: support::alloc::Counting = support::alloc::Counting;
