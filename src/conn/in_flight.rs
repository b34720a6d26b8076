//! The response in flight: one value, carried by `Awaiting::Send` from the moment it is
//! planned (`record.rs`) until its last byte is written (`conn::finish_response`) or the
//! connection is abandoned. (`http::response` is the wire format; this is the state.)
//!
//! Input: what the planner decided (the preamble's length and whether it spilled, the
//! body's source, how the connection goes on, the request's unread body and the length
//! of its head). Output: what the send loop asks of it (the next bytes, whether all is
//! written) and what the end of the response needs (the log line's parts, the next
//! state). No I/O; the cache pin and a listing's slot are taken and given back through
//! the worker's `Ctx`. The names (preamble, preamble area, spill, sent) are the ones
//! `conn`'s module doc defines.

use super::Ctx;
use crate::disk::Pages;
use crate::files::cache::FileCache;
use crate::http::response::Persist;
use crate::stats::proxy::Outcome;
use rustix::fd::OwnedFd;

/// How the connection goes on after the response: the one value from which both the
/// preamble's `Connection` field ([`After::persist`]) and the loop's next step are derived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum After {
    /// Wait for the next request; `minor` is the request's HTTP minor version (1.0 says
    /// `Connection: keep-alive`, 1.1 needs no field).
    KeepAlive {
        /// The request's HTTP minor version.
        minor: u8,
    },
    /// `Connection: close`, then close; `linger`: shut the write side and read until
    /// the peer closes, else linger only if input is left unread.
    Close {
        /// Linger whatever is left unread.
        linger: bool,
    },
}

impl After {
    /// Keep-alive at `minor` when `keep`, else a close without forced linger.
    pub(crate) fn keep_if(keep: bool, minor: u8) -> After {
        match keep {
            true => After::KeepAlive { minor },
            false => After::Close { linger: false },
        }
    }

    /// The preamble's `Connection` field.
    pub(crate) fn persist(self) -> Persist {
        match self {
            After::KeepAlive { minor: 0 } => Persist::KeepAlive,
            After::KeepAlive { .. } => Persist::Implicit,
            After::Close { .. } => Persist::Close,
        }
    }
}

/// What remains of a response body.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// No body (HEAD, 304) or all sent.
    Nothing,
    /// A static page (error bodies); `at` bytes already sent.
    Static(&'static [u8], usize),
    /// Bytes `at..end` of a file-cache entry held in memory, or of its gzip bytes.
    Cached {
        /// Entry index.
        index: u32,
        /// Next byte to send.
        at: usize,
        /// End (exclusive).
        end: usize,
        /// The entry's gzip bytes rather than the file's (`files::cache::compress`).
        gzip: bool,
    },
    /// Bytes `at..end` of a file-cache entry's open file (or its `.gz` in
    /// `--compress-cache DIR`), by `sendfile`.
    CachedFile {
        /// Entry index.
        index: u32,
        /// Next byte to send.
        at: u64,
        /// End (exclusive).
        end: u64,
        /// The entry's `.gz` rather than its file.
        gzip: bool,
        /// Its pages are known cached up to here (`crate::disk`).
        cached: u64,
    },
    /// Bytes `at..end` of an open file, by `sendfile`.
    File {
        /// The open file.
        fd: OwnedFd,
        /// Next byte to send.
        at: u64,
        /// End (exclusive).
        end: u64,
        /// Its pages are known cached up to here (`crate::disk`).
        cached: u64,
    },
    /// A directory listing (`--list-dirs`), produced piece by piece into its listing
    /// slot's buffer (`crate::listing`) as the socket takes the previous piece.
    Listing {
        /// The directory, open for reading its entries.
        dir: OwnedFd,
        /// The listing slot of the worker's `Listings`.
        index: u32,
        /// Next byte of the current piece to send.
        at: usize,
        /// End of the current piece (exclusive).
        end: usize,
        /// The current piece is the last.
        last: bool,
    },
    /// A forwarded request's answer, produced by its exchange (`conn::relay`) as the
    /// upstream sends it.
    Upstream {
        /// The slot whose exchange it is, once started (`conn::proxy::relay`).
        slot: Option<u32>,
        /// What the relays keep the planned exchange under until it starts.
        ticket: u32,
        /// Bytes the client has taken.
        sent: u64,
        /// When the exchange started (`logged::stamp`: 0 unless the log shows times).
        began_us: u64,
        /// The upstream's place in the counters by upstream until its outcome is
        /// counted (`conn::proxy`); `None` then, or for an upstream not counted apart.
        tally: Option<u8>,
    },
}

impl Outgoing {
    /// Whether every byte of the body is written.
    fn done(&self) -> bool {
        match *self {
            Outgoing::Nothing => true,
            Outgoing::Static(b, at) => at >= b.len(),
            Outgoing::Cached { at, end, .. } => at >= end,
            Outgoing::CachedFile { at, end, .. } | Outgoing::File { at, end, .. } => at >= end,
            Outgoing::Listing { at, end, last, .. } => last && at >= end,
            // Its end is the exchange's to tell (`conn::proxy::relay`).
            Outgoing::Upstream { .. } => false,
        }
    }

    /// A body read from the disk (a file, a listing's directory): only such a body may
    /// wait for it, so every other kind is sent after one compare.
    pub(super) fn reads_disk(&self) -> bool {
        matches!(
            self,
            Outgoing::File { .. } | Outgoing::CachedFile { .. } | Outgoing::Listing { .. }
        )
    }

    /// A file body whose next bytes are not known to be cached.
    pub(super) fn needs_pages(&self) -> bool {
        match *self {
            Outgoing::File {
                at, end, cached, ..
            }
            | Outgoing::CachedFile {
                at, end, cached, ..
            } => at < end && at >= cached,
            _ => false,
        }
    }

