//! Length-limited Huffman code lengths and the canonical codes they define (RFC 1951
//! section 3.2.2).
//!
//! Stage: inside a block's encoding. Input: symbol frequencies (at most 288 symbols) and
//! a length limit (15, or 7 for the code-length code). Output: code lengths, and from
//! them the codes, bit-reversed because deflate sends Huffman codes from their top bit
//! into a stream that is otherwise filled from the bottom bit up.
//!
//! The tree is built by the two-queue method over leaves sorted by frequency (an
//! insertion sort: 288 keys at most, a few times per block, and no generic sort's code
//! in the binary). Depths beyond the limit are folded in as miniz does: the deep leaves
//! are counted at the limit, then leaves move one level down until the Kraft sum is
//! exactly one again; the lengths are then handed out again, longest to the least
//! frequent. Every code has at least two symbols, so decoders that refuse an
//! incomplete code (zlib's does, for one symbol of length other than one) accept it.

/// Most symbols in an alphabet (literal/length: 286 used, 288 defined).
const MAX_SYMBOLS: usize = 288;

/// Fills `lens` (as long as `freq`, at most 288) with code lengths of at most `limit`
/// (1..=15) bits: 0 for a symbol that never occurs, a complete prefix code over the rest.
pub(super) fn lengths(freq: &[u32], limit: u8, lens: &mut [u8]) {
    lens.fill(0);
    let mut keys = [0u32; MAX_SYMBOLS];
    let mut n = 0;
    for (sym, &f) in freq.iter().enumerate().take(MAX_SYMBOLS) {
        if f > 0 {
            keys[n] = (f.min(0x7F_FFFF) << 9) | sym as u32;
            n += 1;
        }
    }
    if n < 2 {
        // One symbol or none: two codes of one bit, the used one and a neighbour.
        let used = if n == 1 {
            (keys[0] & 0x1ff) as usize
        } else {
            0
        };
        let other = if used == 0 { 1 } else { 0 };
        for s in [used, other] {
            if let Some(l) = lens.get_mut(s) {
                *l = 1;
            }
        }
        return;
    }
    sort(&mut keys[..n]);
    let mut count = [0u16; 16];
    depth_counts(&keys[..n], limit, &mut count);
    // The least frequent symbols come first in `keys`: they take the longest codes.
    let mut k = 0;
    for len in (1..=limit).rev() {
        for _ in 0..count[len as usize] {
            if let Some(&key) = keys.get(k) {
                if let Some(l) = lens.get_mut((key & 0x1ff) as usize) {
                    *l = len;
                }
            }
            k += 1;
        }
    }
}

/// Insertion sort, ascending (the keys hold the frequency above the symbol).
fn sort(keys: &mut [u32]) {
    for i in 1..keys.len() {
        let key = keys[i];
        let mut j = i;
        while j > 0 && keys[j - 1] > key {
            keys[j] = keys[j - 1];
            j -= 1;
        }
        keys[j] = key;
    }
}

/// How many of the sorted leaves `keys` get each code length (in `count[1..=limit]`):
/// the Huffman tree's depths, with the deeper ones folded in to fit `limit`.
fn depth_counts(keys: &[u32], limit: u8, count: &mut [u16; 16]) {
    let n = keys.len();
    let mut weight = [0u32; 2 * MAX_SYMBOLS];
    let mut parent = [0u16; 2 * MAX_SYMBOLS];
    for (w, &k) in weight.iter_mut().zip(keys) {
        *w = k >> 9;
    }
    // Leaves 0..n in weight order; internal nodes n.. are made in weight order too, so
    // the two lightest nodes are always at the front of one queue or the other.
    let (mut leaf, mut inner, mut next) = (0, n, n);
    for _ in 1..n {
        let mut pick = || {
            let take_leaf = leaf < n && (inner >= next || weight[leaf] <= weight[inner]);
            let at = if take_leaf { &mut leaf } else { &mut inner };
            *at += 1;
            *at - 1
        };
        let (a, b) = (pick(), pick());
        weight[next] = weight[a] + weight[b];
        parent[a] = next as u16;
        parent[b] = next as u16;
        next += 1;
    }
    // A parent is made after its children: depths follow from the root down.
    let root = next - 1;
    let mut depth = [0u16; 2 * MAX_SYMBOLS];
    for i in (0..root).rev() {
        depth[i] = depth[parent[i] as usize] + 1;
    }
    let limit = limit as usize;
    for &d in &depth[..n] {
        count[(d as usize).min(limit)] += 1;
    }
    let mut kraft: u32 = (1..=limit).map(|l| (count[l] as u32) << (limit - l)).sum();
    while kraft > 1 << limit {
        // Take one leaf off the deepest level and hang it, with a leaf from the deepest
        // level above that has one, one level lower: the sum drops by one deepest unit.
        count[limit] = count[limit].saturating_sub(1);
        if let Some(l) = (1..limit).rev().find(|&l| count[l] > 0) {
            count[l] -= 1;
            count[l + 1] += 2;
        }
        kraft -= 1;
    }
}

