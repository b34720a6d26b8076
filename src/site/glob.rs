//! Path globs for `--cache-control PATTERN=VALUE`.
//!
//! Input: a pattern from the command line (validated once by [`Glob::parse`]) and a
//! decoded request path (starts with `/`). Output: whether the path matches. Matching
//! allocates nothing and takes time proportional to at most pattern length × path length
//! (one backtracking point per wildcard kind, never exponential), whatever the path.
//!
//! Grammar, segment by segment (segments are separated by `/`):
//!
//! - `*` matches any run of bytes within one segment (never a `/`);
//! - a segment that is exactly `**` matches zero or more whole segments;
//! - every other byte matches itself (case-sensitive, as paths are);
//! - a pattern starting with `/` is anchored at the root (`/assets/**`); any other pattern
//!   may match at any depth, as if it started with `**/` (`*.css` matches `/a/b/c.css`,
//!   and is the same as `**/*.css`).

/// A validated pattern, split into segments once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Glob {
    /// The pattern's segments; an unanchored pattern starts with `**`.
    segments: Vec<Box<[u8]>>,
}

const ANY_SEGMENTS: &[u8] = b"**";

impl Glob {
    /// Validates and splits `text`: non-empty, printable ASCII or UTF-8 (no controls, no
    /// spaces).
    pub(crate) fn parse(text: &str) -> Result<Glob, &'static str> {
        if text.is_empty() {
            return Err("the pattern is empty");
        }
        if text.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err("the pattern holds a space or a control character");
        }
        let (anchored, rest) = match text.strip_prefix('/') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let implicit = (!anchored).then(|| Box::from(ANY_SEGMENTS));
        let segments = implicit
            .into_iter()
            .chain(rest.split('/').map(|s| Box::from(s.as_bytes())))
            .collect();
        Ok(Glob { segments })
    }

    /// Whether `path` (starting with `/`) matches.
    pub(crate) fn matches(&self, path: &[u8]) -> bool {
        let path = path.strip_prefix(b"/").unwrap_or(path);
        let mut segs = Segments::new(path);
        let mut at = 0;
        // Where to resume when a literal segment fails: the pattern index after the last
        // `**`, and the path position it has absorbed up to.
        let mut resume: Option<(usize, Segments)> = None;
        loop {
            if self.segments.get(at).is_some_and(|s| **s == *ANY_SEGMENTS) {
                at += 1;
                resume = Some((at, segs));
                continue;
            }
            let Some(seg) = segs.peek() else { break };
            if self
                .segments
                .get(at)
                .is_some_and(|p| segment_matches(p, seg))
            {
                at += 1;
                segs.advance();
                continue;
            }
            // A `**` absorbs one more segment and the rest of the pattern is tried again.
            let Some((after, mut absorbed)) = resume else {
                return false;
            };
            absorbed.advance();
            resume = Some((after, absorbed));
            (at, segs) = (after, absorbed);
        }
        self.segments[at..].iter().all(|s| **s == *ANY_SEGMENTS)
    }
}

/// The segments of a path without its leading `/` (`a/b/` is `a`, `b`, ``), one at a
/// time; `Copy`, so a backtracking point is just a saved position.
#[derive(Clone, Copy)]
struct Segments<'a> {
    path: &'a [u8],
    /// Start of the next segment; `None` once every segment was taken.
    at: Option<usize>,
}

impl<'a> Segments<'a> {
    fn new(path: &'a [u8]) -> Self {
        Segments { path, at: Some(0) }
    }

    fn peek(&self) -> Option<&'a [u8]> {
        let rest = &self.path[self.at?..];
        let end = memchr::memchr(b'/', rest).unwrap_or(rest.len());
        Some(&rest[..end])
    }

    fn advance(&mut self) {
        let Some(at) = self.at else { return };
        self.at = memchr::memchr(b'/', &self.path[at..]).map(|i| at + i + 1);
    }
}

