//! The statistics that decide whether an A/B difference is real.
//!
//! Input: two samples of one metric (a value per run of A, a value per run of B, in
//! round order). Output: a ministat-style [`Summary`] of each, the pooled Student's t
//! comparison ([`student_t`], as ministat(1) prints it), the paired per-round ratio
//! B/A with its confidence interval ([`paired_ratio`]) and a sign-flip permutation
//! test on the paired differences ([`permutation_p`]).
//!
//! Why all three: runs on a shared 2-CPU guest drift by tens of percent between rounds
//! (`docs/benchmarks.md`, "Why A and B alternate"). The unpaired t test is what ministat
//! and the 2020 reviewer use; pairing each B run with the A run of the same round removes
//! the slow drift; the permutation test assumes no normality at all (as firecracker's
//! `ab_test.py` does).
//!
//! The t quantiles are computed, not tabled: the two-sided tail of Student's t with
//! `df` degrees of freedom is the regularized incomplete beta `I_{df/(df+t²)}(df/2, 1/2)`
//! (Abramowitz & Stegun 26.7.1), inverted by bisection. Tests check them against the
//! textbook table. Nothing here allocates except [`Summary::of`] (one sorted copy).

use core::fmt;

/// N, min, max, median, mean and sample standard deviation of one data set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Summary {
    /// Number of points.
    pub(crate) n: usize,
    /// Smallest point.
    pub(crate) min: f64,
    /// Largest point.
    pub(crate) max: f64,
    /// Middle point (mean of the two middle points for even `n`).
    pub(crate) median: f64,
    /// Arithmetic mean.
    pub(crate) mean: f64,
    /// Sample standard deviation (divisor `n - 1`); 0 for fewer than two points.
    pub(crate) stddev: f64,
}

/// `xs` in the order of `f64::total_cmp`, sorted as integers: a float's bits with the
/// sign bit flipped (a negative's every bit) order as `total_cmp` orders the floats, and
/// an integer sort is one the binary has already (a float sort of its own is about 5 KB).
fn sorted(xs: &[f64]) -> Vec<f64> {
    const SIGN: u64 = 1 << 63;
    let mut keys: Vec<u64> = xs
        .iter()
        .map(|x| match x.to_bits() {
            b if b & SIGN != 0 => !b,
            b => b | SIGN,
        })
        .collect();
    keys.sort_unstable();
    keys.into_iter()
        .map(|k| f64::from_bits(if k & SIGN != 0 { k & !SIGN } else { !k }))
        .collect()
}

impl Summary {
    /// Summarises `xs`; `None` when it is empty or holds a NaN.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn of(xs: &[f64]) -> Option<Summary> {
        if xs.is_empty() || xs.iter().any(|x| x.is_nan()) {
            return None;
        }
        let sorted = sorted(xs);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        let (mean, stddev) = mean_stddev(xs);
        Some(Summary {
            n,
            min: sorted[0],
            max: sorted[n - 1],
            median,
            mean,
            stddev,
        })
    }
}

/// Mean and sample standard deviation; stddev 0 for fewer than two points.
pub(crate) fn mean_stddev(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (mean, 0.0);
    }
    let ss: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
    (mean, (ss / (n - 1.0)).sqrt())
}

/// The pooled two-sample Student's t comparison of B against A, as ministat prints it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Comparison {
    /// Confidence level in percent (such as 95.0).
    pub(crate) confidence: f64,
    /// mean(B) - mean(A).
    pub(crate) diff: f64,
    /// Half-width of the confidence interval of `diff`.
    pub(crate) half_width: f64,
    /// `diff` as a percentage of mean(A).
    pub(crate) diff_pct: f64,
    /// `half_width` as a percentage of mean(A).
    pub(crate) half_width_pct: f64,
    /// Pooled standard deviation.
    pub(crate) pooled_s: f64,
}

