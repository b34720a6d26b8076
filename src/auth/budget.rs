//! How many hash checks may start: a per-address allowance and a ceiling for the loop.
//!
//! Input: the client's [`AddrKey`], the loop's clock, and the time each check took.
//! Output: a [`Grant`]: go ahead, or wait this many seconds (the 429's `Retry-After`).
//!
//! Why: a hash check of credentials not remembered costs milliseconds (bcrypt cost 10 is
//! about 80 ms of one core), and a loop is one thread: without a limit, one client
//! sending wrong passwords as fast as it can would hold the worker and every other
//! client would wait. Two token buckets:
//!
//! - per address: 5 checks at once, refilled at 2 a second (a person mistyping a
//!   password never meets it; a password guesser gets a few guesses a second);
//! - per loop: at most 250 ms of hash checks a second, at most 100 ms in a row (many
//!   addresses at once, a botnet): a worker spends at most a quarter of its time on
//!   checks, and never holds other clients for much more than 100 ms. It is charged
//!   with the time each check really took, so it holds whatever the hashes' cost; a
//!   check starts while the bucket is positive, and may take it below zero by one check.
//!
//! Remembered credentials (`remember.rs`) cost nothing here: a client that logged in
//! keeps being served whoever spends the budget. Addresses live in a fixed table of
//! [`SETS`] × [`WAYS`] entries hashed with a random multiplier; a full set forgets the
//! entry with the most tokens (the one closest to a fresh address). No allocation
//! after [`Budget::new`].

use crate::client_addr::AddrKey;

/// The sizes of the two buckets ([`Limits::SERVING`] in the server; tests change them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Checks an address may start at once.
    pub(crate) addr_burst: u64,
    /// Checks an address's allowance regains each second.
    pub(crate) addr_per_sec: u64,
    /// Milliseconds of checking a loop may do each second.
    pub(crate) ceiling_ms_per_sec: u64,
    /// Milliseconds of checking a loop may do in a row.
    pub(crate) ceiling_burst_ms: u64,
}

impl Limits {
    /// What the server uses.
    pub(crate) const SERVING: Limits = Limits {
        addr_burst: 5,
        addr_per_sec: 2,
        ceiling_ms_per_sec: 250,
        ceiling_burst_ms: 100,
    };
}

/// Sets of the address table (a power of two).
pub(crate) const SETS: usize = 128;
/// Addresses a set holds.
pub(crate) const WAYS: usize = 4;

/// One check in thousandths (the address buckets count thousandths of a check, so a
/// millisecond's refill is an integer).
const CHECK: u64 = 1000;

/// Whether a check may start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Grant {
    /// Start it.
    Yes,
    /// Not now: the client may try again after this many seconds.
    No {
        /// For `Retry-After`.
        retry_after: u32,
    },
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    key: AddrKey,
    /// Thousandths of a check (full: `addr_burst * CHECK`).
    level: u64,
    at_ms: u64,
    used: bool,
}

const EMPTY: Bucket = Bucket {
    key: AddrKey::UNSPECIFIED,
    level: 0,
    at_ms: 0,
    used: false,
};

/// The budgets of one loop.
#[derive(Debug)]
pub(crate) struct Budget {
    limits: Limits,
    addrs: Box<[Bucket]>,
    mult: u64,
    /// Microseconds of checking the loop may still do (may be below zero by a check).
    ceiling_us: i64,
    ceiling_at_ms: u64,
}

impl Budget {
    /// Full budgets of `limits` at `now_ms`; `seed` randomises the address table's hash.
    pub(crate) fn new(limits: Limits, seed: u64, now_ms: u64) -> Budget {
        Budget {
            limits,
            addrs: vec![EMPTY; SETS * WAYS].into_boxed_slice(),
            mult: seed | 1,
            ceiling_us: (limits.ceiling_burst_ms * 1000) as i64,
            ceiling_at_ms: now_ms,
        }
    }

    /// Asks to start one check for `addr` at `now_ms`: granted, it is taken from the
    /// address's allowance; refused, nothing is taken.
    pub(crate) fn ask(&mut self, addr: AddrKey, now_ms: u64) -> Grant {
        self.refill_ceiling(now_ms);
        if self.ceiling_us <= 0 {
            return Grant::No { retry_after: 1 };
        }
        let rate = self.limits.addr_per_sec.max(1);
        let b = self.bucket(addr, now_ms);
        if b.level >= CHECK {
            b.level -= CHECK;
            return Grant::Yes;
        }
        let wait_ms = (CHECK - b.level).div_ceil(rate);
        Grant::No {
            retry_after: wait_ms.div_ceil(1000).max(1) as u32,
        }
    }

    /// Charges the loop's ceiling with a check that took `us` microseconds.
    pub(crate) fn spent(&mut self, us: u64) {
        self.ceiling_us = self
            .ceiling_us
            .saturating_sub(us.min(i64::MAX as u64) as i64);
    }

