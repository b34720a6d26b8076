//! Zero-loss operations through the real binary, under keep-alive load from
//! `steerd bench load`: ten HUPs and two binary upgrades (USR2, to a copy of the binary)
//! lose no request; QUIT refuses new connections at once and lets responses in flight
//! finish; a worker killed with `kill -9` costs one error per connection it held, no more.
//!
//! The rule that makes the first one true: a retiring worker answers the next request on
//! each keep-alive connection with `Connection: close` and closes after that response,
//! and closes a connection that stays idle only at the keep-alive (or shutdown) timeout,
//! so it never closes a connection a client may be sending on.

use crate::support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::server::*;

/// A running `steerd bench load --json`.
struct Load {
    child: Option<Child>,
    until: Instant,
}

/// What a load run reports (its `merged` totals).
#[derive(Debug)]
struct LoadResult {
    requests: u64,
    errors: u64,
    by_kind: String,
}

impl Load {
    /// `steerd bench load http://ADDR/PATH -c CONNS -d SECSs --json` (keep-alive), with
    /// its two threads pinned to `pin` when given.
    fn start(
        addr: std::net::SocketAddr,
        path: &str,
        conns: u32,
        secs: u64,
        pin: Option<&str>,
    ) -> Load {
        let mut cmd = Command::new(binary());
        cmd.args(["bench", "load", &format!("http://{addr}{path}")]);
        if let Some(cpus) = pin {
            cmd.args(["--pin", cpus]);
        }
        let child = cmd
            .args(["-c", &conns.to_string(), "-t", "2"])
            .args(["-d", &format!("{secs}s"), "--json"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("steerd bench load");
        Load {
            child: Some(child),
            until: Instant::now() + Duration::from_secs(secs),
        }
    }

    /// True while the load is still sending.
    fn running(&self) -> bool {
        Instant::now() + Duration::from_millis(300) < self.until
    }

    fn finish(mut self) -> LoadResult {
        let out = self
            .child
            .take()
            .expect("running")
            .wait_with_output()
            .expect("bench load output");
        assert!(out.status.success(), "bench load failed: {out:?}");
        let v: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("bench load --json output");
        let merged = &v["merged"];
        let kinds = merged["errors"].as_object().expect("errors by kind");
        LoadResult {
            requests: merged["requests"].as_u64().expect("requests"),
            errors: kinds.values().filter_map(|e| e.as_u64()).sum(),
            by_kind: merged["errors"].to_string(),
        }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Copies the binary under test to `dir/steerd` (replacing any earlier copy by rename,
/// as a package manager does) and returns the path.
fn install_copy(dir: &Path) -> std::path::PathBuf {
    install_executable(Path::new(binary()), dir)
}

/// Installs `source` as `dir/steerd`, mode 0755, through `dir/steerd.new` and a rename.
/// The copy is written by an `install` process of its own, not by this one: a test
/// thread that forks while this process holds the write descriptor keeps it until it
/// execs, and executing the copy in that window fails with ETXTBSY (seen in CI under
/// user-mode QEMU, where that window is long).
pub(super) fn install_executable(source: &Path, dir: &Path) -> std::path::PathBuf {
    let dest = dir.join("steerd");
    let tmp = dir.join("steerd.new");
    let installed = Command::new("install")
        .args(["-m", "0755"])
        .arg(source)
        .arg(&tmp)
        .status()
        .expect("run install");
    assert!(
        installed.success(),
        "install {}: {installed}",
        source.display()
    );
    std::fs::rename(&tmp, &dest).expect("install the copy");
    dest
}

/// `steerd serve` started from a copy of the binary in a directory of its own (which
/// also holds the site: `f13` is `hello world!\n`), two workers, `extra` flags.
pub(super) fn serve_from_copy(extra: &[&str]) -> (TempDir, std::path::PathBuf, Server) {
    let dir = TempDir::new("upgrade");
    let exe = install_copy(dir.path());
    let site = dir.path().join("site");
    std::fs::create_dir(&site).unwrap();
    std::fs::write(site.join("f13"), b"hello world!\n").unwrap();
    let server = Server::spawn(
        Command::new(&exe)
            .args(["serve", &site.display().to_string()])
            .args(["--listen", "127.0.0.1:0", "--workers", "2"])
            .args(extra),
    );
    (dir, exe, server)
}

#[test]
fn ten_hups_and_two_upgrades_under_keepalive_load_lose_nothing() {
    let _measuring = crate::support::serial::exclusive();
    let extra = ["--keepalive-timeout", "5", "--shutdown-timeout", "10"];
    let (bin, _exe, mut server) = serve_from_copy(&extra);
    let load = Load::start(server.addr, "/f13", 20, 25, None);
    std::thread::sleep(Duration::from_millis(500));
    for n in 1..=10 {
        server.signal(libc::SIGHUP);
        server.wait_lines(|l| l.contains("reload: starting new workers"), n);
        std::thread::sleep(Duration::from_millis(300));
    }
    for n in 1..=2 {
        let before = server.worker_pids();
        install_copy(bin.path());
        server.signal(libc::SIGUSR2);
        let line = server.wait_lines(|l| l.contains("upgrade: re-executing "), n);
        assert!(
            line[n - 1].contains(&format!("as pid {} ", server.pid)),
            "the master re-executes in place: {line:?}"
        );
        server.wait_lines(|l| l.contains("upgrade: this binary took over "), n);
        wait_until("the workers before the upgrade have all retired", || {
            let now = server.worker_pids();
            now.iter().all(|p| !before.contains(p)) && before.iter().all(|&p| !alive(p))
        });
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(
        load.running(),
        "the operations outlasted the load, so the run does not cover them all"
    );
    let result = load.finish();
    eprintln!("10 HUPs and 2 upgrades under keep-alive load: {result:?}");
    assert!(result.requests > 0);
    assert_eq!(result.errors, 0, "failed requests: {}", result.by_kind);
    assert_eq!(get(server.addr, "/f13"), (200, "hello world!\n".into()));
    assert!(alive(server.pid), "the same master serves");
    server.signal(libc::SIGTERM);
    assert!(
        server.wait_exit(Duration::from_secs(10)).success(),
        "the upgraded master, still our child, stops cleanly"
    );
}

#[test]
fn quit_refuses_new_connections_at_once_and_finishes_responses_in_flight() {
    let _measuring = crate::support::serial::exclusive();
    use std::io::{Read, Write};
    const SIZE: usize = 32 << 20;
    let mut server = Server::start(&["--workers", "2", "--shutdown-timeout", "30"]);
    let root = server.root.as_ref().expect("root").path().to_path_buf();
    std::fs::write(root.join("big.bin"), vec![5u8; SIZE]).expect("big file");
    let mut s = std::net::TcpStream::connect(server.addr).expect("connect");
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut got = vec![0u8; 64 << 10];
    let first = s.read(&mut got).expect("the response started");
    server.signal(libc::SIGQUIT);
    // New connections are refused (not queued) while the download is still unread.
    wait_until("a new connection is refused", || {
        matches!(
            std::net::TcpStream::connect(server.addr),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused
        )
    });
    assert!(alive(server.pid), "the master waits for the download");
    let mut rest = Vec::new();
    s.read_to_end(&mut rest)
        .expect("the download completes, no reset");
    let head = got[..first]
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("head")
        + 4;
    assert_eq!(first - head + rest.len(), SIZE, "the whole body arrived");
    assert!(server.wait_exit(PATIENCE).success());
}

#[test]
fn a_killed_worker_costs_one_error_per_connection_it_held() {
    let _measuring = crate::support::serial::exclusive();
    let Some((a, b)) = two_cpus() else { return };
    let server = Server::start(&["--workers", "2", "--cpus", &format!("{a},{b}")]);
    let (victim, _) = server.plan()[1];
    let pid = server.worker_pid(victim);
    // Client threads on both CPUs: each worker holds some of the connections.
    let load = Load::start(server.addr, "/index.html", 20, 4, Some(&format!("{a},{b}")));
    let open_series = |m: &std::collections::HashMap<String, u64>| -> u64 {
        m.iter()
            .filter(|(k, _)| {
                k.starts_with(&format!("steerd_connections_open{{worker=\"{victim}\","))
            })
            .map(|(_, v)| *v)
            .sum()
    };
    let mut held = 0;
    wait_until("the load's connections are open", || {
        let m = server.metrics();
        held = open_series(&m);
        family_sum(&m, "steerd_connections_open") >= 20
    });
    send_signal(pid, libc::SIGKILL);
    wait_for_new_pid(&server, victim, pid);
    assert!(load.running(), "the kill happened during the load");
    let result = load.finish();
    eprintln!("worker {victim} held {held} connections when killed: {result:?}");
    assert!(held > 0, "the killed worker held connections");
    assert!(
        result.errors <= held,
        "more errors ({}) than connections the killed worker held ({held}): {}",
        result.errors,
        result.by_kind
    );
    assert!(result.requests > 0);
}

/// An upgrade to a binary that cannot serve is refused before anything changes: one line
/// says why and the running master keeps serving with the same workers. Not
/// executable; exits at once; crashes; hangs; refuses the arguments as `check` would.
#[test]
fn a_failed_upgrade_leaves_the_running_master_serving() {
    let _measuring = crate::support::serial::exclusive();
    use std::os::unix::fs::PermissionsExt;
    let (bin, exe, server) = serve_from_copy(&[]);
    let workers = server.worker_pids();
    let install_script = |body: &str| {
        let source = bin.path().join("script");
        std::fs::write(&source, format!("#!/bin/sh\n{body}\n")).unwrap();
        assert_eq!(install_executable(&source, bin.path()), exe);
    };
    let mut refusals = 0;
    let mut expect_refusal = |what: &str, needles: &[&str]| {
        server.signal(libc::SIGUSR2);
        refusals += 1;
        let lines = server.wait_lines(|l| l.contains("the running master keeps serving"), refusals);
        let line = &lines[refusals - 1];
        assert!(line.contains("upgrade: refused: "), "{what}: {line}");
        for n in needles {
            assert!(line.contains(n), "{what}: no {n:?} in {line}");
        }
        assert_eq!(
            get(server.addr, "/f13"),
            (200, "hello world!\n".into()),
            "{what}"
        );
        assert_eq!(
            server.worker_pids(),
            workers,
            "{what}: the same workers serve"
        );
        assert!(alive(server.pid), "{what}");
    };
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o644)).unwrap();
    expect_refusal("not executable", &["cannot run ", "Permission denied"]);
    std::fs::remove_file(&exe).unwrap();
    expect_refusal("missing", &["cannot run ", "No such file"]);
    install_script("echo 'steerd: root: nope' >&2; exit 3");
    expect_refusal("exits 3", &["check exited with status 3", "root: nope"]);
    install_script("kill -SEGV $$");
    expect_refusal("crashes", &["check killed by signal"]);
    // Not the real check's arguments: the copy of the binary refuses a bad flag value.
    let real = binary();
    install_script(&format!("exec {real} \"$@\" --workers 0"));
    expect_refusal("refuses its arguments", &["check exited with status 2"]);
    install_script("exec sleep 60");
    let started = Instant::now();
    expect_refusal("hangs", &["did not finish within"]);
    eprintln!("a hanging check was given up after {:?}", started.elapsed());
    assert!(workers.iter().all(|&p| alive(p)));
}
