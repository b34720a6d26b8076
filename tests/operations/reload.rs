//! A reload that cannot work is refused and the running workers keep serving; a signal
//! steerd does not use never stops it.

use crate::support;

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

/// A HUP applies the start-up check of `--error-page` and `--fallback` (a regular file
/// under the root): with a page deleted the reload is refused in one line and the running
/// workers keep serving; with the page back the next HUP replaces them.
#[test]
fn a_reload_whose_error_page_or_fallback_is_gone_is_refused() {
    let dir = TempDir::new("reload-pages");
    let root = dir.path();
    std::fs::write(root.join("index.html"), b"home\n").unwrap();
    std::fs::write(root.join("404.html"), b"custom not found\n").unwrap();
    std::fs::write(root.join("app.html"), b"the app\n").unwrap();
    let args = [
        "--workers",
        "2",
        "--metrics",
        "127.0.0.1:0",
        "--error-page",
        "404=/404.html",
        "--fallback",
        "/app.html",
        "--fallback-skip",
        "txt",
    ];
    let server = Server::start_in(root, &args, &[]);
    server.wait_healthy();
    let serves = |what: &str| {
        assert_eq!(get(server.addr, "/index.html").0, 200, "{what}");
        assert_eq!(
            get(server.addr, "/deep/link").0,
            200,
            "{what}: the fallback"
        );
        assert_eq!(get(server.addr, "/nope.txt").0, 404, "{what}");
    };
    serves("at start");
    let mut refused = 0;
    for (page, flag) in [("404.html", "--error-page"), ("app.html", "--fallback")] {
        let before = server.worker_pids();
        let aside = root.join("aside");
        std::fs::rename(root.join(page), &aside).unwrap();
        server.signal(libc::SIGHUP);
        refused += 1;
        let line = server
            .wait_lines(|l| l.contains("reload: site: "), refused)
            .pop()
            .unwrap();
        assert_eq!(
            line,
            format!(
                "steerd: reload: site: {flag} /{page}: no such file under ROOT; \
                 keeping the running workers"
            )
        );
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(
            server.worker_pids(),
            before,
            "{page}: no worker was replaced"
        );
        assert!(before.iter().all(|&p| alive(p)));
        assert_eq!(
            get(server.addr, "/index.html").0,
            200,
            "{page} gone: still serving"
        );
        // The page is back: the next HUP goes through.
        std::fs::rename(&aside, root.join(page)).unwrap();
        server.signal(libc::SIGHUP);
        for (i, &old) in before.iter().enumerate() {
            wait_for_new_pid(&server, i, old);
        }
        server.wait_healthy();
        serves(page);
    }
}