impl Comparison {
    /// True when the interval excludes zero (ministat's test: |diff| > half-width).
    pub(crate) fn significant(&self) -> bool {
        self.diff.abs() > self.half_width
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.significant() {
            return write!(
                f,
                "No difference proven at {:.1}% confidence",
                self.confidence
            );
        }
        write!(
            f,
            "Difference at {:.1}% confidence: {} +/- {} ({}% +/- {}%) (Student's t, pooled s = {})",
            self.confidence,
            sig6(self.diff),
            sig6(self.half_width),
            sig6(self.diff_pct),
            sig6(self.half_width_pct),
            sig6(self.pooled_s)
        )
    }
}

/// Formats like C's `%g` with six significant digits, as ministat does.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn sig6(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let exp = x.abs().log10().floor() as i32;
    if !(-5..6).contains(&exp) {
        return format!("{x:.5e}");
    }
    let decimals = (5 - exp).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Pooled Student's t comparison of `b` against `a` at `confidence` percent; `None` with
/// fewer than two points on a side or a zero mean of A.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn student_t(a: &[f64], b: &[f64], confidence: f64) -> Option<Comparison> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let df = (a.len() + b.len() - 2) as f64;
    student_t_with(a, b, confidence, t_quantile(confidence, df))
}

/// [`student_t`] with the critical value `t` given (ministat looks it up in a table
/// rounded to three decimals; the tests use that to reproduce its output digit for digit).
fn student_t_with(a: &[f64], b: &[f64], confidence: f64, t: f64) -> Option<Comparison> {
    let (ma, sa) = mean_stddev(a);
    let (mb, sb) = mean_stddev(b);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let df = na + nb - 2.0;
    let pooled_s = (((na - 1.0) * sa * sa + (nb - 1.0) * sb * sb) / df).sqrt();
    let half_width = t * pooled_s * (1.0 / na + 1.0 / nb).sqrt();
    let diff = mb - ma;
    if ma == 0.0 {
        return None;
    }
    Some(Comparison {
        confidence,
        diff,
        half_width,
        diff_pct: diff * 100.0 / ma,
        half_width_pct: half_width * 100.0 / ma,
        pooled_s,
    })
}

/// The mean per-round ratio B/A and its confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Ratio {
    /// Rounds paired.
    pub(crate) n: usize,
    /// Mean of b_i / a_i.
    pub(crate) mean: f64,
    /// Lower end of the interval.
    pub(crate) low: f64,
    /// Upper end of the interval.
    pub(crate) high: f64,
    /// Confidence level in percent.
    pub(crate) confidence: f64,
}

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "B/A per round: {:.4} ({:.1}% CI {:.4} .. {:.4}, n = {})",
            self.mean, self.confidence, self.low, self.high, self.n
        )
    }
}

/// Pairs `a[i]` with `b[i]` and returns the mean ratio with its t interval (df n-1);
/// `None` with fewer than two pairs or a zero in A.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn paired_ratio(a: &[f64], b: &[f64], confidence: f64) -> Option<Ratio> {
    let n = a.len().min(b.len());
    if n < 2 || a[..n].contains(&0.0) {
        return None;
    }
    let ratios: Vec<f64> = a.iter().zip(b).map(|(x, y)| y / x).collect();
    let (mean, sd) = mean_stddev(&ratios);
    let half = t_quantile(confidence, (n - 1) as f64) * sd / (n as f64).sqrt();
    Some(Ratio {
        n,
        mean,
        low: mean - half,
        high: mean + half,
        confidence,
    })
}

/// Rounds above which [`permutation_p`] samples sign flips instead of enumerating them.
pub(crate) const EXACT_LIMIT: usize = 16;

/// Resamples drawn when the test cannot be exact.
pub(crate) const RESAMPLES: u32 = 100_000;

