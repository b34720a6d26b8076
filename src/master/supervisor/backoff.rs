//! The restart back-off of a worker slot: a worker that dies soon after it started counts
//! as a crash, and each consecutive crash doubles the wait before the next start, so a
//! worker that cannot serve does not spin the master.
//!
//! Input: the number of consecutive early deaths. Output: the delay before the restart.

use std::time::Duration;

/// A worker that lived less than this before dying counts as a crash for the back-off.
pub(super) const CRASH_WINDOW: Duration = Duration::from_secs(2);
/// First back-off delay after a crash; doubles per consecutive crash.
pub(super) const BACKOFF_FIRST: Duration = Duration::from_millis(100);
/// Longest back-off delay.
pub(super) const BACKOFF_MAX: Duration = Duration::from_secs(10);

/// The delay before restarting a worker after `crashes` consecutive early deaths:
/// none for a worker that had been running a while, then 100 ms doubling to 10 s.
pub(super) fn backoff(crashes: u32) -> Duration {
    match crashes {
        0 => Duration::ZERO,
        n => BACKOFF_FIRST
            .checked_mul(1u32 << (n - 1).min(16))
            .map_or(BACKOFF_MAX, |d| d.min(BACKOFF_MAX)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        assert_eq!(backoff(0), Duration::ZERO);
        assert_eq!(backoff(1), Duration::from_millis(100));
        assert_eq!(backoff(2), Duration::from_millis(200));
        assert_eq!(backoff(4), Duration::from_millis(800));
        assert_eq!(backoff(8), BACKOFF_MAX);
        assert_eq!(backoff(u32::MAX), BACKOFF_MAX);
    }
}
