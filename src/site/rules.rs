//! Redirect, rewrite and proxy rules: `--redirect 'FROM TO [CODE]'`, `--rewrite 'FROM TO'`,
//! `--proxy 'FROM UPSTREAM'`, one ordered list in which the first rule whose FROM matches
//! answers.
//!
//! Input: the rule texts (validated once by [`Rule::parse`]), then per request the
//! decoded path and its raw query. Output: the rule that matches, with its target written
//! into a caller's buffer ([`Rule::write_target`]). No allocation and no I/O per request:
//! FROM is a [`Glob`] (the `--cache-control` syntax) whose `*` and `**` capture, in order,
//! as `$1`..`$9`; TO is split once into literal bytes and capture numbers.
//!
//! A redirect's target goes into a `Location` line: its literal bytes are checked at
//! start (visible ASCII, no space), and every captured byte outside RFC 3986's `pchar`
//! (and `/`) is percent-encoded, so a CR, LF or NUL in a path never reaches a header.
//! The request's query string is appended unless TO has its own `?`. A rewrite's target
//! is a path under the root, resolved as a request path is (`files`: `openat2` beneath
//! the root, dotfiles, sidecars); a literal TO that leaves the root (a `.` or `..`
//! segment) is refused here; what captures bring in is held to the root by `openat2`.

pub use super::glob::Captures;
use super::glob::Glob;
use super::upstream::Upstream;

/// What a matching rule does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Answer with this status (301, 302, 303, 307, 308) and a `Location`.
    Redirect(u16),
    /// Answer with the file at the target path.
    Rewrite,
    /// Forward the request to the rule's upstream.
    Proxy,
}

/// One piece of a TO template.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    /// Bytes written as they are.
    Literal(Box<[u8]>),
    /// `$N`: capture `N - 1`.
    Capture(u8),
}

/// One rule, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// FROM.
    from: Glob,
    /// TO, split.
    to: Vec<Part>,
    /// TO has a `?`: the request's query is not appended.
    own_query: bool,
    /// Redirect, rewrite or proxy.
    pub action: Action,
    /// A proxy rule's upstream.
    pub(crate) upstream: Option<Upstream>,
    /// A proxy rule's upstream as the log and the metrics name it (`unix:/run/app.sock`);
    /// empty for other rules.
    pub(crate) upstream_name: Box<str>,
    /// A proxy rule's upstream's place among the upstreams `/metrics` counts apart
    /// (`Serving::number_upstreams`); `None` past them, and for other rules.
    pub(crate) counted: Option<u8>,
    /// Where the rule was given: `--redirect`, `--rewrite`, or `FILE:LINE`.
    pub(crate) source: Box<str>,
    /// FROM as given.
    pub(crate) from_text: Box<str>,
}

/// The bytes a captured byte is written as in a `Location`: itself when it is an RFC 3986
/// `pchar` or `/` (unreserved, sub-delims, `:`, `@`), else `%XX`.
fn plain_in_location(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&b)
}

