//! Bring-up failures through the real binary: each is one `steerd: STAGE: ...` line on
//! stderr naming the step, with exit status 1, and no process left behind.

use crate::support;

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

/// `--access-log syslog` with no syslog socket stops the start before anything is bound.
#[test]
fn a_missing_syslog_socket_stops_the_start() {
    let root = TempDir::new("errors");
    let sock = root.path().join("no.sock");
    let (code, err) = serve_fails(&[
        &root.path().display().to_string(),
        "--listen",
        "127.0.0.1:0",
        "--access-log",
        "syslog",
        "--syslog-socket",
        sock.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(!err.contains("listening on"), "{err}");
    assert_eq!(
        last_line(&err),
        format!(
            "steerd: access-log: {}: cannot be connected to: No such file or directory (os error 2)",
            sock.display()
        ),
        "{err}"
    );
}

/// A log file the workers (`--user nobody`) could not open stops the start before
/// anything is bound, although the master (root) could open it.
#[test]
fn a_log_the_workers_cannot_open_stops_the_start() {
    if !is_root() {
        crate::support::skip::skip_or_fail(
            &crate::support::skip::this_test(),
            "needs root to check the log as --user nobody",
        );
        return;
    }
    let root = TempDir::new("errors");
    std::fs::write(root.path().join("index.html"), "x").unwrap();
    let private = TempDir::new("private-logs");
    std::fs::set_permissions(
        private.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let log = private.path().join("access.log");
    let (code, err) = serve_fails(&[
        &root.path().display().to_string(),
        "--listen",
        "127.0.0.1:0",
        "--user",
        "nobody",
        "--access-log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(!err.contains("listening on"), "{err}");
    let line = last_line(&err);
    let prefix = format!(
        "steerd: access-log: {}: cannot be opened as uid ",
        log.display()
    );
    assert!(line.starts_with(&prefix), "{err}");
    assert!(line.ends_with(": Permission denied (os error 13)"), "{err}");
    assert!(!log.exists(), "the master did not create it as root either");
}

/// A `--sysfs` or `--procfs` that is not a directory is refused by `check`, `topo` and
/// `serve` alike, before anything is read from it (it made a one-CPU machine, warned
/// about file by file, and `check` succeeded).
#[test]
fn a_kernel_root_that_is_not_a_directory_is_refused() {
    let root = TempDir::new("errors");
    let root = root.path().display().to_string();
    let missing = "/nonexistent-steerd-root";
    let cases: [&[&str]; 4] = [
        &["check", &root, "--sysfs", missing],
        &["topo", "--procfs", missing],
        &["topo", "--sysfs", missing],
        &[
            "serve",
            &root,
            "--listen",
            "127.0.0.1:0",
            "--sysfs",
            missing,
        ],
    ];
    for args in cases {
        let (code, err) = run_to_exit(Command::new(binary()).args(args));
        let flag = args[args.len() - 2];
        assert_eq!(code, 1, "{args:?}: {err}");
        assert_eq!(
            last_line(&err),
            format!("steerd: topology: {flag} {missing}: not a directory"),
            "{args:?}"
        );
    }
}
