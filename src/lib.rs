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
//! Plan -----------------------------> steer::Program     (asm-bpf text -> checked bytecode)
//! Plan -----------------------------> listen::Listeners  (one reuseport socket per worker,
//!                                                         each made on that worker's CPU;
//!                                                         program attached after the last listen)
//! master ---------------------------> fork, pin, supervise (master.rs) -> worker.rs
//! worker: event.rs (epoll) -> conn.rs (state machine) -> http/ (parser, response)
//!         -> files.rs (openat2 under the root, sendfile) -> keep-alive or close
//! every stage ----------------------> stats.rs (shared counters) -> metrics, check output
//! ```
//!
//! `sys.rs` holds the few raw calls rustix lacks and is the only module allowed `unsafe`.
//! `cmd/` maps subcommands onto the pipeline; `bench/` is the load generator and A/B tool.

#![deny(unsafe_code)]

pub mod args;
pub mod bench;
pub mod cmd;
pub mod conn;
pub mod cpuset;
pub mod event;
pub mod files;
pub mod http;
pub mod json;
pub mod listen;
pub mod master;
pub mod plan;
pub mod serve_loop;
pub mod stats;
pub mod steer;
pub mod sys;
pub mod topology;
pub mod user;
pub mod worker;
