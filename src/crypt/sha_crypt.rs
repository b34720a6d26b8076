//! SHA-crypt: the `$5$` (SHA-256) and `$6$` (SHA-512) password hashes.
//!
//! Input: a stored hash (`$6$[rounds=N$]SALT$DIGEST`, parsed once into a [`Setting`]
//! and its digest text) and a password. Output: whether the password gives that digest.
//! No allocation: the password's derived sequence lives in a stack buffer, so passwords
//! are limited to [`PASSWORD_MAX`] bytes (longer ones never match).
//!
//! Required reading: Ulrich Drepper, "Unix crypt using SHA-256 and SHA-512" (2007-2008),
//! the specification glibc, libxcrypt, `mkpasswd -m sha-512` and `openssl passwd -6`
//! follow; the step numbers below are its. Vectors: its own, and hashes libxcrypt made
//! (`tests/data/crypt/sha_crypt.txt`).
//!
//! Rounds: 5000 unless `rounds=N$` says otherwise; crypt clamps N to 1000..=999999999
//! and writes the clamped value, so a stored hash outside that range can never match
//! and is refused when parsed. What a server may afford per check is far less, and its
//! own rule (`auth::cost`).

use super::radix64::{self, put_crypt};
use super::sha2::{Sha256, Sha512};

/// Longest password checked (the `Authorization` decoder allows no longer).
pub(crate) const PASSWORD_MAX: usize = 1024;

/// The rounds when the setting names none.
pub(crate) const ROUNDS_DEFAULT: u32 = 5000;

/// Fewest rounds crypt uses.
pub(crate) const ROUNDS_MIN: u32 = 1000;

/// Most rounds crypt uses.
pub(crate) const ROUNDS_MAX: u32 = 999_999_999;

/// Longest salt (longer ones are cut by crypt, so never stored longer).
pub(crate) const SALT_MAX: usize = 16;

/// Which SHA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Variant {
    /// `$5$`
    Sha256,
    /// `$6$`
    Sha512,
}

impl Variant {
    /// Characters of the encoded digest.
    pub(crate) fn text_len(self) -> usize {
        match self {
            Variant::Sha256 => 43,
            Variant::Sha512 => 86,
        }
    }
}

/// A parsed setting: variant, rounds, salt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting<'a> {
    /// SHA-256 or SHA-512.
    pub(crate) variant: Variant,
    /// Rounds of step 21.
    pub(crate) rounds: u32,
    /// The salt, at most [`SALT_MAX`] bytes, no `$`.
    pub(crate) salt: &'a [u8],
}

/// Why a stored hash is not a SHA-crypt hash steerd checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettingError {
    /// Not `$5$` or `$6$`, or a part missing.
    Form,
    /// `rounds=` without a number from [`ROUNDS_MIN`] to [`ROUNDS_MAX`].
    Rounds,
    /// A salt longer than [`SALT_MAX`].
    Salt,
    /// A digest of the wrong length or alphabet.
    Digest,
}

impl SettingError {
    /// What to tell the operator.
    pub(crate) fn why(self) -> &'static str {
        match self {
            SettingError::Form => "not a SHA-crypt hash ($5$SALT$DIGEST or $6$SALT$DIGEST)",
            SettingError::Rounds => "rounds=N must be from 1000 to 999999999 (crypt's range)",
            SettingError::Salt => "the salt is longer than 16 characters",
            SettingError::Digest => "the digest is not 43 ($5$) or 86 ($6$) crypt characters",
        }
    }
}

/// Splits a stored hash into its setting and digest text.
pub fn parse(hash: &[u8]) -> Result<(Setting<'_>, &[u8]), SettingError> {
    let (variant, rest) = match hash {
        [b'$', b'5', b'$', rest @ ..] => (Variant::Sha256, rest),
        [b'$', b'6', b'$', rest @ ..] => (Variant::Sha512, rest),
        _ => return Err(SettingError::Form),
    };
    let (rounds, rest) = match rest.strip_prefix(b"rounds=") {
        Some(r) => {
            let end = memchr::memchr(b'$', r).ok_or(SettingError::Form)?;
            (rounds(&r[..end])?, &r[end + 1..])
        }
        None => (ROUNDS_DEFAULT, rest),
    };
    let end = memchr::memchr(b'$', rest).ok_or(SettingError::Form)?;
    let (salt, digest) = (&rest[..end], &rest[end + 1..]);
    if salt.len() > SALT_MAX {
        return Err(SettingError::Salt);
    }
    if digest.len() != variant.text_len() || !radix64::all_in(radix64::CRYPT, digest) {
        return Err(SettingError::Digest);
    }
    let setting = Setting {
        variant,
        rounds,
        salt,
    };
    Ok((setting, digest))
}

