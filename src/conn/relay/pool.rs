//! The worker's idle upstream connections, kept for the next exchanges to the same
//! upstream (RFC 9112 §9.3: persistence).
//!
//! Input: a connection whose exchange ended cleanly (`open.rs` judges that), with the
//! upstream it goes to (its key) and the token it stays registered under in epoll.
//! Output: an open connection to an upstream, or none. Bounds: [`PER_UPSTREAM`] idle
//! connections to one upstream and [`IDLE_MAX`] in all (one past them is closed); one
//! idle for [`IDLE_MS`] is closed at the next sweep. An idle connection stays registered
//! edge-triggered: any input while it idles, the upstream's close (`EPOLLRDHUP`, EOF) or
//! bytes it sent unasked, closes it at once ([`Pool::drop_token`]). Taking one peeks
//! at it first, so a close whose event is not read yet is not taken for an open
//! connection; a close that crosses the next request on the wire is the retry rule's
//! (`machine.rs`).
//!
//! Memory: room for [`IDLE_MAX`] entries is reserved when the first connection idles,
//! and nothing is allocated after: steady proxying allocates nothing. A worker that
//! forwards nothing never touches it.

use crate::event::Token;
use rustix::fd::OwnedFd;
use rustix::io::Errno;
use rustix::net::RecvFlags;

/// Idle connections kept to one upstream.
pub(crate) const PER_UPSTREAM: usize = 32;
/// Idle connections kept in all, by a worker.
pub(crate) const IDLE_MAX: usize = 64;
/// Milliseconds an idle connection is kept (the sweep runs about once a second, so one
/// is closed between this and a second later): shorter than the usual keep-alive
/// timeouts of application servers (Node's is 5 s), so that steerd closes first.
pub(crate) const IDLE_MS: u64 = 3_000;

/// One idle connection.
struct Idle {
    /// The upstream it goes to.
    key: usize,
    fd: OwnedFd,
    /// The token it is registered under (its last exchange's).
    token: Token,
    /// When it went idle (turn clock).
    since_ms: u64,
}

/// Idle connections, oldest first.
#[derive(Default)]
pub(super) struct Pool {
    idle: Vec<Idle>,
}

impl Pool {
    /// Keeps `fd` (registered under `token`) idle for the upstream `key`; past the
    /// bounds it is closed instead.
    pub(super) fn put(&mut self, key: usize, fd: OwnedFd, token: Token, now_ms: u64) {
        let same = self.idle.iter().filter(|i| i.key == key).count();
        if same >= PER_UPSTREAM || self.idle.len() >= IDLE_MAX {
            return;
        }
        if self.idle.capacity() == 0 {
            self.idle.reserve_exact(IDLE_MAX);
        }
        self.idle.push(Idle {
            key,
            fd,
            token,
            since_ms: now_ms,
        });
    }

    /// A connection to `key` that is still open and quiet, with the token it is
    /// registered under: the last one the slot of `token` used if it idles (its
    /// registration then serves as it is: no `epoll_ctl`), else the one idle the shortest
    /// time. Those found closed on the way are dropped.
    pub(super) fn take(&mut self, key: usize, token: Token) -> Option<(OwnedFd, Token)> {
        loop {
            let idle = self.idle.iter();
            let mine = idle
                .clone()
                .rposition(|i| i.key == key && i.token.slot == token.slot);
            let at = mine.or_else(|| self.idle.iter().rposition(|i| i.key == key))?;
            let idle = self.idle.remove(at);
            if quiet(&idle.fd) {
                return Some((idle.fd, idle.token));
            }
        }
    }

    /// Closes the idle connection registered under `token` (its upstream closed it or
    /// sent what nobody asked for); `false` when none is.
    pub(super) fn drop_token(&mut self, token: Token) -> bool {
        let at = self.idle.iter().position(|i| i.token == token);
        at.map(|at| self.idle.remove(at)).is_some()
    }

    /// Closes the connections idle for [`IDLE_MS`] or more.
    pub(super) fn expire(&mut self, now_ms: u64) {
        self.idle.retain(|i| now_ms < i.since_ms + IDLE_MS);
    }

    /// Idle connections kept (all upstreams).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.idle.len()
    }
}

/// Nothing to read and no EOF: `recv(MSG_PEEK | MSG_DONTWAIT)` would block. An idle
/// connection that has bytes (a response nobody asked for) is no better than a closed one.
fn quiet(fd: &OwnedFd) -> bool {
    let flags = RecvFlags::PEEK | RecvFlags::DONTWAIT;
    matches!(
        rustix::net::recv(fd, &mut [0u8; 1], flags),
        Err(Errno::AGAIN)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::net::{socketpair, AddressFamily, SocketFlags, SocketType};

    fn token(slot: u32, generation: u32) -> Token {
        Token {
            slot: slot | Token::UPSTREAM,
            generation,
        }
    }

    fn pair() -> (OwnedFd, OwnedFd) {
        let flags = SocketFlags::CLOEXEC;
        socketpair(AddressFamily::UNIX, SocketType::STREAM, flags, None).unwrap()
    }

    #[test]
    fn idle_connections_are_bounded_per_upstream_and_in_all() {
        let mut pool = Pool::default();
        let mut peers = Vec::new();
        for key in 1..=8 {
            for g in 0..PER_UPSTREAM as u32 + 2 {
                let (ours, theirs) = pair();
                peers.push(theirs);
                pool.put(key, ours, token(1, key as u32 * 100 + g), 0);
            }
        }
        assert_eq!(pool.len(), IDLE_MAX);
        let to_one = pool.idle.iter().filter(|i| i.key == 1).count();
        assert_eq!(to_one, PER_UPSTREAM);
    }

    #[test]
    fn a_closed_or_chatty_connection_is_not_taken() {
        let mut pool = Pool::default();
        let (closed, peer) = pair();
        drop(peer);
        let (chatty, talker) = pair();
        rustix::io::write(&talker, b"HTTP/1.1 200 OK\r\n").unwrap();
        let (open, _keep) = pair();
        pool.put(7, open, token(1, 1), 0);
        pool.put(7, closed, token(1, 2), 0);
        pool.put(7, chatty, token(1, 3), 0);
        let (_, was) = pool.take(7, token(2, 4)).unwrap();
        assert_eq!(
            was,
            token(1, 1),
            "the quiet one is found behind two bad ones"
        );
        assert_eq!(pool.len(), 0);
        assert!(pool.take(7, token(2, 5)).is_none());
    }

    #[test]
    fn a_slot_gets_back_the_connection_it_used_last() {
        let mut pool = Pool::default();
        let (a, _pa) = pair();
        let (b, _pb) = pair();
        pool.put(1, a, token(3, 10), 0);
        pool.put(1, b, token(4, 11), 0);
        let (_, was) = pool.take(1, token(3, 12)).unwrap();
        assert_eq!(was, token(3, 10));
        let (_, was) = pool.take(1, token(5, 13)).unwrap();
        assert_eq!(was, token(4, 11), "another slot takes the newest");
    }

    #[test]
    fn an_idle_connection_goes_by_its_generation_or_its_age() {
        let mut pool = Pool::default();
        let (a, _pa) = pair();
        let (b, _pb) = pair();
        pool.put(1, a, token(1, 10), 0);
        pool.put(1, b, token(1, 11), 1_000);
        assert!(pool.drop_token(token(1, 10)));
        assert!(!pool.drop_token(token(1, 10)));
        pool.expire(IDLE_MS + 999);
        assert_eq!(pool.len(), 1);
        pool.expire(IDLE_MS + 1_000);
        assert_eq!(pool.len(), 0);
    }
}
