//! An htpasswd file: `user:hash` lines, `#` comments, blank lines.
//!
//! Input: the file's bytes. Output: validated [`Credentials`], or the first
//! [`LineError`] with its line number. Accepted hashes are the ones that are safe to
//! accept: bcrypt (`$2y$`, `$2b$`, `$2a$`, as `htpasswd -B` and Caddy write) and
//! SHA-crypt (`$5$`, `$6$`, as `mkpasswd -m sha-256|sha-512` and `openssl passwd -5|-6`
//! write). Plain text, `{SHA}` (unsalted SHA-1), MD5 (`$apr1$`, `$1$`), DES crypt and
//! schemes steerd does not implement (yescrypt `$y$`, Debian's `mkpasswd` default;
//! scrypt, Argon2) are refused with what to use instead: a file steerd could not check
//! as its author meant must not start a server that guards nothing. So is a hash whose
//! cost (bcrypt's cost, SHA-crypt's rounds) is above the limit of `cost.rs`: its every
//! check would hold the worker's thread too long.
//!
//! A line is trimmed of surrounding whitespace (a CRLF file reads as LF). The user is
//! everything before the first `:` (not empty, no control character, at most
//! [`USER_MAX`] bytes, once per file); the hash everything after it. A file is read in
//! time linear in its lines (a name is looked up among those before it in a hash map),
//! so a reload of a large file does not leave the master deaf to signals for long.
//!
//! Checking ([`Credentials::check`]): the user is looked up by comparing every name in
//! constant time, and a name that is no user's costs a full hash check all the same,
//! against its decoy: one of the file's hashes, chosen by SipHash of the name under a
//! key secret to the process (drawn by the master, so every worker and every reload of
//! it chooses alike). The same name always costs the same, and unknown names cost what
//! the file's users cost, in the same proportions: with hashes of different costs
//! (which `steerd check` warns about, [`Credentials::costs`]) the time of a check says
//! only which cost a name is checked at, not whether it is a user.

use super::cost::Cost;
use crate::crypt::{bcrypt, sha_crypt, siphash::sip64};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Longest user name.
pub(crate) const USER_MAX: usize = 255;

/// The users of a file and their hashes, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    /// Never empty.
    users: Arc<[User]>,
    /// Keys the choice of an unknown name's decoy ([`Credentials::decoy`]).
    decoy_key: [u8; 16],
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct User {
    name: Box<[u8]>,
    hash: Box<[u8]>,
    cost: Cost,
}

/// What a check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Checked {
    /// The user exists and the password is theirs.
    Valid,
    /// No such user.
    UnknownUser,
    /// The password is not the user's.
    WrongPassword,
}

/// A line the file cannot have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    /// 1-based line number (0: the file as a whole).
    pub line: usize,
    /// What is wrong with it.
    pub(crate) why: Why,
}

/// What is wrong with a line of the file (or with the file as a whole).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Why {
    /// No `:` between the user and the hash.
    NoColon,
    /// `:hash`.
    EmptyName,
    /// A name too long or with control characters.
    BadName,
    /// The user's hash is one steerd does not accept.
    Hash {
        /// The user.
        user: String,
        /// Why the hash is refused.
        why: HashWhy,
    },
    /// The user is on an earlier line too.
    Twice {
        /// The user.
        user: String,
        /// The earlier line.
        first: usize,
    },
    /// No user at all.
    NoUsers,
}

