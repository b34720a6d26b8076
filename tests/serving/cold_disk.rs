//! A cold file read through a throttled disk stalls no other connection of its worker
//! (issue 35): while one connection downloads a file whose pages are not cached, from a
//! disk throttled by a blkio cgroup (v1 `blkio.throttle.read_bps_device`, or v2 `io.max`),
//! a second connection to the same single worker is answered promptly.
//!
//! The bound is relative to the throttle as measured by the download itself: every small
//! answer comes within the time the throttled disk takes to read [`BOUND_BYTES`], plus
//! four times the slowest of the small answers measured before the download (what the
//! machine's own load costs them). A loop that `sendfile`s from a cold file waits for its
//! reads (up to a 1 MiB chunk a call) and misses it by a wide margin (main: 3.9 s, the
//! whole download); a loop that reads off the loop answers in milliseconds.
//! `scripts/cold-disk.sh` is the benchmark with figures; this test only tells the two
//! apart.
//!
//! More cold downloads at once than the reads a worker keeps outstanding each complete
//! whole and correct (those beyond wait on the list of connections that found no room).
//!
//! Needs root, a served directory on a block device, and cgroup v1 blkio or v2 io; without
//! them it says so (and fails under CI).

use crate::support::server::{is_root, Server, TempDir};
use crate::support::skip::skip_or_fail;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The disk's read throttle, bytes a second.
const RATE: u64 = 1 << 20;
/// The cold file: about four seconds at [`RATE`].
const SIZE: usize = 4 << 20;
/// Every small answer comes within the time the throttled disk reads this much.
const BOUND_BYTES: u64 = 512 << 10;
/// Small requests made at least, while the download runs, for the check to count.
const MIN_SAMPLES: usize = 5;

/// A child cgroup throttling reads from one disk; removed on drop (after its processes
/// are gone).
struct Throttle {
    dir: PathBuf,
}

impl Throttle {
    /// A throttle of `bps` on the disk `dev` (`MAJ:MIN`), or why there can be none.
    fn new(dev: &str, bps: u64) -> Result<Throttle, String> {
        // One cgroup per throttle: the tests of this file share the test process's id.
        static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tag = format!("steerd-test-cold-{}-{n}", std::process::id());
        let v1 = Path::new("/sys/fs/cgroup/blkio");
        if v1.join("blkio.throttle.read_bps_device").exists() {
            let dir = v1.join(tag);
            std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
            let t = Throttle { dir };
            t.write("blkio.throttle.read_bps_device", &format!("{dev} {bps}"))?;
            return Ok(t);
        }
        let v2 = Path::new("/sys/fs/cgroup");
        let controllers = std::fs::read_to_string(v2.join("cgroup.controllers"));
        if controllers.is_ok_and(|c| c.split_whitespace().any(|w| w == "io")) {
            let _ = std::fs::write(v2.join("cgroup.subtree_control"), "+io");
            let dir = v2.join(tag);
            std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
            let t = Throttle { dir };
            t.write("io.max", &format!("{dev} rbps={bps}"))?;
            return Ok(t);
        }
        Err("neither cgroup v1 blkio nor v2 io.max is available".into())
    }

    fn write(&self, file: &str, what: &str) -> Result<(), String> {
        std::fs::write(self.dir.join(file), what)
            .map_err(|e| format!("writing {what:?} to {}: {e}", self.dir.join(file).display()))
    }

    /// Moves process `pid` (all its threads) into the cgroup.
    fn enter(&self, pid: u32) -> Result<(), String> {
        self.write("cgroup.procs", &pid.to_string())
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        for _ in 0..100 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("cold_disk: could not remove {}", self.dir.display());
    }
}

/// The whole disk (`MAJ:MIN`) holding `path`, or why there is none.
fn disk_of(path: &Path) -> Result<String, String> {
    let dev = std::fs::metadata(path).map_err(|e| e.to_string())?.dev();
    let (major, minor) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    if !sys.exists() {
        return Err(format!(
            "{} is not on a block device ({major}:{minor})",
            path.display()
        ));
    }
    // A partition is throttled through its disk.
    let disk = match sys.join("partition").exists() {
        true => sys.join(".."),
        false => sys,
    };
    let text = std::fs::read_to_string(disk.join("dev")).map_err(|e| e.to_string())?;
    Ok(text.trim().to_string())
}