fn rounds(digits: &[u8]) -> Result<u32, SettingError> {
    if digits.is_empty() || digits.len() > 10 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(SettingError::Rounds);
    }
    let n = digits
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    match u32::try_from(n) {
        Ok(n) if (ROUNDS_MIN..=ROUNDS_MAX).contains(&n) => Ok(n),
        _ => Err(SettingError::Rounds),
    }
}

/// True when `password` gives `digest` under `setting`.
pub fn verify(setting: &Setting<'_>, digest: &[u8], password: &[u8]) -> bool {
    let mut text = [0u8; 86];
    match encode(setting, password, &mut text) {
        Some(n) => super::ct_eq(&text[..n], digest),
        None => false,
    }
}

/// The digest text of `password` under `setting` (43 or 86 characters) into `out`.
/// `None`: a password longer than [`PASSWORD_MAX`].
pub(crate) fn encode(setting: &Setting<'_>, password: &[u8], out: &mut [u8; 86]) -> Option<usize> {
    if password.len() > PASSWORD_MAX {
        return None;
    }
    let mut digest = [0u8; 64];
    let (salt, rounds) = (setting.salt, setting.rounds);
    match setting.variant {
        Variant::Sha256 => derive::<Sha256>(password, salt, rounds, &mut digest),
        Variant::Sha512 => derive::<Sha512>(password, salt, rounds, &mut digest),
    }
    let mut at = 0;
    let order: &[(u8, u8, u8)] = match setting.variant {
        Variant::Sha256 => &ORDER_256,
        Variant::Sha512 => &ORDER_512,
    };
    for &(a, b, c) in order {
        let d = |i: u8| digest[usize::from(i)];
        put_crypt(out, &mut at, (d(a), d(b), d(c)), 4);
    }
    match setting.variant {
        Variant::Sha256 => put_crypt(out, &mut at, (0, digest[31], digest[30]), 3),
        Variant::Sha512 => put_crypt(out, &mut at, (0, 0, digest[63]), 2),
    }
    Some(at)
}

/// Which digest bytes make each group of four characters (the specification's output
/// step; the last, shorter group is written by [`encode`]).
const ORDER_256: [(u8, u8, u8); 10] = [
    (0, 10, 20),
    (21, 1, 11),
    (12, 22, 2),
    (3, 13, 23),
    (24, 4, 14),
    (15, 25, 5),
    (6, 16, 26),
    (27, 7, 17),
    (18, 28, 8),
    (9, 19, 29),
];

const ORDER_512: [(u8, u8, u8); 21] = [
    (0, 21, 42),
    (22, 43, 1),
    (44, 2, 23),
    (3, 24, 45),
    (25, 46, 4),
    (47, 5, 26),
    (6, 27, 48),
    (28, 49, 7),
    (50, 8, 29),
    (9, 30, 51),
    (31, 52, 10),
    (53, 11, 32),
    (12, 33, 54),
    (34, 55, 13),
    (56, 14, 35),
    (15, 36, 57),
    (37, 58, 16),
    (59, 17, 38),
    (18, 39, 60),
    (40, 61, 19),
    (62, 20, 41),
];

/// The two SHAs as the algorithm uses them.
trait Sha: Clone {
    const LEN: usize;
    fn start() -> Self;
    fn add(&mut self, data: &[u8]);
    fn end(self, out: &mut [u8; 64]);
}

impl Sha for Sha256 {
    const LEN: usize = 32;
    fn start() -> Self {
        Sha256::new()
    }
    fn add(&mut self, data: &[u8]) {
        self.update(data)
    }
    fn end(self, out: &mut [u8; 64]) {
        out[..32].copy_from_slice(&self.finish());
    }
}

impl Sha for Sha512 {
    const LEN: usize = 64;
    fn start() -> Self {
        Sha512::new()
    }
    fn add(&mut self, data: &[u8]) {
        self.update(data)
    }
    fn end(self, out: &mut [u8; 64]) {
        out.copy_from_slice(&self.finish());
    }
}

/// `len` bytes of `digest` repeated (steps 9-10, 15, 19).
fn add_repeated<H: Sha>(h: &mut H, digest: &[u8], len: usize) {
    let mut left = len;
    while left >= digest.len() {
        h.add(digest);
        left -= digest.len();
    }
    h.add(&digest[..left]);
}

