//! A USR2 upgrade to a binary that passes `check` but cannot take over changes nothing,
//! through the real binary on real sockets, under a modest paced load: the previous
//! release (its `check` knows no handshake, its `serve` binds its own listener), and
//! wrappers whose `check` is the real one but whose `serve` exits 1, dies of SIGSEGV, or
//! hangs. After each: no request failed, the same master serves with the same workers,
//! `/health` answers 200 and TERM stops it. And `check` answers the handshake only for
//! the protocol it speaks.
//!
//! Each wrapper is a shell script installed at the master's path by rename, as a package
//! manager would: `check` execs the real steerd, anything else does the bad thing.

use super::zeroloss::{install_executable, serve_from_copy};
use crate::support;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use support::server::*;

/// How long an upgrade attempt may take to be settled: the two stages of the proof may
/// each run to their 15 s deadline, and under user-mode QEMU the real `check` is slow.
const SETTLED: Duration = Duration::from_secs(180);
/// Pause between two requests of the load: about 50 requests a second at most.
const PACE: Duration = Duration::from_millis(20);

/// One client thread sending `GET /f13` on a fresh connection every [`PACE`] until
/// stopped, counting answers that are the file and failures.
struct Load {
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
    failed: Arc<Mutex<Vec<String>>>,
    thread: Option<JoinHandle<()>>,
}

impl Load {
    fn start(addr: SocketAddr) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let ok = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(Mutex::new(Vec::new()));
        let (s, o, f) = (Arc::clone(&stop), Arc::clone(&ok), Arc::clone(&failed));
        let thread = std::thread::spawn(move || {
            while !s.load(Relaxed) {
                match try_get(addr, "/f13") {
                    Ok((200, body)) if body == "hello world!\n" => {
                        o.fetch_add(1, Relaxed);
                    }
                    other => f.lock().unwrap().push(format!("{other:?}")),
                }
                std::thread::sleep(PACE);
            }
        });
        Load {
            stop,
            ok,
            failed,
            thread: Some(thread),
        }
    }

    fn ok(&self) -> u64 {
        self.ok.load(Relaxed)
    }

    /// Waits until `more` requests past the count now have been answered, or until
    /// `dead` says nothing will answer them; true when they were.
    fn wait_for_more(&self, more: u64, dead: impl Fn() -> bool) -> bool {
        let want = self.ok() + more;
        let failing = || dead() && self.failed.lock().unwrap().len() >= 5;
        wait_until_within(SETTLED, || self.ok() >= want || failing());
        self.ok() >= want
    }

    /// Stops the client; (answered, failures).
    fn finish(mut self) -> (u64, Vec<String>) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().expect("load thread");
        }
        (self.ok(), std::mem::take(&mut *self.failed.lock().unwrap()))
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
    }
}

/// Polls `cond` every 50 ms for at most `within`; fails naming `what`.
fn wait_for(what: &str, within: Duration, cond: impl FnMut() -> bool) {
    assert!(
        wait_until_within(within, cond),
        "timed out waiting until {what}"
    );
}

/// Serves from a copy of the binary, installs `script` (a `/bin/sh` body; `$REAL` is the
/// real steerd, `$SITE` the served directory, `$ADDR` the listening address) at the
/// master's path, sends USR2 under load, and checks that the upgrade is refused with a
/// line holding every one of `needles` and that nothing changed.
fn refused_without_loss(what: &str, script: &str, needles: &[&str]) {
    let _measuring = crate::support::serial::exclusive();
    let (dir, exe, mut server) = serve_from_copy(&["--metrics", "127.0.0.1:0"]);
    let metrics = server.metrics.expect("--metrics");
    server.wait_healthy();
    let workers = server.worker_pids();
    let site = dir.path().join("site");
    let body = format!(
        "#!/bin/sh\nREAL='{}'\nSITE='{}'\nADDR='{}'\n{script}\n",
        binary(),
        site.display(),
        server.addr
    );
    let source = dir.path().join("script");
    std::fs::write(&source, body).unwrap();
    assert_eq!(install_executable(&source, dir.path()), exe);

    let load = Load::start(server.addr);
    let master = server.pid;
    assert!(
        load.wait_for_more(20, || false),
        "{what}: the load is answered"
    );
    server.signal(libc::SIGUSR2);
    let settled =
        |l: &str| l.contains("upgrade: refused: ") || l.contains("upgrade: re-executing ");
    let mut line = None;
    wait_for("the upgrade is settled", SETTLED, || {
        line = server.find_line(settled);
        line.is_some() || !alive(master)
    });
    // Everything wrong is gathered first, so a failure shows the whole picture.
    let mut wrong = Vec::new();
    let line = line.unwrap_or_else(|| "the master died without a word".into());
    if !line.contains("upgrade: refused: ") || !line.contains("the running master keeps serving") {
        wrong.push(format!("not refused: {line}"));
    }
    wrong.extend(
        needles
            .iter()
            .filter(|n| !line.contains(*n))
            .map(|n| format!("no {n:?} in {line}")),
    );
    if !load.wait_for_more(20, || !alive(master)) {
        wrong.push("the load is no longer answered".into());
    }
    let (answered, failures) = load.finish();
    eprintln!(
        "{what}: {answered} requests answered, {} failed",
        failures.len()
    );
    if !failures.is_empty() {
        let first = &failures[..failures.len().min(3)];
        wrong.push(format!("{} failed requests: {first:?}…", failures.len()));
    }
    if !alive(master) {
        wrong.push(format!("master {master} is gone"));
    } else if server.worker_pids() != workers {
        wrong.push("the workers changed".into());
    }
    let health = try_get(metrics, "/health").map(|r| r.0);
    if !matches!(health, Ok(200)) {
        wrong.push(format!("/health: {health:?}"));
    }
    if alive(master) {
        server.signal(libc::SIGTERM);
        let stopped = wait_until_within(3 * PATIENCE, || !alive(master));
        if !stopped {
            wrong.push("TERM does not stop the master".into());
        } else if !server.wait_exit(PATIENCE).success() {
            wrong.push("TERM: the master did not exit 0".into());
        }
    }
    assert!(wrong.is_empty(), "{what}: {}", wrong.join("; "));
}

