//! An exchange's connection to its upstream, from its start to its end: taken from the
//! pool or connected fresh, registered in the worker's epoll under the client's slot,
//! opened again once for a safe retry, and at the end closed or given to the pool.
//!
//! Input: the upstream (of the request's rule), the token for the exchange, the ended
//! exchange. Output: a registered socket (and whether it was reused), or the status to
//! answer instead (502: nothing reachable). It reads and writes nothing of an exchange:
//! that is `machine.rs`'s.
//!
//! A connection goes back to the pool only when its exchange ended cleanly, so that the
//! next request on it starts on a message boundary (RFC 9112 §9.3, §9.6): the response
//! was read whole to its known end (`Content-Length`, the last chunk, or no body), the
//! request was sent whole (the response is read only after it), the upstream said
//! neither `Connection: close` nor HTTP/1.0, nothing follows the response in the buffer,
//! the request was no upgrade, and the deadline did not pass.

use super::pool::Pool;
use super::{Exchange, Phase, Relays};
use crate::event::{add_edge, modify_edge, Token};
use crate::site::rules::Rule;
use crate::site::upstream::Upstream;
use rustix::fd::{AsFd, OwnedFd};
use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};

impl Relays {
    /// The next token for an upstream socket serving `slot`.
    pub(super) fn token(&mut self, slot: u32) -> Token {
        self.generation = self.generation.wrapping_add(1);
        Token {
            slot: slot | Token::UPSTREAM,
            generation: self.generation,
        }
    }

    /// A connection to `upstream` (pool key `key`) for `token`'s slot, and the token it
    /// is registered under: an idle one (`true`: reused, connected; still under its own
    /// token when its last exchange had the same slot) or a fresh one under `token`, its
    /// connect under way.
    pub(super) fn open(
        &mut self,
        upstream: &Upstream,
        key: usize,
        token: Token,
    ) -> Result<(OwnedFd, bool, Token), u16> {
        let epoll = self.epoll.as_ref().ok_or(502u16)?;
        if let Some((fd, was)) = self.pool.take(key, token) {
            if was.slot == token.slot {
                return Ok((fd, true, was));
            }
            if modify_edge(epoll.as_fd(), &fd, token).is_ok() {
                return Ok((fd, true, token));
            }
        }
        let fd = connect(upstream).map_err(|_| 502u16)?;
        add_edge(epoll.as_fd(), &fd, token).map_err(|_| 502u16)?;
        Ok((fd, false, token))
    }

    /// Opens a fresh connection for `slot`'s exchange, whose reused one failed before any
    /// response (`Phase::Retry`): the request goes again, whole, once.
    #[cold]
    #[inline(never)]
    pub(super) fn reopen(&mut self, slot: u32, rules: &[Rule], date: &[u8; 29]) {
        let token = self.token(slot);
        let Some(x) = self.by_slot.get_mut(slot as usize).and_then(Option::as_mut) else {
            return;
        };
        let rule = rules.get(x.rule).and_then(|r| r.upstream.as_ref());
        let epoll = self.epoll.as_ref();
        let opened = rule.zip(epoll).and_then(|(upstream, epoll)| {
            let fd = connect(upstream).ok()?;
            add_edge(epoll.as_fd(), &fd, token).ok().map(|()| fd)
        });
        let Some(fd) = opened else {
            return x.fail(502, date);
        };
        x.fd = Some(fd);
        x.generation = token.generation;
        x.phase = Phase::Connecting;
        (x.readable, x.writable, x.reused) = (false, false, false);
        x.request_sent = 0;
    }

    /// Gives the connection of `slot`'s ended exchange to the pool when it ended cleanly
    /// (the module doc), else closes it.
    pub(super) fn park(pool: &mut Pool, (slot, x): (u32, &mut Exchange), now_ms: u64) {
        let clean = x.phase == Phase::Done
            && x.keep_up
            && x.up_len == 0
            && !x.timed_out
            && !x.asked.upgrade
            && x.counted != 0;
        let token = Token {
            slot: slot | Token::UPSTREAM,
            generation: x.generation,
        };
        match x.fd.take() {
            Some(fd) if clean => pool.put(x.counted, fd, token, now_ms),
            _ => {}
        }
    }
}

/// A nonblocking stream socket connecting to `upstream`. A refusal or a missing socket is
/// known at once for a unix path; a TCP connect completes later (`Phase::Connecting`).
fn connect(upstream: &Upstream) -> Result<OwnedFd, Errno> {
    let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
    let done = match upstream {
        Upstream::Unix(path) => {
            let fd =
                rustix::net::socket_with(AddressFamily::UNIX, SocketType::STREAM, flags, None)?;
            let addr = SocketAddrUnix::new(&**path)?;
            (rustix::net::connect(&fd, &addr), fd)
        }
        Upstream::Tcp(addr) => {
            let family = match addr {
                std::net::SocketAddr::V4(_) => AddressFamily::INET,
                std::net::SocketAddr::V6(_) => AddressFamily::INET6,
            };
            let fd = rustix::net::socket_with(family, SocketType::STREAM, flags, None)?;
            let _ = rustix::net::sockopt::set_tcp_nodelay(&fd, true);
            (rustix::net::connect(&fd, addr), fd)
        }
    };
    match done {
        (Ok(()) | Err(Errno::INPROGRESS | Errno::AGAIN | Errno::INTR), fd) => Ok(fd),
        (Err(e), _) => Err(e),
    }
}