/// Steps 1-21: the final digest `C` into `out` (its first `H::LEN` bytes).
fn derive<H: Sha>(password: &[u8], salt: &[u8], rounds: u32, out: &mut [u8; 64]) {
    let n = H::LEN;
    // Steps 4-8: digest B of password, salt, password.
    let mut b = [0u8; 64];
    let mut h = H::start();
    h.add(password);
    h.add(salt);
    h.add(password);
    h.end(&mut b);
    // Steps 1-3, 9-12: digest A.
    let mut a = [0u8; 64];
    let mut h = H::start();
    h.add(password);
    h.add(salt);
    add_repeated(&mut h, &b[..n], password.len());
    let mut bits = password.len();
    while bits > 0 {
        match bits & 1 {
            1 => h.add(&b[..n]),
            _ => h.add(password),
        }
        bits >>= 1;
    }
    h.end(&mut a);
    // Steps 13-16: the sequences P (from DP) and S (from DS).
    let mut dp = [0u8; 64];
    let mut h = H::start();
    for _ in 0..password.len() {
        h.add(password);
    }
    h.end(&mut dp);
    let mut p = [0u8; PASSWORD_MAX];
    fill_repeated(&mut p[..password.len()], &dp[..n]);
    let p = &p[..password.len()];
    let mut ds = [0u8; 64];
    let mut h = H::start();
    for _ in 0..16 + usize::from(a[0]) {
        h.add(salt);
    }
    h.end(&mut ds);
    let mut s = [0u8; SALT_MAX];
    fill_repeated(&mut s[..salt.len()], &ds[..n]);
    let s = &s[..salt.len()];
    // Step 21: the rounds, each digest C made from the one before.
    let mut c = a;
    for i in 0..rounds {
        let mut h = H::start();
        match i & 1 {
            1 => h.add(p),
            _ => h.add(&c[..n]),
        }
        if i % 3 != 0 {
            h.add(s);
        }
        if i % 7 != 0 {
            h.add(p);
        }
        match i & 1 {
            1 => h.add(&c[..n]),
            _ => h.add(p),
        }
        h.end(&mut c);
    }
    *out = c;
}

/// `out` filled with `digest` repeated (and cut).
fn fill_repeated(out: &mut [u8], digest: &[u8]) {
    for chunk in out.chunks_mut(digest.len()) {
        chunk.copy_from_slice(&digest[..chunk.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tests/data/crypt/sha_crypt.txt`: `PASSWORD<TAB>HASH` per line.
    fn vectors() -> Vec<(&'static str, &'static str)> {
        let text = include_str!("../../tests/data/crypt/sha_crypt.txt");
        text.lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| l.split_once('\t').expect("PASSWORD<TAB>HASH"))
            .collect()
    }

    #[test]
    fn published_and_libxcrypt_vectors() {
        let v = vectors();
        assert!(v.len() >= 20, "{} vectors", v.len());
        for (password, hash) in v {
            let (setting, digest) = parse(hash.as_bytes()).unwrap_or_else(|e| {
                panic!("{hash}: {}", e.why());
            });
            assert!(verify(&setting, digest, password.as_bytes()), "{hash}");
            let wrong = format!("{password}x");
            assert!(!verify(&setting, digest, wrong.as_bytes()), "{hash}");
        }
    }

    #[test]
    fn settings_are_parsed_strictly() {
        let d43 = "a".repeat(43);
        let d86 = "a".repeat(86);
        let ok = |h: String| parse(h.as_bytes()).map(|(s, _)| (s.rounds, s.salt.len()));
        assert_eq!(ok(format!("$5$salt${d43}")), Ok((5000, 4)));
        assert_eq!(ok(format!("$6$rounds=1000$${d86}")), Ok((1000, 0)));
        assert_eq!(
            ok(format!("$6$rounds=999999999$s${d86}")),
            Ok((ROUNDS_MAX, 1))
        );
        for (bad, why) in [
            (format!("$5$rounds=999$s${d43}"), SettingError::Rounds),
            (
                format!("$5$rounds=1000000000$s${d43}"),
                SettingError::Rounds,
            ),
            (format!("$5$rounds=$s${d43}"), SettingError::Rounds),
            (format!("$5$rounds=+5000$s${d43}"), SettingError::Rounds),
            (
                format!("$5$rounds=99999999999$s${d43}"),
                SettingError::Rounds,
            ),
            (format!("$5$saltsaltsaltsalts${d43}"), SettingError::Salt),
            (format!("$5$s${d86}"), SettingError::Digest),
            (format!("$6$s${d43}"), SettingError::Digest),
            (format!("$5$s${}!", "a".repeat(42)), SettingError::Digest),
            (format!("$5$s{d43}"), SettingError::Form),
            (format!("$7$s${d43}"), SettingError::Form),
            ("$5$".to_string(), SettingError::Form),
        ] {
            assert_eq!(parse(bad.as_bytes()).map(|_| ()), Err(why), "{bad}");
        }
    }

    #[test]
    fn passwords_past_the_limit_never_match() {
        let (setting, digest) =
            parse(b"$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5").unwrap();
        assert!(verify(&setting, digest, b"Hello world!"));
        let long = vec![b'a'; PASSWORD_MAX + 1];
        assert!(!verify(&setting, digest, &long));
    }
}
