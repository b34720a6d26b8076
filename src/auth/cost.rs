//! What one check of a stored hash costs, named by the hash's own parameter, and the
//! most an htpasswd file may ask for.
//!
//! Input: a hash the file's parser accepted (`htpasswd.rs`). Output: its [`Cost`] and
//! whether it is within the limit. Nothing here times anything.
//!
//! Why a limit: a worker is one thread and a hash check runs on it, so nothing else on
//! that loop moves until the check ends. The budget (`budget.rs`) keeps a loop's hashing
//! to 100 ms in a row, but it can only refuse to start a check, never cut one short: one
//! check must fit well inside that by itself, on hardware slower than ours too. The
//! limit is set on the parameter (bcrypt's cost, SHA-crypt's rounds), not found by
//! timing a check at start: a timing is noisy and would let the same file start one day
//! and be refused the next. What a check costs at the limit on one machine is in
//! `docs/serving.md`, with the command that measures it (`cargo bench --bench
//! hash_check`).

use crate::crypt::sha_crypt::Variant;

/// The highest bcrypt cost accepted (2^7 rounds of the key schedule).
pub const BCRYPT_COST_MAX: u32 = 7;

/// The most SHA-crypt rounds accepted (twice crypt's default, 5000).
pub const SHA_CRYPT_ROUNDS_MAX: u32 = 10_000;

/// The work one check of a hash takes, as its parameter says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Cost {
    /// bcrypt at this cost (log2 of the key schedule's rounds).
    Bcrypt(u32),
    /// SHA-256-crypt (`$5$`) with this many rounds.
    Sha256Crypt(u32),
    /// SHA-512-crypt (`$6$`) with this many rounds.
    Sha512Crypt(u32),
}

impl Cost {
    /// SHA-crypt of `variant` with `rounds`.
    pub(crate) fn sha_crypt(variant: Variant, rounds: u32) -> Cost {
        match variant {
            Variant::Sha256 => Cost::Sha256Crypt(rounds),
            Variant::Sha512 => Cost::Sha512Crypt(rounds),
        }
    }

    /// The same scheme at the most a file may ask for.
    pub(crate) fn limit(self) -> Cost {
        match self {
            Cost::Bcrypt(_) => Cost::Bcrypt(BCRYPT_COST_MAX),
            Cost::Sha256Crypt(_) => Cost::Sha256Crypt(SHA_CRYPT_ROUNDS_MAX),
            Cost::Sha512Crypt(_) => Cost::Sha512Crypt(SHA_CRYPT_ROUNDS_MAX),
        }
    }

    /// True when a check at this cost may run on a worker's thread.
    pub(crate) fn within_limit(self) -> bool {
        self.parameter() <= self.limit().parameter()
    }

    /// The cost or the rounds.
    fn parameter(self) -> u32 {
        match self {
            Cost::Bcrypt(n) | Cost::Sha256Crypt(n) | Cost::Sha512Crypt(n) => n,
        }
    }

    /// How to make a hash of this scheme within the limit.
    pub(crate) fn advice(self) -> &'static str {
        match self {
            Cost::Bcrypt(_) => "htpasswd -B hashes at cost 5 (-C 5)",
            Cost::Sha256Crypt(_) | Cost::Sha512Crypt(_) => {
                "mkpasswd -m sha-512 and openssl passwd -6 hash with 5000 rounds unless told more"
            }
        }
    }
}

impl core::fmt::Display for Cost {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Cost::Bcrypt(n) => write!(f, "bcrypt cost {n}"),
            Cost::Sha256Crypt(n) => write!(f, "SHA-256-crypt rounds={n}"),
            Cost::Sha512Crypt(n) => write!(f, "SHA-512-crypt rounds={n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_per_scheme_and_inclusive() {
        for (cost, within) in [
            (Cost::Bcrypt(4), true),
            (Cost::Bcrypt(BCRYPT_COST_MAX), true),
            (Cost::Bcrypt(BCRYPT_COST_MAX + 1), false),
            (Cost::Bcrypt(14), false),
            (Cost::Sha256Crypt(5000), true),
            (Cost::Sha512Crypt(SHA_CRYPT_ROUNDS_MAX), true),
            (Cost::Sha256Crypt(SHA_CRYPT_ROUNDS_MAX + 1), false),
            (Cost::Sha512Crypt(1_000_000), false),
        ] {
            assert_eq!(cost.within_limit(), within, "{cost}");
        }
        assert_eq!(Cost::Bcrypt(12).limit().to_string(), "bcrypt cost 7");
        assert_eq!(
            Cost::Sha512Crypt(1_000_000).limit().to_string(),
            "SHA-512-crypt rounds=10000"
        );
    }
}
