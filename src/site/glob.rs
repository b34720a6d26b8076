//! Path globs for `--cache-control PATTERN=VALUE`, `--basic-auth-skip`, and the FROM of
//! `--redirect` and `--rewrite`.
//!
//! Input: a pattern from the command line (validated once by [`Glob::parse`]) and a
//! decoded request path (starts with `/`). Output: whether the path matches, and
//! ([`Glob::captures`]) what each written `*` and `**` took, in pattern order (the first
//! [`CAPTURES`] of them; the implicit `**/` of an unanchored pattern takes nothing). Each
//! wildcard takes as little as the match allows, but the last `**` or `*` tried, which
//! takes what is left (`/a/**` on `/a/b/c` takes `b/c`). Matching
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
    /// The capture number of each segment's first wildcard ([`NO_CAPTURE`] for the
    /// implicit `**`).
    first: Vec<u8>,
    /// Written wildcards in the whole pattern.
    wildcards: usize,
    /// Bytes every matching path begins with, and ends with ([`Glob::may_match`]).
    prefix: Box<[u8]>,
    suffix: Box<[u8]>,
}

/// How many wildcards' spans [`Captures`] keeps: `$1`..`$9`.
pub(crate) const CAPTURES: usize = 9;

const NO_CAPTURE: u8 = u8::MAX;

/// The spans of the path each wildcard took (`start..end` byte offsets), in pattern order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Captures([(usize, usize); CAPTURES]);

impl Captures {
    /// The bytes of `path` capture `n` (0-based) took; empty for one that took nothing.
    pub fn get<'p>(&self, path: &'p [u8], n: usize) -> &'p [u8] {
        let (a, b) = self.0.get(n).copied().unwrap_or((0, 0));
        path.get(a..b).unwrap_or(b"")
    }

    fn set(&mut self, n: u8, span: (usize, usize)) {
        if let Some(slot) = self.0.get_mut(usize::from(n)) {
            *slot = span;
        }
    }
}

const ANY_SEGMENTS: &[u8] = b"**";

impl Glob {
    /// Validates and splits `text`: non-empty, printable ASCII or UTF-8 (no controls, no
    /// spaces).
    #[cfg_attr(feature = "cold-size", optimize(size))]
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
        let segments: Vec<Box<[u8]>> = implicit
            .into_iter()
            .chain(rest.split('/').map(|s| Box::from(s.as_bytes())))
            .collect();
        let mut wildcards = 0;
        let first = (segments.iter().enumerate())
            .map(|(i, seg)| {
                if i == 0 && !anchored {
                    return NO_CAPTURE;
                }
                let n = wildcards;
                wildcards += match **seg == *ANY_SEGMENTS {
                    true => 1,
                    false => seg.iter().filter(|&&b| b == b'*').count(),
                };
                u8::try_from(n).unwrap_or(NO_CAPTURE)
            })
            .collect();
        let (prefix, suffix) = literal_ends(text, anchored);
        Ok(Glob {
            segments,
            first,
            wildcards,
            prefix: prefix.as_bytes().into(),
            suffix: suffix.into_bytes().into(),
        })
    }

    /// The literal prefix and suffix every matching path has (see [`Glob::may_match`]).
    pub(crate) fn literal_ends(&self) -> (&[u8], &[u8]) {
        (&self.prefix, &self.suffix)
    }

    /// A cheap necessary condition: `path` begins with the pattern's literal prefix and
    /// ends with its last segment's literal tail. Most paths a site's rules do not
    /// concern fail it in a byte compare or two, before any segment is looked at.
    fn may_match(&self, path: &[u8]) -> bool {
        path.starts_with(&self.prefix) && path.ends_with(&self.suffix)
    }

    /// How many `*` and `**` the pattern has (the implicit `**/` not counted).
    pub(crate) fn wildcards(&self) -> usize {
        self.wildcards
    }

    /// Whether every path matches (every segment is `**`).
    pub(crate) fn matches_everything(&self) -> bool {
        self.segments.iter().all(|s| **s == *ANY_SEGMENTS)
    }

    /// Whether `path` (starting with `/`) matches.
    pub(crate) fn matches(&self, path: &[u8]) -> bool {
        self.captures(path, &mut Captures::default())
    }

    /// Whether `path` (starting with `/`) matches, with what each wildcard took in
    /// `caps` (offsets into `path`) when it does.
    pub(crate) fn captures(&self, path: &[u8], caps: &mut Captures) -> bool {
        if !self.may_match(path) {
            return false;
        }
        let base = usize::from(path.first() == Some(&b'/'));
        let mut segs = Segments::new(&path[base..]);
        let at_byte = |s: &Segments| s.at.map_or(path.len(), |a| a + base);
        let mut at = 0;
        // Where to resume when a literal segment fails: the pattern index after the last
        // `**`, the path position it has absorbed up to, and where its span begins.
        let mut resume: Option<(usize, Segments, usize)> = None;
        loop {
            if self.segments.get(at).is_some_and(|s| **s == *ANY_SEGMENTS) {
                let from = at_byte(&segs);
                caps.set(self.first[at], (from, from));
                at += 1;
                resume = Some((at, segs, from));
                continue;
            }
            let Some(seg) = segs.peek() else { break };
            let start = at_byte(&segs);
            if (self.segments.get(at))
                .is_some_and(|p| segment_matches(p, seg, (start, self.first[at]), caps))
            {
                at += 1;
                segs.advance();
                continue;
            }
            // A `**` absorbs one more segment and the rest of the pattern is tried again.
            let Some((after, mut absorbed, from)) = resume else {
                return false;
            };
            absorbed.advance();
            let end = absorbed.at.map_or(path.len(), |a| a + base - 1);
            caps.set(self.first[after - 1], (from, end));
            resume = Some((after, absorbed, from));
            (at, segs) = (after, absorbed);
        }
        let end = path.len();
        let rest = at..self.segments.len();
        rest.filter(|&i| *self.segments[i] == *ANY_SEGMENTS)
            .for_each(|i| caps.set(self.first[i], (end, end)));
        self.segments[at..].iter().all(|s| **s == *ANY_SEGMENTS)
    }
}