/// Writes `size` bytes to `path` and drops its pages from the page cache; `Err` says why
/// the file cannot be shown cold: its pages stayed cached, or `preadv2(RWF_NOWAIT)`, which
/// both this check and the server ask, is unsupported here (user-mode QEMU 7.2 has no
/// `preadv2`: the server then sends as before, waiting on the disk).
fn write_cold(path: &Path, size: usize) -> Result<(), String> {
    // Each file its own bytes (the name's length and bytes seed them): a body sent from
    // another file shows.
    let seed = path.as_os_str().len()
        + path
            .as_os_str()
            .as_encoded_bytes()
            .iter()
            .map(|&b| b as usize)
            .sum::<usize>();
    let bytes: Vec<u8> = (0..size).map(|i| (i * 7 + i / 4096 + seed) as u8).collect();
    std::fs::write(path, &bytes).unwrap();
    let file = std::fs::File::open(path).unwrap();
    file.sync_all().unwrap();
    let mut page = [0u8; 4096];
    // The kernel may keep a page the first `DONTNEED` asked for (one still in another
    // CPU's batch of pages being added to the LRU lists, with the machine busy): asked
    // again, a few times, before the file is called uncacheable here.
    for _ in 0..20 {
        let _ = rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed);
        let mut bufs = [std::io::IoSliceMut::new(&mut page)];
        match rustix::io::preadv2(&file, &mut bufs, 0, rustix::io::ReadWriteFlags::NOWAIT) {
            Err(rustix::io::Errno::AGAIN) => {
                // That probe started the kernel's readahead of the file (unthrottled,
                // this process is in no cgroup yet): let it land, then drop the pages
                // again.
                std::thread::sleep(Duration::from_millis(50));
                let _ = rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed);
                return Ok(());
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => return Err(format!("preadv2(RWF_NOWAIT) is unsupported here: {e}")),
        }
    }
    Err("posix_fadvise(DONTNEED) left the file's pages cached, 20 times in 2 s".into())
}

/// Downloads `path` on a fresh connection: the bytes and how long it took.
fn download(server: &Server, path: &str) -> std::thread::JoinHandle<(usize, Duration)> {
    let mut s = server.connect();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    std::thread::spawn(move || {
        let start = Instant::now();
        s.write_all(request.as_bytes()).unwrap();
        let mut all = Vec::new();
        let _ = s.read_to_end(&mut all);
        (all.len(), start.elapsed())
    })
}

/// One keep-alive request for the small file: how long its whole answer took.
fn small(s: &mut TcpStream) -> Duration {
    const BODY: &[u8] = b"small\n";
    let start = Instant::now();
    s.write_all(b"GET /small.txt HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.ends_with(BODY) {
        let n = s.read(&mut buf).expect("small answer");
        assert!(n > 0, "the server closed the small file's connection");
        got.extend_from_slice(&buf[..n]);
    }
    start.elapsed()
}

/// One worker serving `small.txt` and the cold files `names` ([`SIZE`] bytes each), run
/// inside a read throttle of [`RATE`] on their disk; or, said by `skip_or_fail`, why not.
fn cold_server(name: &str, names: &[&str]) -> Option<(Server, Throttle)> {
    cold_server_of(name, names, SIZE, RATE)
}

