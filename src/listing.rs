//! Directory listings (`--list-dirs`): a directory's entries, sorted, as an HTML page or
//! a JSON array, produced in bounded pieces across loop turns in memory fixed at start.
//!
//! Stage: serving runtime, between `files` (which opens the directory under the root
//! and describes its entries, `files::dir`) and `conn` (which plans the response and
//! sends what this produces). Input: a listing slot taken for a response
//! ([`Listings::acquire`]), its open directory, the root, and the work this turn may
//! still do. Output: the next piece of the body in the slot's buffer ([`Listings::fill`]).
//! It neither plans heads nor writes to sockets.
//!
//! One listing is a sequence of passes over the directory (`select.rs`): a pass reads
//! every entry with `getdents64` and keeps the next batch in order in the slot's arena;
//! the batch is then written entry by entry (an `fstatat` each for size and time,
//! `render.rs`) into the slot's output buffer as the socket drains it; then the next pass
//! starts from the directory's beginning (`lseek(0)`). Entries are skipped as the rules
//! say: `.` and `..`, dotfiles under `--dotfiles deny`, what is neither a directory nor
//! a regular file, symlinks that leave the root or dangle (`files::dir`).
//!
//! Memory: [`Listings::with_arena`] allocates, once per worker, its listing slots (each an arena
//! of [`BATCH_NAMES`] bytes and [`BATCH_ENTRIES`] records, so a pass holds at least
//! [`BATCH_MIN_ENTRIES`] entries whatever their names' length, an output buffer of
//! [`OUT_CAP`] bytes and the directory's path) and one `getdents64` buffer of
//! [`DENTS_CAP`] bytes that every slot uses within one call. A listing holds its slot
//! while its body streams; with every slot taken, another listing is refused (503,
//! `conn/listing.rs`). HEAD and 304 answers take no slot.
//!
//! Work: every call spends from a budget the connection gets each loop turn
//! ([`WORK_BUDGET`]): a `getdents64` buffer costs [`READ_COST`], an entry written (its
//! `fstatat`) [`EMIT_COST`]; a step starts while any is left (so any budget makes
//! progress) and may overdraw it. When it is spent, `fill` returns what it has, or
//! [`Fill::Later`] with nothing, and the loop serves its other connections before this
//! one goes on; a pass over a large directory is spread over as many turns as it needs.
//! A pass stops only between `getdents64` buffers, never inside one, so the directory's
//! file offset is where the next turn resumes.
//!
//! Framing: `chunked` makes each piece one chunk (`XXXX\r\n`, four hex digits, since a
//! piece is below 64 KiB; the data; `\r\n`) and puts `0\r\n\r\n` after the last (RFC
//! 9112 §7.1); otherwise the bytes are sent as they are and the close ends the body
//! (HTTP/1.0).

mod render;
mod select;

pub(crate) use render::Format;

use crate::files::dir::{entry_kind, entry_meta};
use crate::files::PATH_MAX;
use crate::http::response::Writer;
use crate::site::dotfiles::Dotfiles;
use core::ffi::CStr;
use core::mem::MaybeUninit;
use render::{END_MAX, ENTRY_MAX, START_MAX};
use rustix::fd::BorrowedFd;
use rustix::fs::{RawDir, SeekFrom};
use select::{Selection, NAME_MAX, RECORD_MAX};

/// Entries the arena holds at the least, when every name is as long as a name can be. A
/// pass keeps at least half of them (a full arena is halved), so a listing of `N`
/// entries takes at most `ceil(N / 2,048)` passes over the directory whatever the
/// length of the names: the work of a listing does not grow with it. Sized by bytes
/// instead (128 KiB), a pass of 250-byte names held 260 to 520 entries, and a listing
/// of 60,000 of them took 15 s of CPU, against 1.45 s now (docs/serving.md).
pub(crate) const BATCH_MIN_ENTRIES: usize = 4096;
/// Bytes of a listing slot's name arena: [`BATCH_MIN_ENTRIES`] of the longest records
/// (1,028 KiB, resident only as far as a listing fills it: [`BATCH_ENTRIES`] records of
/// 15-byte names touch 272 KiB of it).
pub(crate) const BATCH_NAMES: usize = BATCH_MIN_ENTRIES * RECORD_MAX;
/// Records of a listing slot's arena (what bounds a pass of short names).
pub(crate) const BATCH_ENTRIES: usize = 16 * 1024;
/// Bytes of a listing slot's output buffer: the largest piece of the body.
pub(crate) const OUT_CAP: usize = 16 * 1024;
/// Bytes of the worker's `getdents64` buffer (about 800 entries of 15-byte names).
pub(crate) const DENTS_CAP: usize = 32 * 1024;
/// Listing slots of a worker unless tuned otherwise.
pub(crate) const SLOTS: usize = 4;

