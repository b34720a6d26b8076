//! steerd: a static HTTP/1.1 server that handles every connection on the CPU where its
//! packets arrive.
//!
//! The modules are declared in pipeline order, and the import graph agrees with it: a
//! module imports only modules declared above it (`tests/code/layers.rs` checks this, and the
//! forbidden edges below). Data flows one way; each stage consumes only what the stages
//! before it produced:
//!
//! ```text
//! flags ----------------------------> args::Command     (validated, no syscalls)
//! /sys, affinity, cgroup -----------> topology::Topology (what the machine is)
//! ServeArgs + Topology -------------> plan::Plan + config::Serving (pure)
//! Plan -----------------------------> steer::SteerProgram (asm-bpf text -> checked bytecode)
//! Plan -----------------------------> listen::Listeners  (one reuseport socket per worker,
//!                                                         each made on that worker's CPU;
//!                                                         program attached after the last listen)
//! Serving + Plan + program ---------> master: fork, pin, supervise -> worker -> serve_loop
//! serve_loop: event (epoll), timers, access_log (log_line) -> conn (state machine,
//!         client_addr for PROXY headers and X-Forwarded-For)
//!         -> http (parser, response) -> the request's host (site::hosts names it,
//!         conn/hosts puts its root, rules and file cache in place; 421 for none)
//!         and files (openat2 under the host's root, sendfile
//!         of pages found cached; a miss read off the loop by disk's I/O threads)
//!         and listing (`--list-dirs`: directories in sorted batches, fixed memory)
//! every stage ----------------------> stats (shared counters) -> metrics, check output,
//!                                     dashboard (page, status.json)
//! ```
//!
//! The serving runtime is declared from the bottom up (files first, the master last),
//! because each part is built from the ones before it. Below everything sits `sys`, the
//! raw calls rustix lacks, which imports nothing from the crate and is the only module
//! allowed `unsafe`, besides two items outside it: one SSE2 step in `http/scan.rs`, and
//! in `stats.rs` the `unsafe impl` of `sys::SharedZeroed` for the counter block (a
//! marker whose contract, zero bytes are a valid value, two compile-time size checks
//! beside it hold). `http` (the protocol as
//! pure functions) and `site` (the operator's serving rules as validated values) sit with
//! the foundations: the flags are validated with them and `config::Serving` carries the
//! rules. After
//! planning only the plan and `config::Serving` flow: the master, workers and the loop
//! import nothing from `args`; `http` imports neither `sys` nor the loop; `topology`
//! imports neither `plan` nor `args`. `cmd/` maps subcommands onto the pipeline; `bench/`
//! is the load generator and A/B tool. The layout is drawn in `docs/design.md`.
//!
//! A module is `pub` only when something outside the library names it: the binary
//! (`src/main.rs`, which calls `cmd::run`), `tests/`, `benches/` or `fuzz/`; every other
//! module is private, and inside the crate an item is `pub(crate)` unless one of those
//! uses it (`unreachable_pub` warns about the rest).

#![deny(unsafe_code)]
// The appliance builds compile the cold functions for size (the `cold-size` feature,
// Cargo.toml; docs/appliance.md).
#![cfg_attr(feature = "cold-size", feature(optimize_attribute))]

// Each module stands alone in its group so that rustfmt keeps pipeline order.

// Foundations: raw calls rustix lacks (the only `unsafe`), one-line logging, CPU ids and
// sets; HTTP (parser, response heads, dates, ranges, codings) and the operator's site
// rules, pure values both; the serving configuration as plain values; hand-written JSON
// and SVG.
pub mod sys;

mod say;

// Named threads with a bounded stack, one copy of std's spawning code for all of them.
mod small_thread;

pub mod cpuset;

pub mod http;

pub mod site;

pub mod config;

mod json;

mod svg;

// gzip of our own (LZ77, Huffman codes, CRC-32): what `--compress gzip` sends.
pub mod deflate;

// Password hashes (bcrypt, SHA-crypt) and the keyed hash of remembered credentials.
pub mod crypt;

// Stage 1: flags to a validated command (no syscalls).
pub mod args;

// Stage 2: /sys, /proc, affinity and cgroup to a Topology.
pub mod topology;

// Stage 3: (ServeArgs, Topology) to a Plan and the Serving configuration. Pure.
pub mod plan;

// Stage 4: Plan to a checked, interpreter-verified steering program.
pub mod steer;

// Stage 5: reuseport listeners in plan order, each made on its worker's CPU.
mod listen;

// The serving runtime, bottom up (HTTP is among the foundations).
// Files under the root: openat2, metadata, the small-file cache.
pub mod files;

// Directory listings (`--list-dirs`): sorted batches in fixed memory, HTML or JSON.
mod listing;

// The real client address behind a proxy: PROXY headers, X-Forwarded-For.
pub mod client_addr;

// Who may read the site (`--basic-auth`): the htpasswd file, the header, the per-loop
// memory of verdicts and budget of hash checks.
pub mod auth;

// Access log lines (combined, common, json) and their syslog framing.
mod log_line;

// epoll readiness with generation-checked tokens.
mod event;

// Connection deadlines, one FIFO per timeout kind.
mod timers;

// The access log: a per-worker buffer written to a file, standard output or syslog.
mod access_log;

// Counters shared by master and workers; the metrics text and its server.
pub mod stats;

// Reads that would wait for the disk, done by the worker's I/O threads off the loop.
mod disk;

// One connection's protocol state machine.
mod conn;

// The worker's loop: accept, epoll, timers, the connection slots.
pub mod serve_loop;

// What TERM, INT, QUIT, HUP, USR1 and USR2 mean, for master and workers alike.
mod signals;

// Resolving `--user` against /etc/passwd and /etc/group.
mod user;

// Hand-overs with the outside: descriptors a parent passed (socket activation, an
// upgrade), service-manager notifications, starting the next binary (USR2).
mod inherit;

mod notify;

mod upgrade;

// A worker: pin, verify, open the root, run the loop.
mod worker;

// What a worker needs (user, root, access log), checked as the worker will meet it.
mod preflight;

// What the master answers on the metrics address: the dashboard page, status.json, the
// Prometheus text.
mod dashboard;

// The master: pin, bind, fork, supervise, signals, privileges, metrics.
mod master;

// Tools around the pipeline: the A/B bench, subcommand dispatch.
pub mod bench;

pub mod cmd;

// The unit tests' skip: the integration tests' own file, one rule for both.
#[cfg(test)]
#[allow(dead_code)]
#[path = "../tests/support/skip.rs"]
mod test_skip;
