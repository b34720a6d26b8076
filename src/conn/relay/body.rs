//! A response body on its way to the client: counted (`Content-Length`), decoded and
//! chunked again (chunked), or until the upstream closes; bytes move from the upstream's
//! buffer (`up`) to the client's (`down`), framed for the client.

use super::{Exchange, Phase, DOWN_CAP};
use crate::http::chunked::{chunk_line, LAST_CHUNK};
use crate::http::upstream_head::RespFraming;

/// Room for a chunk's size line and CRLF around the data moved at once.
const FRAMING: usize = 32;

impl Exchange {
    /// Moves buffered body bytes to the client; `true` when something moved or ended.
    pub(super) fn body(&mut self) -> bool {
        match self.framing {
            RespFraming::Length(_) => {
                let room = DOWN_CAP - self.down_len;
                let k = (self.left.min(self.up_len as u64) as usize).min(room);
                self.forward(k);
                self.left -= k as u64;
                if self.left == 0 {
                    self.phase = Phase::Done;
                }
                true
            }
            RespFraming::Chunked => self.dechunk_some(),
            RespFraming::UntilClose => {
                let k = self
                    .up_len
                    .min((DOWN_CAP - self.down_len).saturating_sub(FRAMING));
                self.forward(k);
                true
            }
            RespFraming::None => {
                self.phase = Phase::Done;
                true
            }
        }
    }

    /// Puts `k` bytes at the front of `up` out for the client (as a chunk when chunking).
    pub(super) fn forward(&mut self, k: usize) {
        if k > 0 {
            self.chunk_from(0, k);
            self.consume(k);
        }
    }

    /// Decodes buffered chunked bytes, putting their data out; `true` when something
    /// was consumed.
    fn dechunk_some(&mut self) -> bool {
        let mut at = 0;
        let mut moved = false;
        while at < self.up_len && !self.dechunk.is_done() {
            let room = DOWN_CAP - self.down_len;
            if room < 64 {
                break;
            }
            let end = self.up_len.min(at + room - FRAMING);
            let (used, data) = match self.dechunk.next(&self.bufs.up[at..end]) {
                Ok(step) => step,
                Err(_) => {
                    self.phase = Phase::Cut;
                    return true;
                }
            };
            if used == 0 {
                break;
            }
            if !data.is_empty() {
                let from = data.as_ptr() as usize - self.bufs.up.as_ptr() as usize;
                self.chunk_from(from, data.len());
            }
            at += used;
            moved = true;
        }
        self.consume(at);
        if self.dechunk.is_done() {
            if self.chunk_out {
                self.put(LAST_CHUNK);
            }
            self.phase = Phase::Done;
            return true;
        }
        moved
    }

    /// Puts `up[from..from + len]` out (as one chunk when chunking).
    fn chunk_from(&mut self, from: usize, len: usize) {
        if self.chunk_out {
            let mut line = [0u8; 18];
            let n = chunk_line(len as u64, &mut line);
            self.put(&line[..n]);
        }
        let (up, down) = (&self.bufs.up, &mut self.bufs.down);
        down[self.down_len..self.down_len + len].copy_from_slice(&up[from..from + len]);
        self.down_len += len;
        self.produced += len as u64;
        if self.chunk_out {
            self.put(b"\r\n");
        }
    }

    /// Appends `bytes` for the client.
    pub(super) fn put(&mut self, bytes: &[u8]) {
        let end = (self.down_len + bytes.len()).min(DOWN_CAP);
        let n = end - self.down_len;
        self.bufs.down[self.down_len..end].copy_from_slice(&bytes[..n]);
        self.down_len = end;
        self.produced += n as u64;
    }

    /// Drops `n` bytes from the front of `up`.
    pub(super) fn consume(&mut self, n: usize) {
        self.bufs.up.copy_within(n..self.up_len, 0);
        self.up_len -= n;
    }
}
