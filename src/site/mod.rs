//! What the operator says about the site's responses, beyond the files themselves:
//! extra header lines (`--header`), `Cache-Control` by path (`--cache-control`).
//!
//! Stage: values validated once from the command line (stage 1), then read by the
//! responder for every request without allocating. Nothing here touches files or
//! sockets.

pub mod field;
pub mod glob;

use field::HeaderLine;
use glob::Glob;

/// One `--cache-control PATTERN=VALUE` rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheRule {
    /// Which request paths it covers.
    pub glob: Glob,
    /// The `Cache-Control` line it adds.
    pub line: HeaderLine,
}

impl CacheRule {
    /// Splits `PATTERN=VALUE` at the first `=` and validates both sides.
    pub fn parse(text: &str) -> Result<CacheRule, &'static str> {
        let (pattern, value) = text.split_once('=').ok_or("expected PATTERN=VALUE")?;
        Ok(CacheRule {
            glob: Glob::parse(pattern)?,
            line: HeaderLine::cache_control(value)?,
        })
    }
}

/// The `Cache-Control` line of the first rule matching `path`, if any.
pub fn cache_control<'r>(rules: &'r [CacheRule], path: &[u8]) -> Option<&'r [u8]> {
    rules
        .iter()
        .find(|r| r.glob.matches(path))
        .map(|r| r.line.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_matching_rule_wins() {
        let rules: Vec<CacheRule> = ["/assets/**=max-age=31536000, immutable", "*=no-cache"]
            .iter()
            .map(|t| CacheRule::parse(t).unwrap())
            .collect();
        assert_eq!(
            cache_control(&rules, b"/assets/app.js"),
            Some(&b"Cache-Control: max-age=31536000, immutable\r\n"[..])
        );
        assert_eq!(
            cache_control(&rules, b"/index.html"),
            Some(&b"Cache-Control: no-cache\r\n"[..])
        );
        assert_eq!(cache_control(&rules[..1], b"/index.html"), None);
        for bad in ["*.css", "=no-cache", "*.css=", "a b=x"] {
            assert!(CacheRule::parse(bad).is_err(), "{bad:?}");
        }
    }
}
