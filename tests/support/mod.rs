//! Shared by the integration tests: one module tree, each test taking what it needs.
//!
//! - `alloc.rs`: the counting global allocator of the zero-allocation tests.
//! - `guard.rs`: a buffer that ends right before an unreadable page (parser edge tests).
//! - `responder.rs`: a `steerd bench responder` child on a free loopback port.
//! - `chromium.rs`: headless Chromium: the DOM a page makes, its script errors, screenshots.
//! - [`free_port`]: a loopback port nothing listens on (for command lines that need one).
//! - [`target_dir`]: where cargo builds (`CARGO_TARGET_DIR` honoured), for the static
//!   binaries `scripts/static.sh` leaves there.
//! - `server.rs`: the real binary: a command run to its end ([`server::run_steerd`]),
//!   `steerd serve` started, wait for its startup lines,
//!   plain requests read to the close, `/metrics`, signals, CPU pinning.
//! - `in_process.rs`: a site tree and the serve loop on a thread of the test process.
//! - `client.rs`: one framed HTTP/1.1 response at a time (headers, body, keep-alive).
//! - `skip.rs`: a test that cannot run says so, and fails instead under `CI=true`.
//! - `bounds.rs`: latency and ordering bounds under load, asserted only when benchmarking.
//! - `serial.rs`: one lock that tests measuring time or load take, so none runs beside another.
//! - `http_cases.rs`: the parser's test vectors (`tests/data/http/`) read and rendered.
//! - `upstream.rs`: a recording upstream for `--proxy` (unix socket or loopback port),
//!   answering as each test says, reading requests with its own parser (`upstream_parse.rs`).
//! - `fixtures.rs`: the captured `/sys` trees of `tests/data/sys/`, by name or all of them.
//!
//! Every process started here is killed by its PID when its handle drops, and every
//! wait is bounded.

#![allow(dead_code)]

pub(crate) mod alloc;
pub(crate) mod bounds;
pub(crate) mod chromium;
pub(crate) mod client;
pub(crate) mod fixtures;
pub(crate) mod guard;
pub(crate) mod http_cases;
pub(crate) mod in_process;
pub(crate) mod responder;
pub(crate) mod serial;
pub(crate) mod server;
pub(crate) mod skip;
pub(crate) mod upstream;
pub(crate) mod upstream_parse;

/// A loopback TCP port that was free a moment ago (bound to port 0, then closed).
pub(crate) fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind port 0");
    l.local_addr().expect("local address").port()
}

/// The cargo target directory: `CARGO_TARGET_DIR` when set (relative to the repository,
/// where cargo runs the tests, when relative), else `target/` in the repository.
pub(crate) fn target_dir() -> std::path::PathBuf {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => repo.join(dir),
        None => repo.join("target"),
    }
}
