//! One loop's credential check: the remembered verdicts first, then the budget, then
//! the hash.
//!
//! Input: the request's `Authorization` value (if any), its client address, the loop's
//! clock, a decode buffer. Output: a [`Verdict`]. The order is the point:
//!
//! 1. no field: challenge (`missing`);
//! 2. a value seen before: its verdict, at the cost of one SipHash;
//! 3. not `Basic` base64 of `user:password`: challenge (`malformed`), no hash;
//! 4. the budget (`budget.rs`) refuses: limited (429, `rate_limited`), no hash;
//! 5. the hash check, timed and charged to the budget; its verdict is remembered.
//!
//! Wrong credentials are remembered too, so a client repeating a stale password costs
//! no more hashes; different wrong passwords each meet the budget.

use super::basic::{self, DECODED_MAX};
use super::budget::{Budget, Grant, Limits};
use super::htpasswd::{Checked, Credentials};
use super::remember::Memory;
use super::Reason;
use crate::client_addr::AddrKey;
use rustix::time::{clock_gettime, ClockId};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

/// What to answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Serve the request.
    Pass,
    /// 401 with the challenge, for this reason.
    Challenge(Reason),
    /// 429: try again after this many seconds.
    Limited {
        /// For `Retry-After`.
        retry_after: u32,
    },
}

/// Each host's `--basic-auth` users, host 0 first (`None`: a host without the flag);
/// hosts naming one file share its users.
pub type HostUsers = Vec<Option<Arc<Credentials>>>;

/// The per-loop state of `--basic-auth`.
#[derive(Debug)]
pub(crate) struct Gate {
    users: HostUsers,
    memory: Memory,
    budget: Budget,
    decoded: Box<[u8; DECODED_MAX]>,
}

impl Gate {
    /// A gate for each host's `users` with empty memory and full budgets of `limits`;
    /// `key` (random per loop) keys the remembered tags, `seed` the budget's address table.
    pub(crate) fn new(users: HostUsers, limits: Limits, key: [u8; 16], now_ms: u64) -> Gate {
        // The address table's hash multiplier, from the same random key.
        let seed = crate::crypt::siphash::sip64(&key, b"budget table");
        Gate {
            users,
            memory: Memory::new(key),
            budget: Budget::new(limits, seed, now_ms),
            decoded: Box::new([0; DECODED_MAX]),
        }
    }

    /// The verdict for a request to `host` with `authorization` from `client` (asked
    /// only when a hash check is due) at `now_ms`. A verdict is remembered per host, so
    /// one host's users never pass another's check.
    pub(crate) fn check(
        &mut self,
        host: u16,
        authorization: Option<&[u8]>,
        client: impl FnOnce() -> Option<IpAddr>,
        now_ms: u64,
    ) -> Verdict {
        let Some(value) = authorization else {
            return Verdict::Challenge(Reason::Missing);
        };
        let Some(users) = self.users.get(usize::from(host)).and_then(Option::as_ref) else {
            return Verdict::Challenge(Reason::Missing);
        };
        let tag = self.memory.tag(value, host);
        if let Some(checked) = self.memory.recall(tag) {
            return verdict(checked);
        }
        let Some((user, password)) = basic::decode(value, &mut self.decoded) else {
            return Verdict::Challenge(Reason::Malformed);
        };
        let addr = AddrKey::of(client().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)));
        if let Grant::No { retry_after } = self.budget.ask(addr, now_ms) {
            return Verdict::Limited { retry_after };
        }
        let started = micros();
        let checked = users.check(user, password);
        self.budget.spent(micros().saturating_sub(started));
        self.memory.keep(tag, checked);
        verdict(checked)
    }
}

fn verdict(checked: Checked) -> Verdict {
    match checked {
        Checked::Valid => Verdict::Pass,
        Checked::UnknownUser | Checked::WrongPassword => {
            Verdict::Challenge(Reason::WrongCredentials)
        }
    }
}