impl Rule {
    /// Parses `FROM TO [CODE]` (`redirect`) or `FROM TO` (a rewrite), given at `source`.
    #[inline(never)]
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub fn parse(text: &str, redirect: bool, source: &str) -> Result<Rule, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let (from, to, code) = match (redirect, &words[..]) {
            (true, &[f, t]) => (f, t, 301),
            (true, &[f, t, c]) => (f, t, redirect_code(c)?),
            (false, &[f, t]) => (f, t, 0),
            (true, _) => return Err("expected FROM TO [CODE]".into()),
            (false, _) => return Err("expected FROM TO".into()),
        };
        let from = Glob::parse(from).map_err(|e| format!("FROM: {e}"))?;
        let action = match redirect {
            true => Action::Redirect(code),
            false => Action::Rewrite,
        };
        check_target(to, action)?;
        let parts = template(to, from.wildcards())?;
        Ok(Rule {
            from,
            to: parts,
            own_query: to.contains('?'),
            action,
            upstream: None,
            upstream_name: Box::default(),
            counted: None,
            source: source.into(),
            from_text: words[0].into(),
        })
    }

    /// Parses `FROM UPSTREAM` (a `--proxy` rule), given at `source`.
    #[inline(never)]
    pub(crate) fn proxy(text: &str, source: &str) -> Result<Rule, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let &[from, upstream] = &words[..] else {
            return Err("expected GLOB UPSTREAM".into());
        };
        let upstream = Upstream::parse(upstream)?;
        Ok(Rule {
            from: Glob::parse(from).map_err(|e| format!("GLOB: {e}"))?,
            to: Vec::new(),
            own_query: false,
            action: Action::Proxy,
            upstream_name: upstream.to_string().into(),
            upstream: Some(upstream),
            counted: None,
            source: source.into(),
            from_text: from.into(),
        })
    }

    /// Whether the rule matches `path`, with the captures in `caps`.
    pub fn matches(&self, path: &[u8], caps: &mut Captures) -> bool {
        self.from.captures(path, caps)
    }

    /// A path FROM matches: each wildcard taking `a` (`/old/**` gives `/old/a`).
    pub(crate) fn sample_path(&self) -> String {
        let from = self.from_text.replace("**", "a").replace('*', "a");
        match from.starts_with('/') {
            true => from,
            false => format!("/{from}"),
        }
    }

    /// FROM when it names one path (anchored, no wildcard).
    pub(crate) fn literal_from(&self) -> Option<&str> {
        let literal = self.from_text.starts_with('/') && !self.from_text.contains('*');
        literal.then_some(&*self.from_text)
    }

    /// Whether the rule matches every path (FROM is `**` or `/**`).
    pub(crate) fn always_matches(&self) -> bool {
        self.from.matches_everything()
    }

    /// Writes the target for `path` (its captures in `caps`) and `query` into `out`: a
    /// redirect's `Location` value, or a rewrite's request path. `None` when it does not
    /// fit.
    pub fn write_target(
        &self,
        path: &[u8],
        caps: &Captures,
        query: Option<&[u8]>,
        out: &mut [u8],
    ) -> Option<usize> {
        let mut w = Out::new(out);
        let encode = matches!(self.action, Action::Redirect(_));
        for part in &self.to {
            match part {
                Part::Literal(bytes) => w.put(bytes)?,
                Part::Capture(n) if encode => {
                    for &b in caps.get(path, usize::from(*n)) {
                        w.encoded(b)?;
                    }
                }
                Part::Capture(n) => w.put(caps.get(path, usize::from(*n)))?,
            }
        }
        if let (true, Some(q), false) = (encode, query, self.own_query) {
            w.query(q)?;
        }
        Some(w.len)
    }
}

/// A bounded writer into a caller's buffer, for targets: `None` once full.
pub(crate) struct Out<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> Out<'a> {
    /// A writer at the start of `buf`.
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        Out { buf, len: 0 }
    }

    /// Bytes written.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Writes `bytes` as they are.
    pub(crate) fn put(&mut self, bytes: &[u8]) -> Option<()> {
        let end = self.len.checked_add(bytes.len())?;
        self.buf.get_mut(self.len..end)?.copy_from_slice(bytes);
        self.len = end;
        Some(())
    }

    /// Writes each of `parts` as it is.
    pub(crate) fn all(&mut self, parts: &[&[u8]]) -> Option<()> {
        parts.iter().try_for_each(|p| self.put(p))
    }

    /// Writes `b` as itself when a `Location` path may hold it, else as `%XX`.
    pub(crate) fn encoded(&mut self, b: u8) -> Option<()> {
        match plain_in_location(b) {
            true => self.put(&[b]),
            false => self.percent(b),
        }
    }

    /// Writes `?` and a request's raw query: as it came, but for any byte that is not
    /// visible ASCII, and `#`, which are `%XX` (the parser admits none of them; this
    /// keeps a `Location` line whole whatever it is given).
    pub(crate) fn query(&mut self, q: &[u8]) -> Option<()> {
        self.put(b"?")?;
        for &b in q {
            match b.is_ascii_graphic() && b != b'#' {
                true => self.put(&[b])?,
                false => self.percent(b)?,
            }
        }
        Some(())
    }

    fn percent(&mut self, b: u8) -> Option<()> {
        const HEX: &[u8; 16] = b"0123456789ABCDEF";
        self.put(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]])
    }
}

fn redirect_code(word: &str) -> Result<u16, String> {
    match word {
        "301" | "302" | "303" | "307" | "308" => Ok(word.parse().unwrap_or(301)),
        _ => Err(format!("CODE {word:?}: expected 301, 302, 303, 307 or 308")),
    }
}