/// Why a hash is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HashWhy {
    /// A bcrypt hash that does not parse, and why.
    Bcrypt(&'static str),
    /// A SHA-crypt hash that does not parse, and why.
    ShaCrypt(&'static str),
    /// No hash.
    Empty,
    /// A scheme too weak to accept (named).
    Unsafe(&'static str),
    /// A scheme steerd does not implement (named).
    Unsupported(&'static str),
    /// A hash whose every check would cost more than a worker may spend on one.
    TooCostly(Cost),
}

impl core::fmt::Display for Why {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Why::NoColon => f.write_str("expected user:hash"),
            Why::EmptyName => f.write_str("the user name is empty"),
            Why::BadName => write!(
                f,
                "the user name must be 1 to {USER_MAX} bytes without control characters"
            ),
            Why::Hash { user, why } => write!(f, "user {user:?}: {why}"),
            Why::Twice { user, first } => write!(f, "user {user:?} is also on line {first}"),
            Why::NoUsers => f.write_str("no user:hash line (everyone would be refused)"),
        }
    }
}

impl core::fmt::Display for HashWhy {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            HashWhy::Bcrypt(why) => write!(f, "bcrypt: {why}"),
            HashWhy::ShaCrypt(why) => write!(f, "SHA-crypt: {why}"),
            HashWhy::Empty => write!(f, "the hash is empty; {USE_INSTEAD}"),
            HashWhy::Unsafe(what) => write!(f, "{what}: not safe to accept; {USE_INSTEAD}"),
            HashWhy::Unsupported(what) => write!(f, "{what} is not supported; {USE_INSTEAD}"),
            HashWhy::TooCostly(cost) => write!(
                f,
                "{cost} is above the limit, {}: every check would hold a worker's thread \
                 too long; hash the password again at the limit or below ({})",
                cost.limit(),
                cost.advice()
            ),
        }
    }
}

impl core::fmt::Display for LineError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.line {
            0 => write!(f, "{}", self.why),
            n => write!(f, "line {n}: {}", self.why),
        }
    }
}

const USE_INSTEAD: &str =
    "hash it with bcrypt (htpasswd -B) or SHA-crypt (mkpasswd -m sha-512, openssl passwd -6)";

impl Credentials {
    /// Parses a whole file. `decoy_key` keys the choice of the hash an unknown name is
    /// checked against: random, and the same for every worker of a process (the master
    /// draws it once, `auth::process_key`), or an observer could tell a user's stable
    /// cost from an unknown name's varying one.
    pub fn parse(text: &[u8], decoy_key: [u8; 16]) -> Result<Credentials, LineError> {
        let mut users: Vec<User> = Vec::new();
        // Each name and the line it is first on: one hash lookup a line, not a scan of
        // the lines before (a 4 MiB file has some 60,000 users).
        let mut seen: HashMap<&[u8], usize> = HashMap::new();
        for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
            let line = raw.trim_ascii();
            if line.is_empty() || line.starts_with(b"#") {
                continue;
            }
            let at = |why: Why| LineError { line: i + 1, why };
            let (name, hash, cost) = parse_line(line).map_err(at)?;
            if let Some(&first) = seen.get(name) {
                let user = String::from_utf8_lossy(name).into_owned();
                return Err(at(Why::Twice { user, first }));
            }
            seen.insert(name, i + 1);
            users.push(User {
                name: name.into(),
                hash: hash.into(),
                cost,
            });
        }
        if users.is_empty() {
            return Err(LineError {
                line: 0,
                why: Why::NoUsers,
            });
        }
        Ok(Credentials {
            users: users.into(),
            decoy_key,
        })
    }

    /// Users in the file.
    pub fn len(&self) -> usize {
        self.users.len()
    }

    /// Never true: a file without users is refused.
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    /// Each cost the file's hashes have, with how many users have it (in [`Cost`]'s
    /// order): more than one, and the time of a check says which a name is checked at.
    pub(crate) fn costs(&self) -> Vec<(Cost, usize)> {
        let mut costs = BTreeMap::new();
        for u in self.users.iter() {
            *costs.entry(u.cost).or_insert(0) += 1;
        }
        costs.into_iter().collect()
    }

    /// Whether `password` is `user`'s (one full hash check either way).
    pub(crate) fn check(&self, user: &[u8], password: &[u8]) -> Checked {
        self.check_with(user, password, verify)
    }

    /// [`Credentials::check`] with `verify` as the hash check: the user's hash, or the
    /// decoy of a name that is no user's, is checked once, and the answer follows.
    fn check_with(
        &self,
        user: &[u8],
        password: &[u8],
        verify: impl FnOnce(&[u8], &[u8]) -> bool,
    ) -> Checked {
        let found = self.find(user);
        let hash = found.map_or_else(|| self.decoy(user), |u| &*u.hash);
        // Kept whatever `found` says: the decoy's check is computed whole.
        let matched = core::hint::black_box(verify(hash, password));
        match (found, matched) {
            (Some(_), true) => Checked::Valid,
            (Some(_), false) => Checked::WrongPassword,
            (None, _) => Checked::UnknownUser,
        }
    }

    /// The user named `name`. Every name is compared, so the time does not say where (or
    /// whether) it is.
    fn find(&self, name: &[u8]) -> Option<&User> {
        let mut found = None;
        for u in self.users.iter() {
            if crate::crypt::ct_eq(&u.name, name) {
                found = found.or(Some(u));
            }
        }
        found
    }

    /// The hash a name that is no user's is checked against: one of the file's, chosen
    /// by the keyed hash of the name, so the same name always gets the same one.
    fn decoy(&self, name: &[u8]) -> &[u8] {
        let pick = sip64(&self.decoy_key, name) % self.users.len() as u64;
        &self.users[pick as usize].hash
    }
}

