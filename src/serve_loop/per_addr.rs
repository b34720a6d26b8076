//! Per-address connection counts for one serve loop: how many slots each client address
//! holds, and which address holds the most.
//!
//! Input: the peer address of each connection the loop keeps, with its slot, and the
//! slot's release. Output: whether an address is under its limit ([`PerAddr::admits`]),
//! and the slots of the address holding the most connections, oldest first
//! ([`PerAddr::busiest`]), from which a full table reclaims one. It closes nothing (the
//! loop does) and it allocates only in [`PerAddr::growing`], which reserves every table's
//! room; the per-slot and per-address tables are filled (their pages touched) only as far
//! as slots and addresses are used (all but `by_count`, 4 bytes a slot), so a large
//! `--max-conns` costs little at start.
//!
//! An address is an [`AddrKey`] (`client_addr`): an IPv4 address, or the /64 prefix of
//! an IPv6 address, with its family (12 bytes); it is hashed as one `u64` and compared
//! whole.
//!
//! Structure (for `n` slots; there are never more addresses than open connections):
//!
//! * `addrs`: a pool of `n` address records, each with its count, its neighbours among
//!   the addresses of the same count, and the list of its slots (oldest first);
//! * `index`: an open-addressed, linearly probed table of pool indices plus one (0: an
//!   empty entry, so the table starts as zero pages nothing has touched), `2n` rounded up
//!   to a power of two (at most half full), hashed with a per-loop random multiplier;
//!   removal shifts the following entries back (no tombstones, so a probe's length
//!   depends on the load only);
//! * `by_count[c]`: the addresses holding `c` connections, and `top`, the highest `c`
//!   with any. A count moves by one at a time, so `top` does too, and every operation is
//!   O(1) (the structure of an O(1) LFU cache);
//! * `links[slot]`: the slot's address and its neighbours in that address's list.

pub(crate) use crate::client_addr::AddrKey;

const NIL: u32 = u32::MAX;
/// An empty entry of `index` (which holds pool indices plus one).
const EMPTY: u32 = 0;

/// One address: its count, its place among the addresses of that count, its slots.
#[derive(Clone, Copy, Debug)]
struct Addr {
    key: AddrKey,
    count: u32,
    prev: u32,
    next: u32,
    first: u32,
    last: u32,
}

impl Addr {
    const EMPTY: Addr = Addr {
        key: AddrKey::UNSPECIFIED,
        count: 0,
        prev: NIL,
        next: NIL,
        first: NIL,
        last: NIL,
    };
}

/// One slot: its address (`NIL`: not counted) and its neighbours in the address's list.
#[derive(Clone, Copy, Debug)]
struct Link {
    addr: u32,
    prev: u32,
    next: u32,
}

impl Link {
    const EMPTY: Link = Link {
        addr: NIL,
        prev: NIL,
        next: NIL,
    };
}

/// The per-address counts of one loop's connection table.
#[derive(Debug)]
pub(crate) struct PerAddr {
    limit: u32,
    mult: u64,
    shift: u32,
    index: Vec<u32>,
    addrs: Vec<Addr>,
    free: Vec<u32>,
    by_count: Vec<u32>,
    top: u32,
    links: Vec<Link>,
    /// Slots of the table (the room reserved in `addrs`, `links` and `by_count`).
    slots: usize,
}

impl PerAddr {
    /// Counts for a table of `slots` slots, admitting `limit` connections an address.
    #[cfg(test)]
    pub(super) fn new(slots: usize, limit: u32) -> PerAddr {
        let mut p = PerAddr::growing(slots, limit);
        for _ in 0..slots {
            p.add_slot();
        }
        p
    }

    /// [`PerAddr::new`] with room for `slots` slots and none yet ([`PerAddr::add_slot`]
    /// adds them, as the loop's table grows).
    pub(super) fn growing(slots: usize, limit: u32) -> PerAddr {
        let size = (slots * 2).next_power_of_two().max(2);
        PerAddr {
            limit: limit.max(1),
            mult: seed() | 1,
            shift: 64 - size.trailing_zeros(),
            index: vec![EMPTY; size],
            addrs: Vec::with_capacity(slots),
            free: Vec::with_capacity(slots),
            // 4 bytes a slot, filled at start: growing it would cost the hot path a check.
            by_count: vec![NIL; slots + 1],
            top: 0,
            links: Vec::with_capacity(slots),
            slots,
        }
    }

    /// Makes room for one more slot (the next index), uncounted, within the room reserved
    /// at [`PerAddr::new`] (no allocation); nothing past that.
    pub(crate) fn add_slot(&mut self) {
        if self.links.len() < self.slots {
            self.links.push(Link::EMPTY);
        }
    }