/// Work one connection may do in a loop turn (about a millisecond).
pub(crate) const WORK_BUDGET: u32 = 4 * READ_COST;
/// Work of one `getdents64` buffer, about one unit an entry.
pub(crate) const READ_COST: u32 = 1024;
/// Work of one entry written: an `fstatat` and its rendering.
pub(crate) const EMIT_COST: u32 = 4;

/// `XXXX\r\n` before a chunk's data.
const CHUNK_HEAD: usize = 6;
/// `\r\n` after the data and the last chunk, `0\r\n\r\n`.
const CHUNK_TAIL: usize = 2 + 5;
// Every piece fits an empty buffer, and a chunk's size fits four hex digits.
const _: () = assert!(START_MAX + CHUNK_HEAD + CHUNK_TAIL <= OUT_CAP);
const _: () = assert!(ENTRY_MAX + END_MAX + CHUNK_HEAD + CHUNK_TAIL <= OUT_CAP);
const _: () = assert!(OUT_CAP < 0x10000);

/// What a listing is asked to produce.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spec<'a> {
    /// The directory's request path (starts and ends with `/`, at most `PATH_MAX`).
    pub(crate) path: &'a [u8],
    /// HTML or JSON.
    pub(crate) format: Format,
    /// Chunked transfer coding (HTTP/1.1); else close-delimited (HTTP/1.0).
    pub(crate) chunked: bool,
    /// `--dotfiles`.
    pub(crate) dotfiles: Dotfiles,
}

/// What one [`Listings::fill`] produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fill {
    /// Bytes `at..end` of [`Listings::bytes`] are the next piece; `last`: nothing follows.
    Bytes {
        /// First byte.
        at: usize,
        /// End (exclusive).
        end: usize,
        /// The body ends with this piece.
        last: bool,
    },
    /// The turn's work is spent before anything was produced: call again next turn.
    Later,
    /// The directory could not be read (or the slot is not taken): end the response.
    Failed,
}

/// Where a listing is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// The page's beginning is next.
    Start,
    /// A pass is reading the directory.
    Read,
    /// Batch entry `next` is written next; `last`: the batch held every entry left.
    Emit { next: usize, last: bool },
    /// The page's end is next.
    End,
    /// Everything is produced.
    Done,
}

/// One listing slot's state (its output buffer is beside it, in [`Slot`]).
struct State {
    busy: bool,
    format: Format,
    chunked: bool,
    dotfiles: Dotfiles,
    path: Box<[u8; PATH_MAX + 1]>,
    path_len: usize,
    sel: Selection,
    step: Step,
    /// An entry was written (JSON puts a comma before the next).
    written: bool,
}

struct Slot {
    state: State,
    out: Box<[u8]>,
}

/// A worker's listing slots and the buffers they share.
pub(crate) struct Listings {
    slots: Vec<Slot>,
    dents: Box<[MaybeUninit<u8>]>,
    scratch: Box<[u8; PATH_MAX + 1]>,
    /// Passes started since [`Listings::take_passes`] last ran.
    passes: u64,
}

/// What one call may touch besides the slot.
struct Io<'a> {
    dir: BorrowedFd<'a>,
    root: BorrowedFd<'a>,
    dents: &'a mut [MaybeUninit<u8>],
    scratch: &'a mut [u8; PATH_MAX + 1],
    /// Passes started (each reads the whole directory).
    passes: &'a mut u64,
}

impl Listings {
    /// `slots` listing slots (none without `--list-dirs`), allocated once, at start.
    #[cfg(test)]
    pub(crate) fn new(slots: usize) -> Listings {
        Listings::with_arena(slots, BATCH_NAMES, BATCH_ENTRIES)
    }