/// [`cold_server`] with files of `size` bytes and a throttle of `rate` bytes a second.
fn cold_server_of(
    name: &str,
    names: &[&str],
    size: usize,
    rate: u64,
) -> Option<(Server, Throttle)> {
    if !is_root() {
        skip_or_fail(name, "needs root for a blkio cgroup");
        return None;
    }
    // The temp dir may be a tmpfs; the target dir is on a disk.
    let root = TempDir::new_in(Path::new(env!("CARGO_TARGET_TMPDIR")), "cold");
    std::fs::write(root.path().join("small.txt"), b"small\n").unwrap();
    let dev = match disk_of(root.path()) {
        Ok(dev) => dev,
        Err(why) => {
            skip_or_fail(name, &why);
            return None;
        }
    };
    for file in names {
        if let Err(why) = write_cold(&root.path().join(file), size) {
            skip_or_fail(name, &why);
            return None;
        }
    }
    let throttle = match Throttle::new(&dev, rate) {
        Ok(t) => t,
        Err(why) => {
            skip_or_fail(name, &why);
            return None;
        }
    };
    let args = ["--workers", "1", "--metrics", "127.0.0.1:0"];
    let mut server = Server::start_in(root.path(), &args, &[]);
    server.root = Some(root);
    for pid in std::iter::once(server.pid).chain(server.worker_pids()) {
        throttle
            .enter(pid)
            .expect("moving the server into the cgroup");
    }
    Some((server, throttle))
}

#[test]
fn a_cold_download_through_a_throttled_disk_leaves_the_worker_answering() {
    let name = "a_cold_download_through_a_throttled_disk_leaves_the_worker_answering";
    // Both throttle the same disk, and the first one measures: one at a time.
    let _measuring = crate::support::serial::exclusive();
    let Some((server, throttle)) = cold_server(name, &["big.bin"]) else {
        return;
    };
    let mut keep = server.connect();
    let mut before = Duration::ZERO;
    for _ in 0..10 {
        before = before.max(small(&mut keep)); // the first one fills the cache
        std::thread::sleep(Duration::from_millis(20));
    }
    let big = download(&server, "/big.bin");
    let mut waits = Vec::new();
    while !big.is_finished() && waits.len() < 2000 {
        waits.push(small(&mut keep));
        std::thread::sleep(Duration::from_millis(50));
    }
    let (bytes, took) = big.join().unwrap();
    assert!(
        bytes > SIZE,
        "the download got {bytes} bytes of {SIZE} and a head"
    );
    // The disk's rate as the download saw it, and the time it takes to read the bound.
    let rate = bytes as f64 / took.as_secs_f64();
    let disk = Duration::from_secs_f64(BOUND_BYTES as f64 / rate);
    let bound = disk + before * 4;
    let worst = waits.iter().max().copied().unwrap_or_default();
    eprintln!(
        "cold_disk: {} small answers, the slowest {worst:?} (before the download {before:?}), \
         download {:.0} KB/s",
        waits.len(),
        rate / 1e3
    );
    assert!(
        worst < bound,
        "a small answer took {worst:?} while a cold file downloaded at {:.0} KB/s: more than \
         the {disk:?} the disk takes to read {} KiB plus 4 x {before:?}, the slowest before \
         the download ({} answers)",
        rate / 1e3,
        BOUND_BYTES >> 10,
        waits.len()
    );
    assert!(
        waits.len() >= MIN_SAMPLES,
        "only {} small answers during a {took:?} download: too few to tell",
        waits.len()
    );
    let handed = server.metric("steerd_disk_read_wait_seconds_count");
    assert!(
        handed > 0,
        "no read was handed off (steerd_disk_read_wait_seconds_count)"
    );
    drop(keep);
    drop(server);
    drop(throttle);
}

/// The body of a whole `200` response to a download, or a panic saying what came.
fn body_of(all: &[u8]) -> &[u8] {
    let at = all.windows(4).position(|w| w == b"\r\n\r\n");
    let at = at.unwrap_or_else(|| panic!("no head in {} bytes", all.len()));
    assert!(all.starts_with(b"HTTP/1.1 200 "), "{:?}", &all[..at]);
    &all[at + 4..]
}

