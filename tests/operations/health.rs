//! `GET /health` on the `--metrics` address (200 when every planned worker serves, 503
//! otherwise, nothing logged) and `steerd probe URL [--timeout S]` (exit 0 on a 2xx
//! answer, 1 otherwise, one line), through the real binary.

use crate::support;

use std::process::Command;
use std::time::{Duration, Instant};
use support::server::*;

/// `steerd probe ARGS`: exit code, stdout, stderr.
fn probe(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(binary())
        .arg("probe")
        .args(args)
        .output()
        .expect("steerd probe");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Polls `/health` until it answers `want` (bounded). A `/health` left unanswered fails
/// with what each server process was doing and the server's last lines (once, under
/// qemu-aarch64, the master left one unanswered for 20 s).
fn wait_health(server: &Server, want: u16) {
    let deadline = Instant::now() + PATIENCE;
    let m = server.metrics.expect("metrics");
    loop {
        let (status, _) = try_get(m, "/health").unwrap_or_else(|e| {
            let doing: Vec<String> = server.pids().into_iter().map(doing).collect();
            let lines = server.lines();
            let last = &lines[lines.len().saturating_sub(20)..];
            panic!(
                "/health: {e}\n{}\nlast lines:\n{}",
                doing.join("\n"),
                last.join("\n")
            )
        });
        if status == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "/health stayed {status}, not {want}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn health_follows_the_workers_and_probe_exits_accordingly() {
    // Bounded waits on a worker's kill and respawn: not beside the HUP-storm and flood
    // tests (once, under qemu-aarch64 beside one, /health went unanswered for 20 s).
    let _measuring = crate::support::serial::exclusive();
    let logs = TempDir::new("health-logs");
    let log = logs.path().join("access.log");
    let server = Server::start(&["--workers", "2", "--access-log", &log.display().to_string()]);
    let m = server.metrics.expect("metrics");
    let url = format!("http://{m}/health");
    wait_health(&server, 200);
    let (code, out, err) = probe(&[&url]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.contains(" 200 "), "{out}");

    // A worker that cannot restart (its root is gone): not every planned worker serves.
    let root = server.root.as_ref().expect("root").path().to_path_buf();
    let aside = root.with_extension("aside");
    std::fs::rename(&root, &aside).unwrap();
    send_signal(server.worker_pid(1), libc::SIGKILL);
    wait_health(&server, 503);
    let (code, out, err) = probe(&[&url, "--timeout", "3s"]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("503"), "{err}");

    std::fs::rename(&aside, &root).unwrap();
    wait_health(&server, 200);
    assert_eq!(probe(&[&url]).0, 0);
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !log_text.contains("/health"),
        "health checks are not logged"
    );
    assert!(
        !server.lines().iter().any(|l| l.contains("/health")),
        "nor printed"
    );
}

#[test]
fn probe_fails_with_one_line_on_anything_but_2xx() {
    let server = Server::start(&["--workers", "1"]);
    let ok = format!("http://{}/index.html", server.addr);
    assert_eq!(probe(&[&ok]).0, 0);
    let missing = format!("http://{}/no-such-file", server.addr);
    let (code, _, err) = probe(&[&missing]);
    assert_eq!((code, err.lines().count()), (1, 1), "{err}");
    assert!(err.contains("404"), "{err}");
    // Nothing listens on a port just released.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let (code, _, err) = probe(&[&format!("http://127.0.0.1:{port}/"), "--timeout", "2s"]);
    assert_eq!((code, err.lines().count()), (1, 1), "{err}");
    assert!(err.contains("connect"), "{err}");
    // A server that accepts and never answers: the timeout ends the probe.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", silent.local_addr().unwrap());
    let (code, _, err) = probe(&[&url, "--timeout", "300ms"]);
    assert_eq!((code, err.lines().count()), (1, 1), "{err}");
    assert!(err.contains("no answer within"), "{err}");
    // Bad arguments are an argument error.
    assert_eq!(probe(&["ftp://x/"]).0, 2);
}
