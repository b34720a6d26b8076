//! The exchange's state machine: one transition a phase ([`Phase`]), from the connect to
//! the response's end, run by [`Exchange::step`] until it produces bytes for the client,
//! ends, or would wait.
//!
//! Input: the exchange's readiness hints (edge-triggered: a hint holds until a call
//! would block) and the client's side for the body it still sends. Output: bytes in the
//! exchange's `down` buffer, and its phase. It opens no socket: a fresh connection, the
//! one a retry needs included, is `open.rs`'s.
//!
//! A connection taken from the pool may have been closed by the upstream just as the
//! request went out (RFC 9112 §9.3.1): when it fails before any byte of a response came,
//! the exchange asks for a fresh connection ([`Phase::Retry`]) if replaying the request
//! is safe, that is its method is idempotent (RFC 9110 §9.2.2) and the whole request,
//! head and body, is still in its buffer; otherwise the client is answered 502.

use super::head::{client_head, own_answer, ClientFraming, OwnLines};
use super::{Client, Exchange, Phase, DOWN_CAP};
use crate::http::chunked::LAST_CHUNK;
use crate::http::upstream_head::{self, RespFraming, RespHead};
use crate::stats::proxy::Outcome;
use rustix::io::Errno;
use rustix::net::SendFlags;

impl Exchange {
    /// Moves the exchange until it produces bytes for the client (into the empty `down`),
    /// ends, or would wait.
    pub(super) fn step(&mut self, date: &[u8; 29], client: &mut Client<'_>) {
        loop {
            let before = self.produced;
            let go_on = match self.phase {
                Phase::Connecting => self.connected(date),
                Phase::Request => self.send_request(date, client),
                Phase::Head | Phase::Body => self.relay(date),
                Phase::Tunnel => self.tunnel(client),
                // A fresh connection is the relays' to open.
                Phase::Retry | Phase::Done | Phase::Cut => false,
            };
            if !go_on || self.produced > before && !self.more_fits() {
                break;
            }
        }
        let waiting_body = self.phase == Phase::Request && !self.body_read();
        if self.timed_out && !self.head_out && waiting_body {
            self.fail(408, date);
        } else if self.timed_out && !self.head_out && self.phase != Phase::Done {
            self.fail(504, date);
        } else if self.timed_out && self.phase == Phase::Body && self.down_len == 0 {
            self.phase = Phase::Cut;
        } else if self.timed_out
            && self.phase == Phase::Tunnel
            && self.down_len == 0
            && !self.pipes.held_down()
        {
            self.phase = Phase::Done;
        }
    }

    /// Body bytes buffered behind what was just produced fit beside it: they go out with
    /// it, in one send (a small response's head and body).
    fn more_fits(&self) -> bool {
        let room = DOWN_CAP - self.down_len;
        self.phase == Phase::Body && self.up_len > 0 && self.up_len + 64 <= room
    }

    /// The connect completed (or failed: 502).
    fn connected(&mut self, date: &[u8; 29]) -> bool {
        if !self.writable {
            return false;
        }
        let Some(fd) = &self.fd else {
            self.fail(502, date);
            return true;
        };
        match rustix::net::sockopt::socket_error(fd) {
            Ok(Ok(())) => self.phase = Phase::Request,
            _ => self.fail(502, date),
        }
        true
    }

    /// Writes the request head, then its body as the client sends it; `true` when it
    /// is all written.
    fn send_request(&mut self, date: &[u8; 29], client: &mut Client<'_>) -> bool {
        loop {
            if !self.head_sent && self.gathers() {
                if !self.read_client(client, date) {
                    return self.phase != Phase::Request;
                }
                continue;
            }
            self.head_sent = true;
            let Some(fd) = &self.fd else {
                return true;
            };
            while self.request_sent < self.request_len {
                let rest = &self.bufs.request[self.request_sent..self.request_len];
                match rustix::net::send(fd, rest, SendFlags::NOSIGNAL) {
                    Ok(n) => self.request_sent += n,
                    Err(Errno::INTR) => {}
                    Err(Errno::AGAIN) => {
                        self.writable = false;
                        return false;
                    }
                    Err(_) => {
                        self.lost(date);
                        return true;
                    }
                }
            }
            if self.body_read() {
                // The whole request stays in the buffer while it may be replayed.
                self.phase = Phase::Head;
                return true;
            }
            (self.request_sent, self.request_len) = (0, 0);
            self.whole = false;
            if !self.read_client(client, date) {
                return self.phase != Phase::Request;
            }
        }
    }

