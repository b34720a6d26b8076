//! bcrypt: the `$2a$`, `$2b$` and `$2y$` password hashes (`htpasswd -B`, Caddy,
//! OpenBSD).
//!
//! Input: a stored hash `$2b$CC$` + 22 salt characters + 31 hash characters (parsed once
//! into a [`Setting`] and its hash text) and a password. Output: whether the password
//! gives that hash. No allocation.
//!
//! Required reading: Provos and Mazières, "A Future-Adaptable Password Scheme" (USENIX
//! 1999) §4-§5; OpenBSD's `bcrypt.c` for the details the paper leaves open, which every
//! `$2b$` implementation follows: the key is the password and its terminating NUL, used
//! cyclically, of which only the first 72 bytes count; "OrpheanBeholderScryDoubt" is
//! encrypted 64 times; 23 of its 24 bytes are written. `$2a$` and `$2y$` are checked as
//! `$2b$` (the same algorithm for every password of fewer than 256 bytes, as openwall's
//! and libxcrypt's `$2a$` are for all); `$2x$` (the old sign-extension bug) is not
//! accepted. Vectors: openwall's and libxcrypt's (`tests/data/crypt/bcrypt.txt`).

use super::blowfish::State;
use super::radix64;

/// Lowest cost bcrypt defines.
pub const COST_MIN: u32 = 4;

/// Highest cost bcrypt defines (2^31 rounds of the key schedule). What a server may
/// afford per check is lower, and its own rule (`auth::cost`).
pub(crate) const COST_MAX: u32 = 31;

/// Characters of the hash part.
pub(crate) const HASH_TEXT: usize = 31;

const SALT_TEXT: usize = 22;

/// Bytes of the key that count.
const KEY_MAX: usize = 72;

/// A parsed setting: cost and salt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    /// log2 of the key schedule's rounds.
    pub(crate) cost: u32,
    /// The 16-byte salt.
    pub(crate) salt: [u8; 16],
}

/// Why a stored hash is not a bcrypt hash steerd checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettingError {
    /// Not `$2a$`, `$2b$` or `$2y$`, two digits, `$` and 53 characters.
    Form,
    /// A cost below [`COST_MIN`] or above [`COST_MAX`].
    Cost,
    /// A character outside bcrypt's alphabet.
    Alphabet,
}

impl SettingError {
    /// What to tell the operator.
    pub(crate) fn why(self) -> &'static str {
        match self {
            SettingError::Form => "not a bcrypt hash ($2y$CC$ and 53 characters)",
            SettingError::Cost => "the cost must be from 4 to 31",
            SettingError::Alphabet => "a character outside bcrypt's ./A-Za-z0-9",
        }
    }
}

/// Splits a stored hash into its setting and hash text.
pub fn parse(hash: &[u8]) -> Result<(Setting, &[u8]), SettingError> {
    let rest = match hash {
        [b'$', b'2', b'a' | b'b' | b'y', b'$', rest @ ..] => rest,
        _ => return Err(SettingError::Form),
    };
    let (cost, text) = match rest {
        [c1 @ b'0'..=b'9', c2 @ b'0'..=b'9', b'$', text @ ..] => {
            (u32::from(c1 - b'0') * 10 + u32::from(c2 - b'0'), text)
        }
        _ => return Err(SettingError::Form),
    };
    if text.len() != SALT_TEXT + HASH_TEXT {
        return Err(SettingError::Form);
    }
    if !(COST_MIN..=COST_MAX).contains(&cost) {
        return Err(SettingError::Cost);
    }
    if !radix64::all_in(radix64::BCRYPT, text) {
        return Err(SettingError::Alphabet);
    }
    let mut salt = [0u8; 16];
    radix64::decode_bcrypt(&text[..SALT_TEXT], &mut salt).ok_or(SettingError::Alphabet)?;
    Ok((Setting { cost, salt }, &text[SALT_TEXT..]))
}

/// True when `password` gives `hash_text` (31 characters) under `setting`.
pub fn verify(setting: &Setting, hash_text: &[u8], password: &[u8]) -> bool {
    let raw = hash(setting, password);
    let mut text = [0u8; HASH_TEXT];
    match radix64::encode_bcrypt(&raw, &mut text) {
        Some(HASH_TEXT) => super::ct_eq(&text, hash_text),
        _ => false,
    }
}

