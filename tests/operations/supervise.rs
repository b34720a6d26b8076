//! The process model through the real binary: pinning as the kernel reports it
//! (`/proc/PID/status`), respawn after `kill -9` with the listener's queue intact, crash
//! back-off, the nginx signals (TERM, QUIT with a download in flight, HUP, USR1), the
//! one-CPU fallback and `--user`.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::server::*;

/// Requests in a loop from a thread pinned to `cpu` until `stop`; counts successes and
/// fails the test on any error or non-200 (bounded: at most 100,000 requests).
fn background_load(
    cpu: usize,
    addr: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        pin_thread(cpu);
        for _ in 0..100_000 {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let (status, body) = get(addr, "/index.html");
            assert_eq!(status, 200, "background request failed: {body}");
            ok.fetch_add(1, Ordering::Relaxed);
        }
    })
}

#[test]
fn workers_and_master_are_pinned_as_planned() {
    let cpus = allowed_cpus();
    let last = *cpus.last().expect("a CPU");
    let server = Server::start(&["--master-cpu", &last.to_string()]);
    assert!(server
        .find_line(|l| l.contains(&format!("master on cpu {last},")))
        .is_some());
    assert_eq!(
        status_field(server.pid, "Cpus_allowed_list"),
        last.to_string()
    );
    let plan = server.plan();
    assert_eq!(
        plan.len(),
        cpus.len(),
        "one worker per allowed CPU by default"
    );
    for (index, cpu) in plan {
        let pid = server.worker_pid(index);
        assert_eq!(
            status_field(pid, "Cpus_allowed_list"),
            cpu.to_string(),
            "worker {index}"
        );
    }
    drop(server);
    // `auto`: the master sits where `steerd check` plans it, and the kernel agrees; the
    // workers are the planned ones.
    let check = std::process::Command::new(binary())
        .arg("check")
        .output()
        .expect("steerd check");
    let text = String::from_utf8_lossy(&check.stdout).into_owned();
    let planned_master = text
        .lines()
        .find_map(|l| l.strip_prefix("master: CPU "))
        .expect("check names the master CPU")
        .trim()
        .to_string();
    let server = Server::start(&[]);
    let line = server.wait_line(|l| l.starts_with("steerd: policy "));
    let cpu = line
        .split("master on cpu ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .expect("pinned");
    assert_eq!(
        cpu, planned_master,
        "serve pins the master where check plans it"
    );
    assert_eq!(
        status_field(server.pid, "Cpus_allowed_list"),
        planned_master
    );
    let rows: Vec<(usize, usize)> = text
        .lines()
        .skip_while(|l| !l.starts_with("INDEX CPU NODE"))
        .skip(1)
        .map_while(|l| {
            let f: Vec<usize> = l
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            (f.len() == 3).then(|| (f[0], f[1]))
        })
        .collect();
    assert_eq!(server.plan(), rows, "serve runs the workers check plans");
}

#[test]
fn master_cpu_none_leaves_the_master_unpinned() {
    let server = Server::start(&["--master-cpu", "none"]);
    assert!(server
        .find_line(|l| l.contains("master unpinned"))
        .is_some());
    let ours = status_field(std::process::id(), "Cpus_allowed_list");
    assert_eq!(status_field(server.pid, "Cpus_allowed_list"), ours);
    for (index, cpu) in server.plan() {
        let pid = server.worker_pid(index);
        assert_eq!(status_field(pid, "Cpus_allowed_list"), cpu.to_string());
    }
}

#[test]
fn one_cpu_falls_back_to_hash_with_one_warning() {
    let cpu = allowed_cpus()[0];
    let server = Server::start(&["--cpus", &cpu.to_string(), "--steer", "cpu"]);
    assert_eq!(server.policy(), "hash");
    let (status, body) = get(server.addr, "/index.html");
    assert_eq!(status, 200);
    assert_eq!(body, "hello from steerd\n");
    let warnings: Vec<String> = server
        .lines()
        .into_iter()
        .filter(|l| l.contains("warning: steer"))
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("hash"), "{warnings:?}");
}

