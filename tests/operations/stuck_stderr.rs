//! A stderr reader that stops must not freeze the master, through the real binary: with
//! steerd's stderr a pipe that the test fills and then does not read, killed workers are
//! still reaped and respawned (no zombies in `/proc`), `/health` answers, the dropped lines
//! are counted in `steerd_log_lines_dropped_total`, the next line that gets through after
//! a drain says how many were dropped, and TERM stops the master within a bound.

use crate::support;

use std::os::fd::OwnedFd;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use support::server::*;

/// Workers killed while the pipe is full.
const KILLS: usize = 6;
/// The bound on the master's exit after TERM.
const STOP_WITHIN: Duration = Duration::from_secs(10);

/// Kills the master (its workers follow) if the test ends early.
struct Master(u32);

impl Drop for Master {
    fn drop(&mut self) {
        send_signal(self.0, libc::SIGKILL);
    }
}

/// Reads what is waiting in `r` into `text` until `done(text)` or `within` passes.
fn read_until(r: &OwnedFd, text: &mut String, within: Duration, done: impl Fn(&str) -> bool) {
    use rustix::event::{PollFd, PollFlags};
    let deadline = Instant::now() + within;
    let tick = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 50_000_000,
    };
    let mut buf = vec![0u8; 1 << 16];
    while !done(text) && Instant::now() < deadline {
        let mut fds = [PollFd::new(r, PollFlags::IN)];
        if rustix::event::poll(&mut fds, Some(&tick)).unwrap_or(0) == 0 {
            continue;
        }
        match rustix::io::read(r, &mut buf) {
            Ok(0) => return,
            Ok(n) => text.push_str(&String::from_utf8_lossy(&buf[..n])),
            Err(_) => return,
        }
    }
}

/// Reads until nothing has arrived for a while (bounded).
fn drain(r: &OwnedFd, text: &mut String) {
    let deadline = Instant::now() + PATIENCE;
    while Instant::now() < deadline {
        let before = text.len();
        read_until(r, text, Duration::from_millis(300), |_| false);
        if text.len() == before {
            return;
        }
    }
}

/// True when a write to `w` would wait: the pipe is full.
fn full(w: &OwnedFd) -> bool {
    use rustix::event::{PollFd, PollFlags};
    let mut fds = [PollFd::new(w, PollFlags::OUT)];
    let zero = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    rustix::event::poll(&mut fds, Some(&zero)).unwrap_or(0) == 0
}

/// Fills the pipe from a thread (blocking writes of filler lines, at most 1 MiB, ending at
/// the first error: the read end closed) and waits until it is full.
fn fill(w: &OwnedFd) -> JoinHandle<()> {
    let own = w.try_clone().expect("dup");
    let filler = std::thread::spawn(move || {
        let line = [b'x'; 63].iter().chain(b"\n").copied().collect::<Vec<u8>>();
        for _ in 0..(1 << 20) / line.len() {
            if rustix::io::write(&own, &line).is_err() {
                return;
            }
        }
    });
    wait_until("the stderr pipe is full", || full(w));
    filler
}

/// The master's children: (live pids, zombie pids).
fn children(master: u32) -> (Vec<u32>, Vec<u32>) {
    let (mut live, mut zombies) = (Vec::new(), Vec::new());
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let mut rest = stat.rsplit(')').next().unwrap_or("").split_whitespace();
        let (state, ppid) = (rest.next(), rest.next().and_then(|p| p.parse::<u32>().ok()));
        match (state, ppid) {
            (Some("Z"), Some(p)) if p == master => zombies.push(pid),
            (Some(_), Some(p)) if p == master => live.push(pid),
            _ => {}
        }
    }
    (live, zombies)
}

/// Kills one worker and waits until the master has reaped it and started another.
fn kill_and_wait_respawn(master: u32) {
    let (before, _) = children(master);
    let victim = *before.first().expect("a worker");
    send_signal(victim, libc::SIGKILL);
    wait_until("the killed worker is reaped and replaced", || {
        let (live, zombies) = children(master);
        zombies.is_empty() && live.len() == before.len() && !live.contains(&victim)
    });
}

#[test]
fn a_stuck_stderr_reader_does_not_freeze_the_master() {
    let root = TempDir::new("stuck-stderr");
    std::fs::write(root.path().join("index.html"), b"hi\n").unwrap();
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).expect("pipe");
    let child = Command::new(binary())
        .arg("serve")
        .arg(root.path())
        .args(["--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(w.try_clone().expect("dup")))
        .spawn()
        .expect("spawn steerd");
    let master = Master(child.id());
    let mut text = String::new();
    read_until(&r, &mut text, PATIENCE, |t| t.contains(" running on cpu "));
    let metrics: std::net::SocketAddr = text
        .lines()
        .find_map(|l| {
            l.split_once("metrics on ")
                .map(|(_, a)| a.trim().to_string())
        })
        .expect("a `metrics on` line")
        .parse()
        .expect("metrics address");
    wait_until("every worker serves", || get(metrics, "/health").0 == 200);
    drain(&r, &mut text);

    // The reader stops; the pipe fills; the master keeps supervising.
    let filler = fill(&w);
    for _ in 0..KILLS {
        kill_and_wait_respawn(master.0);
    }
    wait_until("/health answers 200 again", || {
        get(metrics, "/health").0 == 200
    });
    let samples = parse_metrics(&get(metrics, "/metrics").1);
    let dropped = samples
        .get("steerd_log_lines_dropped_total{process=\"master\"}")
        .copied()
        .unwrap_or(0);
    assert!(dropped >= KILLS as u64, "dropped lines counted: {dropped}");

    // The reader resumes: the next line the master writes says what was lost.
    drain(&r, &mut text);
    filler.join().expect("filler");
    kill_and_wait_respawn(master.0);
    let notice = "lines dropped: stderr was full)";
    read_until(&r, &mut text, PATIENCE, |t| t.contains(notice));
    assert!(text.contains(notice), "no dropped-lines notice in:\n{text}");

    // Full again: TERM still stops the master.
    let _refill = fill(&w);
    send_signal(master.0, libc::SIGTERM);
    let mut child = child;
    let deadline = Instant::now() + STOP_WITHIN;
    while child.try_wait().expect("try_wait").is_none() {
        assert!(
            Instant::now() < deadline,
            "steerd did not stop within {STOP_WITHIN:?} of TERM with stderr full"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(r);
}
