//! Connection deadlines as one FIFO list per timeout kind.
//!
//! Input: "slot `s` now waits under kind `k`" and the loop's monotonic milliseconds.
//! Output: the earliest deadline (for `epoll_wait`'s timeout) and the slots whose deadline
//! passed. Every kind has one fixed duration, so a slot armed later always expires later:
//! appending at the tail keeps each list sorted, and arming, disarming and finding the
//! next expiry are O(1) with no heap and no allocation (links live in a table whose room
//! is reserved once; it is filled, and its pages touched, only as the table's slots are
//! added).

/// What a connection is waiting for, as far as its deadline goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The rest of a request head (or a GET body to discard): header timeout, then 408.
    Header = 0,
    /// The first byte of the next request on a kept-alive connection: idle timeout.
    Idle = 1,
    /// Send space for a response in progress: send timeout, re-armed on progress.
    Send = 2,
    /// The peer's EOF after a closing error response: linger timeout.
    Linger = 3,
}

const KINDS: usize = 4;
const NIL: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Link {
    prev: u32,
    next: u32,
    deadline: u64,
    kind: Option<Kind>,
}

/// The deadline lists of one worker.
pub(crate) struct Timers {
    head: [u32; KINDS],
    tail: [u32; KINDS],
    duration_ms: [u64; KINDS],
    links: Vec<Link>,
    /// Slots the table may hold (`links` grows to this by [`Timers::add_slot`]).
    slots: usize,
}

impl Timers {
    /// Lists for `slots` slots with the given durations (by [`Kind`] order).
    #[cfg(test)]
    pub(crate) fn new(slots: usize, duration_ms: [u64; KINDS]) -> Timers {
        let mut t = Timers::growing(slots, duration_ms);
        for _ in 0..slots {
            t.add_slot();
        }
        t
    }

    /// Lists with room for `slots` slots and none yet ([`Timers::add_slot`] adds them, as
    /// the loop's table grows): the table's pages are touched only as far as it is used.
    pub(crate) fn growing(slots: usize, duration_ms: [u64; KINDS]) -> Timers {
        Timers {
            head: [NIL; KINDS],
            tail: [NIL; KINDS],
            duration_ms,
            links: Vec::with_capacity(slots),
            slots,
        }
    }

    /// Makes room for one more slot (the next index), unarmed, within the room reserved
    /// at [`Timers::new`] (no allocation); nothing past that.
    pub(crate) fn add_slot(&mut self) {
        if self.links.len() < self.slots {
            self.links.push(Link {
                prev: NIL,
                next: NIL,
                deadline: 0,
                kind: None,
            });
        }
    }

    /// Drops the slots from `len` on (all unarmed: the table shrank) and gives their
    /// pages back; the room stays reserved.
    pub(crate) fn truncate(&mut self, len: usize) {
        self.links.truncate(len);
        crate::sys::release_spare(&mut self.links);
    }

    /// Puts `slot` at the tail of `kind`'s list with deadline `now + duration(kind)`,
    /// taking it off any list it was on.
    pub(crate) fn arm(&mut self, slot: u32, kind: Kind, now_ms: u64) {
        self.disarm(slot);
        let k = kind as usize;
        let Some(link) = self.links.get_mut(slot as usize) else {
            return;
        };
        *link = Link {
            prev: self.tail[k],
            next: NIL,
            deadline: now_ms.saturating_add(self.duration_ms[k]),
            kind: Some(kind),
        };
        match self.tail[k] {
            NIL => self.head[k] = slot,
            t => self.links[t as usize].next = slot,
        }
        self.tail[k] = slot;
    }

    /// Takes `slot` off its list, if it is on one.
    pub(crate) fn disarm(&mut self, slot: u32) {
        let Some(&Link {
            prev, next, kind, ..
        }) = self.links.get(slot as usize)
        else {
            return;
        };
        let Some(kind) = kind else { return };
        let k = kind as usize;
        match prev {
            NIL => self.head[k] = next,
            p => self.links[p as usize].next = next,
        }
        match next {
            NIL => self.tail[k] = prev,
            n => self.links[n as usize].prev = prev,
        }
        self.links[slot as usize].kind = None;
    }

    /// The kind `slot` is armed under.
    pub(crate) fn kind(&self, slot: u32) -> Option<Kind> {
        self.links.get(slot as usize).and_then(|l| l.kind)
    }

    /// The slot armed longest ago under `kind` (the head of its list).
    pub(crate) fn oldest(&self, kind: Kind) -> Option<u32> {
        match self.head[kind as usize] {
            NIL => None,
            slot => Some(slot),
        }
    }

    /// The earliest deadline of all lists.
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        self.head
            .iter()
            .filter(|&&h| h != NIL)
            .map(|&h| self.links[h as usize].deadline)
            .min()
    }

    /// One slot whose deadline is at or before `now`, taken off its list, with its kind.
    pub(crate) fn pop_expired(&mut self, now_ms: u64) -> Option<(u32, Kind)> {
        let slot = self
            .head
            .iter()
            .copied()
            .filter(|&h| h != NIL && self.links[h as usize].deadline <= now_ms)
            .min_by_key(|&h| self.links[h as usize].deadline)?;
        let kind = self.links[slot as usize].kind?;
        self.disarm(slot);
        Some((slot, kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_in_deadline_order_across_kinds() {
        let mut t = Timers::new(8, [100, 50, 10, 5]);
        t.arm(1, Kind::Header, 0); // 100
        t.arm(2, Kind::Idle, 0); // 50
        t.arm(3, Kind::Header, 10); // 110
        t.arm(4, Kind::Send, 0); // 10
        assert_eq!(t.next_deadline(), Some(10));
        assert_eq!(t.pop_expired(9), None);
        assert_eq!(t.pop_expired(200), Some((4, Kind::Send)));
        assert_eq!(t.pop_expired(200), Some((2, Kind::Idle)));
        assert_eq!(t.pop_expired(200), Some((1, Kind::Header)));
        assert_eq!(t.pop_expired(200), Some((3, Kind::Header)));
        assert_eq!(t.pop_expired(200), None);
        assert_eq!(t.next_deadline(), None);
    }

    #[test]
    fn rearm_and_disarm_keep_lists_consistent() {
        let mut t = Timers::new(4, [10, 10, 10, 10]);
        for s in 0..4 {
            t.arm(s, Kind::Idle, u64::from(s));
        }
        t.disarm(1);
        t.arm(0, Kind::Idle, 50); // moves to the tail
        t.disarm(3);
        t.disarm(3); // twice is harmless
        assert_eq!(t.kind(3), None);
        assert_eq!(t.oldest(Kind::Idle), Some(2));
        assert_eq!(t.oldest(Kind::Send), None);
        assert_eq!(t.pop_expired(1000), Some((2, Kind::Idle)));
        assert_eq!(t.pop_expired(1000), Some((0, Kind::Idle)));
        assert_eq!(t.pop_expired(1000), None);
        t.arm(99, Kind::Idle, 0); // out of range: ignored
        assert_eq!(t.next_deadline(), None);
    }
}