#[test]
fn killed_worker_is_respawned_on_its_cpu_and_its_queue_is_served() {
    let Some((a, b)) = two_cpus() else { return };
    let cpus = format!("{a},{b}");
    let server = Server::start(&["--workers", "2", "--steer", "cpu", "--cpus", &cpus]);
    let plan = server.plan();
    let (victim, victim_cpu) = plan[1];
    let (_, other_cpu) = plan[0];
    let old = server.worker_pid(victim);

    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicU64::new(0));
    let load = background_load(other_cpu, server.addr, Arc::clone(&stop), Arc::clone(&ok));

    // Stop the victim so connections pile up in its listener's accept queue.
    send_signal(old, libc::SIGSTOP);
    let addr = server.addr;
    let queued: Vec<TcpStream> = on_cpu(victim_cpu, move || {
        (0..8)
            .map(|_| {
                let mut s = TcpStream::connect_timeout(&addr, PATIENCE).expect("connect");
                s.set_read_timeout(Some(PATIENCE)).unwrap();
                let head = "GET /index.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
                s.write_all(head.as_bytes()).expect("write");
                s
            })
            .collect()
    });
    send_signal(old, libc::SIGKILL);
    server.wait_line(|l| {
        l.contains(&format!(
            "worker {victim} (pid {old}, cpu {victim_cpu}) killed by signal 9"
        ))
    });
    let new = wait_for_new_pid(&server, victim, old);
    assert_eq!(
        status_field(new, "Cpus_allowed_list"),
        victim_cpu.to_string()
    );
    for mut s in queued {
        let (status, body) = read_response(&mut s);
        assert_eq!((status, body.as_str()), (200, "hello from steerd\n"));
    }
    stop.store(true, Ordering::Relaxed);
    load.join().expect("background load never failed");
    assert!(ok.load(Ordering::Relaxed) > 0);
    let respawns = server.per_worker("steerd_worker_respawns_total");
    assert_eq!(respawns[victim], 1);
    let name =
        "killed_worker_is_respawned_on_its_cpu_and_its_queue_is_served (who served the queue)";
    if skip_without_steering(name) {
        return;
    }
    let accepted = server.per_worker("steerd_connections_accepted_total");
    assert!(
        accepted[victim] >= 8,
        "the respawned worker served the queue: {accepted:?}"
    );
}

