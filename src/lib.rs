//! steerd: a static HTTP/1.1 server that handles every connection on the CPU where its
//! packets arrive.
//!
//! The modules are declared in pipeline order. Data flows one way; each stage consumes
//! only what the stage before it produced:
//!
//! ```text
//! flags ----------------------------> args::Command     (validated, no syscalls)
//! /sys, affinity, cgroup -----------> topology::Topology (what the machine is)
//! Args + Topology ------------------> plan::Plan         (pure: CPUs, master, CPU -> index)
//! Plan -----------------------------> steer::SteerProgram (asm-bpf text -> checked bytecode)
//! Plan -----------------------------> listen::Listeners  (one reuseport socket per worker,
//!                                                         each made on that worker's CPU;
//!                                                         program attached after the last listen)
//! master ---------------------------> fork, pin, supervise (master.rs) -> worker.rs
//! worker: serve_loop.rs (accept, timers) -> event.rs (epoll) -> conn.rs (state machine)
//!         -> http/ (parser, response)
//!         -> files.rs (openat2 under the root, sendfile) -> keep-alive or close
//! every stage ----------------------> stats.rs (shared counters) -> metrics, check output
//! ```
//!
//! `sys.rs` holds the few raw calls rustix lacks and is the only module allowed `unsafe`.
//! `cmd/` maps subcommands onto the pipeline; `bench/` is the load generator and A/B tool.

#![deny(unsafe_code)]

// Each module stands alone in its group so that rustfmt keeps pipeline order.

// Stage 1: flags to a validated command (no syscalls); CPU sets and lists.
pub mod args;

pub mod cpuset;

// Stage 2: /sys, /proc, affinity and cgroup to a Topology.
pub mod topology;

// Stage 3: (ServeArgs, Topology) to a Plan. Pure.
pub mod plan;

// Stage 4: Plan to a checked, interpreter-verified steering program.
pub mod steer;

// Stage 5: reuseport listeners in plan order, each made on its worker's CPU.
pub mod listen;

// The master: pin, bind, fork, supervise, signals, privileges, metrics.
pub mod master;

pub mod user;

// A worker: pin, verify, open the root, run the loop.
pub mod worker;

// The worker's loop: epoll, the connection state machine, HTTP, files.
pub mod serve_loop;

pub mod event;

pub mod conn;

pub mod http;

pub mod files;

// The real client address behind a proxy: PROXY headers, trusted networks, X-Forwarded-For.
pub mod client_addr;

// Access log lines (combined, common, json) and their syslog framing.
pub mod log_line;

pub mod access_log;

// Counters shared by master and workers; the metrics text.
pub mod stats;

// The only module allowed `unsafe`: raw calls rustix lacks.
pub mod sys;

// Tools around the pipeline: the A/B bench, hand-written JSON, subcommand dispatch.
pub mod bench;

pub mod json;

pub mod cmd;