/// Two-sided p-value of the paired sign-flip permutation test on `b[i] - a[i]`.
///
/// Under "A and B are the same", each round's difference is as likely negative as
/// positive; p is the share of sign assignments whose |mean| reaches the observed one.
/// Exact (all 2^n assignments) up to [`EXACT_LIMIT`] rounds, otherwise [`RESAMPLES`]
/// random assignments from a xorshift generator seeded with `seed`, counting the
/// observed assignment itself so p is never 0.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn permutation_p(a: &[f64], b: &[f64], seed: u64) -> Option<f64> {
    let n = a.len().min(b.len());
    if n == 0 {
        return None;
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| y - x).collect();
    let observed = d.iter().sum::<f64>().abs();
    // Sums are compared with a relative tolerance so equal sums in floating point count.
    let reaches = |s: f64| s.abs() >= observed * (1.0 - 1e-12);
    if n <= EXACT_LIMIT {
        let total = 1u32 << n;
        let hits = (0..total)
            .filter(|&m| reaches(flipped_sum(&d, m as u64)))
            .count();
        return Some(hits as f64 / total as f64);
    }
    let mut rng = XorShift::new(seed);
    let mut hits = 1u32;
    for _ in 0..RESAMPLES {
        let s: f64 = d
            .iter()
            .map(|&x| if rng.next() & 1 == 1 { -x } else { x })
            .sum();
        hits += u32::from(reaches(s));
    }
    Some(f64::from(hits) / f64::from(RESAMPLES + 1))
}

fn flipped_sum(d: &[f64], mask: u64) -> f64 {
    d.iter()
        .enumerate()
        .map(|(i, &x)| if mask >> i & 1 == 1 { -x } else { x })
        .sum()
}

/// Marsaglia's xorshift64*: small, seedable, good enough to draw sign flips.
pub(crate) struct XorShift(u64);