    fn refill_ceiling(&mut self, now_ms: u64) {
        let ms = now_ms.saturating_sub(self.ceiling_at_ms);
        self.ceiling_at_ms = self.ceiling_at_ms.max(now_ms);
        let gained = (ms.saturating_mul(self.limits.ceiling_ms_per_sec)).min(1 << 40) as i64;
        let full = (self.limits.ceiling_burst_ms * 1000) as i64;
        self.ceiling_us = (self.ceiling_us + gained).min(full);
    }

    /// The address's bucket, refilled to `now_ms` (a fresh one is full).
    fn bucket(&mut self, key: AddrKey, now_ms: u64) -> &mut Bucket {
        let set = (key.hash_word().wrapping_mul(self.mult) >> 32) as usize & (SETS - 1);
        let ways = &mut self.addrs[set * WAYS..(set + 1) * WAYS];
        let (full, rate) = (self.limits.addr_burst * CHECK, self.limits.addr_per_sec);
        for b in ways.iter_mut().filter(|b| b.used) {
            let gained = now_ms.saturating_sub(b.at_ms).saturating_mul(rate);
            b.level = b.level.saturating_add(gained).min(full);
            b.at_ms = b.at_ms.max(now_ms);
        }
        let at = match ways.iter().position(|b| b.used && b.key == key) {
            Some(i) => i,
            None => {
                let i = (0..WAYS)
                    .max_by_key(|&i| {
                        if ways[i].used {
                            ways[i].level
                        } else {
                            u64::MAX
                        }
                    })
                    .unwrap_or(0);
                ways[i] = Bucket {
                    key,
                    level: full,
                    at_ms: now_ms,
                    used: true,
                };
                i
            }
        };
        &mut ways[at]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    fn addr(s: &str) -> AddrKey {
        AddrKey::of(s.parse::<IpAddr>().unwrap())
    }

    #[test]
    fn an_address_gets_its_burst_then_its_rate() {
        let mut b = Budget::new(Limits::SERVING, 12345, 0);
        let a = addr("127.0.0.2");
        let burst = Limits::SERVING.addr_burst;
        for _ in 0..burst {
            assert_eq!(b.ask(a, 0), Grant::Yes);
        }
        assert_eq!(b.ask(a, 0), Grant::No { retry_after: 1 });
        assert_eq!(
            b.ask(addr("127.0.0.3"), 0),
            Grant::Yes,
            "others are not held"
        );
        assert_eq!(b.ask(a, 499), Grant::No { retry_after: 1 });
        assert_eq!(b.ask(a, 500), Grant::Yes, "one more after half a second");
        assert_eq!(b.ask(a, 500), Grant::No { retry_after: 1 });
        // A long pause refills to the burst, no further.
        for _ in 0..burst {
            assert_eq!(b.ask(a, 600_000), Grant::Yes);
        }
        assert!(matches!(b.ask(a, 600_000), Grant::No { .. }));
    }

    #[test]
    fn an_ipv6_prefix_does_not_spend_the_ipv4_address_of_its_number() {
        let mut b = Budget::new(Limits::SERVING, 7, 0);
        let v4 = addr("127.0.0.2");
        for _ in 0..Limits::SERVING.addr_burst {
            assert_eq!(b.ask(v4, 0), Grant::Yes);
        }
        assert!(matches!(b.ask(v4, 0), Grant::No { .. }));
        assert_eq!(b.ask(addr("0:0:7f00:2::1"), 0), Grant::Yes);
        assert_eq!(
            core::mem::size_of::<Bucket>(),
            32,
            "the key did not grow a bucket"
        );
    }

    #[test]
    fn the_ceiling_follows_the_time_checks_took() {
        let mut b = Budget::new(Limits::SERVING, 1, 0);
        let mut n = 0;
        // Checks of 30 ms each from ever new addresses: the burst allows four (100 ms,
        // the last taking it below zero), then one each 120 ms at 250 ms/s.
        while b.ask(AddrKey::of(IpAddr::from([10, 0, 0, n])), 0) == Grant::Yes {
            b.spent(30_000);
            n += 1;
        }
        assert_eq!(n, 4);
        assert!(matches!(
            b.ask(addr("10.1.0.1"), 0),
            Grant::No { retry_after: 1 }
        ));
        assert!(matches!(b.ask(addr("10.1.0.1"), 79), Grant::No { .. }));
        assert_eq!(b.ask(addr("10.1.0.1"), 81), Grant::Yes);
    }

    #[test]
    fn the_table_keeps_busy_addresses_and_forgets_full_ones() {
        let mut b = Budget::new(Limits::SERVING, 99, 0);
        let flooder = addr("192.0.2.1");
        for _ in 0..Limits::SERVING.addr_burst {
            b.ask(flooder, 0);
        }
        // Thousands of one-off addresses (each keeps a full-but-one bucket) pass through.
        for i in 0..5000u32 {
            b.ask(AddrKey::of(IpAddr::from(i.to_be_bytes())), 1);
        }
        // Entries are replaced by most tokens first: the flooder's empty bucket is the
        // last to go in its set, so it is still held.
        assert!(matches!(b.ask(flooder, 2), Grant::No { .. }));
    }
}
