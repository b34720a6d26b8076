//! `--dotfiles deny|allow`: whether a path with a segment beginning with `.` is served.
//!
//! Input: a decoded, dot-segment-free request path (starts with `/`, as the parser and
//! `files::open` see it). Output: whether it is hidden. The default is `deny`: `steerd
//! serve .` in a project directory must not publish `/.env`, `/.git/config` or
//! `/sub/.htpasswd`. A hidden path is answered exactly as a missing file (404, the
//! `--fallback` and `--error-page` rules as for any missing file; no 403 that would
//! confirm it exists), because the rule is applied in `files::open`, the one door every
//! file goes through: the request's path, a directory's `index.html`, a sidecar, an error
//! page and the fallback.
//!
//! `/.well-known/` (RFC 8615) is always served: its first segment is exempt, the segments
//! below it follow the rule. What is checked is the path asked for, not where a symlink
//! under the root leads: a link the operator made is the operator's choice (and the
//! kernel keeps it under the root either way).

/// The `--dotfiles` rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Dotfiles {
    /// Paths with a segment beginning with `.` are 404 (the default).
    #[default]
    Deny,
    /// Every path under the root is served.
    Allow,
}

/// The well-known URI prefix (RFC 8615 §3), exempt from `deny`.
const WELL_KNOWN: &[u8] = b"/.well-known";

impl Dotfiles {
    /// `deny` or `allow`.
    pub(crate) fn parse(value: &str) -> Result<Dotfiles, &'static str> {
        match value {
            "deny" => Ok(Dotfiles::Deny),
            "allow" => Ok(Dotfiles::Allow),
            _ => Err("expected deny or allow"),
        }
    }

    /// True when `path` is not served under this rule.
    #[inline]
    pub(crate) fn hides(self, path: &[u8]) -> bool {
        self == Dotfiles::Deny && has_dot_segment(path)
    }

    /// True when entry `name` of the directory at `dir` (a request path ending in `/`,
    /// not hidden itself) is not listed: [`Dotfiles::hides`] of `dir` + `name`, without
    /// joining them.
    #[inline]
    pub(crate) fn hides_entry(self, dir: &[u8], name: &[u8]) -> bool {
        let well_known = dir == b"/" && name == &WELL_KNOWN[1..];
        self == Dotfiles::Deny && name.first() == Some(&b'.') && !well_known
    }
}

/// A segment of `path` (after any `/`) begins with `.`, `/.well-known` as the first
/// segment excepted.
fn has_dot_segment(path: &[u8]) -> bool {
    let rest = match path.strip_prefix(WELL_KNOWN) {
        Some(rest) if rest.is_empty() || rest[0] == b'/' => rest,
        _ => path,
    };
    memchr::memmem::find(rest, b"/.").is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The naive rule, segment by segment.
    fn naive(path: &[u8]) -> bool {
        let mut segments = path.split(|&b| b == b'/').skip(1).peekable();
        if segments.peek() == Some(&&b".well-known"[..]) {
            segments.next();
        }
        segments.any(|s| s.first() == Some(&b'.'))
    }

    #[test]
    fn dot_segments_are_hidden_well_known_is_not() {
        for (path, hidden) in [
            ("/.env", true),
            ("/.git/config", true),
            ("/sub/.htpasswd", true),
            ("/sub/.hidden/x.html", true),
            ("/..x", true),
            ("/a.b/c.d", false),
            ("/index.html", false),
            ("/", false),
            ("/dir/", false),
            ("/.well-known/security.txt", false),
            ("/.well-known", false),
            ("/.well-known/", false),
            ("/.well-known/.secret", true),
            ("/.well-knownx/a", true),
            ("/a/.well-known/x", true),
        ] {
            let p = path.as_bytes();
            assert_eq!(Dotfiles::Deny.hides(p), hidden, "{path}");
            assert_eq!(naive(p), hidden, "the oracle on {path}");
            assert!(!Dotfiles::Allow.hides(p), "{path}");
        }
    }

    #[test]
    fn agrees_with_the_naive_rule_on_every_short_path() {
        let alphabet = [b'/', b'.', b'a', b'w'];
        let mut path = Vec::new();
        for n in 0u32..4u32.pow(7) {
            path.clear();
            path.push(b'/');
            let mut k = n;
            for _ in 0..7 {
                path.push(alphabet[(k % 4) as usize]);
                k /= 4;
            }
            assert_eq!(has_dot_segment(&path), naive(&path), "{path:?}");
        }
        for p in [
            "/.well-known/a/.b",
            "/.well-known/a/b",
            "/.well-known/.",
            "/x/.well-known",
        ] {
            assert_eq!(has_dot_segment(p.as_bytes()), naive(p.as_bytes()), "{p}");
        }
    }

    #[test]
    fn an_entry_is_hidden_as_its_joined_path_is() {
        let dirs = ["/", "/a/", "/.well-known/", "/.well-known/x/"];
        let names = [
            ".env",
            "a",
            ".well-known",
            ".well-knownx",
            "..x",
            "a.b",
            ".",
            "x.",
        ];
        for dir in dirs {
            for name in names {
                let joined = format!("{dir}{name}");
                for rule in [Dotfiles::Deny, Dotfiles::Allow] {
                    assert_eq!(
                        rule.hides_entry(dir.as_bytes(), name.as_bytes()),
                        rule.hides(joined.as_bytes()),
                        "{rule:?} {joined}"
                    );
                }
            }
        }
    }

    #[test]
    fn parse_takes_two_words() {
        assert_eq!(Dotfiles::parse("deny"), Ok(Dotfiles::Deny));
        assert_eq!(Dotfiles::parse("allow"), Ok(Dotfiles::Allow));
        assert!(Dotfiles::parse("ignore").is_err());
        assert_eq!(Dotfiles::default(), Dotfiles::Deny);
    }
}
