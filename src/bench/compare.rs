//! The verdict on two samples, as text: `steerd bench stats A_FILE B_FILE` for numbers
//! measured elsewhere, and the same lines under each metric of `steerd bench ab`.
//!
//! Input: two files of numbers (one per line, blank lines and `#` comments skipped,
//! paired by line), or two samples from `ab`. Output: a ministat-style table and the
//! verdict lines of `ministat.rs`. It measures nothing itself.

use super::ministat::{self, Summary};
use super::{emit, Usage};

/// The ministat table's column heads.
pub(crate) const TABLE_HEAD: &str =
    "    N           Min           Max        Median           Avg        Stddev";

/// Entry point of `steerd bench stats A_FILE B_FILE`.
pub(crate) fn main(a: &str, b: &str) -> Result<i32, Usage> {
    let (xa, xb) = (read(a)?, read(b)?);
    let mut o = format!("{TABLE_HEAD}\n");
    for (label, xs) in [("A", &xa), ("B", &xb)] {
        match Summary::of(xs) {
            Some(s) => o.push_str(&format!("{}\n", summary_row(label, &s))),
            None => return Err(Usage::StatsEmpty(label)),
        }
    }
    o.push_str(&format!("{}\n", verdict(&xa, &xb, 1)));
    emit(&o);
    Ok(0)
}

/// The numbers of one file.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn read(path: &str) -> Result<Vec<f64>, Usage> {
    let text =
        std::fs::read_to_string(path).map_err(|e| Usage::StatsUnreadable(path.to_string(), e))?;
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            l.parse::<f64>()
                .map_err(|_| Usage::StatsNotNumber(path.to_string(), l.to_string()))
        })
        .collect()
}

/// One row of the ministat table.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn summary_row(label: &str, s: &Summary) -> String {
    format!(
        "{label} {:>3} {:>13} {:>13} {:>13} {:>13} {:>13}",
        s.n,
        ministat::sig6(s.min),
        ministat::sig6(s.max),
        ministat::sig6(s.median),
        ministat::sig6(s.mean),
        ministat::sig6(s.stddev)
    )
}

/// The t verdict, the paired ratio and the permutation p, one per line.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn verdict(a: &[f64], b: &[f64], seed: u64) -> String {
    let t = ministat::student_t(a, b, 95.0).map_or(
        "No difference proven at 95.0% confidence (too few runs)".into(),
        |c| c.to_string(),
    );
    let ratio =
        ministat::paired_ratio(a, b, 95.0).map_or("B/A per round: n/a".into(), |r| r.to_string());
    let p = ministat::permutation_p(a, b, seed).map_or("n/a".into(), |p| format!("{p:.4}"));
    let how = if a.len().min(b.len()) <= ministat::EXACT_LIMIT {
        "exact"
    } else {
        "sampled"
    };
    format!("{t}\n{ratio}\npermutation test on paired differences ({how}): p = {p}")
}