    /// Drops the slots from `len` on (all uncounted: the table shrank) and gives their
    /// pages back; the room stays reserved.
    pub(super) fn truncate(&mut self, len: usize) {
        self.links.truncate(len);
        crate::sys::release_spare(&mut self.links);
    }

    /// Whether `key` holds fewer connections than the limit.
    pub(crate) fn admits(&self, key: AddrKey) -> bool {
        self.count(key) < self.limit
    }

    /// Connections `key` holds.
    pub(super) fn count(&self, key: AddrKey) -> u32 {
        self.find(key).map_or(0, |a| self.addrs[a as usize].count)
    }

    /// Counts `slot` (free until now) under `key`.
    pub(super) fn add(&mut self, slot: u32, key: AddrKey) {
        if self.links.get(slot as usize).is_none_or(|l| l.addr != NIL) {
            return;
        }
        let Some(a) = self.find(key).or_else(|| self.insert(key)) else {
            return;
        };
        let ai = a as usize;
        let last = self.addrs[ai].last;
        self.links[slot as usize] = Link {
            addr: a,
            prev: last,
            next: NIL,
        };
        match last {
            NIL => self.addrs[ai].first = slot,
            l => self.links[l as usize].next = slot,
        }
        self.addrs[ai].last = slot;
        let c = self.addrs[ai].count;
        if c > 0 {
            self.unlink_count(a);
        }
        self.addrs[ai].count = c + 1;
        self.push_count(a);
        self.top = self.top.max(c + 1);
    }

    /// Stops counting `slot` (nothing if it was not counted).
    pub(super) fn remove(&mut self, slot: u32) {
        let Some(&link) = self.links.get(slot as usize) else {
            return;
        };
        if link.addr == NIL {
            return;
        }
        let (a, ai) = (link.addr, link.addr as usize);
        match link.prev {
            NIL => self.addrs[ai].first = link.next,
            p => self.links[p as usize].next = link.next,
        }
        match link.next {
            NIL => self.addrs[ai].last = link.prev,
            n => self.links[n as usize].prev = link.prev,
        }
        self.links[slot as usize] = Link::EMPTY;
        let c = self.addrs[ai].count;
        self.unlink_count(a);
        if self.top == c && self.by_count[c as usize] == NIL {
            self.top = c - 1;
        }
        self.addrs[ai].count = c - 1;
        if c > 1 {
            self.push_count(a);
        } else {
            self.delete(a);
        }
    }

    /// Whether the address holding the most connections holds more than a quarter of its
    /// limit (and more than one): only then does a full table reclaim from it first.
    /// Otherwise every address holds a modest share, and the busiest is merely the one
    /// that got there last, whose connection is likely the newest in the table (the loop
    /// then takes the oldest idle connection, or the oldest head, of any address).
    pub(crate) fn hogged(&self) -> bool {
        self.top > 1 && u64::from(self.top) * 4 > u64::from(self.limit)
    }

