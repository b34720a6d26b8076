//! `steerd bench responder`: the speed-of-light reference. No real server can answer a
//! request with fewer system calls, so its figures bound what steerd can reach here.
//!
//! Input: the typed `--listen ADDR:PORT --cpus LIST [--close] [--steer] [--response FILE]
//! [--spin N]` of `args::bench`. Output: a canned 13-byte `Hello, world!` (or FILE's
//! bytes) for every request head (`\r\n\r\n`) received, until killed.
//! One thread per listed CPU, pinned, each with its own SO_REUSEPORT listener made by
//! `listen.rs` as `serve` makes them (the first listener's port is reused, so port 0
//! works) and nothing shared.
//!
//! Keep-alive: one level-triggered epoll loop per thread; per request one `read` and one
//! `write` (plus a share of `epoll_wait`). Close: the listener has TCP_DEFER_ACCEPT, so a
//! blocking `accept4` returns a connection whose request is already queued, and the
//! thread answers straight away: accept4, read, send, close, four calls and no epoll.
//! `--steer` attaches the classic BPF program `steer.rs` builds, checks and verifies for
//! a plan that maps each listed CPU to its own listener, as steerd's `--steer cpu` does;
//! without it the kernel's 4-tuple hash spreads connections, so on loopback about half
//! of them are served on the other CPU than the client's.
//! It prints `responder: listening on ADDR` once every listener is bound. It does not
//! parse requests, serve files or stop gracefully: it is a measuring stick.
//!
//! Two knobs turn it into a calibration: `--response FILE` sends a real server's exact
//! response (so the load generator reads the same head from both), and `--spin N` adds N
//! iterations of busy work per request (so a given amount of a server's own work can be
//! priced in requests per second under the same load).

use super::Usage;
use crate::args::bench::ResponderArgs;
use crate::bench::error::{BenchError, ResponseFault};
use crate::config::SteerPolicy;
use crate::cpuset::{CpuId, CpuSet};
use crate::listen::{self, SocketOptions};
use crate::plan::{Plan, WorkerPlan};
use crate::topology::NodeId;
use crate::{steer, sys};
use rustix::event::epoll;
use rustix::fd::OwnedFd;
use rustix::io::Errno;
use rustix::net::SocketFlags;
use std::io::Read as _;
use std::sync::Arc;

const KEEP_ALIVE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello, world!";
const CLOSE: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nConnection: close\r\n\r\nHello, world!";
/// The largest `--response` file.
const RESPONSE_MAX: u64 = 64 * 1024;

/// What every thread answers with.
#[derive(Clone)]
struct Answer {
    /// `--response FILE`'s bytes, sent whole per request head; `None`: the canned
    /// response of the mode, a constant (so its copy stays a few moves, as it always was).
    file: Option<Arc<[u8]>>,
    /// Busy-work iterations before each response.
    spin: u64,
}

impl Answer {
    /// Appends one keep-alive response to `out`.
    #[inline(always)]
    fn put(&self, out: &mut Vec<u8>) {
        match &self.file {
            None => out.extend_from_slice(KEEP_ALIVE),
            Some(bytes) => out.extend_from_slice(bytes),
        }
    }

    /// The bytes of one response that closes.
    fn closing(&self) -> &[u8] {
        self.file.as_deref().unwrap_or(CLOSE)
    }

    /// The `--spin` work before a response: one test when there is none, so the plain
    /// responder stays the floor it was.
    #[inline(always)]
    fn work(&self) {
        if self.spin != 0 {
            spin(self.spin);
        }
    }
}

/// `n` iterations the compiler cannot remove (`black_box` on every step).
#[inline(never)]
fn spin(n: u64) {
    for i in 0..n {
        std::hint::black_box(i);
    }
}

/// The canned response of the mode, or `--response FILE`'s bytes, checked to be one
/// HTTP/1.1 response head (its body is the sender's business).
fn answer_of(args: &ResponderArgs) -> Result<Answer, BenchError> {
    let file = match &args.response {
        None => None,
        Some(path) => Some(read_response(path)?.into()),
    };
    Ok(Answer {
        file,
        spin: args.spin,
    })
}

