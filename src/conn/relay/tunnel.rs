//! After a 101 (RFC 9110 §7.8, §15.2.2): the connection is a tunnel, bytes both ways
//! until either side closes; an idle tunnel ends at `--proxy-timeout` (the deadline is
//! re-armed whenever a byte moves either way), a client that stops reading at the send
//! timeout, as any response.
//!
//! Input: the exchange after the upstream's 101, the client's socket. Output: the
//! upstream's bytes for the client, and the client's written to the upstream. Bytes
//! steerd already holds when the tunnel begins (the upstream's behind its 101, the
//! client's behind its request) go first by copying: the upstream's through the
//! exchange's `down`, as any body, the client's staged in the request buffer. After
//! them each direction goes through a pipe (`splice.rs`), the client-bound bytes
//! counted by [`Relays::pump`](super::Relays::pump) as they reach the client; where
//! splice cannot be used the tunnel copies the same way throughout.
//!
//! When a side ends, what the pipes hold is delivered before the tunnel ends (the
//! other side's end of input then follows with the close).

use super::splice::{Ends, Flow};
use super::{Client, Exchange, Phase};
use rustix::fd::{AsFd, BorrowedFd};
use rustix::io::Errno;
use rustix::net::SendFlags;

impl Exchange {
    /// One step of the tunnel: the upstream's buffered bytes out to the client, then the
    /// client's to the upstream, then the upstream's; `true` while it may go on.
    pub(super) fn tunnel(&mut self, client: &mut Client<'_>) -> bool {
        if self.up_len > 0 {
            self.forward(self.up_len);
            return true;
        }
        let Some(fd) = &self.fd else {
            self.phase = Phase::Done;
            return false;
        };
        if self.pipes.ending {
            return self.drain_pipes(client);
        }
        while self.request_sent < self.request_len {
            let rest = &self.bufs.request[self.request_sent..self.request_len];
            match rustix::net::send(fd, rest, SendFlags::NOSIGNAL) {
                Ok(n) => (self.request_sent, self.progressed) = (self.request_sent + n, true),
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => {
                    self.writable = false;
                    break;
                }
                Err(_) => return self.closed(),
            }
        }
        let mut went_up = false;
        if self.request_sent == self.request_len && self.pipes.on() {
            let ends = Ends {
                from: client.fd,
                readable: &mut client.readable,
                to: fd.as_fd(),
            };
            match self.pipes.upward(ends) {
                Flow::Moved(n) => (went_up, self.progressed) = (true, self.progressed || n > 0),
                Flow::Blocked => self.writable = false,
                Flow::Idle => {}
                Flow::Ended => return self.closed(),
                Flow::Failed => return self.broken(),
                Flow::Copy => return true,
            }
        } else if self.request_sent == self.request_len && client.readable {
            (self.request_sent, self.request_len) = (0, 0);
            match rustix::io::read(client.fd, &mut self.bufs.request[..]) {
                Ok(0) => return self.closed(),
                Ok(n) => {
                    (self.request_len, self.progressed) = (n, true);
                    return true;
                }
                Err(Errno::INTR) => return true,
                Err(Errno::AGAIN) => client.readable = false,
                Err(_) => return self.closed(),
            }
        }
        if self.pipes.on() {
            return self.splice_down(client.fd, true, went_up);
        }
        if !self.readable {
            return false;
        }
        let Some(fd) = &self.fd else {
            return self.closed();
        };
        match rustix::io::read(fd, &mut self.bufs.up[..]) {
            Ok(0) => self.closed(),
            Ok(n) => {
                (self.up_len, self.progressed) = (n, true);
                true
            }
            Err(Errno::INTR) => true,
            Err(Errno::AGAIN) => {
                self.readable = false;
                false
            }
            Err(_) => self.closed(),
        }
    }

    /// The upstream's bytes through the pipe to the client; `false` after bytes reached
    /// the client (their count goes first) or when nothing moves (`went_up`: the other
    /// direction moved, so another step may; `read`: the upstream may be read).
    fn splice_down(&mut self, to: BorrowedFd<'_>, read: bool, went_up: bool) -> bool {
        let Some(fd) = &self.fd else {
            return self.closed();
        };
        let mut none = false;
        let ends = Ends {
            from: fd.as_fd(),
            readable: if read { &mut self.readable } else { &mut none },
            to,
        };
        match self.pipes.downward(ends) {
            Flow::Moved(0) => true,
            Flow::Moved(n) => {
                (self.pipes.spliced, self.progressed) = (self.pipes.spliced + n, true);
                false
            }
            Flow::Blocked => {
                self.pipes.blocked = true;
                false
            }
            Flow::Idle => went_up,
            Flow::Ended => self.closed(),
            Flow::Failed => self.broken(),
            Flow::Copy => true,
        }
    }

    /// A side ended: what the pipes hold goes out, nothing more is read; the tunnel
    /// ends when they are empty.
    fn drain_pipes(&mut self, client: &mut Client<'_>) -> bool {
        let Some(fd) = &self.fd else {
            return self.broken();
        };
        let mut none = false;
        let ends = Ends {
            from: client.fd,
            readable: &mut none,
            to: fd.as_fd(),
        };
        let went_up = match self.pipes.upward(ends) {
            Flow::Moved(n) => n > 0,
            Flow::Blocked => {
                self.writable = false;
                false
            }
            Flow::Failed => return self.broken(),
            _ => false,
        };
        self.progressed |= went_up;
        let more = self.splice_down(client.fd, false, went_up);
        if !self.pipes.holding() && self.phase == Phase::Tunnel && self.pipes.spliced == 0 {
            return self.broken();
        }
        more
    }

    /// Either side closed: the tunnel ends, and with it the client's connection, once
    /// the pipes are empty.
    fn closed(&mut self) -> bool {
        self.pipes.ending = true;
        if self.pipes.holding() {
            return true;
        }
        self.broken()
    }

    /// The tunnel ends now.
    fn broken(&mut self) -> bool {
        self.phase = Phase::Done;
        false
    }
}
