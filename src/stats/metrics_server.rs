//! The master's server on the `--metrics` address: a small table of nonblocking client
//! connections that the master's `poll` watches beside its signals and respawn timers.
//!
//! Input: the (nonblocking) metrics listener, readiness, the clock, and a function from a
//! request head to the whole reply. Output: one reply per connection, then the connection
//! is closed. It does not decide what to answer (`dashboard::reply` does: the page,
//! `/status.json`, `/metrics`) and does not render anything.
//!
//! The master supervises workers, so it must never wait on a client: a responder that
//! read with a blocking timeout let 20 silent connections delay a worker's respawn by
//! seconds and a real scrape by ~19 s. Here every read and write is nonblocking; a client
//! has [`CLIENT_DEADLINE`] for the whole exchange, and the table holds at most
//! [`MAX_CLIENTS`].
//!
//! Silent connections must not starve a real probe either. Dropping the oldest client
//! when a new one arrives let a flood of silent connections push out probes between
//! their connect and their request (91 of 100 `/health` probes failed; a Kubernetes
//! liveness probe failing that way restarts the pod). So:
//! - a new connection is read at once, so a probe whose request has already arrived is
//!   answered before the next connection is even accepted, and clients already in the
//!   table are moved before new ones are accepted;
//! - with the table full, the client evicted is the oldest that has sent nothing for
//!   [`SILENT_GRACE`]; failing that, the oldest that has sent nothing (it is read once
//!   more first: a request that arrived since is served, not dropped); only when every
//!   client has sent bytes, the oldest of them.

use std::io;
use std::net::IpAddr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

/// Clients served at once. Under a flood the connections waiting for the master are
/// accepted (a wake empties the accept queue, which is `somaxconn` long) and pass
/// through this table, where a probe's request is read as soon as it arrives and a
/// silent connection is the first to go; an accept queue that overflowed would drop a
/// probe's SYN instead (and the client's first retry comes a second later, past a
/// probe's timeout).
pub(crate) const MAX_CLIENTS: usize = 128;
/// How long a connection may stay silent before it is the first to go when the table is
/// full: a real client sends its request right after connecting.
pub(crate) const SILENT_GRACE: Duration = Duration::from_millis(300);
/// Time one client has, from accept to the last byte of the reply.
pub(crate) const CLIENT_DEADLINE: Duration = Duration::from_secs(1);
/// Largest request head read; a longer one is answered as it stands.
const HEAD_MAX: usize = 4096;
/// The accept queue when `somaxconn` cannot be read (the kernel's default since 5.4).
pub(crate) const BACKLOG_FALLBACK: u32 = 4096;

/// The system's largest accept queue, read from `path` (`/proc/sys/net/core/somaxconn`),
/// or [`BACKLOG_FALLBACK`] when that cannot be read or says nothing usable.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn backlog(path: &str) -> u32 {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    match text.trim().parse::<u32>() {
        Ok(n) if n > 0 => n,
        _ => BACKLOG_FALLBACK,
    }
}

/// One metrics connection and where its exchange stands.
struct Client {
    fd: OwnedFd,
    accepted: Instant,
    deadline: Instant,
    head: Vec<u8>,
    /// The reply and how much of it is written, once the head is read.
    reply: Option<(Vec<u8>, usize)>,
}

/// What a step of a client's exchange left.
enum Step {
    /// Waiting for the socket.
    Pending,
    /// Answered, or failed: close it.
    Done,
}

/// The open metrics connections, oldest first.
pub(crate) struct Responder {
    clients: Vec<Client>,
    /// Connections accepted per readiness of the listener: its whole accept queue
    /// (`backlog`), so a wake empties it; bounded, so the master's work per wake is.
    accepts_per_wake: usize,
}

impl Responder {
    /// No client yet; the listener's accept queue holds `backlog` connections.
    pub(crate) fn new(backlog: u32) -> Responder {
        Responder {
            clients: Vec::new(),
            accepts_per_wake: backlog.max(1) as usize,
        }
    }

