//! steerd as PID 1 of a PID namespace (`unshare --pid --fork`), as in a container with no
//! init: it reaps every child, its workers and orphans that the kernel hands to it
//! alike, and stops on TERM, INT and QUIT (the kernel delivers to a namespace's PID 1 only
//! the signals it handles, so a default action that would stop an ordinary process does
//! nothing here).

use crate::support;

use std::process::Command;
use support::server::*;

/// Whether `pid` is a zombie (exited, not yet reaped).
fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

/// `steerd serve` as PID 1 of a new PID namespace; returns the server (whose pid is
/// `unshare`'s) and steerd's pid as seen from here, or `None` when namespaces cannot be
/// made here.
fn start_as_pid1() -> Option<(Server, u32)> {
    if !is_root() {
        crate::support::skip::skip_or_fail(
            &crate::support::skip::this_test(),
            "a PID namespace needs root",
        );
        return None;
    }
    let probe = Command::new("unshare")
        .args(["--pid", "--fork", "true"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        crate::support::skip::skip_or_fail(
            &crate::support::skip::this_test(),
            "unshare --pid --fork does not work here",
        );
        return None;
    }
    let root = TempDir::new("pid1");
    std::fs::write(root.path().join("index.html"), b"pid one\n").unwrap();
    let mut cmd = Command::new("unshare");
    cmd.args(["--pid", "--fork", "--kill-child", binary(), "serve"])
        .arg(root.path())
        .args(["--listen", "127.0.0.1:0", "--workers", "2"]);
    let mut server = Server::spawn(&mut cmd);
    server.root = Some(root);
    let line = server.wait_line(|l| l.starts_with("steerd: policy "));
    assert!(line.ends_with(", pid 1"), "steerd is PID 1 inside: {line}");
    let inner = children(server.pid);
    assert_eq!(inner.len(), 1, "unshare has one child: {inner:?}");
    Some((server, inner[0]))
}

#[test]
fn pid1_reaps_orphans_and_killed_workers() {
    let Some((server, steerd)) = start_as_pid1() else {
        return;
    };
    assert_eq!(get(server.addr, "/index.html"), (200, "pid one\n".into()));
    let workers = children(steerd);
    assert_eq!(workers.len(), 2, "{workers:?}");
    // An orphan: a shell entered into the namespace starts a subshell and exits at once,
    // so the kernel hands the subshell to the namespace's PID 1. The subshell waits on a
    // FIFO this test holds, so it lives until the test has seen it adopted.
    let dir = TempDir::new("pid1-fifo");
    let fifo = dir.path().join("go");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let script = format!("(read line < {}; exit 3) & exit 0", fifo.display());
    // No pipes: the orphan would hold them open, and waiting for their end would wait
    // for the orphan.
    let entered = Command::new("nsenter")
        .args(["--target", &steerd.to_string(), "--pid", "--"])
        .args(["sh", "-c", &script])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("nsenter");
    assert!(entered.success(), "{entered:?}");
    wait_until("the orphan is adopted by steerd", || {
        children(steerd).iter().any(|p| !workers.contains(p))
    });
    std::fs::write(&fifo, b"go\n").expect("release the orphan");
    wait_until("the orphan has exited and been reaped", || {
        children(steerd).iter().all(|p| workers.contains(p))
    });
    // A killed worker is reaped and replaced.
    send_signal(workers[0], libc::SIGKILL);
    wait_until("the killed worker is reaped and replaced", || {
        let now = children(steerd);
        now.len() == 2 && !now.contains(&workers[0]) && now.iter().all(|&p| !zombie(p))
    });
    assert_eq!(get(server.addr, "/index.html").0, 200);
    // An upgrade re-executes PID 1 in place: the namespace lives on, the workers are
    // replaced, PID 1 still serves.
    let before = children(steerd);
    send_signal(steerd, libc::SIGUSR2);
    server.wait_line(|l| l.contains("upgrade: re-executing ") && l.contains("as pid 1 "));
    server.wait_line(|l| l.contains("upgrade: this binary took over 2 workers"));
    wait_until("the workers before the upgrade have retired", || {
        let now = children(steerd);
        now.len() == 2 && now.iter().all(|p| !before.contains(p) && !zombie(*p))
    });
    assert!(alive(steerd), "the same PID 1");
    assert_eq!(get(server.addr, "/index.html").0, 200);
}

#[test]
fn pid1_stops_on_term_int_and_quit() {
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGQUIT] {
        let Some((mut server, steerd)) = start_as_pid1() else {
            return;
        };
        assert_eq!(get(server.addr, "/index.html").0, 200);
        send_signal(steerd, sig);
        let status = server.wait_exit(PATIENCE);
        assert!(status.success(), "signal {sig}: {status:?}");
        assert!(
            std::net::TcpStream::connect(server.addr).is_err(),
            "signal {sig}: nothing listens any more"
        );
    }
}
