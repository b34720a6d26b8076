//! A small, fast HTTP/1.1 upstream on a unix socket, for `scripts/bench-proxy-vs-nginx.sh`:
//! the same upstream behind steerd's `--proxy` and behind nginx's `proxy_pass`, so that
//! what differs between them is the proxy alone.
//!
//! One thread, one level-triggered epoll loop (rustix), nonblocking sockets. Each request
//! head (up to its blank line; requests carry no body) is answered with a fixed 200 of
//! `Content-Length: 13`, keep-alive. It parses nothing else: it is a load, not a server.
//! A Python upstream would be the bottleneck of both proxies and hide their difference.
//!
//! Run: `cargo bench --bench unix_upstream -- /path/to.sock` (runs until killed).

use rustix::event::epoll::{self, CreateFlags, EventData, EventFlags};
use rustix::fd::{AsFd, OwnedFd};
use rustix::io::Errno;
use rustix::net::{AddressFamily, SendFlags, SocketAddrUnix, SocketFlags, SocketType};

const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\
Content-Length: 13\r\n\r\nHello, world!";

/// One connection: its socket and the bytes of a head not complete yet.
struct Conn {
    fd: OwnedFd,
    pending: Vec<u8>,
}

fn main() {
    let Some(path) = std::env::args().nth(1).filter(|a| !a.starts_with("--")) else {
        eprintln!("usage: cargo bench --bench unix_upstream -- /path/to.sock");
        std::process::exit(2);
    };
    let _ = std::fs::remove_file(&path);
    let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
    let listener = rustix::net::socket_with(AddressFamily::UNIX, SocketType::STREAM, flags, None)
        .expect("socket");
    let addr = SocketAddrUnix::new(path.as_str()).expect("socket path");
    rustix::net::bind(&listener, &addr).expect("bind");
    rustix::net::listen(&listener, 1024).expect("listen");
    let ep = epoll::create(CreateFlags::CLOEXEC).expect("epoll");
    epoll::add(&ep, &listener, EventData::new_u64(u64::MAX), EventFlags::IN).expect("add");
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut events: Vec<epoll::Event> = Vec::with_capacity(256);
    loop {
        events.clear();
        let spare = rustix::buffer::spare_capacity(&mut events);
        match epoll::wait(&ep, spare, None) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => panic!("epoll_wait: {e}"),
        }
        for ev in &events {
            let key = ev.data.u64();
            if key == u64::MAX {
                accept_all(&listener, &ep, &mut conns);
            } else if !serve(&mut conns[key as usize]) {
                conns[key as usize] = None;
            }
        }
    }
}

fn accept_all(listener: &OwnedFd, ep: &OwnedFd, conns: &mut Vec<Option<Conn>>) {
    let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
    while let Ok(fd) = rustix::net::accept_with(listener, flags) {
        let at = conns.iter().position(Option::is_none).unwrap_or_else(|| {
            conns.push(None);
            conns.len() - 1
        });
        let data = EventData::new_u64(at as u64);
        if epoll::add(ep, fd.as_fd(), data, EventFlags::IN).is_ok() {
            conns[at] = Some(Conn {
                fd,
                pending: Vec::new(),
            });
        }
    }
}

/// Reads what the connection has and answers each complete head; `false` when it ends.
fn serve(slot: &mut Option<Conn>) -> bool {
    let Some(c) = slot else { return true };
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match rustix::io::read(&c.fd, &mut buf) {
            Ok(0) => return false,
            Ok(n) => n,
            Err(Errno::INTR) => continue,
            Err(Errno::AGAIN) => return true,
            Err(_) => return false,
        };
        c.pending.extend_from_slice(&buf[..n]);
        let mut answers = 0;
        while let Some(end) = c.pending.windows(4).position(|w| w == b"\r\n\r\n") {
            c.pending.drain(..end + 4);
            answers += 1;
        }
        for _ in 0..answers {
            let mut out = ANSWER;
            while !out.is_empty() {
                match rustix::net::send(&c.fd, out, SendFlags::NOSIGNAL) {
                    Ok(k) => out = &out[k..],
                    Err(Errno::INTR | Errno::AGAIN) => {}
                    Err(_) => return false,
                }
            }
        }
    }
}