fn read_response(path: &str) -> Result<Vec<u8>, BenchError> {
    let bad = |why| BenchError::Response(path.to_string(), why);
    let unreadable = |e| bad(ResponseFault::Unreadable(e));
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let mut bytes = Vec::new();
    file.take(RESPONSE_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > RESPONSE_MAX {
        return Err(bad(ResponseFault::TooLarge));
    }
    if !bytes.starts_with(b"HTTP/1.1 ") || memchr::memmem::find(&bytes, b"\r\n\r\n").is_none() {
        return Err(bad(ResponseFault::NotResponse));
    }
    Ok(bytes)
}

/// Entry point of `steerd bench responder`.
pub fn main(args: &ResponderArgs) -> Result<i32, Usage> {
    match serve(args) {
        Ok(()) => Ok(0),
        Err(e) => {
            eprintln!("steerd: bench: responder: {e}");
            Ok(1)
        }
    }
}

/// The responder as a plan: listener `i` on the `i`-th CPU, and under `--steer` each
/// listed CPU mapped to its own listener (any other CPU falls back to the hash).
fn plan_of(cpus: &[CpuId], steer: bool) -> Plan {
    let index = |i: usize| u16::try_from(i).unwrap_or(u16::MAX);
    let workers = cpus
        .iter()
        .enumerate()
        .map(|(i, &cpu)| WorkerPlan {
            index: index(i),
            cpu,
            node: NodeId(0),
        })
        .collect();
    // Ascending by CPU id, as the plan's map must be: the list comes from a CpuSet.
    let cpu_map = cpus
        .iter()
        .enumerate()
        .map(|(i, &c)| (c, index(i)))
        .collect();
    Plan {
        workers,
        master_cpu: None,
        steer: if steer {
            SteerPolicy::Cpu
        } else {
            SteerPolicy::Hash
        },
        cpu_map,
    }
}

/// Binds every listener (each while pinned to its CPU, as `serve` does), attaches the
/// program, then runs one pinned thread per CPU until the process is killed.
fn serve(args: &ResponderArgs) -> Result<(), BenchError> {
    let answer = answer_of(args)?;
    let plan = plan_of(&args.cpus, args.steer);
    let home = sys::affinity().map_err(BenchError::Affinity)?;
    let opts = SocketOptions {
        defer_accept_secs: u32::from(args.close),
        send_buffer: None,
    };
    let mut listeners =
        listen::open(&plan.workers, &[args.listen], &home, opts).map_err(BenchError::Listen)?;
    let possible = CpuSet::from_ids(args.cpus.iter().copied());
    if let Some(prog) = steer::program_for(&plan, &possible).map_err(BenchError::Steering)? {
        listeners
            .attach(&prog.insns)
            .map_err(|(_, e)| BenchError::Attach(e))?;
    }
    let Some(group) = listeners.groups.pop() else {
        return Err(BenchError::NoListener);
    };
    super::emit(&format!("responder: listening on {}\n", group.addr));
    let close = args.close;
    let mut threads = Vec::with_capacity(group.fds.len());
    for (&cpu, l) in args.cpus.iter().zip(group.fds) {
        // Close mode accepts blocking (one thread, one connection at a time).
        if close {
            rustix::io::ioctl_fionbio(&l, false)
                .map_err(|e| BenchError::Blocking(group.addr, e))?;
        }
        let answer = answer.clone();
        threads.push(std::thread::spawn(move || {
            run_thread(cpu, l, close, answer)
        }));
    }
    for t in threads {
        match t.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err(BenchError::Panicked("responder")),
        }
    }
    Ok(())
}

fn run_thread(
    cpu: CpuId,
    listener: OwnedFd,
    close: bool,
    answer: Answer,
) -> Result<(), BenchError> {
    sys::pin_to_cpu(cpu.get()).map_err(|e| BenchError::Pin(cpu, e))?;
    if close {
        close_loop(&listener, &answer)
    } else {
        keep_alive_loop(listener, &answer)
    }
}

