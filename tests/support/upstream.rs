//! A recording test upstream for `--proxy`: a unix socket (under a temp dir) or a port on
//! 127.0.0.1, one thread per connection (at most [`MAX_CONNECTIONS`] at once), stopped
//! and joined when its handle drops.
//!
//! It reads requests with its own small, strict parser (`upstream_parse.rs`), not
//! steerd's: what steerd forwards is what is under test. Each request is recorded as it
//! arrived ([`Seen`]), and a request it cannot read is recorded raw, counted in
//! [`Upstream::unparsed`], and ends its connection. Then the test's `answer` function
//! says what to send back ([`Answer`]). Its own tests: `tests/serving/upstream_harness.rs`.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::server::TempDir;
use super::upstream_parse::{read_request, Received};

/// Most connections served at once; one more is closed at accept.
pub(crate) const MAX_CONNECTIONS: usize = 64;

/// Where the upstream listens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Listen {
    Unix,
    Tcp,
}

/// What the test upstream does with one request.
#[derive(Clone, Debug)]
pub(crate) enum Answer {
    /// status, extra header lines ("Name: value"), body sent with Content-Length.
    Fixed(u16, Vec<String>, Vec<u8>),
    /// body pieces sent chunked, with `gap` between pieces.
    Chunked(Vec<Vec<u8>>, Duration),
    /// body then close (no Content-Length, no chunked).
    CloseDelimited(Vec<u8>),
    /// a text/event-stream: each event written and flushed, `gap` between events, then close.
    Sse(Vec<String>, Duration),
    /// 101 then echo every byte back until the peer closes (a WebSocket stand-in).
    UpgradeEcho,
    /// never answers (for 504).
    Silent,
    /// announces Content-Length n, sends fewer bytes, closes.
    CutShort(u64, Vec<u8>),
    /// 200 whose body is "{method} {target} {body length} {body sha256 hex}\n".
    Echo,
    /// the inner answer, then close without having said `Connection: close` (an upstream
    /// whose idle timeout is zero).
    ThenClose(Box<Answer>),
    /// the inner answer to a connection's first request; a later request on it is read
    /// (and recorded), then the connection closes unanswered (an upstream that closed an
    /// idle connection just as a request came).
    FirstOnly(Box<Answer>),
}

/// One request as the upstream received it: the raw head bytes and the body bytes
/// (decoded from chunked if it was chunked), and how it was framed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Seen {
    pub head: Vec<u8>,
    pub body: Vec<u8>,
    pub chunked: bool,
}

impl Seen {
    /// The request line, without its CRLF.
    pub(crate) fn request_line(&self) -> &[u8] {
        let end = self.head.windows(2).position(|w| w == b"\r\n");
        &self.head[..end.unwrap_or(self.head.len())]
    }

    /// The method (the request line up to its first SP).
    pub(crate) fn method(&self) -> String {
        let line = self.request_line();
        let end = line.iter().position(|&b| b == b' ').unwrap_or(line.len());
        String::from_utf8_lossy(&line[..end]).into_owned()
    }

    /// The request-target (between the request line's two SPs).
    pub(crate) fn target(&self) -> String {
        let line = String::from_utf8_lossy(self.request_line()).into_owned();
        line.split(' ').nth(1).unwrap_or_default().to_string()
    }

    /// Every value of the field `name` (case-insensitive), OWS trimmed, in order.
    pub(crate) fn fields(&self, name: &str) -> Vec<String> {
        let head = String::from_utf8_lossy(&self.head).into_owned();
        head.split("\r\n")
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim_matches([' ', '\t']).to_string())
            .collect()
    }

    /// The first value of the field `name`, if any.
    pub(crate) fn field(&self, name: &str) -> Option<String> {
        self.fields(name).into_iter().next()
    }
}

/// What the connection threads share with the handle.
#[derive(Default)]
struct Shared {
    seen: Mutex<Vec<Seen>>,
    unparsed: AtomicUsize,
    connections: AtomicUsize,
    /// Connections accepted and not ended yet.
    open: AtomicUsize,
    stop: AtomicBool,
    /// Each live connection's thread, and a clone of its stream to shut it down.
    live: Mutex<Vec<(Stream, JoinHandle<()>)>>,
}

/// A running test upstream.
pub(crate) struct Upstream {
    spec: String,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
    /// The unix socket's directory (removed on drop, after the threads stopped).
    dir: Option<TempDir>,
}

impl Upstream {
    /// Starts listening and accepting; each request gets `answer(&seen)`.
    pub(crate) fn start(listen: Listen, answer: fn(&Seen) -> Answer) -> Upstream {
        let shared = Arc::new(Shared::default());
        let (listener, spec, dir) = bind(listen);
        let acceptor = {
            let shared = shared.clone();
            std::thread::spawn(move || accept_loop(listener, &shared, answer))
        };
        Upstream {
            spec,
            shared,
            acceptor: Some(acceptor),
            dir,
        }
    }

    /// `unix:/path` or `http://127.0.0.1:PORT`: what `--proxy` takes.
    pub(crate) fn spec(&self) -> String {
        self.spec.clone()
    }