    /// A directory listing that has not produced its first piece (its directory is read
    /// off the loop first, `crate::disk`).
    pub(super) fn listing_unstarted(&self) -> bool {
        matches!(
            *self,
            Outgoing::Listing {
                at: 0,
                end: 0,
                last: false,
                ..
            }
        )
    }

    /// How far a file body's pages are known cached (`None`: not a file body).
    pub(super) fn cached_mut(&mut self) -> Option<&mut u64> {
        match self {
            Outgoing::File { cached, .. } | Outgoing::CachedFile { cached, .. } => Some(cached),
            _ => None,
        }
    }

    /// The cache entry it reads from, if any.
    fn cache_entry(&self) -> Option<u32> {
        match *self {
            Outgoing::Cached { index, .. } | Outgoing::CachedFile { index, .. } => Some(index),
            _ => None,
        }
    }
}

/// Ends a relayed response's exchange with its connection (the client gone, a stop):
/// counted cut short when it started and its outcome was not counted yet (`tally`), then
/// given back, started (its slot known) or only planned. Cold and out of line, so
/// releasing a file response stays small enough to inline.
#[cold]
#[inline(never)]
fn end_exchange(ctx: &mut Ctx<'_>, slot: Option<u32>, ticket: u32, tally: Option<u8>) {
    match slot {
        Some(s) => {
            if let Some(place) = tally {
                ctx.counters.proxy_responses.count(place, Outcome::CutShort);
            }
            ctx.relays.release(s, ctx.now_ms);
        }
        None => ctx.relays.forget(ticket),
    }
}

/// The preamble (status line and header fields): `len` bytes in the preamble area, or,
/// `spilled`, at the back of the receive area (a 301 too long for the preamble area, see
/// `conn::SPILL_CAP`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Preamble {
    /// Bytes of the preamble.
    pub(crate) len: usize,
    /// Bytes of it written: the preamble's sent count.
    pub(crate) sent: usize,
    /// It was spilled: it lives at the back of the receive area.
    pub(crate) spilled: bool,
}

impl Preamble {
    /// A preamble of `len` bytes, none of them written yet.
    pub(super) fn unsent(len: usize, spilled: bool) -> Preamble {
        Preamble {
            len,
            sent: 0,
            spilled,
        }
    }
}

/// The response being written.
#[derive(Debug)]
pub(super) struct Response {
    /// Its preamble and how much of it is written.
    pub(crate) preamble: Preamble,
    /// What remains of its body.
    pub(crate) body: Outgoing,
    /// The body's cache entry is pinned (a paused cached body must not change).
    pub(crate) pinned: bool,
    /// Body bytes written so far.
    pub(crate) body_sent: u64,
    /// How the connection goes on.
    pub(crate) after: After,
    /// Body bytes the request still owes: discarded before the next head when the
    /// connection persists (`Awaiting::Body`), else they make the close linger.
    pub(crate) owed: u64,
    /// Bytes of the answered request's head, dropped from the receive area once the
    /// response is finished (the log reads them until then).
    pub(crate) answered: usize,
    /// The turn clock (`Ctx::now_ms`) when it was planned: its response time runs from
    /// there (`stats::latency`).
    pub(crate) planned_ms: u64,
    /// What a file body's reading went through (`crate::disk`).
    pub(crate) pages: Pages,
}

impl Response {
    /// Something must be read off the loop before the body is sent further: a file
    /// body's next pages, or a listing's directory (once).
    pub(super) fn must_read(&self) -> bool {
        self.body.needs_pages() || (self.body.listing_unstarted() && !self.pages.waited())
    }

    /// A file body waits for its next pages to be read off the loop (a listing, for its
    /// directory).
    pub(super) fn awaits_disk(&self) -> bool {
        self.pages.is_reading() && (self.body.needs_pages() || self.body.listing_unstarted())
    }

    /// Whether the preamble and the body are all written.
    pub(super) fn done(&self) -> bool {
        self.preamble.sent >= self.preamble.len && self.body.done()
    }

    /// Accounts `n` written bytes: preamble first, then the body (`sendfile` moves a file
    /// body's offset itself; the body bytes are counted here for every kind).
    pub(crate) fn advance(&mut self, mut n: usize) {
        let h = n.min(self.preamble.len - self.preamble.sent);
        self.preamble.sent += h;
        n -= h;
        self.body_sent += n as u64;
        match &mut self.body {
            Outgoing::Static(_, at) => *at += n,
            Outgoing::Cached { at, .. } => *at += n,
            Outgoing::Listing { at, .. } => *at += n,
            _ => {}
        }
    }

    /// A paused cached body must not change under us: pin its entry (once).
    pub(crate) fn pin_if_cached(&mut self, cache: &mut FileCache) {
        if let (Some(index), false) = (self.body.cache_entry(), self.pinned) {
            cache.pin(index);
            self.pinned = true;
        }
    }

    /// Drops the body, unpinning a cached entry this response pinned and giving back a
    /// listing's slot.
    pub(super) fn release(&mut self, ctx: &mut Ctx<'_>) {
        match (&self.body, self.pinned) {
            (Outgoing::Listing { index, .. }, _) => ctx.listings.release(*index),
            (
                Outgoing::Upstream {
                    slot,
                    ticket,
                    tally,
                    ..
                },
                _,
            ) => end_exchange(ctx, *slot, *ticket, *tally),
            (body, true) => {
                if let Some(index) = body.cache_entry() {
                    ctx.cache.unpin(index)
                }
            }
            _ => {}
        }
        self.pinned = false;
        self.body = Outgoing::Nothing;
    }
}
