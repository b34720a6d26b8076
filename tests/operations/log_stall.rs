//! The access log on a disk that stops taking writes (a hung NFS server, a dying SD
//! card): the log file sits on a FUSE file system of the test's own
//! (`tests/data/stall_fs.py`, fusepy over libfuse2) whose `write`s wait until the test
//! releases them. While they wait, every request to the single worker is answered (a
//! worker that writes its log on the loop waits with the disk and answers nothing more);
//! once the log's bounded buffering is full, the lines that find no room are counted in
//! `steerd_access_log_lines_dropped_total`; after the release the lines that were kept
//! arrive, in the order of their requests, and kept plus dropped is every request.
//!
//! Needs root, `/dev/fuse`, and python3 with fusepy (`scripts/fetch/tools.sh python`)
//! and Debian's libfuse2; without them it says so (and fails under CI).

use crate::support::server::{Server, TempDir, PATIENCE};
use crate::support::skip::skip_or_fail;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Requests made while the disk stalls: their lines are several times what the log
/// buffers (four 64 KiB buffers, at about 1.1 KB a line).
const REQUESTS: usize = 600;
/// Requests made before waiting for the first write to stall.
const BEFORE_STALL: usize = 20;
/// How long one answer may take while the log's disk stalls (generous: a loop that
/// waits for the disk never answers until the release).
const ANSWER: Duration = Duration::from_secs(10);
/// A long user agent, so that few requests fill the log's buffers.
const AGENT_LEN: usize = 1000;

/// The mounted stalling file system: unmounted, and its process ended, on drop.
struct StallFs {
    child: Child,
    mount: PathBuf,
    backing: PathBuf,
    gate: PathBuf,
}