/// accept4, read, write, close: the request is already there (TCP_DEFER_ACCEPT).
fn close_loop(listener: &OwnedFd, answer: &Answer) -> Result<(), BenchError> {
    let mut buf = [0u8; 4096];
    let response = answer.closing();
    loop {
        let conn = match rustix::net::accept_with(listener, SocketFlags::CLOEXEC) {
            Ok(c) => c,
            Err(Errno::INTR | Errno::CONNABORTED | Errno::AGAIN) => continue,
            Err(e) => return Err(BenchError::Call("accept4", e)),
        };
        if matches!(rustix::io::read(&conn, &mut buf), Ok(n) if n > 0) {
            answer.work();
            let _ = rustix::net::send(&conn, response, rustix::net::SendFlags::NOSIGNAL);
        }
    }
}

/// Level-triggered epoll: the listener's token is `u64::MAX`, a connection's is its fd.
fn keep_alive_loop(listener: OwnedFd, answer: &Answer) -> Result<(), BenchError> {
    let ep = epoll::create(epoll::CreateFlags::CLOEXEC)
        .map_err(|e| BenchError::Call("epoll_create", e))?;
    epoll::add(
        &ep,
        &listener,
        epoll::EventData::new_u64(u64::MAX),
        epoll::EventFlags::IN,
    )
    .map_err(|e| BenchError::Call("epoll_ctl", e))?;
    // Connections by fd number, with how many bytes of "\r\n\r\n" the last read ended in.
    let mut conns: Vec<Option<(OwnedFd, u8)>> = Vec::new();
    let mut events: Vec<epoll::Event> = Vec::with_capacity(256);
    let mut buf = vec![0u8; 16 * 1024];
    let one = answer.file.as_ref().map_or(KEEP_ALIVE.len(), |f| f.len());
    let mut out: Vec<u8> = Vec::with_capacity(one * 64);
    loop {
        events.clear();
        match epoll::wait(&ep, rustix::buffer::spare_capacity(&mut events), None) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => return Err(BenchError::Call("epoll_wait", e)),
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
                answer.work();
                answer.put(&mut out);
            }
            let ok = n > 0 && (out.is_empty() || write_all(fd, &out));
            if !ok {
                conns[slot] = None; // dropping the fd also removes it from the epoll set
            }
        }
    }
}

/// Writes all of `out`: one `write` as before in the usual case, the rest (if the socket
/// took only part) out of line. A socket that will not take it now (a client not
/// reading, or responses larger than its buffer) fails, and the caller closes the
/// connection: the load generator then counts an error instead of reading a response
/// cut short.
#[inline(always)]
fn write_all(fd: &OwnedFd, out: &[u8]) -> bool {
    match rustix::io::write(fd, out) {
        Ok(n) if n == out.len() => true,
        Ok(0) => false,
        Ok(n) => write_rest(fd, &out[n..]),
        Err(Errno::INTR) => write_rest(fd, out),
        Err(_) => false,
    }
}

#[inline(never)]
fn write_rest(fd: &OwnedFd, mut out: &[u8]) -> bool {
    while !out.is_empty() {
        match rustix::io::write(fd, out) {
            Ok(0) => return false,
            Ok(n) => out = &out[n..],
            Err(Errno::INTR) => {}
            Err(_) => return false,
        }
    }
    true
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
        let plan = plan_of(&cpus, true);
        let prog = steer::program_for(&plan, &CpuSet::from_ids(cpus.iter().copied()))
            .unwrap()
            .expect("a program under --steer");
        for (cpu, want) in [(3, 0), (5, 1), (4, 2), (0, 2), (9, 2)] {
            let ctx = asm_bpf::interp::Context {
                cpu,
                ..Default::default()
            };
            assert_eq!(asm_bpf::interp::run(&prog.insns, &ctx), want, "cpu {cpu}");
        }
        assert!(
            steer::program_for(&plan_of(&cpus, false), &CpuSet::default())
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn responses_carry_13_byte_bodies() {
        assert!(KEEP_ALIVE.ends_with(b"\r\n\r\nHello, world!"));
        assert!(CLOSE.ends_with(b"\r\n\r\nHello, world!"));
    }
}