    /// [`Listings::new`] with another arena size (`Tuning::listing_names`; tests make
    /// passes with small ones).
    pub(crate) fn with_arena(slots: usize, names: usize, entries: usize) -> Listings {
        let slot = || Slot {
            state: State {
                busy: false,
                format: Format::Html,
                chunked: true,
                dotfiles: Dotfiles::Deny,
                path: Box::new([0; PATH_MAX + 1]),
                path_len: 0,
                sel: Selection::new(names, entries),
                step: Step::Done,
                written: false,
            },
            out: vec![0; OUT_CAP].into_boxed_slice(),
        };
        let dents = if slots == 0 { 0 } else { DENTS_CAP };
        Listings {
            slots: (0..slots).map(|_| slot()).collect(),
            dents: Box::new_uninit_slice(dents),
            scratch: Box::new([0; PATH_MAX + 1]),
            passes: 0,
        }
    }

    /// Takes a free slot for a listing of `spec`; `None` when every slot is taken.
    pub(crate) fn acquire(&mut self, spec: &Spec<'_>) -> Option<u32> {
        if spec.path.len() > PATH_MAX {
            return None;
        }
        let (i, slot) = self
            .slots
            .iter_mut()
            .enumerate()
            .find(|(_, s)| !s.state.busy)?;
        let st = &mut slot.state;
        st.busy = true;
        st.format = spec.format;
        st.chunked = spec.chunked;
        st.dotfiles = spec.dotfiles;
        st.path[..spec.path.len()].copy_from_slice(spec.path);
        st.path_len = spec.path.len();
        st.sel.reset();
        st.step = Step::Start;
        st.written = false;
        Some(i as u32)
    }

    /// Frees slot `index` (its response ended, whole or not).
    pub(crate) fn release(&mut self, index: u32) {
        if let Some(s) = self.slots.get_mut(index as usize) {
            s.state.busy = false;
        }
    }

    /// Slots taken.
    #[cfg(test)]
    pub(crate) fn in_use(&self) -> usize {
        self.slots.iter().filter(|s| s.state.busy).count()
    }

    /// Passes over a directory started since the last call (the counter
    /// `steerd_listing_passes_total`).
    pub(crate) fn take_passes(&mut self) -> u64 {
        core::mem::take(&mut self.passes)
    }

    /// Slot `index`'s output buffer (what [`Fill::Bytes`] points into).
    pub(crate) fn bytes(&self, index: u32) -> &[u8] {
        self.slots.get(index as usize).map_or(&[], |s| &s.out[..])
    }

    /// Produces the next piece of slot `index`'s body from `dir` (the directory it lists,
    /// under `root`), spending `work`. Call it only once the previous piece is sent.
    /// Never inlined: it would bloat the connection's transition, the hot path of every
    /// other response.
    #[inline(never)]
    pub(crate) fn fill(
        &mut self,
        index: u32,
        dir: BorrowedFd<'_>,
        root: BorrowedFd<'_>,
        work: &mut u32,
    ) -> Fill {
        let Listings {
            slots,
            dents,
            scratch,
            passes,
        } = self;
        let Some(Slot { state, out }) = slots.get_mut(index as usize).filter(|s| s.state.busy)
        else {
            return Fill::Failed;
        };
        let mut io = Io {
            dir,
            root,
            dents,
            scratch,
            passes,
        };
        let (head, tail) = match state.chunked {
            true => (CHUNK_HEAD, CHUNK_TAIL),
            false => (0, 0),
        };
        let data = &mut out[head..OUT_CAP - tail];
        let room = data.len();
        let mut w = Writer::new(data);
        let progress = produce(state, &mut w, room, &mut io, work);
        let len = w.written();
        let last = match progress {
            Progress::Failed => return Fill::Failed,
            Progress::Spent if len == 0 => return Fill::Later,
            Progress::Done => true,
            Progress::Spent | Progress::Full => false,
        };
        match state.chunked {
            true => frame_chunk(out, len, last),
            false => Fill::Bytes {
                at: 0,
                end: len,
                last,
            },
        }
    }
}

/// Why [`produce`] stopped.
enum Progress {
    /// The output buffer has no room for the next piece.
    Full,
    /// The turn's work is spent.
    Spent,
    /// Everything is produced.
    Done,
    /// The directory could not be read.
    Failed,
}

