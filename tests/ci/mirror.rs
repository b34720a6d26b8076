//! A stand-in Debian mirror on a loopback port: the archive `tests/data/ci/make-archive.sh`
//! makes (a good `bookworm`, a `bookworm-security` whose index does not match its
//! Release), served file by file, one request a connection, with a count of requests and
//! an optional number of first requests answered 503 (a mirror that is briefly away).
//!
//! Input: a directory for the archive. Output: its URL, its key, the counts. The server
//! thread lives as long as the process; it only reads under its directory.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A running stand-in mirror.
pub(super) struct Mirror {
    pub url: String,
    pub dir: PathBuf,
    counts: Arc<Counts>,
}

#[derive(Default)]
struct Counts {
    served: AtomicUsize,
    refuse_first: AtomicUsize,
}

impl Mirror {
    /// Builds the archive in `dir` and serves it; `Err` names the tool that is missing.
    pub(super) fn start(dir: &Path) -> Result<Mirror, String> {
        for tool in ["dpkg-deb", "gpg", "sha256sum", "apt-get"] {
            if !on_path(tool) {
                return Err(format!("{tool} is not installed"));
            }
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ci/make-archive.sh");
        let made = Command::new(script)
            .arg(dir)
            .output()
            .expect("make-archive.sh");
        assert!(
            made.status.success(),
            "make-archive.sh: {}",
            String::from_utf8_lossy(&made.stderr)
        );
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the mirror");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let counts = Arc::new(Counts::default());
        let (root, c) = (dir.to_path_buf(), counts.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                answer(stream, &root, &c);
            }
        });
        Ok(Mirror {
            url,
            dir: dir.to_path_buf(),
            counts,
        })
    }

    /// The archive's public key, for `STEERD_DEB_KEYRING`.
    pub(super) fn key(&self) -> PathBuf {
        self.dir.join("key.gpg")
    }

    /// Requests answered so far (503s included).
    pub(super) fn served(&self) -> usize {
        self.counts.served.load(Ordering::SeqCst)
    }

    /// The next `n` requests are answered 503 Service Unavailable.
    pub(super) fn refuse_next(&self, n: usize) {
        self.counts.refuse_first.store(n, Ordering::SeqCst);
    }
}

/// One request on `stream`: the file under `root` its path names, 404, or 503 while
/// refusals are left.
fn answer(stream: TcpStream, root: &Path, counts: &Counts) {
    let mut reader = BufReader::new(&stream);
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut header = String::new();
    while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
        header.clear();
    }
    counts.served.fetch_add(1, Ordering::SeqCst);
    let path = line.split_whitespace().nth(1).unwrap_or("/");
    let refuse = counts
        .refuse_first
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    let file = root.join(decode(path.trim_start_matches('/')));
    let (status, body) = match std::fs::read(&file) {
        _ if refuse => ("503 Service Unavailable", Vec::new()),
        _ if path.contains("..") => ("404 Not Found", Vec::new()),
        Ok(bytes) => ("200 OK", bytes),
        Err(_) => ("404 Not Found", Vec::new()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let mut out = &stream;
    let _ = out.write_all(head.as_bytes());
    if !line.starts_with("HEAD ") {
        let _ = out.write_all(&body);
    }
}

/// `%3a` and the like in a request path (apt escapes the epoch's colon).
fn decode(path: &str) -> String {
    let b = path.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (b[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// True when `tool` is a command on PATH.
pub(super) fn on_path(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}
