//! The next batch of a directory's entries in listing order, in fixed memory.
//!
//! Input: entries offered one at a time as `getdents64` returns them (a kind and a
//! name), pass after pass over the same directory. Output: after each pass, a sorted
//! batch of the entries that follow the previous batch. No allocation after
//! [`Selection::new`], no I/O.
//!
//! Why passes: sorting a directory needs all of its names at once, and a directory may
//! have millions; a listing must not hold them. A pass reads the whole directory and
//! keeps only the smallest entries after the cursor (the last entry of the previous
//! batch) that fit in a fixed arena; the next pass continues after them. Each pass is a
//! bounded top-K selection: entries are appended to the arena until it is full (by
//! bytes or by count); then it is sorted, the larger half dropped and the smallest
//! dropped key kept as an exclusive upper bound, so the pass from then on only takes
//! entries below it. A dropped entry is at or above the bound, hence after every kept
//! one, and the next pass meets it again. A pass's batch is therefore between half and
//! all of the arena; a pass that never dropped anything holds everything left and is
//! the last. Cost: `ceil(N / batch)` passes over `N` entries, `O(N² / batch)` entries
//! read in all (measured figures in `docs/serving.md`), for memory that does not depend
//! on `N`. The arena holds a batch of the longest names by count
//! (`super::BATCH_MIN_ENTRIES`), so `batch` does not shrink as names grow.
//!
//! Order: directories first, then names compared with ASCII letters folded to lower
//! case, ties broken by the raw bytes, so the order is total and `B` sits beside `b`.
//! A directory changed between passes stays consistent: the cursor is a key, not a
//! position, so no entry is listed twice or out of order; one added behind the cursor is
//! not listed, one removed before its pass is not listed. (An entry whose kind changes
//! between passes may show under both kinds.)

use crate::files::dir::Kind;
use core::cmp::Ordering;

/// The longest name of a directory entry (Linux `NAME_MAX`).
pub(crate) const NAME_MAX: usize = 255;

/// Bytes of an entry's record in the arena: its kind, its length, its name.
const RECORD_HEAD: usize = 2;

/// Bytes of the longest record.
pub(crate) const RECORD_MAX: usize = RECORD_HEAD + NAME_MAX;

/// A mark on a record's kind byte: kept by a halving (set and cleared within it).
const KEPT: u8 = 0x80;

/// The listing order of two entries. Bytes that are equal fold equal, so both the
/// folded comparison and the tie-break start where the names first differ: a run of
/// equal bytes (names sharing a long prefix, every comparison of a pass over them) is
/// passed over eight bytes at a time instead of folded byte by byte. The oracle is
/// the plain definition, in the tests.
#[inline(never)]
pub(super) fn order(a: (Kind, &[u8]), b: (Kind, &[u8])) -> Ordering {
    a.0.cmp(&b.0).then_with(|| {
        let same = common_prefix(a.1, b.1);
        let (x, y) = (&a.1[same..], &b.1[same..]);
        cmp_folded(x, y).then_with(|| x.cmp(y))
    })
}

