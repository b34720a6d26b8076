//! Which free slots have gone unused long enough that their arena pages go back to the
//! kernel: after a spike of connections closes, the worker's memory comes back near its
//! start instead of staying at the spike's high-water mark.
//!
//! Input: the loop's free-slot stack (last freed, first reused), told of every pop, and
//! the turn clock (the loop asks about once a second, in its sweep). Output: runs of slot indices to release, handed to a callback (the
//! loop `madvise`s their regions, `sys::ZeroedArena::release`). No clock of its own and
//! no allocation.
//!
//! The stack says how long a slot has been unused without a timestamp per slot: an entry
//! below the stack's lowest height since the last round has been on the stack for the
//! whole round, so its slot was not reused for at least one period. Each round releases
//! those entries not released before (the stack's bottom is released first and stays so
//! until a pop reaches it), so a slot's pages go back one to two periods after it was
//! freed, and a slot in steady use is never released. A round releases at most
//! [`BATCH`] entries a call, so a large spike costs a few short sweeps, not one long one.

/// Free-stack entries one call releases at most (a `madvise` per run of adjacent slots).
pub(super) const BATCH: usize = 2048;

/// The free stack's bookkeeping between rounds.
#[derive(Debug)]
pub(crate) struct GiveBack {
    period_ms: u64,
    /// The stack's lowest height since the round began: entries below it are cold.
    low: usize,
    /// Entries at the stack's bottom whose slots are released already.
    released: usize,
    /// When the next round starts.
    due_ms: u64,
}

impl GiveBack {
    /// Rounds every `period_ms`; `free` entries are on the stack at start (none touched).
    pub(super) fn new(period_ms: u64, free: usize, now_ms: u64) -> GiveBack {
        GiveBack {
            period_ms,
            low: free,
            released: free,
            due_ms: now_ms + period_ms,
        }
    }

    /// A slot was taken from the stack, which is now `len` entries high.
    #[inline]
    pub(super) fn taken(&mut self, len: usize) {
        self.low = self.low.min(len);
        self.released = self.released.min(len);
    }

    /// Entries at the stack's bottom whose slots are released.
    pub(super) fn released(&self) -> usize {
        self.released
    }

    /// The stack lost `released` of its released entries and is now `len` high (the
    /// table shrank: its top slots left the stack), right after a round ended.
    pub(crate) fn shrunk(&mut self, released: usize, len: usize) {
        self.released -= released.min(self.released);
        self.low = len;
    }

    /// When due, hands `release` the runs `(first slot, count)` of cold entries of `free`
    /// not yet released (at most [`BATCH`] entries this call). True when a round ended.
    pub(super) fn run(
        &mut self,
        now_ms: u64,
        free: &[u32],
        mut release: impl FnMut(u32, u32),
    ) -> bool {
        if now_ms < self.due_ms {
            return false;
        }
        let cold = self.low.min(free.len());
        let stop = cold.min(self.released + BATCH);
        let mut run: Option<(u32, u32)> = None;
        for &slot in free.get(self.released..stop).unwrap_or(&[]) {
            run = match run {
                Some((first, n)) if slot == first + n => Some((first, n + 1)),
                Some((first, n)) if slot + 1 == first => Some((slot, n + 1)),
                Some((first, n)) => {
                    release(first, n);
                    Some((slot, 1))
                }
                None => Some((slot, 1)),
            };
        }
        if let Some((first, n)) = run {
            release(first, n);
        }
        self.released = self.released.max(stop);
        if stop < cold {
            return false; // more next call
        }
        self.low = free.len();
        self.due_ms = now_ms + self.period_ms;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(g: &mut GiveBack, now: u64, free: &[u32]) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        g.run(now, free, |first, n| out.push((first, n)));
        out
    }

    #[test]
    fn a_slot_freed_for_a_whole_period_is_released_once_in_adjacent_runs() {
        let mut free: Vec<u32> = Vec::new();
        let mut g = GiveBack::new(10, 0, 0);
        // A spike: slots 0..6 are taken (the stack was empty), then freed in this order.
        free.extend([0, 1, 2, 5, 4, 9]);
        assert_eq!(round(&mut g, 5, &free), [], "not due yet");
        assert_eq!(
            round(&mut g, 10, &free),
            [],
            "freed during the round: not cold yet"
        );
        assert_eq!(round(&mut g, 20, &free), [(0, 3), (4, 2), (9, 1)]);
        assert_eq!(round(&mut g, 30, &free), [], "released once");
    }

    #[test]
    fn a_slot_reused_during_the_period_is_kept() {
        let mut free: Vec<u32> = vec![3, 2, 1, 0];
        let mut g = GiveBack::new(10, 0, 0);
        let _ = round(&mut g, 10, &free); // the round begins with 4 free entries
        free.pop();
        g.taken(free.len());
        free.push(0); // slot 0 taken and freed again within the round
        assert_eq!(
            round(&mut g, 20, &free),
            [(1, 3)],
            "only the untouched bottom"
        );
        assert_eq!(round(&mut g, 30, &free), [(0, 1)], "slot 0 a round later");
        free.truncate(1);
        g.taken(1);
        free.push(2); // slot 2 reused: released again only once cold again
        assert_eq!(round(&mut g, 40, &free), []);
        assert_eq!(round(&mut g, 50, &free), [(2, 1)]);
    }

    #[test]
    fn a_large_spike_is_released_over_several_turns() {
        let free: Vec<u32> = (0..(BATCH as u32 * 2 + 5)).map(|i| i * 2).collect();
        let mut g = GiveBack::new(10, 0, 0);
        let _ = round(&mut g, 10, &free);
        assert_eq!(round(&mut g, 20, &free).len(), BATCH);
        assert_eq!(
            round(&mut g, 20, &free).len(),
            BATCH,
            "the next turn goes on"
        );
        assert_eq!(round(&mut g, 21, &free).len(), 5);
        assert_eq!(
            round(&mut g, 22, &free),
            [],
            "the next round is a period later"
        );
    }
}