/// The 23 bytes bcrypt writes for `password` under `setting`.
pub(crate) fn hash(setting: &Setting, password: &[u8]) -> [u8; 23] {
    // The key: the password and its NUL, of which the first 72 bytes count.
    let mut key = [0u8; KEY_MAX + 1];
    let len = password.len().min(KEY_MAX);
    key[..len].copy_from_slice(&password[..len]);
    let st = State::eks(setting.cost, &setting.salt, &key[..len + 1]);
    let mut words = [0u32; 6];
    for (w, b) in words
        .iter_mut()
        .zip(b"OrpheanBeholderScryDoubt".chunks_exact(4))
    {
        *w = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    }
    for _ in 0..64 {
        for pair in words.chunks_exact_mut(2) {
            (pair[0], pair[1]) = st.encrypt(pair[0], pair[1]);
        }
    }
    let mut out = [0u8; 23];
    let mut bytes = [0u8; 24];
    for (b, w) in bytes.chunks_exact_mut(4).zip(words) {
        b.copy_from_slice(&w.to_be_bytes());
    }
    out.copy_from_slice(&bytes[..23]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tests/data/crypt/bcrypt.txt`: `PASSWORD<TAB>HASH` per line; `\xHH` in the
    /// password is a byte.
    fn vectors() -> Vec<(Vec<u8>, &'static str)> {
        let text = include_str!("../../tests/data/crypt/bcrypt.txt");
        text.lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| {
                let (pw, hash) = l.split_once('\t').expect("PASSWORD<TAB>HASH");
                (unescape(pw), hash)
            })
            .collect()
    }

    fn unescape(s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i..].starts_with(b"\\x") {
                let hex = std::str::from_utf8(&b[i + 2..i + 4]).expect("hex");
                out.push(u8::from_str_radix(hex, 16).expect("hex"));
                i += 4;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        out
    }

    #[test]
    fn openwall_and_libxcrypt_vectors() {
        let v = vectors();
        assert!(v.len() >= 20, "{} vectors", v.len());
        for (password, hash) in &v {
            let (setting, text) = parse(hash.as_bytes()).unwrap_or_else(|e| {
                panic!("{hash}: {}", e.why());
            });
            assert!(verify(&setting, text, password), "{hash}");
            let mut wrong = password.clone();
            match wrong.first_mut() {
                Some(b) => *b ^= 1,
                None => wrong.push(b'x'),
            }
            if password.len() <= KEY_MAX {
                assert!(!verify(&setting, text, &wrong), "{hash}");
            }
        }
    }

    #[test]
    fn only_the_first_72_bytes_count() {
        let (setting, text) =
            parse(b"$2a$05$abcdefghijklmnopqrstuu5s2v8.iXieOjg/.AySBTTZIIVFJeBui").unwrap();
        let base = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        assert_eq!(base.len(), 72);
        assert!(verify(&setting, text, base));
        let mut longer = base.to_vec();
        longer.extend_from_slice(b"anything at all");
        assert!(verify(&setting, text, &longer));
        assert!(!verify(&setting, text, &base[..71]));
    }

    #[test]
    fn settings_are_parsed_strictly() {
        let tail = "CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW";
        for good in ["$2a$05$", "$2b$04$", "$2y$14$", "$2y$31$"] {
            assert!(parse(format!("{good}{tail}").as_bytes()).is_ok(), "{good}");
        }
        for (bad, why) in [
            (format!("$2x$05${tail}"), SettingError::Form),
            (format!("$2$05${tail}"), SettingError::Form),
            (format!("$2b$5${tail}"), SettingError::Form),
            (format!("$2b$05${tail}x"), SettingError::Form),
            (format!("$2b$03${tail}"), SettingError::Cost),
            (format!("$2b$32${tail}"), SettingError::Cost),
            (
                format!("$2b$05${}", tail.replace('E', "+")),
                SettingError::Alphabet,
            ),
        ] {
            assert_eq!(parse(bad.as_bytes()).map(|_| ()), Err(why), "{bad}");
        }
    }
}
