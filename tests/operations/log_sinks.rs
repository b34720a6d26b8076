//! Access log destinations that misbehave, through the real binary: a FIFO named as the
//! log (refused from its `stat` by `check`, `serve` and a reload, never opened, so no
//! one waits for a reader and a reader never gets an end of file), a disk that fills
//! (at most one line cut, none glued to the next, the dropped lines counted), and raw
//! bytes in `json` (a raw `0xE9` and the UTF-8 `é` give different strings).

use crate::support;

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::server::*;

// `check` and `serve` are run with `run_to_exit`: killed and failed if they do not exit
// within `PATIENCE` (the old code waited in `open` for a reader for ever).

/// A served directory and a FIFO beside it.
fn site_and_fifo(tag: &str) -> (TempDir, PathBuf, PathBuf) {
    let dir = TempDir::new(tag);
    let site = dir.path().join("site");
    std::fs::create_dir(&site).unwrap();
    std::fs::write(site.join("index.html"), b"hi\n").unwrap();
    let fifo = dir.path().join("access.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    (dir, site, fifo)
}

/// `cat FIFO`: a reader that exits when it reads an end of file.
struct Reader(Child);

impl Reader {
    fn start(fifo: &Path) -> Reader {
        let child = Command::new("cat")
            .arg(fifo)
            .stdout(Stdio::null())
            .spawn()
            .expect("cat");
        // Give `cat` time to block in its open.
        std::thread::sleep(Duration::from_millis(200));
        Reader(child)
    }

    fn still_reading(&mut self) -> bool {
        self.0.try_wait().expect("wait cat").is_none()
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn refused_as_fifo(err: &str, fifo: &Path) -> bool {
    err.contains(&format!("access-log: {}: is a FIFO; ", fifo.display()))
}

#[test]
fn check_refuses_a_fifo_log_at_once_and_leaves_its_reader_alone() {
    let (_dir, site, fifo) = site_and_fifo("fifocheck");
    let check = || {
        run_to_exit(
            Command::new(binary())
                .arg("check")
                .arg(&site)
                .args(["--listen", "127.0.0.1:0", "--access-log"])
                .arg(&fifo),
        )
    };
    // No reader: the old check blocked in open(O_WRONLY) for ever.
    let (code, err) = check();
    assert_ne!(code, 0, "{err}");
    assert!(refused_as_fifo(&err, &fifo), "{err}");
    let lines = err.lines().filter(|l| l.contains("access-log: ")).count();
    assert_eq!(lines, 1, "one line: {err}");
    // A reader waiting: the old check opened and closed the FIFO, so `cat` got EOF.
    let mut reader = Reader::start(&fifo);
    let (code, err) = check();
    assert_ne!(code, 0, "{err}");
    assert!(refused_as_fifo(&err, &fifo), "{err}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(reader.still_reading(), "the check handed the reader an EOF");
}

#[test]
fn serve_refuses_a_fifo_log_at_once() {
    let (_dir, site, fifo) = site_and_fifo("fifoserve");
    let mut reader = Reader::start(&fifo);
    let (code, err) = run_to_exit(
        Command::new(binary())
            .arg("serve")
            .arg(&site)
            .args(["--listen", "127.0.0.1:0", "--access-log"])
            .arg(&fifo),
    );
    assert_ne!(code, 0, "{err}");
    assert!(refused_as_fifo(&err, &fifo), "{err}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(reader.still_reading(), "serve handed the reader an EOF");
}

#[test]
fn a_reload_onto_a_fifo_log_is_refused_and_the_master_stays_responsive() {
    let (dir, site, fifo) = site_and_fifo("fifohup");
    let log = dir.path().join("access.log");
    let server = Server::start_in(
        &site,
        &[
            "--metrics",
            "127.0.0.1:0",
            "--access-log",
            log.to_str().unwrap(),
        ],
        &[],
    );
    // Every worker has its log open (a worker still starting would open the FIFO).
    let opened = |pid: u32| {
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten();
        fds.flatten()
            .any(|e| std::fs::read_link(e.path()).is_ok_and(|t| t == log))
    };
    wait_until("every worker opened the log", || {
        server.worker_pids().into_iter().all(opened)
    });
    // The log's path now names a FIFO with no reader (the old HUP preflight blocked the
    // master in open for ever).
    std::fs::remove_file(&log).unwrap();
    std::fs::rename(&fifo, &log).unwrap();
    server.signal(libc::SIGHUP);
    let line = server.wait_line(|l| l.contains("reload: access-log: "));
    assert!(
        line.contains(&format!("{}: is a FIFO; ", log.display())),
        "{line}"
    );
    // The master still answers /metrics and the old workers still serve.
    assert!(!server.metrics().is_empty());
    assert_eq!(get(server.addr, "/index.html").0, 200);
}

/// A tmpfs mounted for the test, unmounted when dropped.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn dropped(server: &Server) -> u64 {
    server
        .metrics()
        .iter()
        .filter(|(k, _)| k.starts_with("steerd_access_log_lines_dropped_total{"))
        .map(|(_, v)| v)
        .sum()
}

/// One request on a fresh connection; the status is not checked (a 404 logs too).
fn hit(server: &Server, path: &str) {
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    );
    let _ = read_response(&mut s);
}

#[test]
fn a_full_disk_cuts_at_most_one_line_and_glues_none() {
    const NAME: &str = "a_full_disk_cuts_at_most_one_line_and_glues_none";
    let dir = TempDir::new("fulldisk");
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&mnt)
        .stderr(Stdio::null())
        .status();
    if !mounted.is_ok_and(|s| s.success()) {
        support::skip::skip_or_fail(NAME, "cannot mount a tmpfs (needs root)");
        return;
    }
    let _mount = Mount(mnt.clone());
    let filler = mnt.join("filler");
    std::fs::write(&filler, vec![b'f'; 40 * 1024]).unwrap();
    let log = mnt.join("access.log");
    let site = dir.path().join("site");
    std::fs::create_dir(&site).unwrap();
    std::fs::write(site.join("index.html"), b"hi\n").unwrap();
    let server = Server::start_in(
        &site,
        &[
            "--workers",
            "2",
            "--metrics",
            "127.0.0.1:0",
            "--access-log",
            log.to_str().unwrap(),
            "--log-format",
            "json",
        ],
        &[],
    );
    // Fill the disk: requests until the log reports dropped lines (bounded).
    let deadline = Instant::now() + PATIENCE;
    let mut n = 0;
    while dropped(&server) == 0 {
        assert!(Instant::now() < deadline, "the disk never filled");
        for _ in 0..20 {
            hit(&server, &format!("/before-{n}"));
            n += 1;
        }
        std::thread::sleep(Duration::from_millis(600));
    }
    // Free the space, then log more.
    std::fs::remove_file(&filler).unwrap();
    const AFTER: usize = 40;
    for i in 0..AFTER {
        hit(&server, &format!("/after-{i}"));
    }
    let deadline = Instant::now() + PATIENCE;
    let text = loop {
        let text = String::from_utf8_lossy(&std::fs::read(&log).unwrap()).into_owned();
        if text.contains(&format!("/after-{} HTTP", AFTER - 1)) {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "the lines after the free never came"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut bad = Vec::new();
    // Two workers that both read the cut line's last byte before either wrote each end
    // it: an empty line, neither a cut line nor a glued one (docs/serving.md).
    for line in text.lines().filter(|l| !l.is_empty()) {
        assert!(
            line.matches("{\"time\"").count() <= 1,
            "two lines glued: {line}"
        );
        if serde_json::from_str::<serde_json::Value>(line).is_err() {
            bad.push(line.to_string());
        }
    }
    assert!(bad.len() <= 1, "{} unparsable lines: {bad:?}", bad.len());
    for i in 0..AFTER {
        let needle = format!("\"GET /after-{i} HTTP/1.1\"");
        let line = text.lines().find(|l| l.contains(&needle));
        let line = line.unwrap_or_else(|| panic!("no line for /after-{i}"));
        assert!(
            serde_json::from_str::<serde_json::Value>(line).is_ok(),
            "{line}"
        );
    }
    drop(server);
}

#[test]
fn json_tells_a_raw_byte_from_the_character_it_reads_as() {
    let dir = TempDir::new("rawbyte");
    let log = dir.path().join("access.log");
    let server = Server::start(&[
        "--workers",
        "1",
        "--access-log",
        log.to_str().unwrap(),
        "--log-format",
        "json",
    ]);
    let send = |tag: &str, ua: &[u8]| {
        let mut s = TcpStream::connect(server.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut req = format!("GET /{tag} HTTP/1.1\r\nHost: x\r\nUser-Agent: caf").into_bytes();
        req.extend_from_slice(ua);
        req.extend_from_slice(b"\r\nConnection: close\r\n\r\n");
        s.write_all(&req).unwrap();
        let _ = read_response(&mut s);
    };
    send("raw", b"\xe9");
    send("utf8", "\u{e9}".as_bytes());
    let deadline = Instant::now() + PATIENCE;
    let agent = |text: &str, tag: &str| -> Option<String> {
        let needle = format!("\"GET /{tag} HTTP/1.1\"");
        let line = text.lines().find(|l| l.contains(&needle))?;
        let v: serde_json::Value = serde_json::from_str(line).expect("valid JSON");
        Some(v["user_agent"].as_str().expect("a string").to_string())
    };
    let (raw, utf8) = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let (Some(r), Some(u)) = (agent(&text, "raw"), agent(&text, "utf8")) {
            break (r, u);
        }
        assert!(Instant::now() < deadline, "lines not logged:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(utf8, "caf\u{e9}");
    assert_eq!(raw, "caf\\xE9");
    assert_ne!(raw, utf8);
}