impl StallFs {
    /// Mounts it under `dir`, or says why it cannot be.
    fn mount(dir: &Path) -> Result<StallFs, String> {
        if !Path::new("/dev/fuse").exists() {
            return Err("no /dev/fuse".into());
        }
        let probe = Command::new("python3")
            .args(["-c", "import fuse"])
            .output()
            .map_err(|e| format!("python3: {e}"))?;
        if !probe.status.success() {
            let why = String::from_utf8_lossy(&probe.stderr);
            let last = why.lines().last().unwrap_or("").to_string();
            return Err(format!(
                "python3 cannot import fusepy ({last}): scripts/fetch/tools.sh python, libfuse2"
            ));
        }
        let (mount, backing) = (dir.join("mnt"), dir.join("backing"));
        std::fs::create_dir_all(&mount).unwrap();
        std::fs::create_dir_all(&backing).unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/stall_fs.py");
        let gate = dir.join("gate");
        let child = Command::new("python3")
            .arg(script)
            .args([&backing, &mount, &gate])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("python3 stall_fs.py: {e}"))?;
        let mut fs = StallFs {
            child,
            mount,
            backing,
            gate,
        };
        fs.wait_mounted()?;
        Ok(fs)
    }

    /// Waits (bounded) until the mount point is a FUSE mount.
    fn wait_mounted(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + PATIENCE;
        let needle = format!(" {} ", self.mount.display());
        loop {
            let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
            if mounts
                .lines()
                .any(|l| l.contains(&needle) && l.contains(" fuse"))
            {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                let last = err.lines().last().unwrap_or("").to_string();
                return Err(format!("stall_fs.py could not mount ({status}): {last}"));
            }
            if Instant::now() > deadline {
                return Err("stall_fs.py did not mount in time".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// From now on every write waits.
    fn stall(&self) {
        std::fs::write(&self.gate, b"").unwrap();
    }

    /// A write has been waiting (the file system says so).
    fn stalled(&self) -> bool {
        self.gate.with_extension("waiting").exists()
    }

    /// What releases the stall when dropped (declared after the server, so that it
    /// goes first: a worker stuck in a write could not end).
    fn release_on_drop(&self) -> Release {
        Release(self.gate.clone())
    }
}

impl Drop for StallFs {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.gate);
        let _ = Command::new("umount").arg("-l").arg(&self.mount).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Lets the stalled writes go through.
struct Release(PathBuf);

impl Drop for Release {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Request `n` on a connection of its own, answered within [`ANSWER`]: its status.
fn ask(addr: SocketAddr, n: usize, agent: &str) -> Result<u16, String> {
    let mut s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(ANSWER)).unwrap();
    let head = format!(
        "GET /index.html?n={n:05} HTTP/1.1\r\nHost: t\r\nUser-Agent: {agent}\r\n\
         Connection: close\r\n\r\n"
    );
    s.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&raw);
    Ok(text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0))
}

/// The request numbers of the lines in `text`, in file order.
fn numbers(text: &str) -> Vec<usize> {
    text.lines()
        .map(|l| {
            let at = l
                .find("?n=")
                .unwrap_or_else(|| panic!("a line without ?n=: {l}"));
            l[at + 3..at + 8].parse().unwrap()
        })
        .collect()
}

#[test]
fn a_log_disk_that_stalls_stalls_no_request() {
    const NAME: &str = "a_log_disk_that_stalls_stalls_no_request";
    let dir = TempDir::new("logstall");
    let fs = match StallFs::mount(dir.path()) {
        Ok(fs) => fs,
        Err(why) => return skip_or_fail(NAME, &why),
    };
    let site = dir.path().join("site");
    std::fs::create_dir(&site).unwrap();
    std::fs::write(site.join("index.html"), b"hi\n").unwrap();
    let log = fs.mount.join("access.log");
    fs.stall();
    let server = Server::start_in(
        &site,
        &[
            "--workers",
            "1",
            "--metrics",
            "127.0.0.1:0",
            "--access-log",
            log.to_str().unwrap(),
            "--log-format",
            "combined",
        ],
        &[],
    );
    let release = fs.release_on_drop();
    let agent = "a".repeat(AGENT_LEN);
    for n in 0..REQUESTS {
        if n == BEFORE_STALL {
            // The first lines are written about half a second after they were logged.
            let deadline = Instant::now() + PATIENCE;
            while !fs.stalled() {
                assert!(Instant::now() < deadline, "no log write reached the disk");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        match ask(server.addr, n, &agent) {
            Ok(200) => {}
            Ok(status) => panic!("request {n}: status {status}"),
            Err(e) => panic!(
                "request {n} not answered within {ANSWER:?} while the log's disk stalls: {e}"
            ),
        }
    }
    let dropped_total = || server.metric("steerd_access_log_lines_dropped_total");
    let deadline = Instant::now() + PATIENCE;
    while dropped_total() == 0 {
        assert!(
            Instant::now() < deadline,
            "the log's buffers filled and no dropped line was counted"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(fs.stalled(), "the disk stalled throughout");
    drop(release);
    // Every request is either a line in the file or a dropped line.
    let backing = fs.backing.join("access.log");
    let deadline = Instant::now() + PATIENCE;
    let (text, dropped) = loop {
        let text = std::fs::read_to_string(&backing).unwrap_or_default();
        let dropped = dropped_total() as usize;
        if text.lines().count() + dropped >= REQUESTS {
            break (text, dropped);
        }
        assert!(
            Instant::now() < deadline,
            "{} lines written and {dropped} dropped of {REQUESTS} requests",
            text.lines().count()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let kept = numbers(&text);
    assert_eq!(kept.len() + dropped, REQUESTS, "each request once");
    assert!(
        kept.windows(2).all(|w| w[0] < w[1]),
        "lines out of order or twice: {kept:?}"
    );
    assert!(
        kept.len() >= BEFORE_STALL
            && kept[..BEFORE_STALL] == (0..BEFORE_STALL).collect::<Vec<_>>()[..],
        "the lines written when the disk stalled were kept: {kept:?}"
    );
    assert!(
        dropped > 0 && dropped < REQUESTS - BEFORE_STALL,
        "{dropped} dropped"
    );
    drop(server);
}
