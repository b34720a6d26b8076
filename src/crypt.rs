//! The password hashes an htpasswd file may hold, and the keyed hash and comparison the
//! credential check is built from, written here (no crypto crate, by rule): pure
//! functions over byte slices, no allocation, no I/O, no imports from the crate.
//!
//! - [`sha2`]: SHA-256 and SHA-512 (FIPS 180-4);
//! - [`sha_crypt`]: `$5$` and `$6$` (Ulrich Drepper, "Unix crypt using SHA-256 and
//!   SHA-512", the specification glibc, `mkpasswd` and `openssl passwd` follow);
//! - [`blowfish`] and [`bcrypt`]: `$2a$`, `$2b$`, `$2y$` (Provos and Mazières, "A
//!   Future-Adaptable Password Scheme", 1999; OpenBSD's and openwall's behaviour for the
//!   72-byte key limit);
//! - [`radix64`]: the two `./0-9A-Za-z` alphabets and bit orders of crypt strings;
//! - [`siphash`]: SipHash-2-4 with a 128-bit tag, the keyed hash of remembered
//!   credentials;
//! - [`ct_eq`]: comparison whose time does not depend on where the inputs differ.
//!
//! The vectors each file is checked against are data files under `tests/data/crypt/`
//! (published vectors and hashes made by libxcrypt), run whole by the unit tests.

pub mod bcrypt;
pub(crate) mod blowfish;
pub(crate) mod radix64;
pub mod sha2;
pub mod sha_crypt;
pub(crate) mod siphash;

/// True when `a` and `b` are equal, in time that depends on their lengths only: every
/// byte pair is looked at, and the differences are folded together before one test.
#[inline(never)]
pub(crate) fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y));
    core::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ct_eq_is_equality() {
        assert!(ct_eq(b"", b""));
        assert!(ct_eq(b"abc", b"abc"));
        assert!(!ct_eq(b"abc", b"abd"));
        assert!(!ct_eq(b"abc", b"Abc"));
        assert!(!ct_eq(b"abc", b"ab"));
    }
}
