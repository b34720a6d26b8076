//! The one duration grammar of every flag that takes a time (`--header-timeout`,
//! `bench load -d`, ...): a non-negative decimal number with an optional unit.
//!
//! ```text
//! duration = number [ "ms" / "s" / "m" ]      ; no unit: seconds
//! number   = 1*DIGIT [ "." 1*DIGIT ]          ; 3, 2.5, 0.25
//! ```
//!
//! Accepted range: 1 ms to one day. Input: the flag's value as text. Output: a
//! `Duration`, or a [`BadDuration`] that names the value (the caller puts the flag in front).
//! It does no I/O and never panics.

use std::time::Duration;

/// The longest duration any flag accepts: one day.
pub(crate) const MAX: Duration = Duration::from_secs(86_400);
/// The shortest: one millisecond.
pub(crate) const MIN: Duration = Duration::from_millis(1);

/// Parses `500ms`, `2s`, `1.5s`, `1m` or a bare number of seconds (`0.5`).
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn parse(v: &str) -> Result<Duration, BadDuration> {
    let (num, scale) = split_unit(v);
    let ok = !num.is_empty()
        && num.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && num.bytes().next().is_some_and(|b| b.is_ascii_digit());
    let secs = match num.parse::<f64>() {
        Ok(x) if ok && x.is_finite() => x * scale,
        _ => return Err(bad(v)),
    };
    if !(MIN.as_secs_f64()..=MAX.as_secs_f64()).contains(&secs) {
        return Err(bad(v));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn split_unit(v: &str) -> (&str, f64) {
    if let Some(n) = v.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix('m') {
        (n, 60.0)
    } else {
        (v, 1.0)
    }
}

fn bad(v: &str) -> BadDuration {
    BadDuration(v.to_string())
}

/// A value that is no duration of the grammar, or out of range: printed as `"5x":
/// expected a time ...` (the caller puts the flag in front).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BadDuration(pub String);

impl core::fmt::Display for BadDuration {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{:?}: expected a time from 1ms to 1 day, such as 3, 2.5s, 500ms or 1m",
            self.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse("1ms"), Ok(MIN));
        assert_eq!(parse("1440m"), Ok(MAX));
    }

    #[test]
    fn refused() {
        for v in [
            "", "s", "ms", "-1", "+1", "0", "0.0001", "1441m", "86401", "1h", "1 s", "1e3", "inf",
            "NaN", ".5", "1..2", "5x",
        ] {
            assert!(parse(v).is_err(), "{v:?} accepted");
        }
    }
}
