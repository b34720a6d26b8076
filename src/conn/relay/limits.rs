//! What bounds an exchange in time and number: its deadline (`--proxy-timeout` without
//! progress, checked by the once-a-second sweep) and the count of exchanges in flight to
//! each upstream (`--proxy-max-conns`, 503 past it). Idle pooled connections are not
//! counted here: the pool bounds them (`pool.rs`).
//!
//! Input: the turn clock and the exchange's slot or upstream key. Output: the deadline's
//! state, whether an exchange is admitted. No I/O.

use super::Relays;

impl Relays {
    /// (Re-)arms the deadline of `slot`'s exchange: `--proxy-timeout` from `now_ms`.
    pub(crate) fn arm(&mut self, slot: u32, now_ms: u64) {
        let timeout = self.timeout_ms;
        if let Some(x) = self.exchange(slot) {
            x.deadline_ms = now_ms + timeout;
        }
    }

    /// Whether `slot`'s exchange just passed its deadline (armed, not yet timed out): it
    /// is marked timed out (504 without a head, else its end) and its slot must be driven.
    pub(crate) fn expire(&mut self, slot: u32, now_ms: u64) -> bool {
        let Some(x) = self.exchange(slot) else {
            return false;
        };
        let due = x.deadline_ms != 0 && now_ms >= x.deadline_ms && !x.timed_out;
        x.timed_out |= due;
        due
    }

    /// Stops `slot`'s deadline: the client is the one being waited for (its send timeout
    /// runs instead).
    pub(crate) fn disarm(&mut self, slot: u32) {
        if let Some(x) = self.exchange(slot) {
            x.deadline_ms = 0;
        }
    }

    /// Whether `slot`'s exchange has a deadline armed.
    pub(crate) fn armed(&mut self, slot: u32) -> bool {
        self.exchange(slot).is_some_and(|x| x.deadline_ms != 0)
    }

    /// Counts an exchange in to the upstream `key`; `false` when it has `limit` already.
    pub(super) fn admit(&mut self, key: usize) -> bool {
        let at = match self.in_flight.iter().position(|e| e.0 == key) {
            Some(i) => i,
            None => {
                self.in_flight.push((key, 0));
                self.in_flight.len() - 1
            }
        };
        let count = &mut self.in_flight[at].1;
        let admitted = *count < self.limit;
        *count += u32::from(admitted);
        admitted
    }

    /// Counts an exchange out of the upstream `key` (0: none was counted).
    pub(super) fn leave(&mut self, key: usize) {
        if let Some(e) = self.in_flight.iter_mut().find(|e| e.0 == key && key != 0) {
            e.1 = e.1.saturating_sub(1);
        }
    }
}
