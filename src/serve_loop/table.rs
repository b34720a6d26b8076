//! The serve loop's connection table: the slots, their arena, the free stack and the
//! give-back of cold slots' pages, owned in one place as nginx's `ngx_get_connection` /
//! `ngx_free_connection` own theirs.
//!
//! Input: the table's ceiling (`--max-conns`), a slot's region size
//! (`conn::slot_bytes`), the give-back period, and the loop's takes, releases and
//! sweeps. Output: slot indices, each with its connection, its region of the arena and
//! the working area (`conn::Areas`). It does not accept, register with epoll or arm
//! deadlines: the loop does, and keeps its companion tables (the deadline links, the
//! per-address links) as long as this one, growing them when [`Table::take`] adds a
//! slot and truncating them when [`Table::give_back`] shrinks the table.
//!
//! Invariants: every index on the free stack is a slot below `len()` with no socket; a
//! slot's generation only grows, and a slot added after a shrink starts above every
//! generation the table dropped, so no old token matches a new slot. Everything is
//! allocated in [`Table::new`]; taking, releasing and shrinking allocate nothing.

use super::give_back::GiveBack;
use super::LoopError;
use crate::conn::{self, Arrival, Conn, Ctx, Next, Scratch};
use crate::event::Token;
use crate::sys::ZeroedArena;
use std::os::fd::OwnedFd;

/// One entry of the table: the connection's protocol state, and what the loop keeps
/// about it (the connection never sees these).
pub(super) struct Slot {
    pub(super) conn: Conn,
    /// Incremented on each reuse of the slot (the epoll token carries it).
    pub(super) generation: u32,
    /// Registered with epoll.
    pub(super) registered: bool,
    /// On the ready list (after a [`Next::Yield`]).
    pub(super) queued: bool,
    /// Free, and its arena region given back ([`super::give_back`]).
    released: bool,
}

impl Slot {
    fn free(generation: u32) -> Slot {
        Slot {
            conn: Conn::free(),
            generation,
            registered: false,
            queued: false,
            released: false,
        }
    }

    /// A freshly accepted socket in this slot, under a new generation.
    pub(super) fn open(&mut self, fd: OwnedFd, arrival: Arrival) {
        self.generation = self.generation.wrapping_add(1);
        self.registered = false;
        self.queued = false;
        self.released = false;
        self.conn.open(fd, arrival);
    }

    /// The token epoll and the ready list carry for this slot's connection.
    pub(super) fn token(&self, slot: u32) -> Token {
        Token {
            slot,
            generation: self.generation,
        }
    }
}

pub(super) struct Table {
    slots: Vec<Slot>,
    arena: ZeroedArena,
    /// The working area every connection of the loop reads and answers in
    /// (`slot_bytes`, laid out as a slot's region: `conn::Areas`), page-aligned as a
    /// slot's region is, so the parser and `memchr` see the alignment they saw there.
    work: ZeroedArena,
    /// Bytes of each slot's region of the arena (`conn::slot_bytes`).
    slot_bytes: usize,
    /// Distance between two slots' regions: `slot_bytes` rounded up to whole pages, so a
    /// region's pages are its own and can be given back alone.
    stride: usize,
    /// Free slots, the last freed on top (reused first). The table grows (a slot is
    /// added) only when this is empty: `slots` and its companion tables are filled, and
    /// their pages touched, only as far as connections have used them.
    free: Vec<u32>,
    /// The table's ceiling (`--max-conns`): `slots` and `free` have this much room.
    max_slots: usize,
    /// The generation a slot added to the table starts from: above that of every slot
    /// the table dropped when it shrank, so no old token matches a new slot.
    next_generation: u32,
    /// Which free slots' pages go back to the kernel, and when.
    cold: GiveBack,
}

impl Table {
    /// Room for `max_slots` slots of `slot_bytes` each (none in use); free slots give
    /// their pages back after one to two `give_back_ms` (the first round `now_ms` plus
    /// one period).
    pub(super) fn new(
        max_slots: usize,
        slot_bytes: usize,
        give_back_ms: u64,
        now_ms: u64,
    ) -> Result<Table, LoopError> {
        let stride = slot_bytes.next_multiple_of(crate::sys::mem::page_size());
        Ok(Table {
            slots: Vec::with_capacity(max_slots),
            arena: ZeroedArena::new(max_slots * stride)
                .map_err(|e| LoopError::Setup("mapping the connection arena", e))?,
            work: ZeroedArena::new(slot_bytes)
                .map_err(|e| LoopError::Setup("mapping the working area", e))?,
            slot_bytes,
            stride,
            free: Vec::with_capacity(max_slots),
            max_slots,
            next_generation: 0,
            cold: GiveBack::new(give_back_ms, 0, now_ms),
        })
    }

    /// Slots in the table (in use or free): every slot index is below this.
    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    /// A free slot or room to add one.
    pub(super) fn has_room(&self) -> bool {
        !self.free.is_empty() || self.slots.len() < self.max_slots
    }

    /// The free slot freed last, or a new one while the table is under its ceiling
    /// (`grow` then adds the companion tables' entries for it).
    #[inline]
    pub(super) fn take(&mut self, grow: impl FnOnce()) -> Option<u32> {
        if let Some(slot) = self.free.pop() {
            self.cold.taken(self.free.len());
            return Some(slot);
        }
        if self.slots.len() == self.max_slots {
            return None;
        }
        Some(self.add(grow))
    }

