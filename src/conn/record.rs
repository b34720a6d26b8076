//! Recording a planned response on the connection: the state it sends from, the response
//! counters and the access-log line.
//!
//! Input: the status, the head's length in the slot's head area, the body's source, what
//! follows, and the request line. Output: the connection set to [`Awaiting::Send`]. It
//! writes nothing to the socket.

use super::logged::{self, Request as Logged};
use super::{After, Awaiting, Conn, Ctx, Outgoing};
use core::sync::atomic::Ordering::Relaxed;

/// The parts of a request the log and the persistence rule need.
#[derive(Clone, Copy)]
pub(super) struct Line<'a> {
    /// The request as its log line shows it.
    pub log: Logged<'a>,
    /// A HEAD request: the response has no content whatever its status (RFC 9110 §9.3.2,
    /// RFC 9112 §6.3 rule 1), though its Content-Length stays that of GET.
    pub head: bool,
    /// The `--cors` origin lines of the response (`site::cors`; empty without `--cors`).
    pub cors: &'a [u8],
    /// The `--basic-auth` challenge of a 401, or a 429's `Retry-After` (empty for others).
    pub challenge: &'a [u8],
}

/// Records the plan on the connection, counts it and starts its log line (written when
/// the response ends). A HEAD drops the body here, for every status. Inlined into each
/// answer: a call would spill its seven arguments for a few stores.
#[allow(clippy::too_many_arguments)]
#[inline]
pub(super) fn plan(
    c: &mut Conn,
    ctx: &mut Ctx<'_>,
    status: u16,
    head_len: usize,
    body: Outgoing,
    after: After,
    line: &Line<'_>,
) {
    let body = if line.head { Outgoing::Nothing } else { body };
    c.head_len = head_len;
    c.head_sent = 0;
    c.head_spilled = false;
    c.body = body;
    c.pinned = false;
    c.after = after;
    c.awaiting = Awaiting::Send;
    let class = usize::from(status / 100).clamp(1, 5) - 1;
    ctx.counters.responses[class].fetch_add(1, Relaxed);
    logged::begin(c, ctx, status, &line.log);
}