    /// Every request seen so far, in order; a request the upstream could not parse is
    /// recorded with `head` holding the raw bytes and counted in `unparsed()`.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    pub(crate) fn unparsed(&self) -> usize {
        self.shared.unparsed.load(Ordering::SeqCst)
    }

    /// Connections accepted so far (to see keep-alive reuse).
    pub(crate) fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Connections open now (accepted, and the peer has not closed them).
    pub(crate) fn open(&self) -> usize {
        self.shared.open.load(Ordering::SeqCst)
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // A connection wakes the acceptor from its blocking accept.
        let _ = Stream::connect(&self.spec);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        let live = std::mem::take(&mut *self.shared.live.lock().unwrap());
        for (stream, thread) in live {
            stream.shutdown();
            let _ = thread.join();
        }
        drop(self.dir.take());
    }
}

/// A port on 127.0.0.1 where nothing listens, and a unix path where nothing listens (502).
pub(crate) fn refusing_spec(listen: Listen) -> String {
    match listen {
        Listen::Tcp => format!("http://127.0.0.1:{}", super::free_port()),
        Listen::Unix => {
            let dir = std::env::temp_dir();
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!("steerd-refusing-{}-{n}.sock", std::process::id()));
            format!("unix:{}", path.display())
        }
    }
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

enum Listener {
    Unix(UnixListener),
    Tcp(TcpListener),
}

fn bind(listen: Listen) -> (Listener, String, Option<TempDir>) {
    match listen {
        Listen::Tcp => {
            let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
            let port = l.local_addr().expect("local address").port();
            (Listener::Tcp(l), format!("http://127.0.0.1:{port}"), None)
        }
        Listen::Unix => {
            let dir = TempDir::new("upstream");
            let path = dir.path().join("up.sock");
            let l = UnixListener::bind(&path).expect("bind the unix socket");
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777));
            let spec = format!("unix:{}", path.display());
            (Listener::Unix(l), spec, Some(dir))
        }
    }
}

/// A connected socket of either family.
pub(crate) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    /// Connects to a spec of [`Upstream::spec`]'s form.
    pub(crate) fn connect(spec: &str) -> std::io::Result<Stream> {
        if let Some(path) = spec.strip_prefix("unix:") {
            return UnixStream::connect(path).map(Stream::Unix);
        }
        let addr = spec.strip_prefix("http://").unwrap_or(spec);
        TcpStream::connect(addr).map(Stream::Tcp)
    }

    fn try_clone(&self) -> std::io::Result<Stream> {
        match self {
            Stream::Unix(s) => s.try_clone().map(Stream::Unix),
            Stream::Tcp(s) => s.try_clone().map(Stream::Tcp),
        }
    }

    pub(crate) fn shutdown(&self) {
        let _ = match self {
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
        };
    }

    pub(crate) fn set_read_timeout(&self, t: Duration) {
        let _ = match self {
            Stream::Unix(s) => s.set_read_timeout(Some(t)),
            Stream::Tcp(s) => s.set_read_timeout(Some(t)),
        };
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Unix(s) => s.flush(),
            Stream::Tcp(s) => s.flush(),
        }
    }
}

fn accept_loop(listener: Listener, shared: &Arc<Shared>, answer: fn(&Seen) -> Answer) {
    loop {
        let accepted = match &listener {
            Listener::Unix(l) => l.accept().map(|(s, _)| Stream::Unix(s)),
            Listener::Tcp(l) => l.accept().map(|(s, _)| Stream::Tcp(s)),
        };
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = accepted else { continue };
        let mut live = shared.live.lock().unwrap();
        live.retain(|(_, t)| !t.is_finished());
        if live.len() >= MAX_CONNECTIONS {
            continue;
        }
        let Ok(handle) = stream.try_clone() else {
            continue;
        };
        shared.connections.fetch_add(1, Ordering::SeqCst);
        shared.open.fetch_add(1, Ordering::SeqCst);
        let thread = {
            let shared = shared.clone();
            std::thread::spawn(move || serve(stream, &shared, answer))
        };
        live.push((handle, thread));
    }
}

/// Requests on one connection, in order, until one ends it; then the socket is shut
/// down (the handle keeps a clone of it, so dropping this one would not close it).
fn serve(mut stream: Stream, shared: &Shared, answer: fn(&Seen) -> Answer) {
    // A bound on every wait: a test that forgets the handle still ends.
    stream.set_read_timeout(Duration::from_secs(120));
    let mut buf = Vec::new();
    let mut nth = 0;
    while let Some(keep) = serve_one(&mut stream, shared, (answer, nth), &mut buf) {
        if !keep {
            break;
        }
        nth += 1;
    }
    stream.shutdown();
    shared.open.fetch_sub(1, Ordering::SeqCst);
}

