//! Bring-up failures through the real binary: each is one `steerd: STAGE: ...` line on
//! stderr naming the step, with exit status 1, and no process left behind.

mod support;

use std::process::Command;
use support::server::*;

/// Runs `steerd serve ARGS` to completion (bounded).
fn serve_fails(args: &[&str]) -> (i32, String) {
    run_to_exit(Command::new(binary()).arg("serve").args(args))
}

fn last_line(stderr: &str) -> &str {
    stderr.lines().last().unwrap_or("")
}

#[test]
fn a_port_held_by_another_socket_names_the_bind_step() {
    let holder = std::net::TcpListener::bind("127.0.0.1:0").expect("hold a port");
    let addr = holder.local_addr().unwrap().to_string();
    let root = TempDir::new("errors");
    let (code, err) = serve_fails(&[&root.path().display().to_string(), "--listen", &addr]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        last_line(&err),
        format!("steerd: listen: {addr} is already in use"),
        "{err}"
    );
}

/// A second `serve` on a live server's address must not join its reuseport group (same
/// uid, so the kernel would let it in): it refuses, and the first server still answers.
#[test]
fn a_second_serve_on_the_same_address_refuses_to_start() {
    let first = Server::start(&["--workers", "1"]);
    let addr = first.addr.to_string();
    let root = TempDir::new("errors");
    let (code, err) = serve_fails(&[
        &root.path().display().to_string(),
        "--listen",
        &addr,
        "--workers",
        "1",
    ]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        last_line(&err),
        format!("steerd: listen: {addr} is already in use"),
        "{err}"
    );
    let (status, body) = get(first.addr, "/index.html");
    assert_eq!((status, body.as_str()), (200, "hello from steerd\n"));
}

#[test]
fn a_missing_root_is_reported_before_any_worker_starts() {
    let dir = TempDir::new("errors");
    let missing = dir.path().join("no-such-dir");
    let (code, err) = serve_fails(&[&missing.display().to_string(), "--listen", "127.0.0.1:0"]);
    assert_eq!(code, 1, "{err}");
    let want = format!(
        "steerd: root: {}: No such file or directory",
        missing.display()
    );
    assert!(last_line(&err).starts_with(&want), "{err}");
    assert!(!err.contains("running on cpu"), "no worker started: {err}");
}

#[test]
fn an_unknown_user_is_reported() {
    let root = TempDir::new("errors");
    let (code, err) = serve_fails(&[
        &root.path().display().to_string(),
        "--listen",
        "127.0.0.1:0",
        "--user",
        "no-such-user-steerd",
    ]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        last_line(&err),
        "steerd: user: user \"no-such-user-steerd\" is not in /etc/passwd"
    );
}

#[test]
fn a_metrics_address_in_use_names_the_metrics_step() {
    let holder = std::net::TcpListener::bind("127.0.0.1:0").expect("hold a port");
    let addr = holder.local_addr().unwrap().to_string();
    let root = TempDir::new("errors");
    let (code, err) = serve_fails(&[
        &root.path().display().to_string(),
        "--listen",
        "127.0.0.1:0",
        "--metrics",
        &addr,
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        last_line(&err).starts_with(&format!("steerd: metrics: {addr}: ")),
        "{err}"
    );
}