/// Downloads `path` on a fresh connection, then `signal`s the master while the download
/// waits for the disk; the whole body.
fn download_across(server: &Server, path: &str, signal: i32) -> Vec<u8> {
    let mut s = server.connect();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = vec![0u8; 64 << 10];
    let first = s.read(&mut all).expect("the download's first bytes");
    all.truncate(first);
    server.signal(signal);
    s.read_to_end(&mut all).expect("the rest of the download");
    all
}

#[test]
fn a_reload_and_a_graceful_stop_let_a_download_waiting_on_the_disk_finish() {
    let name = "a_reload_and_a_graceful_stop_let_a_download_waiting_on_the_disk_finish";
    // Both throttle the same disk, and the first one measures: one at a time.
    let _measuring = crate::support::serial::exclusive();
    let Some((mut server, throttle)) = cold_server(name, &["a.bin", "b.bin"]) else {
        return;
    };
    let root = server.root.as_ref().unwrap().path().to_path_buf();
    // HUP: the old worker retires and drains, its download goes on to the end; then QUIT:
    // the server stops once the download it was reading for is sent whole.
    let steps = [
        ("a.bin", rustix::process::Signal::HUP, "a reload"),
        ("b.bin", rustix::process::Signal::QUIT, "a graceful stop"),
    ];
    for (file, signal, what) in steps {
        let all = download_across(&server, &format!("/{file}"), signal.as_raw());
        let want = std::fs::read(root.join(file)).unwrap();
        assert!(
            body_of(&all) == want,
            "{file} across {what}: {} bytes",
            all.len()
        );
    }
    assert!(server.wait_exit(Duration::from_secs(30)).success());
    drop(server);
    drop(throttle);
}

/// Cold downloads at once on the one worker: more than the 64 reads a worker keeps
/// outstanding, so some wait on the list of connections that found no room.
const MANY: usize = 80;
/// Reads a worker keeps outstanding (`disk::QUEUE`).
const OUTSTANDING: usize = 64;
/// Each of them: above the file cache's 64 KiB, so it is sent by `sendfile`.
const MANY_SIZE: usize = 128 << 10;
/// Their disk's throttle: the reads queue behind it for about two and a half seconds.
const MANY_RATE: u64 = 4 << 20;

#[test]
fn more_cold_downloads_than_reads_outstanding_each_complete_whole() {
    let name = "more_cold_downloads_than_reads_outstanding_each_complete_whole";
    let _measuring = crate::support::serial::exclusive();
    let names: Vec<String> = (0..MANY).map(|i| format!("f{i:03}.bin")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let Some((server, throttle)) = cold_server_of(name, &refs, MANY_SIZE, MANY_RATE) else {
        return;
    };
    let root = server.root.as_ref().unwrap().path().to_path_buf();
    let handed_before = server.metric("steerd_disk_read_wait_seconds_count");
    // Every connection sends its request before any reads its answer.
    let streams: Vec<TcpStream> = names
        .iter()
        .map(|file| {
            let mut s = server.connect();
            s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
            write!(
                s,
                "GET /{file} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
            s
        })
        .collect();
    let readers: Vec<_> = streams
        .into_iter()
        .map(|mut s| {
            std::thread::spawn(move || {
                let mut all = Vec::new();
                let _ = s.read_to_end(&mut all);
                all
            })
        })
        .collect();
    for (file, reader) in names.iter().zip(readers) {
        let all = reader.join().unwrap();
        let want = std::fs::read(root.join(file)).unwrap();
        assert!(body_of(&all) == want, "{file}: {} bytes", all.len());
    }
    // One a file, as a rule; at least, more than a worker keeps outstanding: some of
    // them were handed off from the waiting list. (The `RWF_NOWAIT` probe of a connection
    // that found no room starts the kernel's readahead of its file, which may have it
    // cached by the time the connection is driven again.)
    let handed = server.metric("steerd_disk_read_wait_seconds_count") - handed_before;
    eprintln!("cold_disk: {handed} reads handed off for {MANY} cold downloads at once");
    assert!(
        handed > OUTSTANDING as u64,
        "{handed} reads handed off for {MANY} cold files, at most {OUTSTANDING} at once"
    );
    drop(server);
    drop(throttle);
}