/// The literal ends of a pattern: for an anchored one, its bytes before the first `*`
/// (without the `/` before a `**` segment, which may match no segment: `/a/**` matches
/// `/a`); and the tail its last segment fixes, unless that segment is `**`: the bytes
/// after its last `*`, or the whole segment with the `/` before it. The path's last
/// segment is always matched by the pattern's last segment that is not `**`, so both
/// are necessary.
fn literal_ends(text: &str, anchored: bool) -> (&str, String) {
    let star = text.find('*').unwrap_or(text.len());
    let mut prefix = if anchored { &text[..star] } else { "" };
    if text[star..].starts_with("**") && prefix.ends_with('/') {
        prefix = &prefix[..prefix.len() - 1];
    }
    let last = text.rsplit('/').next().unwrap_or(text);
    let suffix = match last.rfind('*') {
        _ if last == "**" => String::new(),
        Some(i) => last[i + 1..].to_string(),
        None => format!("/{last}"),
    };
    (prefix, suffix)
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
/// at most pattern × segment). `(offset, first)`: where the segment begins in the path,
/// and the capture number of the pattern segment's first `*`.
fn segment_matches(
    pattern: &[u8],
    seg: &[u8],
    (offset, first): (usize, u8),
    caps: &mut Captures,
) -> bool {
    let (mut p, mut s) = (0, 0);
    // The last `*`: the pattern index after it, where its span begins, the bytes it has
    // taken, and its capture number.
    let mut star: Option<(usize, usize, usize, u8)> = None;
    let mut next = first;
    while s < seg.len() {
        match pattern.get(p) {
            Some(b'*') => {
                caps.set(next, (offset + s, offset + s));
                star = Some((p + 1, s, s, next));
                next = next.saturating_add(1);
                p += 1;
            }
            Some(&b) if b == seg[s] => {
                p += 1;
                s += 1;
            }
            _ => match star {
                Some((after, from, taken, n)) => {
                    caps.set(n, (offset + from, offset + taken + 1));
                    star = Some((after, from, taken + 1, n));
                    next = n.saturating_add(1);
                    (p, s) = (after, taken + 1);
                }
                None => return false,
            },
        }
    }
    for _ in pattern[p..].iter().filter(|&&b| b == b'*') {
        caps.set(next, (offset + s, offset + s));
        next = next.saturating_add(1);
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
            // The literal ends (`Glob::may_match`) against the oracle.
            "/a/*",
            "/a/**/b",
            "/a/",
            "/",
            "b",
            "/ab*",
            "*a/",
            "/a*/b*a",
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

    fn caps(pattern: &str, path: &str) -> Option<Vec<String>> {
        let g = Glob::parse(pattern).unwrap();
        let mut c = Captures::default();
        g.captures(path.as_bytes(), &mut c).then(|| {
            (0..g.wildcards())
                .map(|n| String::from_utf8_lossy(c.get(path.as_bytes(), n)).into_owned())
                .collect()
        })
    }

    #[test]
    fn wildcards_capture_in_pattern_order() {
        assert_eq!(caps("/old/**", "/old/a/b.html").unwrap(), ["a/b.html"]);
        assert_eq!(caps("/old/**", "/old").unwrap(), [""]);
        assert_eq!(caps("/old/**", "/old/").unwrap(), [""]);
        assert_eq!(
            caps("/blog/*/*.html", "/blog/2024/post.html").unwrap(),
            ["2024", "post"]
        );
        assert_eq!(caps("/a/**/z/*", "/a/b/c/z/q").unwrap(), ["b/c", "q"]);
        assert_eq!(caps("/a/**/z", "/a/z").unwrap(), [""]);
        assert_eq!(caps("/x*y*", "/xAAyBB").unwrap(), ["AA", "BB"]);
        assert_eq!(caps("/*a*", "/bab").unwrap(), ["b", "b"]);
        assert_eq!(caps("*.php", "/a/b/x.php").unwrap(), ["x"]);
        assert_eq!(caps("/**/*.php", "/a/b/x.php").unwrap(), ["a/b", "x"]);
        assert_eq!(caps("/**/*.php", "/x.php").unwrap(), ["", "x"]);
        assert_eq!(caps("/docs/*", "/docs/a/b"), None);
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
