//! `steerd bench responder`: the speed-of-light reference. No real server can answer a
//! request with fewer system calls, so its figures bound what steerd can reach here.
//!
//! Input: `--listen ADDR:PORT --cpus LIST [--close]`. Output: a canned 13-byte
//! `Hello, world!` for every request head (`\r\n\r\n`) received, until killed.
//! One thread per listed CPU, pinned, each with its own SO_REUSEPORT listener (the first
//! listener's port is reused, so port 0 works) and nothing shared.
//!
//! Keep-alive: one level-triggered epoll loop per thread; per request one `read` and one
//! `write` (plus a share of `epoll_wait`). Close: the listener has TCP_DEFER_ACCEPT, so a
//! blocking `accept4` returns a connection whose request is already queued, and the
//! thread answers straight away: accept4, read, write, close, four calls and no epoll.
//! `--steer` attaches a classic BPF program to the group that sends each connection to
//! the listener of the CPU that received it (`ld #cpu`, one `jeq` per CPU), as steerd's
//! `--steer cpu` does; without it the kernel's 4-tuple hash spreads connections, so on
//! loopback about half of them are served on the other CPU than the client's.
//! It prints `responder: listening on ADDR` once every listener is bound. It does not
//! parse requests, serve files or stop gracefully: it is a measuring stick.

use super::Usage;
use crate::cpuset::{CpuId, CpuSet};
use rustix::event::epoll;
use rustix::fd::{AsFd, OwnedFd};
use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketFlags, SocketType};
use std::net::SocketAddr;

const HELP: &str = "\
usage: steerd bench responder --listen ADDR:PORT --cpus LIST [--close] [--steer]

The reference responder: one pinned thread per CPU in LIST, one SO_REUSEPORT listener
each, a canned 13-byte response to every request, one read and one write per request.
--close answers and closes each connection (TCP_DEFER_ACCEPT, no epoll).
--steer sends each connection to the listener of the CPU that received it (cBPF).
Port 0 picks a free port; the address is printed once all listeners are bound.
";

const KEEP_ALIVE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello, world!";
const CLOSE: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nConnection: close\r\n\r\nHello, world!";

/// Entry point of `steerd bench responder`.
pub fn main(args: &[String]) -> Result<i32, Usage> {
    if super::wants_help(args) {
        super::emit(HELP);
        return Ok(0);
    }
    let (addr, cpus, close, steer) = parse(args).map_err(|m| Usage(format!("responder: {m}")))?;
    match serve(addr, &cpus, close, steer) {
        Ok(()) => Ok(0),
        Err(e) => {
            eprintln!("steerd: bench: responder: {e}");
            Ok(1)
        }
    }
}

type Options = (SocketAddr, Vec<CpuId>, bool, bool);

fn parse(args: &[String]) -> Result<Options, String> {
    let (mut addr, mut cpus, mut close, mut steer) = (None, None, false, false);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--listen" => {
                let v = it.next().ok_or("--listen needs ADDR:PORT")?;
                addr = Some(
                    v.parse()
                        .map_err(|_| format!("--listen {v:?}: not ADDR:PORT"))?,
                );
            }
            "--cpus" => {
                let v = it.next().ok_or("--cpus needs a CPU list")?;
                let set = CpuSet::parse_list(v).map_err(|e| format!("--cpus {v:?}: {e}"))?;
                cpus = Some(set.iter().collect::<Vec<_>>());
            }
            "--close" => close = true,
            "--steer" => steer = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let cpus = cpus
        .filter(|c| !c.is_empty())
        .ok_or("--cpus LIST is required")?;
    Ok((
        addr.ok_or("--listen ADDR:PORT is required")?,
        cpus,
        close,
        steer,
    ))
}