/// One request (the connection's `nth`, from 0) and its answer; `None` when the
/// connection ended before a request or with one that could not be parsed, else whether
/// it persists.
fn serve_one(
    stream: &mut Stream,
    shared: &Shared,
    (answer, nth): (fn(&Seen) -> Answer, usize),
    buf: &mut Vec<u8>,
) -> Option<bool> {
    let (seen, keep) = match read_request(stream, buf) {
        Received::Closed => return None,
        Received::Unparsed(raw) => {
            shared.unparsed.fetch_add(1, Ordering::SeqCst);
            let seen = Seen {
                head: raw,
                ..Seen::default()
            };
            shared.seen.lock().unwrap().push(seen);
            return None;
        }
        Received::Request(seen, keep) => (seen, keep),
    };
    shared.seen.lock().unwrap().push(seen.clone());
    let reply = match answer(&seen) {
        Answer::FirstOnly(_) if nth > 0 => return Some(false),
        Answer::FirstOnly(first) => *first,
        reply => reply,
    };
    let head_only = seen.method() == "HEAD";
    let open = respond(stream, shared, &seen, reply, head_only, buf);
    Some(open.unwrap_or(false) && keep)
}

/// Sends `reply`; `Ok(true)` when the connection may carry another request. `pending`
/// holds bytes received after the request (echoed first after an upgrade).
fn respond(
    s: &mut Stream,
    shared: &Shared,
    seen: &Seen,
    reply: Answer,
    head_only: bool,
    pending: &mut Vec<u8>,
) -> std::io::Result<bool> {
    match reply {
        Answer::Fixed(status, extra, body) => {
            let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
            for line in extra {
                head.push_str(&line);
                head.push_str("\r\n");
            }
            if !(status < 200 || status == 204 || status == 304) {
                head.push_str(&format!("Content-Length: {}\r\n", body.len()));
            }
            s.write_all(head.as_bytes())?;
            s.write_all(b"\r\n")?;
            if !head_only {
                s.write_all(&body)?;
            }
            Ok(true)
        }
        Answer::Echo => {
            let body = format!(
                "{} {} {} {}\n",
                seen.method(),
                seen.target(),
                seen.body.len(),
                sha256_hex(&seen.body)
            );
            let fixed = Answer::Fixed(200, vec!["Content-Type: text/plain".into()], body.into());
            respond(s, shared, seen, fixed, head_only, pending)
        }
        Answer::Chunked(pieces, gap) => {
            s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")?;
            for (i, piece) in pieces.iter().filter(|p| !p.is_empty()).enumerate() {
                if i > 0 && !pause(shared, gap) {
                    return Ok(false);
                }
                s.write_all(format!("{:x}\r\n", piece.len()).as_bytes())?;
                s.write_all(piece)?;
                s.write_all(b"\r\n")?;
                s.flush()?;
            }
            s.write_all(b"0\r\n\r\n")?;
            Ok(true)
        }
        Answer::CloseDelimited(body) => {
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n")?;
            s.write_all(&body)?;
            Ok(false)
        }
        Answer::Sse(events, gap) => {
            s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                  Cache-Control: no-cache\r\nConnection: close\r\n\r\n",
            )?;
            for (i, event) in events.iter().enumerate() {
                if i > 0 && !pause(shared, gap) {
                    return Ok(false);
                }
                s.write_all(format!("data: {event}\n\n").as_bytes())?;
                s.flush()?;
            }
            Ok(false)
        }
        Answer::UpgradeEcho => {
            s.write_all(
                b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\
                  Upgrade: websocket\r\n\r\n",
            )?;
            s.write_all(pending)?;
            pending.clear();
            echo(s)?;
            Ok(false)
        }
        Answer::Silent => {
            // Wait for the peer to close (or the handle to drop, which shuts the socket).
            let mut sink = [0u8; 4096];
            while !shared.stop.load(Ordering::SeqCst) {
                match s.read(&mut sink) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                    Err(_) => break,
                }
            }
            Ok(false)
        }
        Answer::ThenClose(inner) => {
            respond(s, shared, seen, *inner, head_only, pending)?;
            Ok(false)
        }
        Answer::FirstOnly(inner) => respond(s, shared, seen, *inner, head_only, pending),
        Answer::CutShort(announced, body) => {
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {announced}\r\n\r\n");
            s.write_all(head.as_bytes())?;
            s.write_all(&body)?;
            Ok(false)
        }
    }
}

/// Sleeps `gap` in short steps; `false` when the upstream is stopping.
fn pause(shared: &Shared, gap: Duration) -> bool {
    let step = Duration::from_millis(10);
    let mut left = gap;
    while !left.is_zero() {
        if shared.stop.load(Ordering::SeqCst) {
            return false;
        }
        let d = left.min(step);
        std::thread::sleep(d);
        left -= d;
    }
    !shared.stop.load(Ordering::SeqCst)
}

/// Writes back every byte read until the peer closes.
fn echo(s: &mut Stream) -> std::io::Result<()> {
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        s.write_all(&buf[..n])?;
    }
}

/// The lowercase hex SHA-256 of `data`.
pub(crate) fn sha256_hex(data: &[u8]) -> String {
    let mut h = steerd::crypt::sha2::Sha256::new();
    h.update(data);
    h.finish().iter().map(|b| format!("{b:02x}")).collect()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        301 => "Moved Permanently",
        304 => "Not Modified",
        400 => "Bad Request",
        404 => "Not Found",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}
