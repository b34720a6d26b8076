//! Recording a planned response on the connection: the state it sends from, the response
//! counters and the access-log line.
//!
//! Input: the status, the head's length in the slot's head area, the body's source, what
//! follows, and the request line. Output: the connection set to [`Awaiting::Send`]. It
//! writes nothing to the socket.

use super::{After, Awaiting, Conn, Ctx, Outgoing};
use crate::access_log::Entry;
use core::sync::atomic::Ordering::Relaxed;

/// The parts of a request the log and the persistence rule need.
pub(super) struct Line<'a> {
    pub method: &'a [u8],
    pub target: &'a [u8],
    pub minor: u8,
    /// A HEAD request: the response has no content whatever its status (RFC 9110 §9.3.2,
    /// RFC 9112 §6.3 rule 1), though its Content-Length stays that of GET.
    pub head: bool,
}

/// Records the plan on the connection, counts it and logs it. A HEAD drops the body here,
/// for every status.
#[allow(clippy::too_many_arguments)]
pub(super) fn plan(
    c: &mut Conn,
    ctx: &mut Ctx<'_>,
    status: u16,
    head_len: usize,
    body: Outgoing,
    body_len: u64,
    after: After,
    line: &Line<'_>,
) {
    let (body, body_len) = if line.head {
        (Outgoing::Nothing, 0)
    } else {
        (body, body_len)
    };
    c.head_len = head_len;
    c.head_sent = 0;
    c.head_spilled = false;
    c.body = body;
    c.pinned = false;
    c.after = after;
    c.awaiting = Awaiting::Send;
    let class = usize::from(status / 100).clamp(1, 5) - 1;
    ctx.counters.responses[class].fetch_add(1, Relaxed);
    let entry = Entry {
        peer: c.peer,
        method: line.method,
        target: line.target,
        minor: line.minor,
        status,
        bytes: head_len as u64 + body_len,
    };
    ctx.log.record(&entry, ctx.date.text());
}