/// Binds every listener, then runs one pinned thread per CPU until the process is killed.
fn serve(addr: SocketAddr, cpus: &[CpuId], close: bool, steer: bool) -> Result<(), String> {
    let mut listeners = Vec::with_capacity(cpus.len());
    let mut bound = addr;
    for _ in cpus {
        let l = listener(bound, close)?;
        bound = rustix::net::getsockname(&l)
            .ok()
            .and_then(|a| SocketAddr::try_from(a).ok())
            .ok_or("getsockname failed")?;
        listeners.push(l);
    }
    if steer {
        let prog =
            asm_bpf::assemble(&steer_source(cpus)).map_err(|e| format!("steering program: {e}"))?;
        crate::sys::attach_reuseport_cbpf(listeners[0].as_fd(), &prog)
            .map_err(|e| format!("SO_ATTACH_REUSEPORT_CBPF: {e}"))?;
    }
    super::emit(&format!("responder: listening on {bound}\n"));
    let threads: Vec<_> = cpus
        .iter()
        .zip(listeners)
        .map(|(&cpu, l)| std::thread::spawn(move || run_thread(cpu, l, close)))
        .collect();
    for t in threads {
        match t.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err("a responder thread panicked".into()),
        }
    }
    Ok(())
}

fn listener(addr: SocketAddr, close: bool) -> Result<OwnedFd, String> {
    let family = if addr.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    // Close mode accepts blocking (one thread, one connection at a time); keep-alive polls.
    let flags = if close {
        SocketFlags::CLOEXEC
    } else {
        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK
    };
    let step = |what: &str, e: Errno| format!("listener on {addr}: {what}: {e}");
    let s = rustix::net::socket_with(family, SocketType::STREAM, flags, None)
        .map_err(|e| step("socket", e))?;
    rustix::net::sockopt::set_socket_reuseaddr(&s, true).map_err(|e| step("SO_REUSEADDR", e))?;
    rustix::net::sockopt::set_socket_reuseport(&s, true).map_err(|e| step("SO_REUSEPORT", e))?;
    if close {
        crate::sys::set_tcp_defer_accept(s.as_fd(), 1)
            .map_err(|e| format!("listener on {addr}: TCP_DEFER_ACCEPT: {e}"))?;
    }
    rustix::net::bind(&s, &addr).map_err(|e| step("bind", e))?;
    rustix::net::listen(&s, 4096).map_err(|e| step("listen", e))?;
    Ok(s)
}

fn run_thread(cpu: CpuId, listener: OwnedFd, close: bool) -> Result<(), String> {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu.get());
    rustix::thread::sched_setaffinity(None, &set)
        .map_err(|e| format!("pinning to CPU {cpu}: {e}"))?;
    if close {
        close_loop(&listener)
    } else {
        keep_alive_loop(listener)
    }
}

/// accept4, read, write, close: the request is already there (TCP_DEFER_ACCEPT).
fn close_loop(listener: &OwnedFd) -> Result<(), String> {
    let mut buf = [0u8; 4096];
    loop {
        let conn = match rustix::net::accept_with(listener, SocketFlags::CLOEXEC) {
            Ok(c) => c,
            Err(Errno::INTR | Errno::CONNABORTED | Errno::AGAIN) => continue,
            Err(e) => return Err(format!("accept4: {e}")),
        };
        if matches!(rustix::io::read(&conn, &mut buf), Ok(n) if n > 0) {
            let _ = rustix::net::send(&conn, CLOSE, rustix::net::SendFlags::NOSIGNAL);
        }
    }
}

