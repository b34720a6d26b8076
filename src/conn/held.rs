//! What of a connection outlives one call of `conn::advance`, and where it waits until
//! the next: the slot's own region of the loop's arena.
//!
//! Input: the connection's state, the slot's region (in the loop's arena) and the
//! loop's working area (`work`, one per loop, laid out as a slot's region is:
//! preamble area, then receive area). Output: the bytes the call needs copied into
//! `work` before it ([`load`]) and the bytes the next call needs copied back into the
//! slot's region after it ([`store`]). It does not read or write the socket.
//!
//! A call reads requests into `work` and builds preambles there, so a request that
//! arrives whole and is answered whole touches no page of its slot: an idle keep-alive
//! connection costs its `Conn` and nothing more. What must outlive the call is copied to
//! the slot, each part at the offset it had in `work` (so the log's spans, `logged.rs`,
//! and a preamble's `sent` count stay true in either place):
//! - the buffered input `inb[..in_len]`: a head (or PROXY header) that did not arrive
//!   whole, a pipelined rest, and, while a response is in flight with a log line
//!   pending, the request's bytes that line reads (without a log line they are skipped:
//!   nothing reads them before `finish_response` drops them);
//! - the unsent rest of a preamble, in the preamble area or, spilled, at the back of
//!   the receive area (`logged::spill_at`).
//!
//! A counted body being discarded, a linger and an idle connection hold nothing; a
//! chunked body being judged before its answer holds its head (the buffered input).
//! When anything is stored the connection is marked `held`; the loop gives the slot's
//! pages back when the connection is idle again or closes (`serve_loop`), so a slow path
//! costs pages only while it lasts.

use super::{logged, receive_at, Awaiting, Conn};
use crate::sys::ZeroedArena;
use core::ops::Range;

/// A connection's memory during one call of `conn::advance`: two mappings and an
/// offset, sliced only when something is copied, so the common call keeps three words
/// across the transition and pays no bounds check for its slot.
pub(crate) struct Areas<'a> {
    /// The loop's arena, which holds the slot's own region (what outlives the call).
    pub(crate) arena: &'a mut ZeroedArena,
    /// Where the slot's region starts in `arena` (it is as long as `work`).
    pub(crate) at: usize,
    /// The loop's working area: where the call reads and writes.
    pub(crate) work: &'a mut ZeroedArena,
}

/// The parts of a slot's region that hold something `c` needs later: its buffered
/// input, and its unsent preamble (each range empty when there is none).
fn in_use(c: &Conn, region: &[u8]) -> [Range<usize>; 2] {
    let inb = receive_at(region);
    let (input, preamble) = match &c.awaiting {
        Awaiting::Send(r) => {
            let end = match c.pending {
                Some(_) => c.in_len.max(r.answered).min(logged::spill_at(r)),
                None => c.in_len,
            };
            let start = match c.pending {
                Some(_) => 0,
                None => r.answered.min(end),
            };
            let at = match r.preamble.spilled {
                true => inb + logged::spill_at(r),
                false => 0,
            };
            (start..end, at + r.preamble.sent..at + r.preamble.len)
        }
        _ => (0..c.in_len, 0..0),
    };
    [inb + input.start..inb + input.end, preamble]
}

/// Copies what the slot holds for `c` into the working area, before a call. Only the
/// test is inlined: the common call (nothing held) pays a load and a branch.
#[inline]
pub(super) fn load(c: &Conn, a: &mut Areas<'_>) {
    if c.held {
        copy_in(c, a.arena.as_mut_slice(), a.at, a.work.as_mut_slice());
    }
}

/// [`load`]'s copies, from the region at `at` of `arena`.
#[inline(never)]
fn copy_in(c: &Conn, arena: &[u8], at: usize, work: &mut [u8]) {
    let held = &arena[at..][..work.len()];
    for part in in_use(c, work) {
        if !part.is_empty() {
            work[part.clone()].copy_from_slice(&held[part]);
        }
    }
}

/// Copies what `c` needs after the call from the working area into the slot (inlined
/// test as in [`load`]: a connection idle between requests needs nothing).
#[inline]
pub(super) fn store(c: &mut Conn, a: &mut Areas<'_>) {
    if c.in_len != 0 || matches!(c.awaiting, Awaiting::Send(_)) {
        copy_out(c, a.arena.as_mut_slice(), a.at, a.work.as_mut_slice());
    }
}

/// [`store`]'s copies, to the region at `at` of `arena`.
#[inline(never)]
fn copy_out(c: &mut Conn, arena: &mut [u8], at: usize, work: &[u8]) {
    let held = &mut arena[at..][..work.len()];
    for part in in_use(c, work) {
        if !part.is_empty() {
            held[part.clone()].copy_from_slice(&work[part]);
            c.held = true;
        }
    }
}