/// TO's literal form: a redirect's a path or an `http(s)://` URL of visible ASCII; a
/// rewrite's a path under the root without a query.
fn check_target(to: &str, action: Action) -> Result<(), String> {
    if to.bytes().any(|b| !b.is_ascii_graphic()) {
        return Err("TO must be visible ASCII (percent-encode the rest)".into());
    }
    let url = to.starts_with("http://") || to.starts_with("https://");
    match action {
        Action::Redirect(_) if url || to.starts_with('/') => Ok(()),
        Action::Redirect(_) => Err("TO must be a path (/...) or an http(s):// URL".into()),
        Action::Rewrite if !to.starts_with('/') || to.contains('?') => {
            Err("TO must be a path under the root (/...), without a query".into())
        }
        Action::Rewrite if to[1..].split('/').any(|s| s == "." || s == "..") => {
            Err("TO leaves the root (a . or .. segment)".into())
        }
        Action::Rewrite | Action::Proxy => Ok(()),
    }
}

/// TO split into literals and `$N` (N from 1 to the wildcards of FROM, at most 9).
fn template(to: &str, wildcards: usize) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut literal = Vec::new();
    let mut bytes = to.bytes().peekable();
    while let Some(b) = bytes.next() {
        match (b, bytes.peek()) {
            (b'$', Some(&d @ b'1'..=b'9')) => {
                bytes.next();
                let n = d - b'0';
                if usize::from(n) > wildcards {
                    return Err(format!("TO uses ${n}, but FROM has {wildcards} wildcards"));
                }
                if !literal.is_empty() {
                    parts.push(Part::Literal(core::mem::take(&mut literal).into()));
                }
                parts.push(Part::Capture(n - 1));
            }
            _ => literal.push(b),
        }
    }
    if !literal.is_empty() {
        parts.push(Part::Literal(literal.into()));
    }
    Ok(parts)
}

/// Which paths some rule of a list may match, told by two bytes of the path: the byte
/// after its leading `/` and its last byte. Each rule contributes one necessary
/// condition: the second byte of its literal prefix (an anchored FROM such as
/// `/old/**`), else the last byte of its literal suffix (`*.php`), else none (it may
/// match anything). A request no rule concerns is then passed over in a few
/// instructions, however many rules there are, and a site without rules in one compare.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Prefilter {
    /// The list has a rule.
    some: bool,
    second: [u64; 4],
    last: [u64; 4],
    any: bool,
}

impl Prefilter {
    /// The prefilter of `rules`.
    pub(crate) fn of(rules: &[Rule]) -> Prefilter {
        let mut f = Prefilter {
            some: !rules.is_empty(),
            ..Prefilter::default()
        };
        for rule in rules {
            match rule.from.literal_ends() {
                (prefix, _) if prefix.len() >= 2 => set(&mut f.second, prefix[1]),
                (_, [.., last]) => set(&mut f.last, *last),
                _ => f.any = true,
            }
        }
        f
    }

    /// False when no rule can match `path`.
    #[inline]
    pub(crate) fn may_match(&self, path: &[u8]) -> bool {
        self.some && self.may_match_some(path)
    }

    #[inline]
    fn may_match_some(&self, path: &[u8]) -> bool {
        self.any
            || path.get(1).is_some_and(|&b| has(&self.second, b))
            || path.last().is_some_and(|&b| has(&self.last, b))
    }
}

fn set(bits: &mut [u64; 4], b: u8) {
    bits[usize::from(b >> 6)] |= 1 << (b & 63);
}

fn has(bits: &[u64; 4], b: u8) -> bool {
    bits[usize::from(b >> 6)] & (1 << (b & 63)) != 0
}