    /// What to poll: the listener for new clients, each client for its next step.
    pub(crate) fn poll_fds<'a>(
        &'a self,
        listener: BorrowedFd<'a>,
    ) -> Vec<rustix::event::PollFd<'a>> {
        use rustix::event::{PollFd, PollFlags};
        let mut fds = Vec::with_capacity(1 + self.clients.len());
        fds.push(PollFd::from_borrowed_fd(listener, PollFlags::IN));
        for c in &self.clients {
            let want = if c.reply.is_some() {
                PollFlags::OUT
            } else {
                PollFlags::IN
            };
            fds.push(PollFd::new(&c.fd, want));
        }
        fds
    }

    /// The earliest client deadline, for the master's poll timeout.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.clients.iter().map(|c| c.deadline).min()
    }

    /// Number of open metrics connections.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.clients.len()
    }

    /// True with no open metrics connection.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    /// Accepts what is waiting (closing at once a peer `admits` refuses: `--allow`,
    /// `--deny`), moves every client as far as its socket allows, drops the finished and
    /// the late. Never blocks. Returns the first accept error (other than "nothing
    /// waiting"), after serving the clients it has.
    pub(crate) fn service(
        &mut self,
        listener: BorrowedFd<'_>,
        now: Instant,
        admits: &dyn Fn(IpAddr) -> bool,
        answer: impl Fn(&[u8]) -> Vec<u8>,
    ) -> io::Result<()> {
        self.clients.retain_mut(|c| {
            if now >= c.deadline {
                return false;
            }
            matches!(step(c, &answer), Step::Pending)
        });
        self.accept_waiting(listener, now, admits, &answer)
    }

    fn accept_waiting(
        &mut self,
        listener: BorrowedFd<'_>,
        now: Instant,
        admits: &dyn Fn(IpAddr) -> bool,
        answer: &impl Fn(&[u8]) -> Vec<u8>,
    ) -> io::Result<()> {
        use rustix::io::Errno;
        use rustix::net::SocketFlags;
        for _ in 0..self.accepts_per_wake {
            let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
            let fd = match rustix::net::acceptfrom_with(listener, flags) {
                Ok((fd, from)) => {
                    let peer = from.and_then(|a| std::net::SocketAddr::try_from(a).ok());
                    if peer.is_some_and(|p| !admits(p.ip())) {
                        continue;
                    }
                    fd
                }
                Err(Errno::AGAIN | Errno::INTR) => return Ok(()),
                Err(Errno::CONNABORTED) => continue,
                Err(e) => return Err(e.into()),
            };
            let mut c = Client {
                fd,
                accepted: now,
                deadline: now + CLIENT_DEADLINE,
                head: Vec::new(),
                reply: None,
            };
            if let Step::Done = step(&mut c, answer) {
                continue;
            }
            self.make_room(now, answer);
            self.clients.push(c);
        }
        Ok(())
    }

    /// With the table full, closes one client, in the order the module doc gives. A silent
    /// client is read once more before it goes; one that turns out to be finished, or to
    /// have sent bytes, frees its slot or stays, and the choice is made again. Bounded:
    /// each round either frees a slot or turns a silent client into a talking one.
    fn make_room(&mut self, now: Instant, answer: &impl Fn(&[u8]) -> Vec<u8>) {
        for _ in 0..=MAX_CLIENTS {
            if self.clients.len() < MAX_CLIENTS {
                return;
            }
            let Some(at) = self.victim(now) else {
                self.clients.remove(0);
                return;
            };
            let c = &mut self.clients[at];
            let done = matches!(step(c, answer), Step::Done);
            if done || c.silent() {
                self.clients.remove(at);
            }
        }
        if self.clients.len() >= MAX_CLIENTS {
            self.clients.remove(0);
        }
    }

    /// The silent client to evict: the oldest past [`SILENT_GRACE`], else the oldest.
    fn victim(&self, now: Instant) -> Option<usize> {
        let silent = || self.clients.iter().enumerate().filter(|(_, c)| c.silent());
        silent()
            .find(|(_, c)| now.saturating_duration_since(c.accepted) >= SILENT_GRACE)
            .or_else(|| silent().next())
            .map(|(at, _)| at)
    }
}

impl Client {
    /// True while the client has sent no byte.
    fn silent(&self) -> bool {
        self.head.is_empty() && self.reply.is_none()
    }
}