/// Polls `cond` every 50 ms for at most `within`; whether it came true.
fn wait_until_within(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The previous release at the master's path: its `check` passes but knows no
/// handshake; its `serve` would bind its own listener, find the address in use, and exit.
#[test]
fn an_upgrade_to_the_previous_release_is_refused_by_the_handshake() {
    refused_without_loss(
        "previous release",
        r#"if [ "$1" = check ]; then exec env -u STEERD_UPGRADE_PROBE "$REAL" "$@"; fi
exec env -u STEERD_REEXEC_FDS -u STEERD_REEXEC_PID -u STEERD_REEXEC_WORKERS -u STEERD_UPGRADE_TRIAL "$REAL" serve "$SITE" --listen "$ADDR" --workers 2"#,
        &["check does not answer the upgrade handshake"],
    );
}

/// A wrapper whose `check` is the real one and whose `serve` exits 1.
#[test]
fn an_upgrade_to_a_serve_that_exits_is_refused_by_the_trial() {
    refused_without_loss(
        "serve exits 1",
        r#"if [ "$1" = check ]; then exec "$REAL" "$@"; fi
echo 'steerd: listen: cannot start' >&2
exit 1"#,
        &["serve (trial) exited with status 1", "cannot start"],
    );
}

/// A wrapper whose `check` is the real one and whose `serve` dies of SIGSEGV.
#[test]
fn an_upgrade_to_a_serve_that_crashes_is_refused_by_the_trial() {
    refused_without_loss(
        "serve crashes",
        r#"if [ "$1" = check ]; then exec "$REAL" "$@"; fi
kill -SEGV $$"#,
        &["serve (trial) killed by signal"],
    );
}

/// A wrapper whose `check` is the real one and whose `serve` never returns.
#[test]
fn an_upgrade_to_a_serve_that_hangs_is_refused_by_the_trial() {
    refused_without_loss(
        "serve hangs",
        r#"if [ "$1" = check ]; then exec "$REAL" "$@"; fi
exec sleep 600"#,
        &["serve (trial) did not finish within"],
    );
}

/// `check` answers the handshake only when asked for the protocol it speaks, so a master
/// of a later protocol refuses this binary as this one refuses an older release.
#[test]
fn check_answers_the_handshake_only_for_its_protocol() {
    let root = TempDir::new("handshake");
    let stderr = |probe: Option<&str>| {
        let mut cmd = std::process::Command::new(binary());
        cmd.arg("check")
            .arg(root.path())
            .args(["--listen", "127.0.0.1:0"]);
        match probe {
            Some(v) => cmd.env("STEERD_UPGRADE_PROBE", v),
            None => cmd.env_remove("STEERD_UPGRADE_PROBE"),
        };
        let out = cmd.output().expect("steerd check");
        assert!(out.status.success(), "{probe:?}: {out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(stderr(Some("1")).contains("steerd-upgrade-protocol 1: "));
    for other in [Some("2"), Some("x"), None] {
        let said = stderr(other);
        assert!(
            !said.contains("steerd-upgrade-protocol"),
            "{other:?}: {said}"
        );
    }
}
