//! A reload that cannot work is refused and the running workers keep serving; a signal
//! steerd does not use never stops it.

mod support;

use std::time::Duration;
use support::server::*;

#[test]
fn a_reload_whose_log_or_root_cannot_be_opened_is_refused() {
    let logs = TempDir::new("reload-logs");
    let dir = logs.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let log = dir.join("access.log");
    let server = Server::start(&["--workers", "2", "--access-log", &log.display().to_string()]);
    server.wait_healthy();
    let before = server.worker_pids();
    // The log's directory disappears: a new worker could not open the log.
    std::fs::rename(&dir, logs.path().join("gone")).unwrap();
    server.signal(libc::SIGHUP);
    let line = server.wait_line(|l| l.contains("reload: access-log: "));
    assert!(
        line.contains("No such file or directory")
            && line.ends_with("; keeping the running workers"),
        "{line}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(server.worker_pids(), before, "no worker was replaced");
    assert!(before.iter().all(|&p| alive(p)));
    assert_eq!(get(server.addr, "/index.html").0, 200, "still serving");
    // The same for a root that is gone.
    std::fs::rename(logs.path().join("gone"), &dir).unwrap();
    let root = server.root.as_ref().unwrap().path().to_path_buf();
    let aside = root.with_extension("aside");
    std::fs::rename(&root, &aside).unwrap();
    server.signal(libc::SIGHUP);
    server.wait_line(|l| l.contains("reload: root: "));
    assert_eq!(server.worker_pids(), before);
    std::fs::rename(&aside, &root).unwrap();
    assert_eq!(get(server.addr, "/index.html").0, 200);
    assert!(
        !server.lines().iter().any(|l| l.contains("restarting")),
        "no worker was left restarting"
    );
}

#[test]
fn signals_steerd_does_not_use_are_ignored_by_master_and_workers() {
    let server = Server::start(&["--workers", "2"]);
    let procs: Vec<u32> = std::iter::once(server.pid)
        .chain(server.worker_pids())
        .collect();
    let rt = libc::SIGRTMIN() + 3;
    for sig in [
        libc::SIGALRM,
        libc::SIGVTALRM,
        libc::SIGPROF,
        libc::SIGIO,
        libc::SIGPWR,
        libc::SIGXCPU,
        libc::SIGXFSZ,
        libc::SIGPIPE,
        libc::SIGSTKFLT,
        rt,
    ] {
        for &p in &procs {
            // By number through kill(1): real-time signals have no name in the helpers.
            let sent = std::process::Command::new("kill")
                .args([format!("-{sig}"), p.to_string()])
                .status()
                .expect("kill");
            assert!(sent.success(), "kill -{sig} {p}");
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    for &p in &procs {
        assert!(alive(p), "pid {p} died of a signal it does not use");
    }
    assert_eq!(get(server.addr, "/index.html").0, 200);
    assert_eq!(server.worker_pids(), procs[1..], "nothing restarted");
}