/// One `user:hash` line (trimmed, not a comment): its name and hash, both valid, and
/// what checking the hash costs.
fn parse_line(line: &[u8]) -> Result<(&[u8], &[u8], Cost), Why> {
    let Some(colon) = memchr::memchr(b':', line) else {
        return Err(Why::NoColon);
    };
    let (name, hash) = (&line[..colon], &line[colon + 1..]);
    if name.is_empty() {
        return Err(Why::EmptyName);
    }
    if name.len() > USER_MAX || name.iter().any(|&b| b < 0x20 || b == 0x7f) {
        return Err(Why::BadName);
    }
    let cost = scheme(hash).map_err(|why| Why::Hash {
        user: String::from_utf8_lossy(name).into_owned(),
        why,
    })?;
    Ok((name, hash, cost))
}

/// The cost of `hash` when it is a hash steerd accepts, or what it is and why not.
fn scheme(hash: &[u8]) -> Result<Cost, HashWhy> {
    let cost = known_scheme(hash)?;
    match cost.within_limit() {
        true => Ok(cost),
        false => Err(HashWhy::TooCostly(cost)),
    }
}

/// The cost of `hash` when it is bcrypt or SHA-crypt, or what it is and why not.
fn known_scheme(hash: &[u8]) -> Result<Cost, HashWhy> {
    let unsafe_one = |what| Err(HashWhy::Unsafe(what));
    let unsupported = |what| Err(HashWhy::Unsupported(what));
    match hash {
        [b'$', b'2', b'a' | b'b' | b'y', b'$', ..] => bcrypt::parse(hash)
            .map(|(setting, _)| Cost::Bcrypt(setting.cost))
            .map_err(|e| HashWhy::Bcrypt(e.why())),
        [b'$', b'5' | b'6', b'$', ..] => sha_crypt::parse(hash)
            .map(|(setting, _)| Cost::sha_crypt(setting.variant, setting.rounds))
            .map_err(|e| HashWhy::ShaCrypt(e.why())),
        [] => Err(HashWhy::Empty),
        _ if hash.starts_with(b"$apr1$") => unsafe_one("MD5 ($apr1$)"),
        _ if hash.starts_with(b"$1$") => unsafe_one("MD5-crypt ($1$)"),
        _ if hash.starts_with(b"{SHA}") => unsafe_one("unsalted SHA-1 ({SHA})"),
        _ if hash.starts_with(b"$2x$") => unsafe_one("bcrypt $2x$ (the sign-extension bug)"),
        _ if hash.starts_with(b"$y$") => unsupported("yescrypt ($y$)"),
        _ if hash.starts_with(b"$7$") => unsupported("scrypt ($7$)"),
        _ if hash.starts_with(b"$argon2") => unsupported("Argon2"),
        _ if hash.starts_with(b"$") => unsupported("this $...$ scheme"),
        _ if hash.len() == 13
            && crate::crypt::radix64::all_in(crate::crypt::radix64::CRYPT, hash) =>
        {
            unsafe_one("DES crypt")
        }
        _ => unsafe_one("plain text (or a scheme steerd does not know)"),
    }
}