#[test]
fn crash_loop_backs_off_and_recovers() {
    let server = Server::start(&["--workers", "1"]);
    let root = server.root.as_ref().expect("root").path().to_path_buf();
    let old = server.worker_pid(0);
    // Without its root a new worker cannot start: every restart fails at once.
    let aside = root.with_extension("aside");
    std::fs::rename(&root, &aside).expect("move the root away");
    send_signal(old, libc::SIGKILL);
    let delays = server.wait_lines(
        |l| l.contains("worker 0 (pid") && l.contains("restarting in"),
        4,
    );
    let ms: Vec<u64> = delays
        .iter()
        .map(|l| {
            l.split("restarting in ")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(
        ms.windows(2).skip(1).all(|w| w[1] == w[0] * 2),
        "doubling back-off: {ms:?}"
    );
    std::fs::rename(&aside, &root).expect("put the root back");
    let new = wait_for_new_pid(&server, 0, old);
    assert!(alive(new));
    let (status, _) = get(server.addr, "/index.html");
    assert_eq!(status, 200);
}

#[test]
fn term_stops_master_and_workers() {
    let mut server = Server::start(&[]);
    let workers: Vec<u32> = server
        .plan()
        .iter()
        .map(|&(i, _)| server.worker_pid(i))
        .collect();
    server.signal(libc::SIGTERM);
    let status = server.wait_exit(Duration::from_secs(10));
    assert!(status.success(), "{status:?}");
    for pid in workers {
        assert!(!alive(pid), "worker {pid} outlived the master");
    }
    assert!(
        TcpStream::connect(server.addr).is_err(),
        "nothing listens any more"
    );
}

#[test]
fn hup_starts_new_workers_on_the_same_listeners() {
    let server = Server::start(&[]);
    let plan = server.plan();
    let old: Vec<u32> = plan.iter().map(|&(i, _)| server.worker_pid(i)).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicU64::new(0));
    let load = background_load(plan[0].1, server.addr, Arc::clone(&stop), Arc::clone(&ok));
    std::thread::sleep(Duration::from_millis(200));
    server.signal(libc::SIGHUP);
    server.wait_line(|l| l.contains("reload: starting new workers"));
    let new: Vec<u32> = plan
        .iter()
        .map(|&(i, _)| {
            wait_for_new_pid(&server, i, old[plan.iter().position(|p| p.0 == i).unwrap()])
        })
        .collect();
    for (&(_, cpu), &pid) in plan.iter().zip(&new) {
        assert_eq!(status_field(pid, "Cpus_allowed_list"), cpu.to_string());
    }
    let deadline = Instant::now() + PATIENCE;
    while old.iter().any(|&p| alive(p)) {
        assert!(Instant::now() < deadline, "old workers did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    load.join().expect("no request failed during the reload");
    assert!(ok.load(Ordering::Relaxed) > 0);
    let (status, _) = get(server.addr, "/index.html");
    assert_eq!(status, 200, "same address after reload");
}

#[test]
fn hup_picks_up_a_root_whose_path_now_points_elsewhere() {
    let dir = TempDir::new("hup-root");
    for (name, body) in [("a", "release a\n"), ("b", "release b\n")] {
        std::fs::create_dir(dir.path().join(name)).unwrap();
        std::fs::write(dir.path().join(name).join("index.html"), body).unwrap();
    }
    let site = dir.path().join("site");
    std::os::unix::fs::symlink("a", &site).unwrap();
    let server = Server::spawn(std::process::Command::new(binary()).args([
        "serve",
        &site.display().to_string(),
        "--listen",
        "127.0.0.1:0",
    ]));
    assert_eq!(get(server.addr, "/index.html").1, "release a\n");
    // Deploy: swap the link atomically, then HUP.
    let next = dir.path().join("site.next");
    std::os::unix::fs::symlink("b", &next).unwrap();
    std::fs::rename(&next, &site).unwrap();
    assert_eq!(
        get(server.addr, "/index.html").1,
        "release a\n",
        "workers keep their root"
    );
    let old: Vec<u32> = server
        .plan()
        .iter()
        .map(|&(i, _)| server.worker_pid(i))
        .collect();
    server.signal(libc::SIGHUP);
    for (i, _) in server.plan() {
        wait_for_new_pid(&server, i, old[i]);
    }
    wait_until("the old workers are gone", || {
        old.iter().all(|&p| !alive(p))
    });
    assert_eq!(get(server.addr, "/index.html").1, "release b\n");
}

#[test]
fn usr1_reopens_the_access_log_after_rotation() {
    let logs = TempDir::new("logs");
    let log = logs.path().join("access.log");
    let rotated = logs.path().join("access.log.1");
    let server = Server::start(&["--workers", "1", "--access-log", &log.display().to_string()]);
    let pid = server.worker_pid(0);
    let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap_or_default();
    let logged = |p: &std::path::Path, tag: &str| read(p).contains(tag);
    assert_eq!(get(server.addr, "/index.html?before").0, 200);
    wait_until("the first line is logged", || logged(&log, "?before"));
    std::fs::rename(&log, &rotated).expect("rotate");
    server.signal(libc::SIGUSR1);
    // Until the worker has reopened, lines still go to the rotated file; then to a new one.
    let mut n = 0;
    wait_until("a line lands in the reopened log", || {
        n += 1;
        assert_eq!(get(server.addr, &format!("/index.html?after{n}")).0, 200);
        std::thread::sleep(Duration::from_millis(50));
        logged(&log, "?after")
    });
    assert!(!logged(&log, "?before"), "the new file starts empty");
    assert!(logged(&rotated, "?before"));
    assert_eq!(server.worker_pid(0), pid, "USR1 restarts nothing");
    assert!(alive(pid));
}

#[test]
fn quit_lets_a_large_download_finish() {
    const SIZE: usize = 48 << 20;
    let mut server = Server::start(&["--workers", "1", "--shutdown-timeout", "30"]);
    let root = server.root.as_ref().expect("root").path().to_path_buf();
    let data: Vec<u8> = (0..SIZE).map(|i| (i % 251) as u8).collect();
    std::fs::write(root.join("big.bin"), &data).expect("big file");
    let mut s = TcpStream::connect(server.addr).expect("connect");
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut got = vec![0u8; 64 << 10];
    let n = s.read(&mut got).expect("first bytes");
    assert!(n > 0);
    got.truncate(n);
    server.signal(libc::SIGQUIT);
    std::thread::sleep(Duration::from_millis(300));
    assert!(alive(server.pid), "the master waits for the download");
    // Read slowly at first, then drain.
    let mut rest = Vec::new();
    s.read_to_end(&mut rest)
        .expect("the download completes, no reset");
    got.extend_from_slice(&rest);
    let head_end = got.windows(4).position(|w| w == b"\r\n\r\n").expect("head") + 4;
    assert!(
        got.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&got[..head_end])
    );
    assert_eq!(got.len() - head_end, SIZE);
    assert!(got[head_end..] == data[..], "body intact");
    let status = server.wait_exit(Duration::from_secs(30));
    assert!(status.success(), "{status:?}");
}

#[test]
fn quit_kills_what_outlives_the_shutdown_timeout() {
    let mut server = Server::start(&["--workers", "1", "--shutdown-timeout", "1"]);
    let root = server.root.as_ref().expect("root").path().to_path_buf();
    std::fs::write(root.join("big.bin"), vec![7u8; 32 << 20]).expect("big file");
    // A client that never reads: the response cannot finish.
    let mut s = TcpStream::connect(server.addr).expect("connect");
    s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut first = [0u8; 16];
    s.read_exact(&mut first).expect("the response started");
    let asked = Instant::now();
    server.signal(libc::SIGQUIT);
    let status = server.wait_exit(Duration::from_secs(15));
    assert!(status.success(), "{status:?}");
    assert!(
        asked.elapsed() >= Duration::from_millis(900),
        "the grace period was honoured"
    );
    drop(s);
}

#[test]
fn user_drops_privileges_before_workers_start() {
    if !is_root() {
        crate::support::skip::skip_or_fail(
            &crate::support::skip::this_test(),
            "--user needs root to switch users",
        );
        return;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    if !passwd.lines().any(|l| l.starts_with("nobody:")) {
        crate::support::skip::skip_or_fail(
            &crate::support::skip::this_test(),
            "no user nobody in /etc/passwd",
        );
        return;
    }
    let server = Server::start(&["--user", "nobody"]);
    for pid in
        std::iter::once(server.pid).chain(server.plan().iter().map(|&(i, _)| server.worker_pid(i)))
    {
        let uid = status_field(pid, "Uid");
        assert!(
            uid.split_whitespace().all(|u| u == "65534"),
            "pid {pid} Uid: {uid}"
        );
        assert!(
            !status_field(pid, "Groups")
                .split_whitespace()
                .any(|g| g == "0"),
            "pid {pid} kept group 0"
        );
    }
    let (status, _) = get(server.addr, "/index.html");
    assert_eq!(status, 200);
}

/// A service manager stops the whole process group: the workers' own exits are then part
/// of the stop, and the master must not log them as crashes or restart anyone.
#[test]
fn term_to_the_process_group_is_a_clean_stop() {
    use std::os::unix::process::CommandExt;
    let root = support::server::TempDir::new("pgrp");
    std::fs::write(root.path().join("index.html"), b"x\n").unwrap();
    let mut cmd = std::process::Command::new(support::server::binary());
    cmd.args(["serve", &root.path().display().to_string()])
        .args(["--listen", "127.0.0.1:0"])
        .process_group(0);
    let mut server = Server::spawn(&mut cmd);
    // Hold the master so the workers surely exit before it sees its own TERM.
    send_signal(server.pid, libc::SIGSTOP);
    // kill(-pgid): the master leads its own group.
    send_signal_group(server.pid, libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(300));
    send_signal(server.pid, libc::SIGCONT);
    let status = server.wait_exit(Duration::from_secs(10));
    assert!(status.success(), "{status:?}");
    let lines = server.lines();
    assert!(
        !lines.iter().any(|l| l.contains("restarting")),
        "a group-wide stop was taken for crashes: {lines:?}"
    );
}

fn send_signal_group(pgid: u32, sig: i32) {
    let pid = rustix::process::Pid::from_raw(pgid as i32).expect("pid");
    let sig = rustix::process::Signal::from_named_raw(sig).expect("signal");
    rustix::process::kill_process_group(pid, sig).expect("kill");
}
