//! A chunked request body that no upstream will read, judged before its request is
//! answered: framing is judged before the method on every path.
//!
//! Input: a parsed request whose body is chunked and whose path no `--proxy` rule takes
//! (a POST to a file, a refusal in front of the files), its head at the front of the
//! receive area and the body's bytes behind it as they arrive. Output: the body read
//! through the strict decoder the proxy uses (`http::chunked`) and dropped, and a
//! [`Judged`] verdict with which `respond.rs` plans the answer: read whole (the answer
//! the request would have had, the connection kept), malformed (400, closing) or past
//! [`DISCARD_MAX`] (the answer, closing after a linger: the rest is never read). It does
//! not answer, and it never reads a forwarded body (the exchange does, `relay/upload.rs`).
//!
//! A counted body needs no judging (its length was judged with the head): it is
//! discarded after the answer (`Awaiting::Body`). The chunked one is read first because
//! its verdict decides the answer (RFC 9112 §7.1: a bad chunk is a framing error, and a
//! server that cannot find the message's end must close, §9.3). The head stays at the
//! front of the receive area, so the answer is planned from it as any other, and the
//! bytes after the body (a pipelined request) stay behind it: no byte of the body is
//! ever parsed as a head. Bounded: [`DISCARD_MAX`] data bytes (the decoder bounds the
//! extensions and the trailer), within the header timeout (armed when it first waits,
//! 408 when it fires), and the worker's byte budget per turn.

use super::record::Responder;
use super::rules::Ruled;
use super::{read_some, Awaiting, Budget, Conn, Ctx, Next, Read, IN_CAP};
use crate::http::chunked::Dechunk;
use crate::http::{Body, Request};
use crate::timers::Kind;
use rustix::fd::BorrowedFd;

/// Largest body that is read and discarded when it is not forwarded (nginx's default
/// `client_max_body_size`); a larger one on GET or HEAD gets 413 (`respond.rs`).
pub(crate) const DISCARD_MAX: u64 = 1 << 20;

/// What became of a request's chunked body before its answer was planned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Judged {
    /// Not read yet: a new head (a chunked body no upstream reads is read first).
    Unread,
    /// Read to its last chunk and dropped: answered as a request without a body.
    Read,
    /// It broke the chunked grammar: 400, closing.
    Malformed,
    /// It announced more than [`DISCARD_MAX`] bytes, or its head left no room to read
    /// it: answered without it, closing after a linger.
    Unbounded,
}

impl Responder<'_, '_> {
    /// A request with a chunked body, `judged` so far: `true` when it is answered here
    /// or waits for its body (`Awaiting::Chunked`), `false` to plan its answer as any
    /// other (a body read whole is then no longer the request's). The body is judged
    /// first unless a `--proxy` rule takes the path (the exchange reads it) or the
    /// request says `Expect: 100-continue` (that client waits for an answer before it
    /// sends the body, which then may never come). Out of line: a request without a
    /// chunked body pays one compare.
    #[inline(never)]
    pub(super) fn chunked_first(
        &mut self,
        req: &mut Request<'_, '_>,
        judged: Judged,
        area: &mut [u8],
    ) -> bool {
        match judged {
            Judged::Read => req.body = Body::None,
            // A bad chunk is 400 on every path; the message's end is unknown, so the
            // connection closes after a linger (RFC 9112 §9.3), everything buffered
            // dropped.
            Judged::Malformed => {
                self.answered = self.line.log.area.len();
                self.builtin_error(400);
                return true;
            }
            Judged::Unbounded => {}
            Judged::Unread if req.expect_continue => {}
            Judged::Unread if matches!(self.rules(req, area), Ruled::Proxy(_)) => {}
            Judged::Unread => {
                // Nothing is planned yet: no count, no log line, no deadline until the
                // body has to be waited for.
                self.c.awaiting = Awaiting::Chunked {
                    dechunk: Dechunk::new(),
                    head: req.head_len as u32,
                };
                return true;
            }
        }
        false
    }
}

