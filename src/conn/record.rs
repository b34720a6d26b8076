//! The responder: what one answer is planned with, and recording the planned response
//! on the connection (the state it sends from, the response counters, the access-log
//! line).
//!
//! Input: the connection, its preamble area, the worker's [`Ctx`] and scratch areas, the
//! request as the log shows it, how the connection goes on and what of the request is
//! left to drop. Its methods are the response kinds (`respond.rs`, `file.rs`,
//! `listing.rs`, `auth.rs`); each ends in [`Responder::plan`]. Output: the connection
//! set to `Awaiting::Send` with one [`Response`]. It writes nothing to the socket.

use super::in_flight::{After, Outgoing, Preamble, Response};
use super::logged::{self, LoggedRequest};
use super::{Awaiting, Conn, Ctx};
use crate::disk::Pages;
use crate::files::PATH_MAX;
use crate::http::response::{error_body, write_error_head, write_head, ResponseHead};
use crate::site::auth::Admission;
use core::sync::atomic::Ordering::Relaxed;

/// The parts of a request the log and the persistence rule need.
#[derive(Clone, Copy)]
pub(super) struct Line<'a> {
    /// The request as its log line shows it.
    pub(crate) log: LoggedRequest<'a>,
    /// The method is HEAD: the response has no content whatever its status (RFC 9110
    /// §9.3.2, RFC 9112 §6.3 rule 1), though its Content-Length stays that of GET.
    pub(crate) head_method: bool,
    /// The `--cors` origin lines of the response (`site::cors`; empty without `--cors`).
    pub(crate) cors: &'a [u8],
}

/// The worker's scratch areas one answer may use (borrowed apart from the parser's path).
pub(super) struct Bufs<'s> {
    /// NUL-terminated relative path for `openat2`.
    pub(crate) open: &'s mut [u8; PATH_MAX + 1],
    /// The spill: for a preamble too long for the preamble area.
    pub(crate) spill: &'s mut [u8],
    /// A sidecar's request path.
    pub(crate) sidecar: &'s mut [u8],
}

/// Where a preamble is written: the preamble area, or the worker's spill (moved to the
/// back of the receive area by the transition).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    PreambleArea,
    Spill,
}

/// One answer being planned: its methods are the response kinds.
pub(super) struct Responder<'a, 'w> {
    /// The connection the answer is planned on.
    pub(crate) c: &'a mut Conn,
    /// The preamble area (of the loop's working area).
    pub(crate) out: &'a mut [u8],
    /// The worker's state.
    pub(crate) ctx: &'a mut Ctx<'w>,
    /// The worker's scratch areas for this answer.
    pub(crate) bufs: Bufs<'a>,
    /// The request as the log and the persistence rule see it.
    pub(crate) line: Line<'a>,
    /// How the connection goes on; the preamble's `Connection` field is derived from it.
    pub(crate) after: After,
    /// Body bytes the request still owes (see `Response::owed`).
    pub(crate) owed: u64,
    /// Bytes of the request's head (see `Response::answered`).
    pub(crate) answered: usize,
    /// What the request showed `--basic-auth` (`auth.rs`): which paths it may be served.
    pub(crate) admitted: Admission,
}

impl<'a, 'w> Responder<'a, 'w> {
    /// A responder for the request `line` that closes after a linger, with nothing of the
    /// request to drop, admitted to the paths that need no credentials (the callers set
    /// what differs).
    pub(super) fn new(
        c: &'a mut Conn,
        out: &'a mut [u8],
        ctx: &'a mut Ctx<'w>,
        bufs: Bufs<'a>,
        line: Line<'a>,
    ) -> Self {
        Responder {
            c,
            out,
            ctx,
            bufs,
            line,
            after: After::Close { linger: true },
            owed: 0,
            answered: 0,
            admitted: Admission::WithoutCredentials,
        }
    }