/// Writes into `w` (with `room` bytes) as much of the listing as room and work allow.
fn produce(
    st: &mut State,
    w: &mut Writer<'_>,
    room: usize,
    io: &mut Io<'_>,
    work: &mut u32,
) -> Progress {
    loop {
        let left = room - w.written();
        match st.step {
            Step::Start => {
                render::start(w, st.format, &st.path[..st.path_len]);
                *io.passes += 1;
                st.step = Step::Read;
            }
            Step::Read => match read_pass(st, io, work) {
                Pass::Spent => return Progress::Spent,
                Pass::Done { last } => st.step = Step::Emit { next: 0, last },
                Pass::Failed => return Progress::Failed,
            },
            Step::Emit { next, last: true } if next == st.sel.len() => st.step = Step::End,
            Step::Emit { next, last: false } if next == st.sel.len() => {
                st.sel.next_pass();
                if rustix::fs::seek(io.dir, SeekFrom::Start(0)).is_err() {
                    return Progress::Failed;
                }
                *io.passes += 1;
                st.step = Step::Read;
            }
            Step::Emit { next, last } => {
                if left < ENTRY_MAX {
                    return Progress::Full;
                }
                if *work == 0 {
                    return Progress::Spent;
                }
                *work = work.saturating_sub(EMIT_COST);
                emit(st, next, w, io);
                st.step = Step::Emit {
                    next: next + 1,
                    last,
                };
            }
            Step::End if left < END_MAX => return Progress::Full,
            Step::End => {
                render::end(w, st.format);
                st.step = Step::Done;
            }
            Step::Done => return Progress::Done,
        }
    }
}

/// How far a pass got.
enum Pass {
    /// The turn's work is spent; the pass goes on next turn.
    Spent,
    /// The pass is over and its batch sorted; `last`: it held every entry left.
    Done { last: bool },
    /// `getdents64` failed.
    Failed,
}

/// Reads the directory on from where the pass stands, offering each listed entry.
fn read_pass(st: &mut State, io: &mut Io<'_>, work: &mut u32) -> Pass {
    let path = &st.path[..st.path_len];
    let mut entries = RawDir::new(io.dir, &mut *io.dents);
    loop {
        if entries.is_buffer_empty() {
            if *work == 0 {
                return Pass::Spent;
            }
            *work = work.saturating_sub(READ_COST);
        }
        let e = match entries.next() {
            None => {
                let last = st.sel.end_pass();
                return Pass::Done { last };
            }
            Some(Err(_)) => return Pass::Failed,
            Some(Ok(e)) => e,
        };
        let name = e.file_name();
        let bytes = name.to_bytes();
        let skipped = bytes == b"." || bytes == b".." || st.dotfiles.hides_entry(path, bytes);
        if skipped || !st.sel.may_want(bytes) {
            continue;
        }
        let kind = entry_kind(io.root, io.dir, path, name, e.file_type(), io.scratch);
        if let Some(kind) = kind {
            st.sel.offer(kind, bytes);
        }
    }
}

/// Writes batch entry `i`, as it is now (an entry gone since its pass is left out).
fn emit(st: &mut State, i: usize, w: &mut Writer<'_>, io: &mut Io<'_>) {
    let (_, name) = st.sel.get(i);
    let mut c = [0u8; NAME_MAX + 1];
    let Some(place) = c.get_mut(..name.len()) else {
        return;
    };
    place.copy_from_slice(name);
    let Ok(cname) = CStr::from_bytes_with_nul(&c[..=name.len()]) else {
        return;
    };
    let path = &st.path[..st.path_len];
    if let Some(meta) = entry_meta(io.root, io.dir, path, cname, io.scratch) {
        render::entry(w, st.format, !st.written, name, &meta);
        st.written = true;
    }
}

/// Frames the `len` data bytes at `out[CHUNK_HEAD..]` as a chunk (none when empty),
/// followed by the last chunk when `last`.
fn frame_chunk(out: &mut [u8], len: usize, last: bool) -> Fill {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut at = CHUNK_HEAD;
    let mut end = CHUNK_HEAD + len;
    if len > 0 {
        at = 0;
        for (i, d) in out[..4].iter_mut().enumerate() {
            *d = HEX[(len >> (12 - 4 * i)) & 15];
        }
        out[4..6].copy_from_slice(b"\r\n");
        out[end..end + 2].copy_from_slice(b"\r\n");
        end += 2;
    }
    if last {
        out[end..end + 5].copy_from_slice(b"0\r\n\r\n");
        end += 5;
    }
    Fill::Bytes { at, end, last }
}

#[cfg(test)]
mod tests;