/// Judges what is buffered behind the head and reads more until the body is judged
/// (`Ok`, the bytes after it still buffered behind the head) or the socket would block,
/// the budget is spent or the peer closed (`Err`, what the loop does next). Cold and out
/// of line: the transition carries only the call.
#[cold]
#[inline(never)]
pub(super) fn chunked(
    slot: u32,
    c: &mut Conn,
    fd: BorrowedFd<'_>,
    inb: &mut [u8],
    ctx: &mut Ctx<'_>,
    budget: &mut Budget,
) -> Result<Judged, Next> {
    let Awaiting::Chunked { mut dechunk, head } = c.awaiting else {
        return Err(Next::Close);
    };
    let head = head as usize;
    loop {
        let (taken, verdict) = judge(&mut dechunk, &inb[head..c.in_len]);
        inb.copy_within(head + taken..c.in_len, head);
        c.in_len -= taken;
        c.awaiting = Awaiting::Chunked {
            dechunk,
            head: head as u32,
        };
        if let Some(judged) = verdict {
            return Ok(judged);
        }
        if c.in_len >= IN_CAP {
            return Ok(Judged::Unbounded);
        }
        if !c.readable {
            return Err(wait(slot, ctx));
        }
        if budget.bytes_spent() {
            return Err(Next::Yield);
        }
        match read_some(fd, &mut inb[c.in_len..]) {
            Read::Data(n) => {
                budget.spend_bytes(n);
                c.readable = n == IN_CAP - c.in_len || c.peer_shut;
                c.in_len += n;
            }
            Read::Eof => return Err(Next::Close),
            Read::Blocked => {
                c.readable = false;
                return Err(wait(slot, ctx));
            }
        }
    }
}

/// Feeds `body` to the decoder: the bytes it took (all of them until the body ends),
/// and the verdict once there is one.
fn judge(dechunk: &mut Dechunk, body: &[u8]) -> (usize, Option<Judged>) {
    let mut taken = 0;
    loop {
        match dechunk.next(&body[taken..]) {
            Err(_) => return (taken, Some(Judged::Malformed)),
            Ok(_) if dechunk.announced() > DISCARD_MAX => return (taken, Some(Judged::Unbounded)),
            Ok((0, _)) if dechunk.is_done() => return (taken, Some(Judged::Read)),
            Ok((0, _)) => return (taken, None),
            Ok((n, _)) => taken += n,
        }
    }
}

/// Parks under the header deadline, armed when the body first has to wait (the head's
/// own deadline was disarmed when it was parsed).
fn wait(slot: u32, ctx: &mut Ctx<'_>) -> Next {
    if ctx.timers.kind(slot) != Some(Kind::Header) {
        ctx.timers.arm(slot, Kind::Header, ctx.now_ms);
    }
    Next::Park
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(body: &[u8]) -> (usize, Option<Judged>) {
        judge(&mut Dechunk::new(), body)
    }

    #[test]
    fn a_good_body_is_read_to_its_end_and_no_further() {
        let body = b"3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
        assert_eq!(judged(body), (13, Some(Judged::Read)));
    }

    #[test]
    fn a_bad_chunk_is_malformed() {
        assert_eq!(judged(b"3x\r\nabc\r\n").1, Some(Judged::Malformed));
        assert_eq!(judged(b"3\r\nabcd\r\n").1, Some(Judged::Malformed));
        assert_eq!(judged(b"-3\r\n").1, Some(Judged::Malformed));
    }

    #[test]
    fn an_unfinished_body_waits_having_taken_everything() {
        assert_eq!(judged(b"5\r\nab"), (5, None));
        assert_eq!(judged(b""), (0, None));
    }

    #[test]
    fn a_body_announcing_more_than_the_bound_is_unbounded_at_its_size_line() {
        let line = format!("{:x}\r\n", DISCARD_MAX + 1);
        assert_eq!(judged(line.as_bytes()).1, Some(Judged::Unbounded));
        let line = format!("{DISCARD_MAX:x}\r\n");
        assert_eq!(judged(line.as_bytes()).1, None);
    }
}