/// The canonical codes for `lens` (RFC 1951 3.2.2), each bit-reversed to be sent from the
/// low bit up; `codes` is as long as `lens`.
pub(super) fn codes(lens: &[u8], codes: &mut [u16]) {
    let mut count = [0u16; 16];
    for &l in lens {
        count[(l & 15) as usize] += 1;
    }
    count[0] = 0;
    let mut next = [0u16; 16];
    let mut code = 0u16;
    for bits in 1..16 {
        code = (code.wrapping_add(count[bits - 1])) << 1;
        next[bits] = code;
    }
    for (c, &l) in codes.iter_mut().zip(lens) {
        let l = (l & 15) as usize;
        if l > 0 {
            *c = next[l].reverse_bits() >> (16 - l);
            next[l] = next[l].wrapping_add(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{codes, lengths};

    fn kraft(lens: &[u8]) -> f64 {
        lens.iter()
            .filter(|&&l| l > 0)
            .map(|&l| 0.5f64.powi(l as i32))
            .sum()
    }

    /// Fibonacci frequencies make the deepest possible tree: the limit must fold it.
    #[test]
    fn lengths_respect_the_limit_and_stay_complete() {
        let mut freq = [0u32; 30];
        let (mut a, mut b) = (1u32, 1u32);
        for f in freq.iter_mut() {
            *f = a;
            (a, b) = (b, a.saturating_add(b));
        }
        for limit in [7u8, 9, 15] {
            let mut lens = [0u8; 30];
            lengths(&freq, limit, &mut lens);
            assert!(lens.iter().all(|&l| (1..=limit).contains(&l)), "{lens:?}");
            assert_eq!(kraft(&lens), 1.0, "limit {limit}: {lens:?}");
        }
    }

    #[test]
    fn one_or_no_symbol_gives_two_one_bit_codes() {
        let mut lens = [0u8; 19];
        lengths(&[0; 19], 7, &mut lens);
        assert_eq!(&lens[..3], &[1, 1, 0]);
        let mut freq = [0u32; 19];
        freq[5] = 9;
        lengths(&freq, 7, &mut lens);
        assert_eq!((lens[0], lens[5], kraft(&lens)), (1, 1, 1.0));
    }

    /// RFC 1951 3.2.2's example: lengths (3, 3, 3, 3, 3, 2, 4, 4) give codes 010, 011,
    /// 100, 101, 110, 00, 1110, 1111.
    #[test]
    fn codes_are_canonical_and_reversed() {
        let lens = [3u8, 3, 3, 3, 3, 2, 4, 4];
        let mut c = [0u16; 8];
        codes(&lens, &mut c);
        let plain: Vec<u16> = c
            .iter()
            .zip(&lens)
            .map(|(&c, &l)| c.reverse_bits() >> (16 - l))
            .collect();
        assert_eq!(
            plain,
            [0b010, 0b011, 0b100, 0b101, 0b110, 0b00, 0b1110, 0b1111]
        );
    }
}
