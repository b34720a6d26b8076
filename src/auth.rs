//! `--basic-auth FILE`: who may read the site, and what checking it may cost.
//!
//! Stage: the serving runtime, beside `client_addr` (which it takes its per-address key
//! from); the connection consults a per-loop [`Gate`] before any file is looked up.
//! Input: the htpasswd file's text (read at start and at every HUP by the master,
//! `preflight::credentials`), each request's `Authorization` value and client address.
//! Output: a [`Verdict`]: pass, challenge (401, with the [`Reason`] counted in the
//! metrics) or limited (429 with `Retry-After`). Nothing here reads a socket or a file,
//! and checking a request allocates nothing.
//!
//! - [`htpasswd`]: the file, validated once: `user:hash` lines with bcrypt or SHA-crypt
//!   hashes, everything else refused with its line number;
//! - [`cost`]: what one check of a hash costs, by its parameter, and the most accepted;
//! - [`basic`]: the `Authorization: Basic` value decoded (RFC 7617);
//! - [`remember`]: verdicts already reached, named by a keyed hash of the header value
//!   (never the password), so a kept-alive client costs one hash check, not one a
//!   request;
//! - [`budget`]: how many hash checks of credentials not remembered a client address,
//!   and the whole loop, may start: past it the answer is 429 without a hash;
//! - [`gate`]: the four together, in that order.

pub mod basic;
pub(crate) mod budget;
pub mod cost;
pub(crate) mod gate;
pub(crate) mod htpasswd;
pub(crate) mod remember;

pub use gate::HostUsers;
pub(crate) use gate::{Gate, Verdict};
pub use htpasswd::Credentials;

/// The key of this process's decoy choice (`htpasswd::Credentials::parse`): drawn from
/// `getrandom(2)` the first time it is asked for, then the same for the life of the
/// process. The master reads the file, so its workers, forked after, and every reload
/// choose the same decoy for a name.
pub(crate) fn process_key() -> std::io::Result<[u8; 16]> {
    static KEY: std::sync::OnceLock<[u8; 16]> = std::sync::OnceLock::new();
    if let Some(key) = KEY.get() {
        return Ok(*key);
    }
    let key = gate::random_key()?;
    Ok(*KEY.get_or_init(|| key))
}

/// How many [`Reason`]s there are.
pub(crate) const REASONS: usize = 4;

/// Why a request was not let in: the `reason` label of `steerd_auth_failures_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    /// No `Authorization` field.
    Missing,
    /// Not `Basic` with base64 of `user:password`.
    Malformed,
    /// A user and password that are not a user's of the file: no such user, or the
    /// user's hash does not match. One reason for both, so that the metrics (which
    /// anyone who may read them reads) do not say which names exist.
    WrongCredentials,
    /// The address, or the loop, spent its budget of hash checks (429).
    RateLimited,
}

impl Reason {
    /// Every reason, in the order of the metric's series.
    pub(crate) const ALL: [Reason; REASONS] = [
        Reason::Missing,
        Reason::Malformed,
        Reason::WrongCredentials,
        Reason::RateLimited,
    ];

    /// The label value.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Reason::Missing => "missing",
            Reason::Malformed => "malformed",
            Reason::WrongCredentials => "wrong_credentials",
            Reason::RateLimited => "rate_limited",
        }
    }

    /// Its index in [`Reason::ALL`] (and in the counters).
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}