/// One segment against one pattern segment where `*` matches any run of bytes: the
/// classic two-pointer match that backtracks only to the last `*` (linear in practice,
/// at most pattern × segment).
fn segment_matches(pattern: &[u8], seg: &[u8]) -> bool {
    let (mut p, mut s) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while s < seg.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p + 1, s));
                p += 1;
            }
            Some(&b) if b == seg[s] => {
                p += 1;
                s += 1;
            }
            _ => match star {
                Some((after, taken)) => {
                    star = Some((after, taken + 1));
                    (p, s) = (after, taken + 1);
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Naive oracle: recursive matching straight from the grammar (exponential, fine for
    /// short inputs).
    fn naive(pattern: &str, path: &str) -> bool {
        fn seg(p: &[u8], s: &[u8]) -> bool {
            match p.split_first() {
                None => s.is_empty(),
                Some((b'*', rest)) => (0..=s.len()).any(|i| seg(rest, &s[i..])),
                Some((&b, rest)) => s.first() == Some(&b) && seg(rest, &s[1..]),
            }
        }
        fn segs(p: &[&str], s: &[&str]) -> bool {
            match p.split_first() {
                None => s.is_empty(),
                Some((&"**", rest)) => (0..=s.len()).any(|i| segs(rest, &s[i..])),
                Some((first, rest)) => {
                    !s.is_empty() && seg(first.as_bytes(), s[0].as_bytes()) && segs(rest, &s[1..])
                }
            }
        }
        let full = match pattern.strip_prefix('/') {
            Some(p) => p.to_string(),
            None => format!("**/{pattern}"),
        };
        let p: Vec<&str> = full.split('/').collect();
        let s: Vec<&str> = path[1..].split('/').collect();
        segs(&p, &s)
    }

    fn m(pattern: &str, path: &str) -> bool {
        let got = Glob::parse(pattern).unwrap().matches(path.as_bytes());
        assert_eq!(got, naive(pattern, path), "oracle: {pattern} {path}");
        got
    }

    #[test]
    fn the_documented_forms() {
        assert!(m("*.css", "/site.css"));
        assert!(m("*.css", "/a/b/site.css"));
        assert!(!m("*.css", "/site.css.map"));
        assert!(!m("*.css", "/css/x"));
        assert!(m("/assets/**", "/assets/a.js"));
        assert!(m("/assets/**", "/assets/x/y/z.png"));
        assert!(!m("/assets/**", "/other/assets/a.js"));
        assert!(m("**/*.html", "/index.html"));
        assert!(m("**/*.html", "/a/b/index.html"));
        assert!(m("/*.html", "/index.html"));
        assert!(!m("/*.html", "/a/index.html"));
        assert!(m("/a/**/z", "/a/z"));
        assert!(m("/a/**/z", "/a/b/c/z"));
        assert!(!m("/a/**/z", "/a/b/c/zz"));
        assert!(m("/a*b/c", "/axxb/c"));
        assert!(!m("/a*b/c", "/ax/xb/c"));
        assert!(m("/", "/"));
        assert!(m("/dir/", "/dir/"));
        assert!(!m("/dir/", "/dir/x"));
        assert!(m("**", "/anything/at/all"));
        assert!(m("/index.html", "/index.html"));
        assert!(!m("/index.html", "/Index.html"));
    }

    #[test]
    fn agrees_with_the_oracle_on_every_small_case() {
        let patterns = [
            "*",
            "**",
            "/*",
            "/**",
            "a*",
            "*a",
            "*a*",
            "a*b*a",
            "/a/*",
            "/a/**",
            "**/a",
            "/**/a/**",
            "a/*/b",
            "*/**/*",
            "/a/**/**/b",
            "a**b",
            "/a//b",
        ];
        let alphabet = ["", "a", "b", "ab", "ba", "aa", "aba"];
        let mut paths = vec![];
        for x in alphabet {
            paths.push(format!("/{x}"));
            for y in alphabet {
                paths.push(format!("/{x}/{y}"));
                for z in ["a", "b", ""] {
                    paths.push(format!("/{x}/{y}/{z}"));
                }
            }
        }
        for p in patterns {
            for path in &paths {
                m(p, path);
            }
        }
    }

    #[test]
    fn bad_patterns_are_refused() {
        for bad in ["", "a b", "a\tb", "a\nb", "\u{7f}"] {
            assert!(Glob::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn many_stars_stay_cheap() {
        let g = Glob::parse(&"*a".repeat(40)).unwrap();
        let path = format!("/{}", "a".repeat(4000));
        assert!(g.matches(path.as_bytes()));
        let g = Glob::parse(&format!("{}b", "**/".repeat(40))).unwrap();
        let long = "/x".repeat(2000);
        assert!(!g.matches(long.as_bytes()));
    }
}