/// Reads the head until it is complete (then has `answer` build the reply), writes the
/// reply until it is sent; stops at the first `EAGAIN`.
fn step(c: &mut Client, answer: &impl Fn(&[u8]) -> Vec<u8>) -> Step {
    use rustix::io::Errno;
    let mut buf = [0u8; 512];
    while c.reply.is_none() {
        match rustix::io::read(&c.fd, &mut buf) {
            // EOF before any byte: the client gave up.
            Ok(0) if c.head.is_empty() => return Step::Done,
            Ok(0) => c.reply = Some((answer(&c.head), 0)),
            Ok(n) => {
                c.head.extend_from_slice(&buf[..n]);
                let complete = c.head.windows(4).any(|w| w == b"\r\n\r\n");
                if complete || c.head.len() >= HEAD_MAX {
                    c.reply = Some((answer(&c.head), 0));
                }
            }
            Err(Errno::AGAIN) => return Step::Pending,
            Err(Errno::INTR) => {}
            Err(_) => return Step::Done,
        }
    }
    let Some((bytes, written)) = &mut c.reply else {
        return Step::Done;
    };
    while *written < bytes.len() {
        // MSG_NOSIGNAL: a client that left gets EPIPE here, not a SIGPIPE for the master.
        match rustix::net::send(
            c.fd.as_fd(),
            &bytes[*written..],
            rustix::net::SendFlags::NOSIGNAL,
        ) {
            Ok(n) => *written += n,
            Err(Errno::AGAIN) => return Step::Pending,
            Err(Errno::INTR) => {}
            Err(_) => return Step::Done,
        }
    }
    Step::Done
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    fn listener() -> TcpListener {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.set_nonblocking(true).expect("nonblocking");
        l
    }

    /// A reply that echoes the request line.
    fn echo(head: &[u8]) -> Vec<u8> {
        let line = head.split(|&b| b == b'\r').next().unwrap_or(&[]);
        let mut out = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".to_vec();
        out.extend_from_slice(line);
        out
    }

    /// Services a bounded number of rounds.
    fn pump(r: &mut Responder, l: &TcpListener, rounds: usize) {
        for _ in 0..rounds {
            r.service(l.as_fd(), Instant::now(), &|_| true, echo)
                .expect("service");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn silent_clients_do_not_delay_a_real_request_and_the_table_stays_bounded() {
        let l = listener();
        let addr = l.local_addr().unwrap();
        let mut r = Responder::new(128);
        let silent = silent(&mut r, &l, MAX_CLIENTS + 4);
        pump(&mut r, &l, 3);
        assert_eq!(r.len(), MAX_CLIENTS);
        let mut real = TcpStream::connect(addr).expect("connect");
        real.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .expect("write");
        pump(&mut r, &l, 5);
        real.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut text = String::new();
        real.read_to_string(&mut text).expect("reply");
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\nGET /metrics HTTP/1.1"), "{text}");
        drop(silent);
    }

    /// Opens `n` connections that send nothing, a few at a time with a round of service
    /// between (so the test listener's accept queue never overflows).
    fn silent(r: &mut Responder, l: &TcpListener, n: usize) -> Vec<TcpStream> {
        let addr = l.local_addr().unwrap();
        let mut held = Vec::with_capacity(n);
        while held.len() < n {
            let batch = (n - held.len()).min(32);
            held.extend((0..batch).map(|_| TcpStream::connect(addr).expect("connect")));
            pump(r, l, 1);
        }
        held
    }

    #[test]
    fn a_client_that_has_sent_bytes_outlives_a_flood_of_silent_ones() {
        let l = listener();
        let mut r = Responder::new(128);
        let mut talker = TcpStream::connect(l.local_addr().unwrap()).expect("connect");
        talker
            .write_all(b"GET /health HTTP/1.1\r\n")
            .expect("write");
        pump(&mut r, &l, 3);
        let flood = silent(&mut r, &l, 2 * MAX_CLIENTS);
        assert_eq!(r.len(), MAX_CLIENTS);
        talker.write_all(b"Host: x\r\n\r\n").expect("write");
        pump(&mut r, &l, 3);
        talker
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut text = String::new();
        talker.read_to_string(&mut text).expect("reply");
        assert!(text.ends_with("\r\n\r\nGET /health HTTP/1.1"), "{text}");
        drop(flood);
    }

    #[test]
    fn silent_clients_past_the_grace_go_before_younger_ones() {
        let l = listener();
        let mut r = Responder::new(128);
        let old = silent(&mut r, &l, MAX_CLIENTS);
        assert_eq!(r.len(), MAX_CLIENTS);
        // Later, a young silent client arrives; then one more, which needs a slot.
        let later = Instant::now() + SILENT_GRACE;
        let closed = |s: &TcpStream| {
            s.set_nonblocking(true).unwrap();
            let mut b = [0u8; 1];
            !matches!(s.peek(&mut b), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
        };
        // Serviced until the arrival is taken (its slot made by closing `gone`), however
        // slowly the machine (or an emulator) hands it over; bounded.
        let admit = |r: &mut Responder, gone: &TcpStream| {
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                std::thread::sleep(Duration::from_millis(20));
                r.service(l.as_fd(), later, &|_| true, echo)
                    .expect("service");
                if closed(gone) || Instant::now() > deadline {
                    break;
                }
            }
        };
        let young = TcpStream::connect(l.local_addr().unwrap()).expect("connect");
        admit(&mut r, &old[0]);
        let newest = TcpStream::connect(l.local_addr().unwrap()).expect("connect");
        admit(&mut r, &old[1]);
        assert_eq!(r.len(), MAX_CLIENTS);
        // The two evicted were the two oldest, past the grace; the young one is kept.
        assert!(
            closed(&old[0]) && closed(&old[1]),
            "the oldest silent clients went"
        );
        assert!(!closed(&old[2]) && !closed(&young) && !closed(&newest));
    }

    #[test]
    fn late_clients_are_dropped_at_their_deadline() {
        let l = listener();
        let _c = TcpStream::connect(l.local_addr().unwrap()).expect("connect");
        let mut r = Responder::new(128);
        pump(&mut r, &l, 3);
        assert_eq!(r.len(), 1);
        let later = Instant::now() + CLIENT_DEADLINE;
        r.service(l.as_fd(), later, &|_| true, echo)
            .expect("service");
        assert!(r.is_empty());
    }

    #[test]
    fn a_head_cut_off_by_eof_is_answered_as_it_stands() {
        let l = listener();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).expect("connect");
        c.write_all(b"GET /x HTTP/1.0\r\n").expect("write");
        c.shutdown(std::net::Shutdown::Write).expect("half close");
        let mut r = Responder::new(128);
        pump(&mut r, &l, 5);
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut text = String::new();
        c.read_to_string(&mut text).expect("reply");
        assert!(text.ends_with("\r\n\r\nGET /x HTTP/1.0"), "{text}");
    }
}
