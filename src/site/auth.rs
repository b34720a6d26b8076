//! `--basic-auth FILE`, `--basic-auth-realm REALM`, `--basic-auth-skip GLOB`: the rule
//! that every request needs credentials from the htpasswd file, as the worker reads it.
//!
//! Input: the three flags' values (validated here, stage 1). Output: [`BasicAuth`]: the
//! file's path (read at start and at every HUP by the master, `preflight::credentials`,
//! never by this stage), the challenge line rendered once, and the paths exempt. The
//! check itself is `auth::Gate`'s; the order around it (a CORS preflight before it, the
//! file lookup and so the dotfile rule after it) is the responder's.
//!
//! Which paths a request may be served is [`BasicAuth::admits`]: every path with a
//! user's credentials, else only those `--basic-auth-skip` exempts. It is asked for the
//! request's own path and again for any other path the request is answered with (the
//! `--fallback`, an `--error-page`, and any later rewrite), as nginx runs `auth_basic`
//! again after `try_files`' internal redirect: a request let in by a skip glob must not
//! be answered with a page its own path would not have admitted.
//!
//! The realm is written inside a quoted-string (RFC 9110 §11.6.1, §5.6.4): a `"`, a `\`
//! or a control character would need escaping or end the field, so they are refused;
//! so is a realm longer than [`REALM_MAX`] bytes, which would not fit the head area.

use super::glob::Glob;
use std::path::PathBuf;

/// The realm when none is given.
pub(crate) const DEFAULT_REALM: &str = "steerd";

/// Longest realm.
pub(crate) const REALM_MAX: usize = 128;

/// The `Retry-After` line of a 429 at its longest.
pub(crate) const RETRY_AFTER_MAX: usize = b"Retry-After: 4294967295\r\n".len();

/// What a request has shown the `--basic-auth` rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// No credentials checked (none, wrong ones, or a skipped path that needed none):
    /// only the paths `--basic-auth-skip` exempts.
    WithoutCredentials,
    /// A user's credentials: every path.
    User,
}

/// The `--basic-auth` rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BasicAuth {
    /// The htpasswd file.
    pub(crate) file: PathBuf,
    /// `WWW-Authenticate: Basic realm="REALM", charset="UTF-8"` and its CRLF.
    challenge: Box<[u8]>,
    /// `--basic-auth-skip`: paths served without credentials.
    skip: Vec<Glob>,
}

impl BasicAuth {
    /// The rule for `file`, with `realm` (checked by [`check_realm`]) and the exempt
    /// paths.
    pub(crate) fn new(file: PathBuf, realm: &str, skip: Vec<Glob>) -> BasicAuth {
        let line = format!("WWW-Authenticate: Basic realm=\"{realm}\", charset=\"UTF-8\"\r\n");
        BasicAuth {
            file,
            challenge: line.into_bytes().into(),
            skip,
        }
    }

    /// The challenge line of a 401.
    pub(crate) fn challenge(&self) -> &[u8] {
        &self.challenge
    }

    /// True when `path` is served without credentials.
    pub(crate) fn skips(&self, path: &[u8]) -> bool {
        self.skip.iter().any(|g| g.matches(path))
    }

    /// True when a request that showed `admission` may be served `path` (its own, or
    /// one it is answered with instead).
    pub(crate) fn admits(&self, admission: Admission, path: &[u8]) -> bool {
        admission == Admission::User || self.skips(path)
    }

    /// Bytes the rule may add to a response head: the challenge of a 401, or a 429's
    /// `Retry-After`.
    pub(crate) fn head_bytes(&self) -> usize {
        self.challenge.len().max(RETRY_AFTER_MAX)
    }
}

/// A realm that can stand inside the quoted-string as it is.
pub(crate) fn check_realm(realm: &str) -> Result<(), &'static str> {
    if realm.is_empty() || realm.len() > REALM_MAX {
        return Err("the realm must be 1 to 128 bytes");
    }
    if realm
        .bytes()
        .any(|b| b < 0x20 || b == 0x7f || b == b'"' || b == b'\\')
    {
        return Err("the realm may not hold a \", a \\ or a control character");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_line_and_the_exempt_paths() {
        let skip = vec![
            Glob::parse("/favicon.ico").unwrap(),
            Glob::parse("/public/**").unwrap(),
        ];
        let a = BasicAuth::new("/etc/htpasswd".into(), "Team docs", skip);
        assert_eq!(
            a.challenge(),
            b"WWW-Authenticate: Basic realm=\"Team docs\", charset=\"UTF-8\"\r\n"
        );
        assert!(a.skips(b"/favicon.ico"));
        assert!(a.skips(b"/public/a/b.css"));
        assert!(!a.skips(b"/index.html"));
        assert!(!a.skips(b"/sub/favicon.ico"));
        assert!(a.head_bytes() >= a.challenge().len());
        let (user, none) = (Admission::User, Admission::WithoutCredentials);
        assert!(a.admits(user, b"/index.html") && a.admits(user, b"/favicon.ico"));
        assert!(a.admits(none, b"/public/x") && !a.admits(none, b"/index.html"));
    }

    #[test]
    fn realms_are_checked() {
        for good in ["steerd", "Team docs", "équipe", "a'b"] {
            assert_eq!(check_realm(good), Ok(()), "{good}");
        }
        let long = "r".repeat(REALM_MAX + 1);
        for bad in ["", "a\"b", "a\\b", "a\rb", "a\x7fb", &long] {
            assert!(check_realm(bad).is_err(), "{bad:?}");
        }
    }
}