/// Level-triggered epoll: the listener's token is `u64::MAX`, a connection's is its fd.
fn keep_alive_loop(listener: OwnedFd) -> Result<(), String> {
    let ep =
        epoll::create(epoll::CreateFlags::CLOEXEC).map_err(|e| format!("epoll_create: {e}"))?;
    epoll::add(
        &ep,
        &listener,
        epoll::EventData::new_u64(u64::MAX),
        epoll::EventFlags::IN,
    )
    .map_err(|e| format!("epoll_ctl: {e}"))?;
    // Connections by fd number, with how many bytes of "\r\n\r\n" the last read ended in.
    let mut conns: Vec<Option<(OwnedFd, u8)>> = Vec::new();
    let mut events: Vec<epoll::Event> = Vec::with_capacity(256);
    let mut buf = vec![0u8; 16 * 1024];
    let mut out: Vec<u8> = Vec::with_capacity(KEEP_ALIVE.len() * 64);
    loop {
        events.clear();
        match epoll::wait(&ep, rustix::buffer::spare_capacity(&mut events), None) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => return Err(format!("epoll_wait: {e}")),
        }
        for ev in &events {
            let token = ev.data.u64();
            if token == u64::MAX {
                accept_all(&ep, &listener, &mut conns);
                continue;
            }
            let slot = token as usize;
            let Some((fd, matched)) = conns.get_mut(slot).and_then(Option::as_mut) else {
                continue;
            };
            let n = match rustix::io::read(&*fd, &mut buf) {
                Ok(0) | Err(_) => 0,
                Ok(n) => n,
            };
            let heads = count_heads(&buf[..n], matched);
            out.clear();
            for _ in 0..heads {
                out.extend_from_slice(KEEP_ALIVE);
            }
            let ok = n > 0 && (out.is_empty() || rustix::io::write(&*fd, &out).is_ok());
            if !ok {
                conns[slot] = None; // dropping the fd also removes it from the epoll set
            }
        }
    }
}

fn accept_all(ep: &OwnedFd, listener: &OwnedFd, conns: &mut Vec<Option<(OwnedFd, u8)>>) {
    let flags = SocketFlags::CLOEXEC | SocketFlags::NONBLOCK;
    while let Ok(c) = rustix::net::accept_with(listener, flags) {
        let _ = rustix::net::sockopt::set_tcp_nodelay(&c, true);
        let slot = rustix::fd::AsRawFd::as_raw_fd(&c) as usize;
        if epoll::add(
            ep,
            &c,
            epoll::EventData::new_u64(slot as u64),
            epoll::EventFlags::IN,
        )
        .is_err()
        {
            continue;
        }
        if conns.len() <= slot {
            conns.resize_with(slot + 1, || None);
        }
        conns[slot] = Some((c, 0));
    }
}

/// bpf_asm source: the receiving CPU's listener index, or past the group (the kernel
/// then falls back to its hash) for a CPU without a listener.
fn steer_source(cpus: &[CpuId]) -> String {
    let mut src = String::from("ld #cpu\n");
    for (i, cpu) in cpus.iter().enumerate() {
        src.push_str(&format!("jeq #{cpu}, l{i}\n"));
    }
    src.push_str("ret #0xffffffff\n");
    for i in 0..cpus.len() {
        src.push_str(&format!("l{i}: ret #{i}\n"));
    }
    src
}

/// Counts request heads ending in `data`, carrying a partial `\r\n\r\n` across reads.
fn count_heads(data: &[u8], matched: &mut u8) -> usize {
    const END: &[u8; 4] = b"\r\n\r\n";
    let mut heads = 0;
    for &b in data {
        *matched = if b == END[*matched as usize] {
            *matched + 1
        } else if b == b'\r' {
            1
        } else {
            0
        };
        if *matched == 4 {
            heads += 1;
            *matched = 0;
        }
    }
    heads
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_counted_across_reads() {
        let mut m = 0;
        assert_eq!(
            count_heads(
                b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\n\r",
                &mut m
            ),
            1
        );
        assert_eq!(count_heads(b"\n", &mut m), 1);
        assert_eq!(count_heads(b"\r\r\n\r\n", &mut m), 1);
    }

    #[test]
    fn steering_program_maps_each_cpu_to_its_listener() {
        let cpus: Vec<CpuId> = [3, 5].iter().map(|&c| CpuId::new(c).unwrap()).collect();
        let src = steer_source(&cpus);
        assert_eq!(
            src,
            "ld #cpu\njeq #3, l0\njeq #5, l1\nret #0xffffffff\nl0: ret #0\nl1: ret #1\n"
        );
        assert!(asm_bpf::assemble(&src).is_ok());
    }

    #[test]
    fn responses_carry_13_byte_bodies() {
        assert!(KEEP_ALIVE.ends_with(b"\r\n\r\nHello, world!"));
        assert!(CLOSE.ends_with(b"\r\n\r\nHello, world!"));
    }
}