/// The monotonic clock in microseconds.
fn micros() -> u64 {
    let t = clock_gettime(ClockId::Monotonic);
    (t.tv_sec as u64) * 1_000_000 + (t.tv_nsec as u64) / 1000
}

/// A key for a loop's remembered tags: 16 random bytes from `getrandom(2)`.
pub(crate) fn random_key() -> std::io::Result<[u8; 16]> {
    let mut key = [0u8; 16];
    let mut filled = 0;
    while filled < key.len() {
        let n = rustix::rand::getrandom(&mut key[filled..], rustix::rand::GetRandomFlags::empty())?;
        filled += n;
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// "U*U" under bcrypt cost 5.
    const FILE: &[u8] = b"bob:$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW\n";

    /// A gate whose loop ceiling a debug build's slow hashes never reach.
    fn gate() -> Gate {
        let c = Credentials::parse(FILE, random_key().unwrap()).unwrap();
        let limits = Limits {
            ceiling_burst_ms: 60_000,
            ..Limits::SERVING
        };
        Gate::new(vec![Some(Arc::new(c))], limits, random_key().unwrap(), 0)
    }

    fn basic(user_pass: &str) -> Vec<u8> {
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = b"Basic ".to_vec();
        for chunk in user_pass.as_bytes().chunks(3) {
            let mut w = [0u8; 3];
            w[..chunk.len()].copy_from_slice(chunk);
            let n = (u32::from(w[0]) << 16) | (u32::from(w[1]) << 8) | u32::from(w[2]);
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(alphabet[((n >> (18 - 6 * i)) & 63) as usize]);
                } else {
                    out.push(b'=');
                }
            }
        }
        out
    }

    const ONE: Option<IpAddr> = Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)));
    const TWO: Option<IpAddr> = Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3)));

    #[test]
    fn verdicts_in_order() {
        let mut g = gate();
        assert_eq!(
            g.check(0, None, || ONE, 0),
            Verdict::Challenge(Reason::Missing)
        );
        assert_eq!(
            g.check(0, Some(b"Bearer x"), || ONE, 0),
            Verdict::Challenge(Reason::Malformed)
        );
        let good = basic("bob:U*U");
        assert_eq!(g.check(0, Some(&good), || ONE, 0), Verdict::Pass);
        assert_eq!(
            g.check(0, Some(&basic("bob:nope")), || ONE, 0),
            Verdict::Challenge(Reason::WrongCredentials)
        );
        assert_eq!(
            g.check(0, Some(&basic("eve:U*U")), || ONE, 0),
            Verdict::Challenge(Reason::WrongCredentials)
        );
    }

    #[test]
    fn a_guesser_is_limited_and_others_are_not() {
        let mut g = gate();
        let good = basic("bob:U*U");
        assert_eq!(g.check(0, Some(&good), || TWO, 0), Verdict::Pass);
        for i in 0..Limits::SERVING.addr_burst {
            let guess = basic(&format!("bob:guess{i}"));
            assert_eq!(
                g.check(0, Some(&guess), || ONE, 0),
                Verdict::Challenge(Reason::WrongCredentials)
            );
        }
        let guess = basic("bob:one more");
        assert_eq!(
            g.check(0, Some(&guess), || ONE, 0),
            Verdict::Limited { retry_after: 1 }
        );
        // A guess already made is answered from memory, budget or not.
        assert_eq!(
            g.check(0, Some(&basic("bob:guess0")), || ONE, 0),
            Verdict::Challenge(Reason::WrongCredentials)
        );
        // The other address's remembered login is untouched, and so is its allowance.
        assert_eq!(g.check(0, Some(&good), || TWO, 0), Verdict::Pass);
        assert_eq!(
            g.check(0, Some(&basic("bob:typo")), || TWO, 0),
            Verdict::Challenge(Reason::WrongCredentials)
        );
    }
}