/// The first rule of `rules` that matches `path`, with its captures in `caps`.
pub(crate) fn first_match<'r>(
    rules: &'r [Rule],
    path: &[u8],
    caps: &mut Captures,
) -> Option<&'r Rule> {
    rules.iter().find(|r| r.matches(path, caps))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(rule: &str, redirect: bool, path: &str, query: Option<&str>) -> Option<String> {
        let r = Rule::parse(rule, redirect, "--test").unwrap();
        let mut caps = Captures::default();
        if !r.matches(path.as_bytes(), &mut caps) {
            return None;
        }
        let mut out = [0u8; 256];
        let q = query.map(str::as_bytes);
        let n = r.write_target(path.as_bytes(), &caps, q, &mut out).unwrap();
        Some(String::from_utf8(out[..n].to_vec()).unwrap())
    }

    #[test]
    fn captures_fill_the_target() {
        let t = |rule, path, q| target(rule, true, path, q);
        assert_eq!(t("/old/** /new/$1", "/old/a/b", None).unwrap(), "/new/a/b");
        assert_eq!(
            t("/old/** /new/$1", "/old/a", Some("x=1")).unwrap(),
            "/new/a?x=1"
        );
        assert_eq!(
            t("/old/** /new/$1?k=v", "/old/a", Some("x=1")).unwrap(),
            "/new/a?k=v"
        );
        assert_eq!(
            t(
                "/b/*/*.html https://ex.test/$2/$1 308",
                "/b/2024/p.html",
                None
            )
            .unwrap(),
            "https://ex.test/p/2024"
        );
        assert_eq!(
            t("/o/* /n/$1", "/o/a\r\nX: y", None).unwrap(),
            "/n/a%0D%0AX:%20y"
        );
        assert_eq!(
            t("/o/* /n/$1", "/o/a?b#c\0", None).unwrap(),
            "/n/a%3Fb%23c%00"
        );
        assert_eq!(t("/o/* /n/$1", "/x/a", None), None);
        assert_eq!(
            target("/app/** /app/index.html", false, "/app/x/y", Some("q")).unwrap(),
            "/app/index.html"
        );
        assert_eq!(
            target("/a/* /b/$1.html", false, "/a/x y", None).unwrap(),
            "/b/x y.html"
        );
    }

    #[test]
    fn refusals() {
        for (text, redirect, needle) in [
            ("/a", true, "expected FROM TO [CODE]"),
            ("/a /b 200", true, "CODE \"200\""),
            ("/a /b 301", false, "expected FROM TO"),
            ("/a relative", true, "TO must be a path"),
            ("/a/* /b/$2", true, "TO uses $2, but FROM has 1"),
            ("/a /../etc/passwd", false, "TO leaves the root"),
            ("/a /x/./y", false, "TO leaves the root"),
            ("/a /b?x", false, "without a query"),
            ("/a b", false, "TO must be a path under the root"),
        ] {
            let e = Rule::parse(text, redirect, "--t").unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn the_prefilter_passes_every_path_a_rule_matches() {
        let texts = [
            "/old/** /n",
            "/a*b /n",
            "*.php /n",
            "favicon.ico /n",
            "/x/ /n",
        ];
        let rules: Vec<Rule> = texts
            .iter()
            .map(|t| Rule::parse(t, true, "").unwrap())
            .collect();
        let f = Prefilter::of(&rules);
        let mut caps = Captures::default();
        for path in [
            "/old",
            "/old/x",
            "/ab",
            "/axxb",
            "/q/i.php",
            "/favicon.ico",
            "/d/favicon.ico",
            "/x/",
        ] {
            assert!(
                first_match(&rules, path.as_bytes(), &mut caps).is_some(),
                "{path}"
            );
            assert!(f.may_match(path.as_bytes()), "{path}");
        }
        for path in ["/f", "/", "/zz/y", "/phq"] {
            assert!(!f.may_match(path.as_bytes()), "{path}");
        }
        let all = Prefilter::of(&[Rule::parse("/** /n", true, "").unwrap()]);
        assert!(all.may_match(b"/f"));
    }

    #[test]
    fn a_proxy_rule_names_its_upstream() {
        let r = Rule::proxy("/api/** unix:/run/app.sock", "--proxy").unwrap();
        assert_eq!(r.action, Action::Proxy);
        assert_eq!(
            r.upstream.as_ref().unwrap().to_string(),
            "unix:/run/app.sock"
        );
        let mut caps = Captures::default();
        assert!(r.matches(b"/api/v1/x", &mut caps));
        for (text, needle) in [
            ("/api/**", "expected GLOB UPSTREAM"),
            ("/api/** http://127.0.0.1:1 x", "expected GLOB UPSTREAM"),
            ("/api/** ftp://x", "expected unix:"),
        ] {
            let e = Rule::proxy(text, "--t").unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn first_match_wins() {
        let rules = [
            Rule::parse("/a/** /one", true, "1").unwrap(),
            Rule::parse("/a/b /two", true, "2").unwrap(),
        ];
        let mut caps = Captures::default();
        assert_eq!(
            &*first_match(&rules, b"/a/b", &mut caps).unwrap().source,
            "1"
        );
        assert!(first_match(&rules, b"/c", &mut caps).is_none());
        assert!(Rule::parse("/** /x", true, "").unwrap().always_matches());
        assert!(!rules[0].always_matches());
    }
}