    /// A new slot at the table's end, within the room reserved at start (no
    /// allocation). Only until the table has grown to what the load has needed at once:
    /// out of the hot path.
    #[cold]
    #[inline(never)]
    fn add(&mut self, grow: impl FnOnce()) -> u32 {
        self.slots.push(Slot::free(self.next_generation));
        grow();
        (self.slots.len() - 1) as u32
    }

    /// Puts back a slot just taken whose socket never opened in it.
    pub(super) fn put_back(&mut self, slot: u32) {
        self.free.push(slot);
    }

    pub(super) fn slot(&self, slot: u32) -> &Slot {
        &self.slots[slot as usize]
    }

    pub(super) fn slot_mut(&mut self, slot: u32) -> &mut Slot {
        &mut self.slots[slot as usize]
    }

    /// The connection `token` names, if it is still the slot's (not closed, not reused).
    #[inline]
    pub(super) fn live(&mut self, token: Token) -> Option<&mut Conn> {
        self.slots
            .get_mut(token.slot as usize)
            .filter(|s| s.generation == token.generation && !s.conn.is_free())
            .map(|s| &mut s.conn)
    }

    /// Whether `token` is a live connection still waiting on the ready list.
    pub(super) fn is_queued(&self, token: Token) -> bool {
        self.slots
            .get(token.slot as usize)
            .is_some_and(|s| s.queued && s.generation == token.generation && s.conn.fd().is_some())
    }

    /// Slot `slot`'s connection and its region of the arena (its response-head area,
    /// then its receive area).
    pub(super) fn held(&mut self, slot: u32) -> (&mut Conn, &mut [u8]) {
        let i = slot as usize;
        let region = &mut self.arena.as_mut_slice()[i * self.stride..][..self.slot_bytes];
        (&mut self.slots[i].conn, region)
    }

    /// Runs `conn::advance` on `slot`'s connection in the working area, then gives back
    /// its region's pages if the connection holds nothing there any more. Returns what
    /// the connection waits for next, and its slot (to register or queue it).
    #[inline]
    pub(super) fn advance(
        &mut self,
        slot: u32,
        ctx: &mut Ctx<'_>,
        scratch: &mut Scratch,
    ) -> (Next, &mut Slot) {
        let i = slot as usize;
        let mem = conn::Areas {
            arena: &mut self.arena,
            at: i * self.stride,
            work: &mut self.work,
        };
        let s = &mut self.slots[i];
        let next = conn::advance(slot, &mut s.conn, mem, ctx, scratch);
        if s.conn.take_spent_pages(false) {
            // Closing or not: a slot about to be freed needs its pages no more either.
            self.arena.release(i * self.stride..(i + 1) * self.stride);
        }
        (next, s)
    }

    /// Closes `slot`'s connection (a response being written is cut short, its deadline
    /// disarmed, its pages given back) and frees the slot; false if it held none. The
    /// generation stays, so old tokens remain stale.
    pub(super) fn release(&mut self, slot: u32, ctx: &mut Ctx<'_>) -> bool {
        let Some(s) = self.slots.get_mut(slot as usize) else {
            return false;
        };
        if s.conn.fd().is_none() {
            return false;
        }
        ctx.timers.disarm(slot);
        let i = slot as usize;
        if s.conn.sending() {
            let region = &mut self.arena.as_mut_slice()[i * self.stride..][..self.slot_bytes];
            conn::abandon(&mut s.conn, region, ctx);
        }
        if s.conn.take_spent_pages(true) {
            self.arena.release(i * self.stride..(i + 1) * self.stride);
        }
        s.registered = false;
        s.queued = false;
        s.conn.release(ctx);
        self.free.push(slot);
        true
    }

    /// Gives the arena pages of slots unused for a while back to the kernel
    /// ([`super::give_back`]); at the end of a round, drops the released slots at the
    /// table's end. Some(new length) when the table shrank: the caller truncates its
    /// companion tables to it.
    pub(super) fn give_back(&mut self, now_ms: u64) -> Option<usize> {
        let (arena, stride, slots) = (&mut self.arena, self.stride, &mut self.slots);
        let ended = self.cold.run(now_ms, &self.free, |first, n| {
            let start = first as usize * stride;
            arena.release(start..start + n as usize * stride);
            for s in &mut slots[first as usize..][..n as usize] {
                s.released = true;
            }
        });
        if ended {
            self.shrink()
        } else {
            None
        }
    }

    /// Drops the released slots at the table's end (and their entries in the free
    /// stack), giving back the pages they used; the room stays reserved, so the table
    /// grows again without allocating. Some(new length) if any slot was dropped.
    fn shrink(&mut self) -> Option<usize> {
        let keep = self
            .slots
            .iter()
            .rposition(|s| !s.released)
            .map_or(0, |i| i + 1);
        if keep == self.slots.len() {
            return None;
        }
        for s in &self.slots[keep..] {
            self.next_generation = self.next_generation.max(s.generation.saturating_add(1));
        }
        let released = self.cold.released();
        let dropped = self.free[..released]
            .iter()
            .filter(|&&i| i as usize >= keep)
            .count();
        self.free.retain(|&i| (i as usize) < keep);
        self.cold.shrunk(dropped, self.free.len());
        self.slots.truncate(keep);
        crate::sys::release_spare(&mut self.slots);
        Some(keep)
    }
}
