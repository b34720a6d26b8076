//! `--rate-limit N`: one token bucket per client address (an [`AddrKey`]: IPv4 /32,
//! IPv6 /64), N tokens a second, at most N held (the burst), one taken per request.
//!
//! Input: the client's key, the rate of the site that answers, the loop's clock in
//! milliseconds. Output: go on, or how many seconds until a token is there (the
//! `Retry-After` of the 429 the responder sends). Fixed memory: [`ENTRIES`] buckets
//! allocated once per worker (with the flag only), nothing per request.
//!
//! The table is open-addressed with a probe of [`PROBE`] entries from the key's home
//! (hashed with a per-loop random multiplier, so no client can aim its addresses at one
//! home). A bucket that has refilled to N holds nothing a fresh one would not: it is
//! free for another address. When every bucket of a probe window is in use and not
//! refilled (the table is full there), the new address is not given one: it draws from
//! one **overflow bucket** shared by every such address, at the same rate. So a flood
//! of addresses can neither push a limited client out (its bucket is never taken while
//! it is below N, so it cannot come back with a full one for free) nor grow memory; what
//! it costs is that, while the table is full, new addresses share N requests a second
//! per worker between them.

use super::AddrKey;

/// Buckets per worker (32 bytes each: 128 KiB).
pub(crate) const ENTRIES: usize = 4096;
/// `ENTRIES` is `1 << HOME_BITS`.
const HOME_BITS: u32 = ENTRIES.trailing_zeros();
/// Buckets looked at from a key's home.
pub(crate) const PROBE: usize = 8;

/// One address's tokens, in token-milliseconds (a token is 1000), as of `at_ms`.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    key: AddrKey,
    live: bool,
    credit: u64,
    at_ms: u64,
}

impl Bucket {
    const FREE: Bucket = Bucket {
        key: AddrKey::UNSPECIFIED,
        live: false,
        credit: 0,
        at_ms: 0,
    };

    /// The credit now at `per_sec` tokens a second, capped at the burst.
    fn refill(&mut self, per_sec: u32, now_ms: u64) {
        let full = u64::from(per_sec) * 1000;
        let gained = now_ms
            .saturating_sub(self.at_ms)
            .saturating_mul(u64::from(per_sec));
        self.credit = self.credit.saturating_add(gained).min(full);
        self.at_ms = now_ms;
    }

    /// Takes a token, or says in how many seconds one will be there.
    fn take(&mut self, per_sec: u32, now_ms: u64) -> Result<(), u32> {
        self.refill(per_sec, now_ms);
        if self.credit >= 1000 {
            self.credit -= 1000;
            return Ok(());
        }
        let wait_ms = (1000 - self.credit).div_ceil(u64::from(per_sec).max(1));
        Err(wait_ms.div_ceil(1000).max(1) as u32)
    }

    /// Free for another address: never used, or refilled to the burst by now.
    fn reusable(&self, per_sec: u32, now_ms: u64) -> bool {
        let full = u64::from(per_sec) * 1000;
        let gained = now_ms
            .saturating_sub(self.at_ms)
            .saturating_mul(u64::from(per_sec));
        !self.live || self.credit.saturating_add(gained) >= full
    }
}

/// One worker's buckets.
pub(crate) struct RateTable {
    buckets: Box<[Bucket]>,
    overflow: Bucket,
    mult: u64,
}

impl RateTable {
    /// An empty table hashing with `seed` (made odd).
    pub(crate) fn new(seed: u64) -> RateTable {
        RateTable {
            buckets: vec![Bucket::FREE; ENTRIES].into_boxed_slice(),
            overflow: Bucket {
                live: true,
                ..Bucket::FREE
            },
            mult: seed | 1,
        }
    }

    /// Takes a token from `key`'s bucket at `per_sec`; `Err(seconds)` when there is none.
    #[cfg(test)]
    pub(crate) fn take(&mut self, key: AddrKey, per_sec: u32, now_ms: u64) -> Result<(), u32> {
        let mut at = NO_BUCKET;
        self.take_at(key, &mut at, per_sec, now_ms)
    }

    /// Takes a token from `key`'s bucket at `per_sec`; `Err(seconds)` when there is none.
    /// `at`: the bucket a connection's previous request took from ([`NO_BUCKET`]: none),
    /// updated here. While that bucket is still `key`'s it is the one the probe would
    /// find (a key has one bucket, in its own probe window), so a connection's next
    /// request is one compare of the key, no hash and no probe.
    #[inline]
    pub(crate) fn take_at(
        &mut self,
        key: AddrKey,
        at: &mut u16,
        per_sec: u32,
        now_ms: u64,
    ) -> Result<(), u32> {
        if let Some(b) = self.buckets.get_mut(usize::from(*at)) {
            if b.live && b.key == key {
                return b.take(per_sec, now_ms);
            }
        }
        let (found, taken) = self.probe(key, per_sec, now_ms);
        *at = found;
        taken
    }