    /// The slots of an address holding the most connections, oldest first.
    pub(crate) fn busiest(&self) -> impl Iterator<Item = u32> + '_ {
        let first = match self.by_count.get(self.top as usize) {
            Some(&a) if self.top > 0 && a != NIL => self.addrs[a as usize].first,
            _ => NIL,
        };
        core::iter::successors(Some(first).filter(|&s| s != NIL), |&s| {
            Some(self.links[s as usize].next).filter(|&n| n != NIL)
        })
    }

    /// The index position `key` hashes to.
    fn home(&self, key: AddrKey) -> usize {
        let x = key.hash_word().wrapping_mul(self.mult);
        ((x ^ (x >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    fn find(&self, key: AddrKey) -> Option<u32> {
        let mask = self.index.len() - 1;
        let mut i = self.home(key);
        // Terminates: the index is at most half full.
        loop {
            match self.index[i] {
                EMPTY => return None,
                e if self.addrs[e as usize - 1].key == key => return Some(e - 1),
                _ => i = (i + 1) & mask,
            }
        }
    }

    fn insert(&mut self, key: AddrKey) -> Option<u32> {
        let a = match self.free.pop() {
            Some(a) => a,
            None if self.addrs.len() < self.slots => {
                self.addrs.push(Addr::EMPTY); // within the reserved room
                (self.addrs.len() - 1) as u32
            }
            None => return None,
        };
        self.addrs[a as usize] = Addr { key, ..Addr::EMPTY };
        let mask = self.index.len() - 1;
        let mut i = self.home(key);
        while self.index[i] != EMPTY {
            i = (i + 1) & mask;
        }
        self.index[i] = a + 1;
        Some(a)
    }

    /// Takes address `a` (count 0) out of the index, shifting later entries back.
    fn delete(&mut self, a: u32) {
        let mask = self.index.len() - 1;
        let mut i = self.home(self.addrs[a as usize].key);
        while self.index[i] != a + 1 {
            if self.index[i] == EMPTY {
                return;
            }
            i = (i + 1) & mask;
        }
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let e = self.index[j];
            if e == EMPTY {
                break;
            }
            let h = self.home(self.addrs[e as usize - 1].key);
            // The entry at j may fill the hole at i unless its home lies in (i, j].
            let stays = if i <= j {
                i < h && h <= j
            } else {
                i < h || h <= j
            };
            if !stays {
                self.index[i] = e;
                i = j;
            }
        }
        self.index[i] = EMPTY;
        self.addrs[a as usize] = Addr::EMPTY;
        self.free.push(a);
    }

    fn push_count(&mut self, a: u32) {
        let c = self.addrs[a as usize].count as usize;
        let head = self.by_count[c];
        self.addrs[a as usize].prev = NIL;
        self.addrs[a as usize].next = head;
        if head != NIL {
            self.addrs[head as usize].prev = a;
        }
        self.by_count[c] = a;
    }

    fn unlink_count(&mut self, a: u32) {
        let Addr {
            count, prev, next, ..
        } = self.addrs[a as usize];
        match prev {
            NIL => self.by_count[count as usize] = next,
            p => self.addrs[p as usize].next = next,
        }
        if next != NIL {
            self.addrs[next as usize].prev = prev;
        }
    }
}

/// A hash multiplier no client can predict: the clock's nanoseconds, the process id and
/// a stack address, mixed (a client that knew it could aim its addresses at one probe run).
pub(super) fn seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let local = 0u8;
    let stack = core::ptr::addr_of!(local) as u64;
    let mut x = nanos ^ (u64::from(std::process::id()) << 32) ^ stack.rotate_left(17);
    for _ in 0..2 {
        x ^= x >> 33;
        x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn key(n: u64) -> AddrKey {
        AddrKey::from_raw(n)
    }

    #[test]
    fn the_limit_admits_up_to_n() {
        let mut p = PerAddr::new(8, 2);
        assert!(p.admits(key(1)));
        p.add(0, key(1));
        p.add(1, key(1));
        assert!(!p.admits(key(1)));
        assert!(p.admits(key(2)));
        p.remove(0);
        assert!(p.admits(key(1)));
        assert_eq!(p.busiest().collect::<Vec<_>>(), vec![1]);
    }

    /// An IPv4 address and the IPv6 /64 of the same number are two clients: one at its
    /// limit does not hold the other back.
    #[test]
    fn an_ipv4_address_and_an_ipv6_prefix_of_its_number_are_counted_apart() {
        let v4 = AddrKey::of(std::net::IpAddr::from([127, 0, 0, 2]));
        let v6 = AddrKey::of("0:0:7f00:2::1".parse().unwrap());
        let mut p = PerAddr::new(8, 1);
        p.add(0, v4);
        assert!(!p.admits(v4));
        assert!(p.admits(v6), "the prefix holds nothing");
        p.add(1, v6);
        assert_eq!((p.count(v4), p.count(v6)), (1, 1));
        p.remove(0);
        assert_eq!((p.count(v4), p.count(v6)), (0, 1));
        assert_eq!(
            core::mem::size_of::<Addr>(),
            32,
            "the key did not grow a record"
        );
    }

    /// The naive oracle: a map of address to its slots, in order of arrival.
    #[test]
    fn random_operations_agree_with_a_map() {
        let slots = 64u32;
        let mut p = PerAddr::new(slots as usize, u32::MAX);
        let mut model: HashMap<u64, Vec<u32>> = HashMap::new();
        let mut owner: Vec<Option<u64>> = vec![None; slots as usize];
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let slot = (x % u64::from(slots)) as u32;
            match owner[slot as usize] {
                Some(k) => {
                    p.remove(slot);
                    let v = model.get_mut(&k).unwrap();
                    v.retain(|&s| s != slot);
                    if v.is_empty() {
                        model.remove(&k);
                    }
                    owner[slot as usize] = None;
                }
                None => {
                    // Few keys, so counts grow and ties happen; some keys collide often.
                    let k = (x >> 40) % 11 * 0x1_0000_0001;
                    p.add(slot, key(k));
                    model.entry(k).or_default().push(slot);
                    owner[slot as usize] = Some(k);
                }
            }
            for (k, v) in &model {
                assert_eq!(p.count(key(*k)), v.len() as u32);
            }
            let top = model.values().map(Vec::len).max().unwrap_or(0);
            let busiest: Vec<u32> = p.busiest().collect();
            assert_eq!(busiest.len(), top);
            if top > 0 {
                let k = owner[busiest[0] as usize].unwrap();
                assert_eq!(model[&k], busiest, "oldest first");
            }
        }
    }
}
