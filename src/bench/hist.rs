//! A log-linear latency histogram of fixed size: record in O(1) without allocating, merge
//! across threads, read percentiles.
//!
//! Input: durations in nanoseconds. Output: counts, min, max, mean and percentiles whose
//! error is bounded: a value `v` lands in a bucket no wider than `v / 2^SUB_BITS`, and a
//! percentile is reported as the highest value of its bucket (never below the true value,
//! at most 0.8% above it), capped at the exact maximum.
//!
//! Layout (the HdrHistogram idea, with its own arithmetic): values below `2^SUB_BITS`
//! have a bucket each. Above that, each power-of-two range `[2^e, 2^(e+1))` is split
//! into `2^SUB_BITS` equal buckets, so the index is `(e - SUB_BITS + 1) * 2^SUB_BITS +
//! the SUB_BITS bits after the leading one`. All of `u64` fits in `BUCKETS` slots.
//! It does not store samples, so it cannot give the exact p50 of a run; the naive sorted
//! oracle in the tests bounds how far it may be off.

/// Bits of precision below each power of two.
pub(crate) const SUB_BITS: u32 = 7;
const SUB: usize = 1 << SUB_BITS;
/// Number of buckets: one linear range plus one per remaining power of two.
pub(crate) const BUCKETS: usize = SUB * (64 - SUB_BITS as usize + 1);

/// A fixed-size histogram of `u64` values (nanoseconds here).
#[derive(Clone)]
pub(crate) struct Hist {
    counts: Box<[u64; BUCKETS]>,
    total: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Hist {
    fn default() -> Self {
        Hist::new()
    }
}

impl core::fmt::Debug for Hist {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Hist(n={}, min={}, max={})",
            self.total, self.min, self.max
        )
    }
}

/// Bucket index of `v`.
fn index_of(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros();
    let sub = (v >> (e - SUB_BITS)) as usize - SUB;
    (e - SUB_BITS + 1) as usize * SUB + sub
}

/// Highest value that maps to bucket `i`.
fn highest_of(i: usize) -> u64 {
    if i < SUB {
        return i as u64;
    }
    let e = (i / SUB) as u32 + SUB_BITS - 1;
    let sub = (i % SUB + SUB) as u64;
    let width_bits = e - SUB_BITS;
    // (sub + 1) << width_bits - 1, computed without overflowing at the top bucket.
    (sub << width_bits) + ((1u64 << width_bits) - 1)
}

impl Hist {
    /// An empty histogram (the only allocation it ever makes).
    pub(crate) fn new() -> Hist {
        Hist {
            counts: Box::new([0; BUCKETS]),
            total: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Records one value.
    #[inline]
    pub(crate) fn record(&mut self, v: u64) {
        self.counts[index_of(v)] += 1;
        self.total += 1;
        self.sum += u128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Adds every count of `other` to this one.
    pub(crate) fn merge(&mut self, other: &Hist) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.total += other.total;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Values recorded.
    pub(crate) fn count(&self) -> u64 {
        self.total
    }

    /// Exact largest value (0 when empty).
    pub(crate) fn max(&self) -> u64 {
        self.max
    }

    /// Exact smallest value (0 when empty).
    pub(crate) fn min(&self) -> u64 {
        if self.total == 0 {
            0
        } else {
            self.min
        }
    }

    /// Exact mean (0 when empty).
    pub(crate) fn mean(&self) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        self.sum as f64 / self.total as f64
    }

    /// The value at percentile `p` (0 < p <= 100): the smallest bucket whose cumulative
    /// count reaches rank ceil(p/100 * n), reported as that bucket's highest value capped
    /// at the maximum. 0 when empty.
    pub(crate) fn percentile(&self, p: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((p / 100.0) * self.total as f64).ceil().max(1.0) as u64;
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return highest_of(i).min(self.max);
            }
        }
        self.max
    }
}

/// The percentiles every report prints.
pub(crate) const REPORTED: [(f64, &str); 4] =
    [(50.0, "p50"), (90.0, "p90"), (99.0, "p99"), (99.9, "p99.9")];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::ministat::XorShift;

    fn oracle(sorted: &[u64], p: f64) -> u64 {
        let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
        sorted[rank - 1]
    }

    #[test]
    fn buckets_cover_u64_and_are_ordered() {
        assert_eq!(index_of(0), 0);
        assert_eq!(index_of(u64::MAX), BUCKETS - 1);
        assert_eq!(highest_of(BUCKETS - 1), u64::MAX);
        for i in 1..BUCKETS {
            assert_eq!(highest_of(i - 1) + 1, lowest(i), "bucket {i}");
            assert_eq!(index_of(highest_of(i)), i);
            assert_eq!(index_of(lowest(i)), i);
        }
    }

    fn lowest(i: usize) -> u64 {
        if i == 0 {
            0
        } else {
            highest_of(i - 1) + 1
        }
    }

    #[test]
    fn percentiles_match_sorted_oracle_within_bucket_width() {
        let mut rng = XorShift::new(42);
        for case in 0..200 {
            let n = 1 + (rng.next() % 3000) as usize;
            // Mix scales: from a few ns to seconds, as latencies do.
            let shift = rng.next() % 34;
            let mut values: Vec<u64> = (0..n).map(|_| rng.next() >> (30 + shift)).collect();
            let mut h = Hist::new();
            for &v in &values {
                h.record(v);
            }
            values.sort_unstable();
            for p in [1.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
                let want = oracle(&values, p);
                let got = h.percentile(p);
                assert!(got >= want, "case {case} p{p}: {got} < {want}");
                assert!(
                    got - want <= want >> SUB_BITS,
                    "case {case} p{p}: {got} vs {want}"
                );
            }
            assert_eq!(h.max(), *values.last().unwrap());
            assert_eq!(h.min(), values[0]);
            assert_eq!(h.count(), n as u64);
        }
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let mut rng = XorShift::new(9);
        let (mut a, mut b, mut all) = (Hist::new(), Hist::new(), Hist::new());
        for i in 0..5000 {
            let v = rng.next() >> 40;
            if i % 3 == 0 { &mut a } else { &mut b }.record(v);
            all.record(v);
        }
        a.merge(&b);
        for p in [50.0, 99.0, 99.9] {
            assert_eq!(a.percentile(p), all.percentile(p));
        }
        assert_eq!(
            (a.count(), a.max(), a.min()),
            (all.count(), all.max(), all.min())
        );
        assert_eq!(a.mean(), all.mean());
    }

    #[test]
    fn empty_histogram_reads_zero() {
        let h = Hist::new();
        assert_eq!(
            (h.percentile(99.0), h.max(), h.min(), h.mean()),
            (0, 0, 0, 0.0)
        );
    }
}