/// Bytes at the start of `a` and `b` that are equal.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let word = |s: &[u8], i: usize| s.get(i..i + 8).and_then(|w| <[u8; 8]>::try_from(w).ok());
    let mut i = 0;
    while i + 8 <= n && word(a, i) == word(b, i) {
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// Names compared with ASCII letters folded to lower case.
fn cmp_folded(a: &[u8], b: &[u8]) -> Ordering {
    let a = a.iter().map(u8::to_ascii_lowercase);
    a.cmp(b.iter().map(u8::to_ascii_lowercase))
}

/// An entry's place in the order, kept outside the arena (the cursor, the bound).
#[derive(Clone, Copy, Debug)]
struct Key {
    kind: Kind,
    len: u8,
    name: [u8; NAME_MAX],
}

impl Key {
    fn new(kind: Kind, name: &[u8]) -> Key {
        let len = name.len().min(NAME_MAX);
        let mut k = Key {
            kind,
            len: len as u8,
            name: [0; NAME_MAX],
        };
        k.name[..len].copy_from_slice(&name[..len]);
        k
    }

    fn get(&self) -> (Kind, &[u8]) {
        (self.kind, &self.name[..usize::from(self.len)])
    }
}

/// One listing's batch arena and its position in the directory.
pub(crate) struct Selection {
    /// Records: kind (0 directory, 1 file), name length, name.
    names: Box<[u8]>,
    used: usize,
    /// Where each record of the batch starts in `names`.
    index: Box<[u32]>,
    count: usize,
    /// Every entry up to this one was in an earlier batch.
    after: Option<Key>,
    /// Entries from this one on were dropped from this pass's batch.
    before: Option<Key>,
}

impl Selection {
    /// An arena of `names` bytes and `entries` records; allocated once, at start. At
    /// least two of the longest records fit either way, so a halving always makes room.
    pub(super) fn new(names: usize, entries: usize) -> Selection {
        Selection {
            names: vec![0; names.max(2 * (RECORD_HEAD + NAME_MAX))].into_boxed_slice(),
            used: 0,
            index: vec![0; entries.max(2)].into_boxed_slice(),
            count: 0,
            after: None,
            before: None,
        }
    }

    /// A new listing: the first pass starts at the beginning of the order.
    pub(super) fn reset(&mut self) {
        self.after = None;
        self.clear();
    }

    /// The next pass: it continues after the last entry of the batch just emitted.
    pub(crate) fn next_pass(&mut self) {
        if let Some(last) = self.count.checked_sub(1) {
            let (kind, name) = self.get(last);
            self.after = Some(Key::new(kind, name));
        }
        self.clear();
    }

    fn clear(&mut self) {
        self.used = 0;
        self.count = 0;
        self.before = None;
    }

    /// Whether an entry belongs in this pass's batch: after the cursor, before the bound.
    pub(super) fn wants(&self, kind: Kind, name: &[u8]) -> bool {
        let e = (kind, name);
        let after = self
            .after
            .as_ref()
            .is_none_or(|a| order(e, a.get()).is_gt());
        after
            && self
                .before
                .as_ref()
                .is_none_or(|b| order(e, b.get()).is_lt())
    }

    /// Whether an entry named `name` may belong, whichever its kind: when not, the kind
    /// of a symlink need not be looked up.
    pub(crate) fn may_want(&self, name: &[u8]) -> bool {
        self.wants(Kind::Dir, name) || self.wants(Kind::File, name)
    }

    /// Offers an entry read from the directory (a name longer than [`NAME_MAX`] is
    /// ignored: no file system returns one).
    pub(crate) fn offer(&mut self, kind: Kind, name: &[u8]) {
        if name.len() > NAME_MAX || !self.wants(kind, name) {
            return;
        }
        let need = RECORD_HEAD + name.len();
        while self.count == self.index.len() || self.used + need > self.names.len() {
            self.halve();
            if !self.wants(kind, name) {
                return;
            }
        }
        let at = self.used;
        self.names[at] = kind as u8;
        self.names[at + 1] = name.len() as u8;
        self.names[at + RECORD_HEAD..at + need].copy_from_slice(name);
        self.index[self.count] = at as u32;
        self.count += 1;
        self.used += need;
    }

    /// Ends a pass: the batch is sorted (an entry a changing directory returned twice is
    /// kept once). True when it holds every entry left, so no further pass is needed.
    pub(crate) fn end_pass(&mut self) -> bool {
        self.sort();
        let (names, index) = (&self.names, &mut self.index[..self.count]);
        let mut kept = 0;
        for i in 0..index.len() {
            let same =
                kept > 0 && order(record(names, index[kept - 1]), record(names, index[i])).is_eq();
            if !same {
                index[kept] = index[i];
                kept += 1;
            }
        }
        self.count = kept;
        self.before.is_none()
    }

    /// Entries in the batch.
    pub(super) fn len(&self) -> usize {
        self.count
    }

    /// Entry `i` of the batch (sorted once [`Selection::end_pass`] ran).
    pub(super) fn get(&self, i: usize) -> (Kind, &[u8]) {
        match self.index[..self.count].get(i) {
            Some(&at) => record(&self.names, at),
            None => (Kind::File, &[]),
        }
    }

    fn sort(&mut self) {
        sort_records(&self.names, &mut self.index[..self.count]);
    }

    /// Keeps the smaller half of a full batch (at least one record: never called with
    /// fewer than two) and bounds the pass by the smallest dropped entry.
    fn halve(&mut self) {
        self.sort();
        let keep = self.count / 2;
        let (kind, name) = record(&self.names, self.index[keep]);
        self.before = Some(Key::new(kind, name));
        for &at in &self.index[..keep] {
            self.names[at as usize] |= KEPT;
        }
        // The records lie in the arena in the order they were added: walk them and move
        // each kept one down, to a lower (or the same) place, so none is overwritten
        // unread; the index is rebuilt in arena order (`end_pass` sorts it).
        let (mut from, mut to, mut kept) = (0, 0, 0);
        while from < self.used {
            let len = RECORD_HEAD + usize::from(self.names[from + 1]);
            if self.names[from] & KEPT != 0 {
                self.names[from] &= !KEPT;
                self.names.copy_within(from..from + len, to);
                self.index[kept] = to as u32;
                kept += 1;
                to += len;
            }
            from += len;
        }
        self.count = kept;
        self.used = to;
    }
}

/// Sorts `index` by the order of the records it points to in `names`: a heapsort, in
/// place. Chosen over `sort_unstable_by` for size, not speed: `std`'s pattern-defeating
/// quicksort instantiated for this comparator is several KiB of the appliance binary,
/// this is one small loop; a batch is at most [`BATCH_ENTRIES`](super::BATCH_ENTRIES)
/// records, sorted a few times a pass (`O(n log n)` either way; the oracle is `std`'s
/// sort, in the tests).
fn sort_records(names: &[u8], index: &mut [u32]) {
    let less = |a: u32, b: u32| order(record(names, a), record(names, b)).is_lt();
    let sift = |index: &mut [u32], mut root: usize, end: usize| loop {
        let mut child = 2 * root + 1;
        if child >= end {
            return;
        }
        if child + 1 < end && less(index[child], index[child + 1]) {
            child += 1;
        }
        if !less(index[root], index[child]) {
            return;
        }
        index.swap(root, child);
        root = child;
    };
    let n = index.len();
    for root in (0..n / 2).rev() {
        sift(index, root, n);
    }
    for end in (1..n).rev() {
        index.swap(0, end);
        sift(index, 0, end);
    }
}

/// The record at `at`: its kind and name.
fn record(names: &[u8], at: u32) -> (Kind, &[u8]) {
    let at = at as usize;
    let kind = match names.get(at) {
        Some(0) => Kind::Dir,
        _ => Kind::File,
    };
    let len = names.get(at + 1).map_or(0, |&n| usize::from(n));
    let name = names
        .get(at + RECORD_HEAD..at + RECORD_HEAD + len)
        .unwrap_or(&[]);
    (kind, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small xorshift generator: the tests need variety, not quality.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn name(&mut self) -> Vec<u8> {
            let len = 1 + (self.next() % 12) as usize;
            let alphabet = b"aAbB.-_ z\xc3\xa9\xff";
            (0..len)
                .map(|_| alphabet[(self.next() % alphabet.len() as u64) as usize])
                .collect()
        }
    }

    type Entry = (Kind, Vec<u8>);

    /// Every batch, pass after pass, over the entries `dir` holds at each pass.
    fn list(sel: &mut Selection, mut dir: impl FnMut(usize) -> Vec<Entry>) -> Vec<Entry> {
        sel.reset();
        let mut out = Vec::new();
        for pass in 0.. {
            for (kind, name) in dir(pass) {
                sel.offer(kind, &name);
            }
            let last = sel.end_pass();
            for i in 0..sel.len() {
                let (k, n) = sel.get(i);
                out.push((k, n.to_vec()));
            }
            if last {
                return out;
            }
            assert!(sel.len() > 0, "a pass that drops entries keeps some");
            sel.next_pass();
        }
        unreachable!()
    }

    /// The naive oracle: every entry at once, sorted.
    fn sorted(mut all: Vec<Entry>) -> Vec<Entry> {
        all.sort_by(|a, b| order((a.0, &a.1), (b.0, &b.1)));
        all.dedup();
        all
    }

    fn random_dir(rng: &mut Rng, n: usize) -> Vec<Entry> {
        let mut seen = std::collections::HashSet::new();
        (0..n)
            .map(|_| rng.name())
            .filter(|name| seen.insert(name.clone()))
            .map(|name| {
                let kind = if name.len() % 3 == 0 {
                    Kind::Dir
                } else {
                    Kind::File
                };
                (kind, name)
            })
            .collect()
    }

    #[test]
    fn passes_list_what_one_sort_lists_at_every_arena_size() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for (names, entries) in [(0, 2), (600, 3), (700, 16), (2000, 40), (1 << 16, 4096)] {
            for n in [0, 1, 2, 5, 50, 700] {
                let dir = random_dir(&mut rng, n);
                let mut sel = Selection::new(names, entries);
                let got = list(&mut sel, |_| dir.clone());
                assert_eq!(
                    got,
                    sorted(dir.clone()),
                    "arena {names}/{entries}, {n} entries"
                );
            }
        }
    }

    #[test]
    fn long_names_fill_the_arena_by_bytes() {
        let dir: Vec<Entry> = (0..40u8)
            .map(|i| (Kind::File, [vec![b'x'; NAME_MAX - 1], vec![i]].concat()))
            .collect();
        let mut sel = Selection::new(0, 1000);
        assert_eq!(list(&mut sel, |_| dir.clone()), sorted(dir));
        let mut sel = Selection::new(100, 100);
        sel.offer(Kind::File, &[b'y'; NAME_MAX + 1]);
        assert!(sel.end_pass());
        assert_eq!(sel.len(), 0, "a name no file system returns is ignored");
    }

    #[test]
    fn a_directory_changing_between_passes_lists_nothing_twice_or_out_of_order() {
        let mut rng = Rng(7);
        let base = random_dir(&mut rng, 300);
        let mut later = base.clone();
        later.retain(|(_, n)| n.len() % 2 == 0);
        later.extend(random_dir(&mut Rng(99), 100));
        let mut sel = Selection::new(0, 8);
        let got = list(&mut sel, |pass| {
            let mut d = if pass < 3 {
                base.clone()
            } else {
                later.clone()
            };
            // A changing directory may return an entry twice within a pass.
            d.extend(d.clone().into_iter().take(3));
            d
        });
        assert!(got
            .windows(2)
            .all(|w| order((w[0].0, &w[0].1), (w[1].0, &w[1].1)).is_lt()));
        let union = sorted([base, later].concat());
        assert!(got.iter().all(|e| union.contains(e)));
    }

    /// The production arena holds a pass by count: 10,000 entries take at most
    /// `ceil(10,000 / (BATCH_MIN_ENTRIES / 2))` passes, with names of 6 bytes as of 255
    /// (sharing all but their last digits, so every comparison reads them whole).
    #[test]
    fn a_pass_holds_thousands_of_entries_whatever_their_length() {
        use crate::listing::{BATCH_ENTRIES, BATCH_MIN_ENTRIES, BATCH_NAMES};
        let n: usize = 10_000;
        for len in [6, 16, 64, NAME_MAX] {
            let dir: Vec<Entry> = (0..n)
                .map(|i| (Kind::File, format!("{i:0>len$}").into_bytes()))
                .collect();
            let mut sel = Selection::new(BATCH_NAMES, BATCH_ENTRIES);
            let mut passes = 0;
            let got = list(&mut sel, |pass| {
                passes = pass + 1;
                dir.clone()
            });
            assert_eq!(got, dir, "{len}-byte names");
            let bound = n.div_ceil(BATCH_MIN_ENTRIES / 2);
            assert!(passes <= bound, "{len}-byte names: {passes} passes");
        }
    }

    #[test]
    fn the_heapsort_sorts_as_std_does() {
        let mut rng = Rng(31);
        for n in [0, 1, 2, 3, 7, 64, 1000] {
            let mut sel = Selection::new(1 << 16, 4096);
            let dir = random_dir(&mut rng, n);
            for (kind, name) in &dir {
                sel.offer(*kind, name);
            }
            let mut oracle = sel.index[..sel.count].to_vec();
            let names = &sel.names;
            oracle.sort_by(|&a, &b| order(record(names, a), record(names, b)));
            sel.sort();
            let got: Vec<_> = (0..sel.len()).map(|i| sel.get(i)).collect();
            let want: Vec<_> = oracle.iter().map(|&at| record(&sel.names, at)).collect();
            assert_eq!(got, want, "{n} records");
        }
    }

    /// The order's definition, comparing the names whole.
    fn order_naive(a: (Kind, &[u8]), b: (Kind, &[u8])) -> Ordering {
        a.0.cmp(&b.0)
            .then_with(|| cmp_folded(a.1, b.1))
            .then_with(|| a.1.cmp(b.1))
    }

    #[test]
    fn the_order_agrees_with_its_definition() {
        let mut rng = Rng(0x5851_f42d_4c95_7f2d);
        let prefixes: [&[u8]; 4] = [b"", b"n", b"nnnnnnnn", &[b'N'; 20]];
        for _ in 0..20_000 {
            let mut name = || {
                let p = prefixes[(rng.next() % 4) as usize];
                [p, &rng.name()].concat()
            };
            let (a, b) = (name(), name());
            let kinds = [Kind::Dir, Kind::File];
            let (ka, kb) = (kinds[a.len() % 2], kinds[b.len() / 3 % 2]);
            for (x, y) in [(&a, &b), (&a, &a), (&b, &a)] {
                assert_eq!(
                    order((ka, x), (kb, y)),
                    order_naive((ka, x), (kb, y)),
                    "{x:?} {y:?}"
                );
            }
        }
    }

    #[test]
    fn directories_first_then_names_folding_ascii_case() {
        let mut got = [
            (Kind::File, &b"b"[..]),
            (Kind::File, b"B"),
            (Kind::Dir, b"z"),
            (Kind::File, b"a"),
            (Kind::File, b"\xc3\xa9"),
            (Kind::File, b"A"),
        ];
        got.sort_by(|a, b| order(*a, *b));
        let names: Vec<&[u8]> = got.iter().map(|e| e.1).collect();
        assert_eq!(names, [&b"z"[..], b"A", b"a", b"B", b"b", b"\xc3\xa9"]);
    }

    #[test]
    fn a_symlink_is_looked_up_only_when_its_name_may_belong() {
        let mut sel = Selection::new(0, 2);
        for name in [&b"b"[..], b"c", b"d"] {
            sel.offer(Kind::File, name);
        }
        assert!(!sel.end_pass());
        sel.next_pass();
        assert!(
            !sel.may_want(b"a"),
            "before the cursor as a file, and dirs come first"
        );
        assert!(sel.may_want(b"e"));
    }
}
