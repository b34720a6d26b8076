//! The integration tests, by subject, in one binary over one harness (`support/`).
//!
//! - `http`: the request parser on the vectors in `tests/data/http/`, and against httparse.
//! - `serving`: what a client sees: files, ranges, errors, listings, auth, CORS, media
//!   types, keep-alive, fairness, listeners (the serve loop in-process and the binary).
//! - `operations`: what an operator sees: logs, metrics, health, the dashboard, signals,
//!   reloads and upgrades, the supervisor, socket activation, readiness, PID 1.
//! - `cli`: the command line: flags, start-up checks and their errors, `check`, `bpf`.
//! - `steering`: topology, the plan, the steering program and the kernel running it.
//! - `bench`: `steerd bench`: load, A/B comparisons, the figures page.
//! - `vm`: the static binary in VMs, containers, under systemd and on other CPUs.
//! - `ci`: what CI fetches from outside, against a stand-in mirror: suites, retries, the cache.
//! - `code`: checks on the source and the build: layers, the static ELF, the fuzz seeds.
//!
//! Tests run in parallel threads of this one process: a test that measures time or load
//! takes `support::serial::exclusive()` so no other measuring test runs beside it. What
//! cannot share a process has a binary of its own: `tests/alloc/` and
//! `tests/bench_alloc.rs` (a counting global allocator).

mod support;

mod bench;
mod ci;
mod cli;
mod code;
mod http;
mod operations;
mod serving;
mod steering;
mod vm;