/// Whether `password` gives the (validated) `hash`.
fn verify(hash: &[u8], password: &[u8]) -> bool {
    match hash.get(1) {
        Some(b'2') => match bcrypt::parse(hash) {
            Ok((setting, text)) => bcrypt::verify(&setting, text, password),
            Err(_) => false,
        },
        _ => match sha_crypt::parse(hash) {
            Ok((setting, digest)) => sha_crypt::verify(&setting, digest, password),
            Err(_) => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// "U*U" under bcrypt cost 5 (openwall's vector) and "Hello world!" under SHA-256
    /// crypt (the specification's).
    const BOB: &str = "bob:$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW";
    const ANN: &str = "ann:$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5";

    /// The decoy key of the tests (a server's is random).
    const KEY: [u8; 16] = *b"a fixed test key";

    fn parse(text: &[u8]) -> Result<Credentials, LineError> {
        Credentials::parse(text, KEY)
    }

    #[test]
    fn users_comments_and_blank_lines() {
        let text = format!("# users\r\n\r\n  {BOB}  \r\n{ANN}\n# end");
        let c = parse(text.as_bytes()).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c.check(b"bob", b"U*U"), Checked::Valid);
        assert_eq!(c.check(b"bob", b"U*U*"), Checked::WrongPassword);
        assert_eq!(c.check(b"ann", b"Hello world!"), Checked::Valid);
        assert_eq!(c.check(b"ann", b"U*U"), Checked::WrongPassword);
        assert_eq!(c.check(b"eve", b"U*U"), Checked::UnknownUser);
        assert_eq!(c.check(b"bo", b"U*U"), Checked::UnknownUser);
    }

    #[test]
    fn refusals_name_the_line_and_what_to_use() {
        let d43 = "a".repeat(43);
        for (line, needle) in [
            ("bob", "expected user:hash"),
            (":$5$s$x", "the user name is empty"),
            ("bob:", "the hash is empty"),
            ("bob:secret", "plain text"),
            ("bob:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=", "unsalted SHA-1"),
            ("bob:$apr1$abc$defghijklmnopqrstuvwx.", "MD5 ($apr1$)"),
            ("bob:$1$abc$defghijklmnopqrstuvwx.", "MD5-crypt"),
            ("bob:abJnggxhB/yWI", "DES crypt"),
            ("bob:$y$j9T$salt$hash", "yescrypt"),
            (
                "bob:$2x$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",
                "$2x$",
            ),
            (
                "bob:$2y$03$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",
                "cost",
            ),
            ("bob:$2y$05$short", "bcrypt"),
            (
                "bob:$2y$08$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",
                "bcrypt cost 8 is above the limit, bcrypt cost 7",
            ),
            (
                &format!("bob:$6$rounds=10001$s${d43}{d43}"),
                "SHA-512-crypt rounds=10001 is above the limit, SHA-512-crypt rounds=10000",
            ),
            (&format!("bob:$5$rounds=5000000$s${d43}"), "rounds"),
            (&format!("bob:$6$s${d43}"), "SHA-crypt"),
        ] {
            let text = format!("# first\n{ANN}\n{line}\n");
            let e = parse(text.as_bytes()).unwrap_err();
            assert_eq!(e.line, 3, "{line}: {e}");
            assert!(e.to_string().contains(needle), "{line}: {e}");
            assert!(e.to_string().starts_with("line 3: "), "{e}");
        }
        let e = parse(format!("{BOB}\n{ANN}\n{BOB}").as_bytes()).unwrap_err();
        assert_eq!(e.to_string(), "line 3: user \"bob\" is also on line 1");
        let e = parse(b"# nobody\n\n").unwrap_err();
        assert_eq!(e.line, 0);
        let e = parse(b"a\x01b:$5$x").unwrap_err();
        assert!(e.why.to_string().contains("control"), "{e}");
    }

    /// A file of `n` users `u0`, `u1`, ... with `extra` lines after them.
    fn many(n: usize, extra: &str) -> String {
        let hash = &ANN[ANN.find(':').unwrap()..];
        let mut text: String = (0..n).map(|i| format!("u{i}{hash}\n")).collect();
        text.push_str(extra);
        text
    }

    #[test]
    fn a_name_twice_is_found_among_many_and_named_with_its_first_line() {
        let c = parse(many(60_000, "").as_bytes()).unwrap();
        assert_eq!(c.len(), 60_000);
        let hash = &ANN[ANN.find(':').unwrap()..];
        for (again, first) in [("u0", 1), ("u31337", 31_338), ("u59999", 60_000)] {
            let text = many(60_000, &format!("# again\n{again}{hash}\n"));
            let e = parse(text.as_bytes()).unwrap_err();
            assert_eq!(e.line, 60_002, "{again}");
            assert_eq!(
                e.why,
                Why::Twice {
                    user: again.into(),
                    first
                },
                "{again}"
            );
        }
        // Names differing only in case, or as prefixes, are different users.
        let text = format!("bob{hash}\nBob{hash}\nbo{hash}\nbobb{hash}\n");
        assert_eq!(parse(text.as_bytes()).map(|c| c.len()), Ok(4));
    }

    /// Four users, each with a hash of another cost (fixed strings, never hashed here).
    const FOUR: &str = "a:$2y$04$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW\n\
        b:$2y$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW\n\
        c:$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5\n\
        d:$5$rounds=1000$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5\n";

    #[test]
    fn an_unknown_name_has_a_decoy_among_the_files_hashes_chosen_stably_per_name() {
        let c = parse(FOUR.as_bytes()).unwrap();
        let hashes: Vec<&[u8]> = c.users.iter().map(|u| &*u.hash).collect();
        let mut chosen = vec![0usize; hashes.len()];
        for i in 0..400 {
            let name = format!("nobody{i}");
            let decoy = c.decoy(name.as_bytes());
            let at = hashes.iter().position(|h| *h == decoy);
            let at = at.unwrap_or_else(|| panic!("{name}: not a hash of the file"));
            chosen[at] += 1;
            assert_eq!(
                c.decoy(name.as_bytes()),
                decoy,
                "{name}: the same each time"
            );
            let again = Credentials::parse(FOUR.as_bytes(), KEY).unwrap();
            assert_eq!(again.decoy(name.as_bytes()), decoy, "{name}: the same key");
        }
        // Every user's hash (so every cost) is some names' decoy, roughly as often.
        assert!(chosen.iter().all(|&n| n > 50), "{chosen:?}");
        // Another key, another choice: the choice cannot be worked out without it.
        let other = Credentials::parse(FOUR.as_bytes(), *b"another test key").unwrap();
        let differ = (0..400)
            .filter(|i| {
                let name = format!("nobody{i}");
                c.decoy(name.as_bytes()) != other.decoy(name.as_bytes())
            })
            .count();
        assert!(differ > 200, "{differ} of 400");
    }

    #[test]
    fn every_check_runs_one_full_hash_check_of_the_users_hash_or_the_decoy() {
        let c = parse(FOUR.as_bytes()).unwrap();
        let checked = |user: &str, answer: bool| {
            let mut seen = Vec::new();
            let verdict = c.check_with(user.as_bytes(), b"pw", |hash, password| {
                assert_eq!(password, b"pw");
                seen.push(hash.to_vec());
                answer
            });
            (verdict, seen)
        };
        let (verdict, seen) = checked("b", false);
        assert_eq!(
            (verdict, seen),
            (Checked::WrongPassword, vec![c.users[1].hash.to_vec()])
        );
        assert_eq!(checked("b", true).0, Checked::Valid);
        for name in ["eve", "B", "bb", ""] {
            let decoy = c.decoy(name.as_bytes()).to_vec();
            for answer in [false, true] {
                let (verdict, seen) = checked(name, answer);
                assert_eq!(
                    (verdict, seen),
                    (Checked::UnknownUser, vec![decoy.clone()]),
                    "{name}"
                );
            }
        }
        // The real check: an unknown name with its decoy's own password is still unknown.
        let c = parse(format!("{BOB}\n").as_bytes()).unwrap();
        assert_eq!(c.decoy(b"eve"), &BOB.as_bytes()[4..]);
        assert_eq!(c.check(b"eve", b"U*U"), Checked::UnknownUser);
        assert_eq!(c.check(b"bob", b"U*U"), Checked::Valid);
    }

    #[test]
    fn costs_are_counted_per_scheme_and_parameter() {
        let c = parse(FOUR.as_bytes()).unwrap();
        assert_eq!(
            c.costs(),
            [
                (Cost::Bcrypt(4), 1),
                (Cost::Bcrypt(5), 1),
                (Cost::Sha256Crypt(1000), 1),
                (Cost::Sha256Crypt(5000), 1)
            ]
        );
        let c = parse(format!("{ANN}\nx{ANN}\n").as_bytes()).unwrap();
        assert_eq!(c.costs(), [(Cost::Sha256Crypt(5000), 2)]);
    }
}
