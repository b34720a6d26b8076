//! After a 101 (RFC 9110 §7.8, §15.2.2): the connection is a tunnel, bytes both ways
//! until either side closes; an idle tunnel ends at `--proxy-timeout` (the deadline is
//! re-armed whenever a byte moves either way), a client that stops reading at the send
//! timeout, as any response.
//!
//! Input: the exchange after the upstream's 101, the client's socket. Output: the
//! upstream's bytes for the client (through the exchange's `down`, as any body), and the
//! client's written to the upstream, staged in the request buffer.

use super::{Client, Exchange, Phase};
use rustix::io::Errno;
use rustix::net::SendFlags;

impl Exchange {
    /// One step of the tunnel: the upstream's buffered bytes out to the client, then the
    /// client's to the upstream, then a read of the upstream; `true` while it may go on.
    pub(super) fn tunnel(&mut self, client: &mut Client<'_>) -> bool {
        if self.up_len > 0 {
            self.forward(self.up_len);
            return true;
        }
        let Some(fd) = &self.fd else {
            self.phase = Phase::Done;
            return false;
        };
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
        if self.request_sent == self.request_len && client.readable {
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
        if !self.readable {
            return false;
        }
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

    /// Either side closed: the tunnel ends, and with it the client's connection.
    fn closed(&mut self) -> bool {
        self.phase = Phase::Done;
        false
    }
}