    /// Writes `h` where `place` says and plans it with `body`. Every preamble steerd
    /// builds fits the preamble area: the start-up check sizes it for the largest one with
    /// the operator's lines (`SiteRules::head_area`, `http::response::head_area`), and the
    /// spill holds the longest 301 (`conn::SPILL_CAP`). Should one not fit, that
    /// invariant is broken: the answer is the built-in 500 and the connection closes,
    /// never a body without its preamble.
    pub(super) fn answer(&mut self, h: &ResponseHead<'_>, place: Place, body: Outgoing) {
        let area = match place {
            Place::PreambleArea => &mut *self.out,
            Place::Spill => &mut *self.bufs.spill,
        };
        let written = write_head(area, h);
        self.answer_written(h.status, written, place, body);
    }

    /// [`Responder::answer`] for a preamble already written (`written`: its length, or
    /// `None` when it did not fit) by a caller whose `ResponseHead` borrows from the
    /// worker's state.
    pub(crate) fn answer_written(
        &mut self,
        status: u16,
        written: Option<usize>,
        place: Place,
        body: Outgoing,
    ) {
        match written {
            Some(len) => self.plan(status, Preamble::unsent(len, place == Place::Spill), body),
            None => self.overflowed(body),
        }
    }

    /// A preamble did not fit: give back what `body` holds, then the built-in 500, closing.
    #[cold]
    #[inline(never)]
    fn overflowed(&mut self, body: Outgoing) {
        if let Outgoing::Listing { index, .. } = body {
            self.ctx.listings.release(index);
        }
        self.after = After::Close { linger: true };
        self.builtin_error(500);
    }

    /// An error with the built-in page. Its preamble has no operator line and is at most
    /// `http::response::HEAD_BASE_MAX` bytes (a test of `http::response` checks it), so
    /// it fits the smallest preamble area; should it not, nothing is sent and the
    /// connection closes.
    pub(crate) fn builtin_error(&mut self, status: u16) {
        let date = *self.ctx.date.text();
        let persist = self.after.persist();
        let (len, body) = match write_error_head(self.out, status, &date, persist, None) {
            Some(len) => (len, Outgoing::Static(error_body(status), 0)),
            None => {
                debug_assert!(false, "a built-in error preamble outgrew the preamble area");
                self.after = After::Close { linger: true };
                (0, Outgoing::Nothing)
            }
        };
        self.plan(status, Preamble::unsent(len, false), body);
    }

    /// Counts the response in its host's row (none for a 421, nor without hosts).
    #[inline(never)]
    fn count_for_host(&mut self, class: usize) {
        let row = self.ctx.hosts.rows.get(usize::from(self.c.host));
        let all = &self.ctx.counters.host_responses.0;
        if let Some(counts) = row.and_then(|&r| all.get(usize::from(r))) {
            counts[class].fetch_add(1, Relaxed);
        }
    }

    /// The response in flight for `preamble` and `body`, as this answer leaves the
    /// connection.
    #[inline(always)]
    pub(super) fn response(&self, preamble: Preamble, body: Outgoing) -> Response {
        Response {
            preamble,
            body,
            pinned: false,
            body_sent: 0,
            after: self.after,
            owed: self.owed,
            answered: self.answered,
            planned_ms: self.ctx.now_ms,
            pages: Pages::default(),
        }
    }

    /// Records the plan on the connection, counts it and starts its log line (written
    /// when the response ends). A HEAD drops the body here, for every status.
    #[inline]
    pub(super) fn plan(&mut self, status: u16, preamble: Preamble, body: Outgoing) {
        let class = usize::from(status / 100).clamp(1, 5) - 1;
        self.ctx.counters.responses[class].fetch_add(1, Relaxed);
        if !self.ctx.hosts.names.is_empty() {
            self.count_for_host(class);
        }
        logged::begin(self.c, self.ctx, status, &self.line.log);
        self.c.awaiting = Awaiting::Send(self.response(preamble, body));
        if self.line.head_method {
            if let Awaiting::Send(r) = &mut self.c.awaiting {
                r.body = Outgoing::Nothing;
            }
        }
    }
}
