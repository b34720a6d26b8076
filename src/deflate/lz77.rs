//! LZ77 matching over a 32 KiB window with hash chains and lazy evaluation, zlib's level
//! 6 idea (RFC 1951 section 4; zlib's `deflate_slow` and `longest_match`).
//!
//! Stage: the encoder's first step. Input: bytes appended to the window. Output:
//! literals and copies recorded into a `Block`, which is written out whenever it fills.
//!
//! The window buffer is 64 KiB: bytes enter at the top, and when the position reaches
//! `2 * WSIZE - MIN_LOOKAHEAD` the upper half moves down and every chain entry drops by
//! `WSIZE` (entries that fall below become "none", 0). A position is matched only when
//! `MIN_LOOKAHEAD` bytes follow it (or at the end of the input), the slide happens at a
//! position fixed by the data, and copies reach back at most `MAX_DIST`, so the symbols,
//! and so the output bytes, do not depend on how the input was sliced into writes.
//!
//! Memory: window 64 KiB, chain heads 64 KiB (2^15 u16), chain links 64 KiB.

use super::block::Block;

const WSIZE: usize = 1 << 15;
const WMASK: usize = WSIZE - 1;
const MIN_MATCH: usize = 3;
const MAX_MATCH: usize = 258;
/// Bytes that must follow a position before it is matched: a longest match plus the
/// next position's lazy look.
const MIN_LOOKAHEAD: usize = MAX_MATCH + MIN_MATCH + 1;
/// Farthest copy: what stays in the window across a slide.
const MAX_DIST: usize = WSIZE - MIN_LOOKAHEAD;
const HASH_BITS: u32 = 15;
/// zlib's level 6: chain length, "good" length (search a quarter of the chain beyond
/// it), lazy length (no lazy search beyond it), "nice" length (stop the search at it).
const MAX_CHAIN: u32 = 128;
const GOOD_LENGTH: usize = 8;
const MAX_LAZY: usize = 16;
const NICE_LENGTH: usize = 128;
/// A 3-byte copy farther than this costs more than its three literals.
const TOO_FAR: usize = 4096;

/// The window, its hash chains and the lazy-matching state between writes.
pub(super) struct Matcher {
    window: Box<[u8]>,
    head: Box<[u16]>,
    prev: Box<[u16]>,
    /// Next position to look at, and how many bytes from it on are in the window.
    pos: usize,
    lookahead: usize,
    /// The match found at the previous position (length 2: none), and where it starts.
    match_len: usize,
    match_start: usize,
    /// The previous position's byte waits to be a literal unless a better match starts.
    pending: bool,
}

impl Matcher {
    pub(super) fn new() -> Matcher {
        Matcher {
            window: vec![0; 2 * WSIZE].into_boxed_slice(),
            head: vec![0; 1 << HASH_BITS].into_boxed_slice(),
            prev: vec![0; WSIZE].into_boxed_slice(),
            pos: 0,
            lookahead: 0,
            match_len: MIN_MATCH - 1,
            match_start: 0,
            pending: false,
        }
    }

    /// Takes all of `input`, matching every position that has enough bytes after it.
    pub(super) fn write(&mut self, mut input: &[u8], block: &mut Block, out: &mut Vec<u8>) {
        while !input.is_empty() {
            let end = self.pos + self.lookahead;
            let room = self.window.len().saturating_sub(end);
            let (now, rest) = input.split_at(room.min(input.len()));
            if let Some(dst) = self.window.get_mut(end..end + now.len()) {
                dst.copy_from_slice(now);
            }
            self.lookahead += now.len();
            input = rest;
            self.run(false, block, out);
        }
    }

    /// Matches the rest of the input and writes the last block.
    pub(super) fn finish(&mut self, block: &mut Block, out: &mut Vec<u8>) {
        self.run(true, block, out);
        if self.pending {
            self.pending = false;
            let at = self.pos - 1;
            block.literal(at, self.window[at]);
        }
        block.flush(&self.window, true, out);
    }

