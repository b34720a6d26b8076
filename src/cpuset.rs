//! CPU ids and CPU sets, and the kernel's cpulist text format (`0-3,8,10-11`).
//!
//! Input: text from `/sys` files, `/proc/self/status` or a `--cpus` flag. Output: a
//! [`CpuSet`], a fixed-size bitmap (no allocation) that holds any id below [`MAX_CPUS`].
//! Parsing never panics: malformed text is a [`CpuListError`] naming the offending piece.
//! Format: Documentation/admin-guide/cputopology.rst ("cpulist format"), bitmap_parselist().

use core::fmt;

/// Largest CPU id + 1 that steerd represents (the kernel's `NR_CPUS` maximum is 8192).
pub(crate) const MAX_CPUS: usize = 8192;
const WORDS: usize = MAX_CPUS / 64;

/// A CPU number as the kernel numbers it (may be sparse). Always below [`MAX_CPUS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CpuId(u16);

impl CpuId {
    /// The id, if it is below [`MAX_CPUS`].
    pub fn new(id: usize) -> Option<CpuId> {
        (id < MAX_CPUS).then_some(CpuId(id as u16))
    }

    /// The id as an index.
    pub fn get(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for CpuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A set of CPUs: a bitmap, ordered iteration, value semantics.
#[derive(Clone, PartialEq, Eq)]
pub struct CpuSet {
    bits: [u64; WORDS],
}

/// The set bits of one word of a [`CpuSet`], lowest first.
struct SetBits {
    base: usize,
    word: u64,
}

impl Iterator for SetBits {
    type Item = CpuId;

    fn next(&mut self) -> Option<CpuId> {
        if self.word == 0 {
            return None;
        }
        let bit = self.word.trailing_zeros() as usize;
        // Clear the lowest set bit.
        self.word &= self.word - 1;
        Some(CpuId((self.base + bit) as u16))
    }
}

impl Default for CpuSet {
    fn default() -> Self {
        CpuSet::new()
    }
}

/// Why a cpulist did not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CpuListError {
    /// A piece is not `N` or `N-M` (or `N-M:used/group`).
    Syntax(String),
    /// A range's end is below its start.
    Reversed(String),
    /// An id is at or above [`MAX_CPUS`].
    TooLarge(String),
}

impl fmt::Display for CpuListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuListError::Syntax(p) => write!(f, "bad cpulist element {p:?}"),
            CpuListError::Reversed(p) => write!(f, "range {p:?} ends before it starts"),
            CpuListError::TooLarge(p) => write!(f, "cpu id in {p:?} is >= {MAX_CPUS}"),
        }
    }
}

impl CpuSet {
    /// The empty set.
    pub(crate) const fn new() -> CpuSet {
        CpuSet { bits: [0; WORDS] }
    }

    /// Adds `cpu`.
    pub(crate) fn insert(&mut self, cpu: CpuId) {
        self.bits[cpu.get() / 64] |= 1 << (cpu.get() % 64);
    }

