//! Thin epoll: tokens that carry a slot and a generation, a fixed event buffer.
//!
//! Input: file descriptors to watch and the [`Token`] each one answers to. Output: batches
//! of ([`Token`], [`Ready`]) from `epoll_wait`. It does not own connections; the loop does.
//!
//! The readiness contract (as mio writes it down): readiness is a hint. Connections are
//! registered **edge-triggered** for input, output and peer hang-up once, so no
//! `epoll_ctl` is needed per request; after an event the owner must read until a short
//! read or `EAGAIN` (a short read on a TCP stream means the receive queue was empty at that
//! moment, and any later segment raises a new edge), and write until done or `EAGAIN`.
//! A slot is reused with its generation incremented, so an event queued for the old
//! connection no longer matches and the loop drops it (counted as a stale event; see
//! nginx's `instance` bit in `ngx_epoll_module.c` for the same guard).
//!
//! The listener is registered level-triggered under [`Token::LISTENER`]; pausing accepts
//! (EMFILE, a full table) clears its interest instead of spinning on it.

use rustix::event::epoll::{self, CreateFlags, Event, EventData, EventFlags};
use rustix::fd::{AsFd, OwnedFd};
use rustix::io::Errno;

/// Which connection (slot) and which life of that slot an event is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Token {
    /// Index in the connection table.
    pub(crate) slot: u32,
    /// Incremented each time the slot is reused.
    pub(crate) generation: u32,
}

impl Token {
    /// The listener's token (no connection slot can have it: slot `u32::MAX` is never
    /// allocated because the table is capped below it).
    pub(crate) const LISTENER: Token = Token {
        slot: u32::MAX,
        generation: u32::MAX,
    };

    /// The token of the eventfd the worker's I/O threads signal (`crate::disk`): like
    /// the listener's, no slot can have it.
    pub(crate) const DISK: Token = Token {
        slot: u32::MAX - 1,
        generation: u32::MAX,
    };

    /// Marks a token of an upstream socket (`conn::relay`): its slot is the client's
    /// connection slot with this bit set (slots stay below `1 << 24`).
    pub(crate) const UPSTREAM: u32 = 1 << 30;

    fn pack(self) -> u64 {
        (u64::from(self.generation) << 32) | u64::from(self.slot)
    }

    fn unpack(v: u64) -> Token {
        Token {
            slot: v as u32,
            generation: (v >> 32) as u32,
        }
    }
}

/// Input, output and peer hang-up, edge-triggered: an upstream socket's interest.
const EDGE: EventFlags = EventFlags::IN
    .union(EventFlags::OUT)
    .union(EventFlags::RDHUP)
    .union(EventFlags::ET);

/// Registers `fd` in `epoll` edge-triggered for input, output and peer hang-up.
pub(crate) fn add_edge(
    epoll: rustix::fd::BorrowedFd<'_>,
    fd: impl AsFd,
    token: Token,
) -> rustix::io::Result<()> {
    epoll::add(epoll, fd, EventData::new_u64(token.pack()), EDGE)
}

/// Moves `fd`'s registration in `epoll` to `token`, with [`add_edge`]'s interest (an
/// edge for what is ready now is reported again: epoll_ctl(2), `EPOLL_CTL_MOD`).
pub(crate) fn modify_edge(
    epoll: rustix::fd::BorrowedFd<'_>,
    fd: impl AsFd,
    token: Token,
) -> rustix::io::Result<()> {
    epoll::modify(epoll, fd, EventData::new_u64(token.pack()), EDGE)
}

/// What an event reported, reduced to what the loop acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ready {
    /// Bytes (or EOF) to read.
    pub(crate) readable: bool,
    /// Send space available.
    pub(crate) writable: bool,
    /// The peer hung up or the socket has an error.
    pub(crate) hangup: bool,
    /// The peer shut its write side (`EPOLLRDHUP`): an EOF waits behind any data.
    pub(crate) peer_shut: bool,
}

impl Ready {
    fn from_flags(f: EventFlags) -> Ready {
        Ready {
            readable: f.intersects(EventFlags::IN | EventFlags::RDHUP),
            writable: f.contains(EventFlags::OUT),
            hangup: f.intersects(EventFlags::HUP | EventFlags::ERR),
            peer_shut: f.contains(EventFlags::RDHUP),
        }
    }
}

/// An epoll instance and its fixed event buffer.
pub(crate) struct Poller {
    epoll: OwnedFd,
    events: Vec<Event>,
}

