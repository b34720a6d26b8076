//! A forwarded request's body on its way to the upstream, streamed: never held whole.
//!
//! Input: the body bytes steerd's receive area already holds ([`Exchange::feed`]), then
//! what the client's socket gives, read only as far as the body goes for a
//! `Content-Length` body. Output: the body for the upstream, staged in the exchange's
//! request buffer behind the head and written as the upstream takes it: a
//! `Content-Length` body as it is, a chunked one decoded (`http::chunked`, strict) and
//! chunked again, so the upstream never gets a chunk steerd's decoder refused. Nothing
//! is sent before the body is all there or the staging area is full: a small body
//! reaches the upstream whole or not at all. A chunked
//! body that turns out malformed (400) or larger than `--max-body` (413) ends the
//! exchange there: the upstream's socket is closed before the last chunk, so it never
//! holds a complete request the client did not send.

use super::{Exchange, Phase};
use crate::http::chunked::{chunk_line, LAST_CHUNK};
use rustix::fd::BorrowedFd;
use rustix::io::Errno;

/// A forwarded request's body, as its head announced it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Upload {
    /// None.
    None,
    /// `Content-Length`.
    Length(u64),
    /// Chunked.
    Chunked,
}

/// The client's side of an exchange, for the body it still sends.
pub(crate) struct Client<'a> {
    /// Its socket.
    pub(crate) fd: BorrowedFd<'a>,
    /// Input may be available (the connection's hint, kept until a read would block).
    pub(crate) readable: bool,
}

/// Room kept in the staging area for a chunk's size line and CRLF.
const FRAMING: usize = 32;

impl Exchange {
    /// Takes body bytes from the front of `bytes` (those the receive area held after the
    /// head); returns how many it took.
    pub(crate) fn feed(&mut self, bytes: &[u8], date: &[u8; 29]) -> usize {
        match self.upload {
            Upload::None => 0,
            Upload::Length(left) => {
                let k = (left.min(bytes.len() as u64) as usize).min(self.stage_room());
                self.stage(&bytes[..k]);
                self.upload = Upload::Length(left - k as u64);
                k
            }
            Upload::Chunked => self.dechunk_into_stage(bytes, date),
        }
    }

    /// The body is all staged (and its last chunk, when chunked).
    pub(super) fn body_read(&self) -> bool {
        match self.upload {
            Upload::None | Upload::Length(0) => true,
            Upload::Length(_) => false,
            Upload::Chunked => self.body_dechunk.is_done(),
        }
    }

    fn stage_room(&self) -> usize {
        self.bufs.request.len() - self.request_len
    }

    /// More of the body fits the staging area now. Until it does not, or the body is all
    /// there, nothing is sent: a body that fits goes to the upstream whole or not at all
    /// (a client that stops half-way leaves the upstream with nothing).
    pub(super) fn gathers(&self) -> bool {
        let room = self.stage_room();
        !self.body_read()
            && match self.upload {
                Upload::Length(_) => room > 0,
                _ => room > FRAMING,
            }
    }

    fn stage(&mut self, bytes: &[u8]) {
        let end = self.request_len + bytes.len();
        self.bufs.request[self.request_len..end].copy_from_slice(bytes);
        self.request_len = end;
    }

    /// Decodes chunked bytes into the staging area, chunked again; returns how many it
    /// consumed.
    fn dechunk_into_stage(&mut self, bytes: &[u8], date: &[u8; 29]) -> usize {
        let mut at = 0;
        while at < bytes.len() && !self.body_dechunk.is_done() {
            let room = self.stage_room().saturating_sub(FRAMING);
            if room == 0 {
                break;
            }
            let end = bytes.len().min(at + room);
            let (used, data) = match self.body_dechunk.next(&bytes[at..end]) {
                Ok(step) => step,
                Err(_) => {
                    self.fail(400, date);
                    return at;
                }
            };
            self.body_total += data.len() as u64;
            if self.body_total > self.asked.max_body {
                self.fail(413, date);
                return at;
            }
            if !data.is_empty() {
                let mut line = [0u8; 18];
                let n = chunk_line(data.len() as u64, &mut line);
                self.stage(&line[..n]);
                self.stage(data);
                self.stage(b"\r\n");
            }
            if used == 0 {
                break;
            }
            at += used;
        }
        if self.body_dechunk.is_done() && !self.last_staged {
            self.stage(LAST_CHUNK);
            self.last_staged = true;
        }
        at
    }

    /// Reads more of the body from the client into the staging area; `true` when it got
    /// some. A client that closes mid-body cuts the exchange.
    pub(super) fn read_client(&mut self, client: &mut Client<'_>, date: &[u8; 29]) -> bool {
        if !client.readable || self.body_read() {
            return false;
        }
        // Only as far as a counted body goes: what follows is the next request's.
        let want = match self.upload {
            Upload::Length(left) => (left.min(self.stage_room() as u64)) as usize,
            _ => (self.bufs.up.len()).min(self.stage_room().saturating_sub(FRAMING)),
        };
        if want == 0 {
            return false;
        }
        let into_stage = matches!(self.upload, Upload::Length(_));
        let dst = match into_stage {
            true => &mut self.bufs.request[self.request_len..self.request_len + want],
            false => &mut self.bufs.up[..want],
        };
        match rustix::io::read(client.fd, dst) {
            Ok(0) | Err(Errno::CONNRESET | Errno::PIPE) => {
                self.phase = Phase::Cut;
                false
            }
            Ok(n) if into_stage => {
                self.request_len += n;
                if let Upload::Length(left) = self.upload {
                    self.upload = Upload::Length(left - n as u64);
                }
                true
            }
            Ok(n) => {
                // Chunked: what the read brought past the body's end is a pipelined
                // request's, and lost: the connection closes after this answer.
                let raw = core::mem::take(&mut self.bufs.up);
                let used = self.dechunk_into_stage(&raw[..n], date);
                self.bufs.up = raw;
                self.overread |= used < n;
                true
            }
            Err(Errno::INTR) => true,
            Err(Errno::AGAIN) => {
                client.readable = false;
                false
            }
            Err(_) => {
                self.phase = Phase::Cut;
                false
            }
        }
    }
}