    /// Adds every CPU from `lo` to `hi` inclusive, a word at a time (a package list
    /// of thousands of CPUs is read once per CPU).
    pub(crate) fn insert_range(&mut self, lo: CpuId, hi: CpuId) {
        let (lo, hi) = (lo.get(), hi.get());
        let mut at = lo;
        while at <= hi {
            let (word, bit) = (at / 64, at % 64);
            let last = hi.min(word * 64 + 63);
            let width = last - at + 1;
            let mask = if width == 64 {
                u64::MAX
            } else {
                ((1u64 << width) - 1) << bit
            };
            self.bits[word] |= mask;
            at = last + 1;
        }
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: CpuId) -> bool {
        self.bits[cpu.get() / 64] & (1 << (cpu.get() % 64)) != 0
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|&w| w == 0)
    }

    /// The lowest CPU in the set.
    pub(crate) fn first(&self) -> Option<CpuId> {
        self.iter().next()
    }

    /// CPUs in ascending order. Each step costs one `trailing_zeros` (plus one per empty
    /// word skipped), not one test per bit, so walking a sparse set is cheap.
    pub fn iter(&self) -> impl Iterator<Item = CpuId> + '_ {
        self.bits
            .iter()
            .enumerate()
            .flat_map(|(w, &word)| SetBits { base: w * 64, word })
    }

    /// `self \ other`: the CPUs of `self` not in `other`.
    pub(crate) fn difference(&self, other: &CpuSet) -> CpuSet {
        let mut out = self.clone();
        for (a, b) in out.bits.iter_mut().zip(other.bits.iter()) {
            *a &= !*b;
        }
        out
    }

    /// `self ∩ other`.
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        let mut out = self.clone();
        for (a, b) in out.bits.iter_mut().zip(other.bits.iter()) {
            *a &= *b;
        }
        out
    }

    /// `self ∪ other`.
    pub(crate) fn union(&self, other: &CpuSet) -> CpuSet {
        let mut out = self.clone();
        for (a, b) in out.bits.iter_mut().zip(other.bits.iter()) {
            *a |= *b;
        }
        out
    }

    /// Parses the kernel's cpulist format. Empty text (or only whitespace) is the empty set.
    /// Accepts the `N-M:used/group` stride form of `bitmap_parselist()`.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub fn parse_list(text: &str) -> Result<CpuSet, CpuListError> {
        let mut set = CpuSet::new();
        for piece in text
            .trim()
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            add_piece(&mut set, piece)?;
        }
        Ok(set)
    }

    /// Parses a hex bitmap as in `rps_cpus` or `cpumap` (`ff,00000001`; 32-bit groups
    /// separated by commas, most significant first).
    pub fn parse_mask(text: &str) -> Result<CpuSet, CpuListError> {
        let mut set = CpuSet::new();
        let groups: Vec<&str> = text.trim().split(',').collect();
        for (i, g) in groups.iter().rev().enumerate() {
            let word =
                u32::from_str_radix(g, 16).map_err(|_| CpuListError::Syntax((*g).to_string()))?;
            for b in 0..32 {
                if word & (1 << b) != 0 {
                    let id = CpuId::new(i * 32 + b)
                        .ok_or_else(|| CpuListError::TooLarge(g.to_string()))?;
                    set.insert(id);
                }
            }
        }
        Ok(set)
    }

    /// Builds a set from ids.
    pub fn from_ids(ids: impl IntoIterator<Item = CpuId>) -> CpuSet {
        let mut set = CpuSet::new();
        for id in ids {
            set.insert(id);
        }
        set
    }
}

fn parse_id(text: &str, piece: &str) -> Result<CpuId, CpuListError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) || text.len() > 6 {
        return Err(CpuListError::Syntax(piece.to_string()));
    }
    let n: usize = text
        .parse()
        .map_err(|_| CpuListError::Syntax(piece.to_string()))?;
    CpuId::new(n).ok_or_else(|| CpuListError::TooLarge(piece.to_string()))
}

fn add_piece(set: &mut CpuSet, piece: &str) -> Result<(), CpuListError> {
    let (range, stride) = match piece.split_once(':') {
        Some((r, s)) => (r, Some(s)),
        None => (piece, None),
    };
    let (lo, hi) = match range.split_once('-') {
        Some((a, b)) => (parse_id(a, piece)?, parse_id(b, piece)?),
        None => {
            let id = parse_id(range, piece)?;
            (id, id)
        }
    };
    if hi < lo {
        return Err(CpuListError::Reversed(piece.to_string()));
    }
    let (used, group) = match stride {
        None => (1, 1),
        Some(s) => {
            let (u, g) = s
                .split_once('/')
                .ok_or_else(|| CpuListError::Syntax(piece.to_string()))?;
            let u: usize = u
                .parse()
                .map_err(|_| CpuListError::Syntax(piece.to_string()))?;
            let g: usize = g
                .parse()
                .map_err(|_| CpuListError::Syntax(piece.to_string()))?;
            if u == 0 || g == 0 || u > g {
                return Err(CpuListError::Syntax(piece.to_string()));
            }
            (u, g)
        }
    };
    if used == group {
        set.insert_range(lo, hi);
        return Ok(());
    }
    for id in lo.get()..=hi.get() {
        if (id - lo.get()) % group < used {
            set.insert(CpuId(id as u16));
        }
    }
    Ok(())
}