impl Poller {
    /// `epoll_create1(EPOLL_CLOEXEC)` and an event buffer of `capacity` entries, allocated
    /// here once.
    pub(crate) fn new(capacity: usize) -> rustix::io::Result<Poller> {
        Ok(Poller {
            epoll: epoll::create(CreateFlags::CLOEXEC)?,
            events: Vec::with_capacity(capacity.max(1)),
        })
    }

    /// `epoll_ctl(ADD)` a connection: edge-triggered input, output and peer hang-up.
    pub(crate) fn add_conn(&self, fd: impl AsFd, token: Token) -> rustix::io::Result<()> {
        add_edge(self.epoll.as_fd(), fd, token)
    }

    /// A second descriptor of the epoll instance, for the relays to register upstream
    /// sockets in (`conn::relay`).
    pub(crate) fn handle(&self) -> rustix::io::Result<OwnedFd> {
        rustix::io::fcntl_dupfd_cloexec(&self.epoll, 0)
    }

    /// `epoll_ctl(ADD)` the listener, level-triggered input.
    pub(crate) fn add_listener(&self, fd: impl AsFd) -> rustix::io::Result<()> {
        let data = EventData::new_u64(Token::LISTENER.pack());
        epoll::add(&self.epoll, fd, data, EventFlags::IN)
    }

    /// `epoll_ctl(ADD)` an eventfd under `token`, level-triggered input (it is read
    /// empty before the completions are taken, so none is missed).
    pub(crate) fn add_wake(&self, fd: impl AsFd, token: Token) -> rustix::io::Result<()> {
        epoll::add(
            &self.epoll,
            fd,
            EventData::new_u64(token.pack()),
            EventFlags::IN,
        )
    }

    /// `epoll_ctl(MOD)` the listener: watch it (`true`) or not (`false`) without removing it.
    pub(crate) fn listener_interest(&self, fd: impl AsFd, on: bool) -> rustix::io::Result<()> {
        let flags = if on {
            EventFlags::IN
        } else {
            EventFlags::empty()
        };
        let data = EventData::new_u64(Token::LISTENER.pack());
        epoll::modify(&self.epoll, fd, data, flags)
    }

    /// `epoll_ctl(DEL)` of the listener: after `shutdown` a listening socket reports
    /// `EPOLLHUP` whatever the interest, so it must leave the set, not just go quiet.
    pub(crate) fn remove_listener(&self, fd: impl AsFd) -> rustix::io::Result<()> {
        epoll::delete(&self.epoll, fd)
    }

    /// `epoll_wait` for at most `timeout_ms` (-1: forever). `EINTR` (a signal for the
    /// control flags) returns an empty batch.
    pub(crate) fn wait(&mut self, timeout_ms: i32) -> rustix::io::Result<usize> {
        self.events.clear();
        let ts;
        let timeout = if timeout_ms < 0 {
            None
        } else {
            ts = rustix::time::Timespec {
                tv_sec: i64::from(timeout_ms / 1000),
                tv_nsec: i64::from(timeout_ms % 1000) * 1_000_000,
            };
            Some(&ts)
        };
        let spare = rustix::buffer::spare_capacity(&mut self.events);
        match epoll::wait(&self.epoll, spare, timeout) {
            Ok(n) => Ok(n),
            Err(Errno::INTR) => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// The `i`th event of the last [`Poller::wait`].
    pub(crate) fn event(&self, i: usize) -> Option<(Token, Ready)> {
        let e = self.events.get(i)?;
        let (data, flags) = (e.data, e.flags);
        Some((Token::unpack(data.u64()), Ready::from_flags(flags)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    #[test]
    fn tokens_round_trip() {
        for t in [
            Token {
                slot: 0,
                generation: 0,
            },
            Token {
                slot: 7,
                generation: u32::MAX - 1,
            },
            Token::LISTENER,
        ] {
            assert_eq!(Token::unpack(t.pack()), t);
        }
    }

    #[test]
    fn an_edge_arrives_once_per_write() {
        let mut p = Poller::new(4).unwrap();
        let (a, mut b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        let tok = Token {
            slot: 3,
            generation: 9,
        };
        p.add_conn(&a, tok).unwrap();
        assert_eq!(p.wait(1000).unwrap(), 1, "initial writability edge");
        assert_eq!(p.wait(0).unwrap(), 0, "edge-triggered: nothing new");
        b.write_all(b"x").unwrap();
        assert_eq!(p.wait(1000).unwrap(), 1);
        let (t, r) = p.event(0).unwrap();
        assert_eq!(t, tok);
        assert!(r.readable && !r.hangup);
        drop(b);
        assert_eq!(p.wait(1000).unwrap(), 1);
        assert!(p.event(0).unwrap().1.readable, "EOF reads as readable");
    }
}