impl XorShift {
    /// A generator from `seed` (0 is replaced by a fixed odd constant).
    pub(crate) fn new(seed: u64) -> XorShift {
        XorShift(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    /// The next 64 pseudo-random bits.
    #[allow(clippy::should_implement_trait)]
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// The two-sided critical value of Student's t: P(|T| <= t) = confidence/100 with `df`
/// degrees of freedom. Returns NaN for df <= 0 or a confidence outside (0, 100).
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn t_quantile(confidence: f64, df: f64) -> f64 {
    if df <= 0.0 || !(0.0..100.0).contains(&confidence) || confidence == 0.0 {
        return f64::NAN;
    }
    let tail = 1.0 - confidence / 100.0;
    // two_sided_tail falls from 1 at t = 0 towards 0: bisect on t.
    let (mut lo, mut hi) = (0.0f64, 1.0e7f64);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if two_sided_tail(mid, df) > tail {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// P(|T| > t) for Student's t with `df` degrees of freedom (A&S 26.7.1).
pub(crate) fn two_sided_tail(t: f64, df: f64) -> f64 {
    incomplete_beta(df / (df + t * t), df / 2.0, 0.5)
}

/// The regularized incomplete beta function I_x(a, b), by its continued fraction
/// (A&S 26.5.8), using the symmetry I_x(a,b) = 1 - I_{1-x}(b,a) where it converges slowly.
fn incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_fraction(x, a, b) / a
    } else {
        1.0 - ln_front.exp() * beta_fraction(1.0 - x, b, a) / b
    }
}

/// The continued fraction of A&S 26.5.8, evaluated with the modified Lentz method.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn beta_fraction(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    d = 1.0 / if d.abs() < TINY { TINY } else { d };
    let mut h = d;
    for m in 1..400 {
        let m = f64::from(m);
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        let odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        for coef in [even, odd] {
            d = 1.0 + coef * d;
            d = 1.0 / if d.abs() < TINY { TINY } else { d };
            c = 1.0 + coef / c;
            c = if c.abs() < TINY { TINY } else { c };
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0 by the Lanczos approximation (g = 7, nine coefficients).
#[cfg_attr(feature = "cold-size", optimize(size))]
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEF: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1-x) = π / sin(πx).
        return (core::f64::consts::PI / (core::f64::consts::PI * x).sin()).ln()
            - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEF[0];
    for (i, c) in COEF.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * core::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    // ministat(1)'s EXAMPLES section: `ministat -s -w 60 iguana chameleon`.
    const IGUANA: [f64; 7] = [50.0, 200.0, 150.0, 400.0, 750.0, 400.0, 150.0];
    const CHAMELEON: [f64; 5] = [150.0, 400.0, 720.0, 500.0, 930.0];

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn summary_matches_ministat_example() {
        let x = Summary::of(&IGUANA).unwrap();
        assert_eq!(
            (x.n, x.min, x.max, x.median, x.mean),
            (7, 50.0, 750.0, 200.0, 300.0)
        );
        assert!(close(x.stddev, 238.04761, 5e-6), "{}", x.stddev);
        let y = Summary::of(&CHAMELEON).unwrap();
        assert_eq!(
            (y.n, y.min, y.max, y.median, y.mean),
            (5, 150.0, 930.0, 500.0, 540.0)
        );
        assert!(close(y.stddev, 299.08193, 5e-6), "{}", y.stddev);
    }

    #[test]
    fn ministat_example_at_95_proves_nothing() {
        let c = student_t(&IGUANA, &CHAMELEON, 95.0).unwrap();
        assert!(!c.significant());
        assert_eq!(c.to_string(), "No difference proven at 95.0% confidence");
    }

    #[test]
    fn ministat_example_at_80_matches_its_output() {
        // ministat -c 80 iguana chameleon prints:
        // Difference at 80.0% confidence
        //         240 +/- 212.215
        //         80% +/- 70.7384%
        //         (Student's t, pooled s = 264.159)
        // ministat's table holds t(80%, df 10) = 1.372; with it the digits are exact.
        let c = student_t_with(&IGUANA, &CHAMELEON, 80.0, 1.372).unwrap();
        assert!(c.significant());
        assert_eq!(sig6(c.diff), "240");
        assert_eq!(sig6(c.half_width), "212.215");
        assert_eq!(sig6(c.diff_pct), "80");
        assert_eq!(sig6(c.half_width_pct), "70.7384");
        assert_eq!(sig6(c.pooled_s), "264.159");
        assert!(c
            .to_string()
            .starts_with("Difference at 80.0% confidence: 240 +/- 212.215 (80% +/- 70.7384%)"));
        // The computed quantile (1.37218) moves the half-width by the table's rounding only.
        let computed = student_t(&IGUANA, &CHAMELEON, 80.0).unwrap();
        assert!((computed.half_width / c.half_width - 1.0).abs() < 2e-4);
        assert_eq!(computed.diff, c.diff);
    }

    #[test]
    fn t_quantiles_match_the_textbook_table() {
        // (confidence %, df, two-sided critical t) from the standard t table.
        let table = [
            (95.0, 1.0, 12.706),
            (95.0, 2.0, 4.303),
            (95.0, 5.0, 2.571),
            (95.0, 9.0, 2.262),
            (95.0, 10.0, 2.228),
            (95.0, 18.0, 2.101),
            (95.0, 30.0, 2.042),
            (95.0, 120.0, 1.980),
            (80.0, 10.0, 1.372),
            (90.0, 4.0, 2.132),
            (99.0, 5.0, 4.032),
            (99.0, 20.0, 2.845),
            (98.0, 7.0, 2.998),
        ];
        for (conf, df, want) in table {
            let got = t_quantile(conf, df);
            assert!(
                close(got, want, 6e-4),
                "t({conf}%, {df}) = {got}, table {want}"
            );
        }
        assert!(close(t_quantile(95.0, 1e9), 1.960, 6e-4));
        assert!(t_quantile(95.0, 0.0).is_nan());
    }

    #[test]
    fn sig6_prints_like_printf_g() {
        assert_eq!(sig6(240.0), "240");
        assert_eq!(sig6(212.21517), "212.215");
        assert_eq!(sig6(0.001234567), "0.00123457");
        assert_eq!(sig6(-3.5), "-3.5");
    }

    #[test]
    fn paired_ratio_of_constant_ratio_has_zero_width() {
        let a = [100.0, 200.0, 50.0, 80.0];
        let b: Vec<f64> = a.iter().map(|x| x * 1.25).collect();
        let r = paired_ratio(&a, &b, 95.0).unwrap();
        assert!(close(r.mean, 1.25, 1e-12) && close(r.low, 1.25, 1e-12));
        assert!(paired_ratio(&[1.0], &[2.0], 95.0).is_none());
        assert!(paired_ratio(&[0.0, 1.0], &[2.0, 2.0], 95.0).is_none());
    }

    #[test]
    fn paired_ratio_interval_uses_t_with_n_minus_1() {
        // Ratios 1.0, 1.2, 1.4: mean 1.2, sd 0.2, n 3: half-width 4.303 * 0.2 / sqrt(3).
        let r = paired_ratio(&[10.0, 10.0, 10.0], &[10.0, 12.0, 14.0], 95.0).unwrap();
        let half = 4.302_653 * 0.2 / 3f64.sqrt();
        assert!(close(r.mean, 1.2, 1e-12));
        assert!(close(r.high - r.mean, half, 1e-5), "{r}");
    }

    #[test]
    fn permutation_exact_values() {
        // All five differences positive: only the all-plus and all-minus assignments
        // reach the observed |sum|: p = 2/32.
        let a = [1.0; 5];
        let b = [2.0, 3.0, 4.0, 5.0, 6.0];
        assert_eq!(permutation_p(&a, &b, 1), Some(2.0 / 32.0));
        // Differences +1 and -1: every assignment reaches |sum| = 0.
        assert_eq!(permutation_p(&[0.0, 0.0], &[1.0, -1.0], 1), Some(1.0));
        // Differences 1, 2, 3 (sum 6): +1+2+3 and -1-2-3 reach 6; nothing else does
        // (the next largest |sum| is 4): p = 2/8.
        assert_eq!(permutation_p(&[0.0; 3], &[1.0, 2.0, 3.0], 1), Some(0.25));
    }

    #[test]
    fn permutation_sampled_agrees_with_exact_and_is_seeded() {
        let n = EXACT_LIMIT + 2;
        let a = vec![100.0; n];
        let b: Vec<f64> = (0..n).map(|i| 100.0 + (i as f64 % 5.0) - 1.5).collect();
        let p1 = permutation_p(&a, &b, 7).unwrap();
        let p2 = permutation_p(&a, &b, 7).unwrap();
        assert_eq!(p1, p2, "same seed, same p");
        // Exact value for the same data by brute force over 2^18 assignments.
        let d: Vec<f64> = b.iter().map(|x| x - 100.0).collect();
        let obs = d.iter().sum::<f64>().abs();
        let hits = (0..1u64 << n)
            .filter(|&m| flipped_sum(&d, m).abs() >= obs * (1.0 - 1e-12))
            .count();
        let exact = hits as f64 / (1u64 << n) as f64;
        assert!(close(p1, exact, 0.01), "sampled {p1}, exact {exact}");
    }

    #[test]
    fn the_integer_sort_orders_as_total_cmp_and_a_few_sort_stays_stable() {
        let xs = [
            3.5,
            -0.0,
            0.0,
            f64::INFINITY,
            -2.25,
            f64::NEG_INFINITY,
            1e-300,
            -1e-300,
            7.0,
            -7.0,
            0.0,
            2.5e10,
            f64::MIN_POSITIVE,
            -3.5,
        ];
        let mut want = xs.to_vec();
        want.sort_by(f64::total_cmp);
        let got = sorted(&xs);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want));
        let mut few = vec![(2, 'a'), (1, 'b'), (2, 'c'), (0, 'd'), (1, 'e')];
        crate::bench::sort_few_by(&mut few, |a, b| a.0 < b.0);
        assert_eq!(few, [(0, 'd'), (1, 'b'), (1, 'e'), (2, 'a'), (2, 'c')]);
    }
}