    /// The probe from `key`'s home: its bucket, a free one for it, or the overflow
    /// ([`NO_BUCKET`]); and the token taken from it.
    fn probe(&mut self, key: AddrKey, per_sec: u32, now_ms: u64) -> (u16, Result<(), u32>) {
        // The product's top bits: they depend on every bit of the key.
        let home = (key.hash_word().wrapping_mul(self.mult) >> (64 - HOME_BITS)) as usize;
        let mut free = None;
        for i in 0..PROBE {
            let at = (home + i) % ENTRIES;
            let b = &self.buckets[at];
            if b.live && b.key == key {
                return (at as u16, self.buckets[at].take(per_sec, now_ms));
            }
            if free.is_none() && b.reusable(per_sec, now_ms) {
                free = Some(at);
            }
        }
        let Some(at) = free else {
            return (NO_BUCKET, self.overflow.take(per_sec, now_ms));
        };
        self.buckets[at] = Bucket {
            key,
            live: true,
            credit: u64::from(per_sec) * 1000,
            at_ms: now_ms,
        };
        (at as u16, self.buckets[at].take(per_sec, now_ms))
    }
}

/// No bucket of the table (the overflow's, or none yet): past every index.
pub(crate) const NO_BUCKET: u16 = u16::MAX;
const _: () = assert!(ENTRIES < NO_BUCKET as usize);

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    /// A multiplier as `serve_loop` seeds one: odd, its bits spread.
    const SEED: u64 = 0x9E37_79B9_7F4A_7C15;

    fn key(s: &str) -> AddrKey {
        AddrKey::of(s.parse::<IpAddr>().unwrap())
    }

    #[test]
    fn a_burst_then_the_refill() {
        let mut t = RateTable::new(SEED);
        let a = key("192.0.2.1");
        for _ in 0..5 {
            assert_eq!(t.take(a, 5, 10_000), Ok(()));
        }
        assert_eq!(t.take(a, 5, 10_000), Err(1));
        assert_eq!(
            t.take(key("192.0.2.2"), 5, 10_000),
            Ok(()),
            "another address"
        );
        assert_eq!(t.take(a, 5, 10_100), Err(1), "half a token");
        assert_eq!(t.take(a, 5, 10_200), Ok(()), "one token in 200 ms");
        assert_eq!(t.take(a, 5, 10_200), Err(1));
        let mut slow = RateTable::new(SEED);
        assert_eq!(slow.take(a, 1, 0), Ok(()));
        assert_eq!(slow.take(a, 1, 1), Err(1));
    }

    #[test]
    fn an_ipv6_slash_64_is_one_client() {
        let mut t = RateTable::new(SEED);
        assert_eq!(t.take(key("2001:db8::1"), 1, 5000), Ok(()));
        assert_eq!(t.take(key("2001:db8::ffff"), 1, 5000), Err(1));
        assert_eq!(t.take(key("2001:db8:0:1::1"), 1, 5000), Ok(()));
    }

    #[test]
    fn a_flood_of_addresses_neither_resets_a_limited_client_nor_grows() {
        let mut t = RateTable::new(SEED);
        let limited = key("198.51.100.7");
        for _ in 0..3 {
            assert!(t.take(limited, 3, 1000).is_ok());
        }
        for i in 0..100_000u32 {
            let ip = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            let _ = t.take(AddrKey::of(ip), 3, 1000);
        }
        assert_eq!(t.take(limited, 3, 1000), Err(1), "still limited");
        assert_eq!(t.buckets.len(), ENTRIES);
        let stranger = key("203.0.113.200");
        assert!(t.take(stranger, 3, 1000).is_err(), "the overflow is spent");
        assert_eq!(
            t.take(stranger, 3, 3000),
            Ok(()),
            "refilled buckets are free again"
        );
    }

    /// A connection's remembered bucket, once refilled and taken by another address
    /// (here by a wave of
    /// addresses that fills most of the table), is not used for it: its next request is probed again, gets
    /// what a twin table without memory gives, and remembers a bucket of its own (or
    /// none: the overflow).
    #[test]
    fn a_remembered_bucket_taken_by_another_address_is_probed_again() {
        let (mut fast, mut probed) = (RateTable::new(SEED), RateTable::new(SEED));
        let conns = ["192.0.2.1", "192.0.2.2", "2001:db8::1", "198.51.100.9"].map(key);
        let mut at = [NO_BUCKET; 4];
        let mut taken_over = 0;
        for (round, now) in [0, 2000, 4000, 6000].into_iter().enumerate() {
            for i in 0..3000u32 {
                let n = 0x0a00_0000 + round as u32 * 0x1_0000 + i;
                let ip = AddrKey::of(IpAddr::from(std::net::Ipv4Addr::from(n)));
                assert_eq!(fast.take(ip, 1, now), probed.take(ip, 1, now));
            }
            for (c, &k) in conns.iter().enumerate() {
                let before = at[c];
                assert_eq!(
                    fast.take_at(k, &mut at[c], 1, now + 1),
                    probed.take(k, 1, now + 1)
                );
                let holds = fast.buckets.get(usize::from(at[c])).map(|b| b.key);
                assert!(
                    holds.is_none_or(|h| h == k),
                    "round {round}, connection {c}"
                );
                taken_over += usize::from(before != NO_BUCKET && before != at[c]);
            }
        }
        assert!(taken_over > 0, "no remembered bucket was taken over");
    }
}