impl fmt::Display for CpuSet {
    /// Prints the canonical cpulist (`0-3,8`), as the kernel does.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut iter = self.iter().peekable();
        while let Some(lo) = iter.next() {
            let mut hi = lo;
            while let Some(&next) = iter.peek() {
                if next.get() != hi.get() + 1 {
                    break;
                }
                hi = next;
                iter.next();
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if lo == hi {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The naive oracle for `iter`: test every possible id.
    fn naive_iter(set: &CpuSet) -> Vec<CpuId> {
        (0..MAX_CPUS)
            .filter_map(CpuId::new)
            .filter(|&c| set.contains(c))
            .collect()
    }

    #[test]
    fn iter_matches_the_naive_walk() {
        // A fixed xorshift stream: sparse, dense, word-edge and empty sets.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for density in [0u64, 1, 8, 32, 63] {
            for _ in 0..20 {
                let mut set = CpuSet::new();
                for w in set.bits.iter_mut() {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    *w = if density == 0 { 0 } else { x & (x >> density) };
                }
                set.bits[0] |= 1 | (1 << 63);
                assert_eq!(set.iter().collect::<Vec<_>>(), naive_iter(&set));
                assert_eq!(set.iter().count(), set.len());
            }
        }
    }

    #[test]
    fn insert_range_matches_inserting_each_cpu() {
        let edges = [0usize, 1, 62, 63, 64, 65, 127, 128, 200, 8190, 8191];
        for &lo in &edges {
            for &hi in edges.iter().filter(|&&h| h >= lo) {
                let (l, h) = (CpuId::new(lo).unwrap(), CpuId::new(hi).unwrap());
                let mut fast = CpuSet::new();
                fast.insert_range(l, h);
                let slow = CpuSet::from_ids((lo..=hi).filter_map(CpuId::new));
                assert_eq!(fast, slow, "{lo}-{hi}");
            }
        }
    }

    #[test]
    fn difference_keeps_only_the_first_sets_own_cpus() {
        let a = CpuSet::parse_list("0-9,100").unwrap();
        let b = CpuSet::parse_list("5-200").unwrap();
        assert_eq!(a.difference(&b), CpuSet::parse_list("0-4").unwrap());
    }

    #[test]
    fn parses_and_prints_round_trip() {
        for text in ["0", "0-3", "0-3,8", "0,2,4-7,100", ""] {
            assert_eq!(CpuSet::parse_list(text).unwrap().to_string(), text);
        }
        assert_eq!(
            CpuSet::parse_list("0-1,4-5\n").unwrap().to_string(),
            "0-1,4-5"
        );
        assert_eq!(
            CpuSet::parse_list("0-7:2/4").unwrap().to_string(),
            "0-1,4-5"
        );
    }

    #[test]
    fn rejects_bad_lists() {
        assert!(matches!(
            CpuSet::parse_list("3-1"),
            Err(CpuListError::Reversed(_))
        ));
        assert!(matches!(
            CpuSet::parse_list("a"),
            Err(CpuListError::Syntax(_))
        ));
        assert!(matches!(
            CpuSet::parse_list("1--2"),
            Err(CpuListError::Syntax(_))
        ));
        assert!(matches!(
            CpuSet::parse_list("9000"),
            Err(CpuListError::TooLarge(_))
        ));
        assert!(matches!(
            CpuSet::parse_list("-1"),
            Err(CpuListError::Syntax(_))
        ));
    }

    #[test]
    fn parses_masks() {
        assert_eq!(CpuSet::parse_mask("0").unwrap().to_string(), "");
        assert_eq!(CpuSet::parse_mask("f0").unwrap().to_string(), "4-7");
        assert_eq!(
            CpuSet::parse_mask("1,00000001").unwrap().to_string(),
            "0,32"
        );
        assert!(CpuSet::parse_mask("zz").is_err());
    }

    #[test]
    fn set_algebra() {
        let a = CpuSet::parse_list("0-3").unwrap();
        let b = CpuSet::parse_list("2-5").unwrap();
        assert_eq!(a.intersection(&b).to_string(), "2-3");
        assert_eq!(a.union(&b).to_string(), "0-5");
        assert_eq!(a.len(), 4);
        assert_eq!(b.first(), CpuId::new(2));
    }
}