    /// Reads what the upstream has and turns it into bytes for the client; `true` while
    /// it may go on without waiting.
    fn relay(&mut self, date: &[u8; 29]) -> bool {
        if self.up_len > 0 || self.phase == Phase::Body && self.body_needs_nothing() {
            let moved = match self.phase {
                Phase::Head => self.head(date),
                _ => self.body(),
            };
            if moved {
                return true;
            }
        }
        if self.ended() {
            return false;
        }
        let Some(fd) = self.fd.as_ref().filter(|_| self.readable) else {
            return false;
        };
        match rustix::io::read(fd, &mut self.bufs.up[self.up_len..]) {
            Ok(0) => {
                self.readable = false;
                self.upstream_closed(date);
                true
            }
            Ok(n) => {
                self.up_len += n;
                (self.progressed, self.answered) = (true, true);
                true
            }
            Err(Errno::INTR) => true,
            Err(Errno::AGAIN) => {
                self.readable = false;
                false
            }
            Err(_) => {
                self.upstream_closed(date);
                true
            }
        }
    }

    /// A body that ends without more input: `Content-Length: 0` or no body.
    fn body_needs_nothing(&self) -> bool {
        matches!(self.framing, RespFraming::None | RespFraming::Length(0))
    }

    /// The upstream closed (or failed): the end of a close-delimited body; before a head a
    /// 502; in another body, a cut.
    fn upstream_closed(&mut self, date: &[u8; 29]) {
        match (self.phase, self.framing) {
            (Phase::Head, _) => self.lost(date),
            (Phase::Body, RespFraming::UntilClose) => {
                if self.up_len > 0 {
                    self.body();
                }
                if self.chunk_out {
                    self.put(LAST_CHUNK);
                }
                self.phase = Phase::Done;
            }
            _ => self.phase = Phase::Cut,
        }
    }

    /// The upstream's connection failed before a response: replayed on a fresh one when
    /// that is safe (the module doc), else 502.
    fn lost(&mut self, date: &[u8; 29]) {
        let safe = self.asked.idempotent && self.whole && !self.answered;
        if self.reused && safe && !self.timed_out {
            self.fd = None;
            self.phase = Phase::Retry;
        } else {
            self.fail(502, date);
        }
    }

    /// Whether everything for the client is produced (or cut).
    fn ended(&self) -> bool {
        matches!(self.phase, Phase::Done | Phase::Cut)
    }

    /// steerd's own error page, closing (nothing of a response went out yet); the
    /// upstream's socket is closed, whatever of the request it got.
    pub(super) fn fail(&mut self, status: u16, date: &[u8; 29]) {
        self.own = Some(Outcome::of_own(status, self.phase == Phase::Head));
        self.fd = None;
        self.head_out = true;
        let down = &mut self.bufs.down[self.down_len..];
        let cors = &self.bufs.lines[..self.asked.cors_len];
        let (len, head) = own_answer(status, date, cors, down);
        self.down_len += len;
        self.produced += len as u64;
        self.head_bytes += head as u64;
        self.news = Some((status, true));
        self.phase = Phase::Done;
    }

    /// Parses the buffered response head; `true` when it moved on.
    fn head(&mut self, date: &[u8; 29]) -> bool {
        let parsed = upstream_head::parse(&self.bufs.up[..self.up_len], self.asked.head_method);
        let head = match parsed {
            Ok(None) => return false,
            Ok(Some(h)) => h,
            Err(_) => {
                self.fail(502, date);
                return true;
            }
        };
        let upgraded = head.status == 101 && self.asked.upgrade;
        if (100..200).contains(&head.status) && !upgraded {
            // An interim answer is dropped; a 101 the request did not ask for is refused.
            if head.status == 101 {
                self.fail(502, date);
                return true;
            }
            self.consume(head.head_len);
            return true;
        }
        let (framing, close) = match upgraded {
            true => (ClientFraming::Upgrade, true),
            false => self.client_framing(&head),
        };
        let len = client_head(
            &self.bufs.up,
            &head,
            framing,
            close,
            self.asked.minor,
            OwnLines::split(&self.bufs.lines, self.asked.cors_len),
            &mut self.bufs.down,
        );
        let Some(len) = len else {
            self.fail(502, date);
            return true;
        };
        self.down_len = len;
        self.produced += len as u64;
        self.head_bytes += len as u64;
        self.head_out = true;
        self.news = Some((head.status, close));
        self.keep_up = head.keep_alive && !upgraded;
        self.framing = head.framing;
        self.left = match head.framing {
            RespFraming::Length(n) => n,
            _ => 0,
        };
        self.chunk_out = framing == ClientFraming::Chunked;
        self.consume(head.head_len);
        self.phase = match head.framing {
            _ if upgraded => Phase::Tunnel,
            RespFraming::None => Phase::Done,
            _ => Phase::Body,
        };
        true
    }

    /// How the client's body is framed, and whether its connection closes after.
    fn client_framing(&self, head: &RespHead) -> (ClientFraming, bool) {
        let keep = self.asked.keep && !self.overread;
        match head.framing {
            RespFraming::None => (ClientFraming::Given, !keep),
            RespFraming::Length(n) => (ClientFraming::Length(n), !keep),
            RespFraming::Chunked | RespFraming::UntilClose if self.asked.minor >= 1 => {
                (ClientFraming::Chunked, !keep)
            }
            // An HTTP/1.0 client reads such a body to the close.
            RespFraming::Chunked | RespFraming::UntilClose => (ClientFraming::Close, true),
        }
    }
}