    /// zlib's `deflate_slow`: a match at a position is taken only if the next position
    /// does not start a longer one; otherwise the position becomes a literal.
    fn run(&mut self, ending: bool, block: &mut Block, out: &mut Vec<u8>) {
        loop {
            if self.pos >= 2 * WSIZE - MIN_LOOKAHEAD {
                self.slide(block);
            }
            if self.lookahead == 0 || (self.lookahead < MIN_LOOKAHEAD && !ending) {
                return;
            }
            let candidate = if self.lookahead >= MIN_MATCH {
                self.insert(self.pos)
            } else {
                0
            };
            let (prev_len, prev_start) = (self.match_len, self.match_start);
            self.match_len = MIN_MATCH - 1;
            let dist = self.pos.wrapping_sub(candidate);
            if candidate != 0 && prev_len < MAX_LAZY && dist <= MAX_DIST {
                if let Some((len, start)) = self.longest(candidate, prev_len) {
                    let far = len == MIN_MATCH && self.pos - start > TOO_FAR;
                    if !far {
                        (self.match_len, self.match_start) = (len, start);
                    }
                }
            }
            if prev_len >= MIN_MATCH && self.match_len <= prev_len {
                self.take_match(prev_start, prev_len, block, out);
            } else {
                if self.pending {
                    let at = self.pos - 1;
                    if block.literal(at, self.window[at]) {
                        block.flush(&self.window, false, out);
                    }
                }
                self.pending = true;
                self.pos += 1;
                self.lookahead -= 1;
            }
        }
    }

    /// Records the previous position's match of `len` from `start`, and enters every
    /// position it covers into the chains.
    fn take_match(&mut self, start: usize, len: usize, block: &mut Block, out: &mut Vec<u8>) {
        let at = self.pos - 1;
        let full = block.copy(at, at.wrapping_sub(start), len);
        // The positions after `pos` the match covers (`pos` itself is in the chains).
        let last_insert = self.pos + self.lookahead - MIN_MATCH;
        for p in self.pos + 1..at + len {
            if p <= last_insert {
                self.insert(p);
            }
        }
        self.lookahead -= len - 1;
        self.pos = at + len;
        self.pending = false;
        self.match_len = MIN_MATCH - 1;
        if full {
            block.flush(&self.window, false, out);
        }
    }

    /// Enters position `p` into its hash chain; returns the chain's previous head (0:
    /// none). Needs `p + 2` in the window.
    fn insert(&mut self, p: usize) -> usize {
        let w = &self.window;
        let key = (w[p] as u32) << 16 | (w[p + 1] as u32) << 8 | w[p + 2] as u32;
        let h = (key.wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize;
        let old = self.head[h];
        self.prev[p & WMASK] = old;
        self.head[h] = p as u16;
        old as usize
    }

    /// zlib's `longest_match`: the longest match at `pos` along the chain from `cur`
    /// that is longer than `better_than`, as (length, start).
    fn longest(&self, mut cur: usize, better_than: usize) -> Option<(usize, usize)> {
        let max = MAX_MATCH.min(self.lookahead);
        let mut best = better_than.max(MIN_MATCH - 1);
        if best >= max {
            return None;
        }
        let nice = NICE_LENGTH.min(max);
        let mut chain = if better_than >= GOOD_LENGTH {
            MAX_CHAIN / 4
        } else {
            MAX_CHAIN
        };
        let limit = self.pos.saturating_sub(MAX_DIST);
        let scan = self.window.get(self.pos..self.pos + max)?;
        let mut found = None;
        while cur > limit && cur < self.pos {
            let cand = self.window.get(cur..cur + max)?;
            // The two bytes that would make it longer than the best first, as zlib does.
            let ends = |s: &[u8]| [s[best - 1], s[best]];
            if ends(cand) == ends(scan) && cand[..2] == scan[..2] {
                let len = common_prefix(cand, scan);
                if len > best {
                    best = len;
                    found = Some((len, cur));
                    if len >= nice {
                        break;
                    }
                }
            }
            chain -= 1;
            if chain == 0 {
                break;
            }
            cur = self.prev[cur & WMASK] as usize;
        }
        found
    }

    /// Moves the upper half of the window down and the chains with it.
    fn slide(&mut self, block: &mut Block) {
        self.window.copy_within(WSIZE.., 0);
        for e in self.head.iter_mut().chain(self.prev.iter_mut()) {
            *e = e.saturating_sub(WSIZE as u16);
        }
        self.pos -= WSIZE;
        self.match_start = self.match_start.saturating_sub(WSIZE);
        block.slid(WSIZE);
    }
}

/// How many leading bytes `a` and `b` share, eight at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let mut n = 0;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let (Ok(x), Ok(y)) = (<[u8; 8]>::try_from(x), <[u8; 8]>::try_from(y)) else {
            break;
        };
        let diff = u64::from_le_bytes(x) ^ u64::from_le_bytes(y);
        if diff != 0 {
            return n + (diff.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    n + a[n..]
        .iter()
        .zip(&b[n..])
        .take_while(|(x, y)| x == y)
        .count()
}
