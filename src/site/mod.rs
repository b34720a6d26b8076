//! What the operator says about the site's responses, beyond the files themselves:
//! extra header lines (`--header`), `Cache-Control` by path (`--cache-control`), error
//! pages (`--error-page`), the single-page-app fallback (`--fallback`,
//! `--fallback-skip`), media types (`--mime`, `--mime-types`), the sidecars looked for
//! (`--precompressed`), whether dotfiles are served (`--dotfiles`), which origins may
//! read the site (`--cors`), who may (`--basic-auth`), whether directories are listed
//! (`--list-dirs`), what validators are made of (`--etag`, `SOURCE_DATE_EPOCH`), what
//! is compressed (`--compress`, `--compress-types`), the redirect, rewrite and proxy rules
//! (`--redirect`, `--rewrite`, `--proxy`), the extensions tried for a missing path (`--try-ext`) and
//! the HTTPS redirect behind a proxy (`--https-redirect`), who may connect (`--allow`,
//! `--deny`), how often (`--rate-limit`) and how fast a response is sent (`--max-rate`).
//!
//! Stage: values validated once from the command line (stage 1) and gathered into
//! [`SiteRules`], then read by the responder for every request without allocating.
//! Nothing here touches files or sockets: whether the pages exist is the start-up
//! check's business, reading the `--mime-types` file `preflight::media_types`' (at start
//! and at each reload), and serving them the responder's.

pub(crate) mod access;
pub(crate) mod auth;
pub(crate) mod compress;
pub(crate) mod cors;
pub(crate) mod dotfiles;
pub(crate) mod field;
pub(crate) mod glob;
pub(crate) mod hosts;
pub mod mime;
pub mod net;
pub mod rules;
pub(crate) mod upstream;
pub(crate) mod validators;

use crate::http::encoding::Precompressed;
use field::HeaderLine;
use glob::Glob;
use std::path::PathBuf;

/// The operator's rules, as the worker reads them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SiteRules {
    /// Media types: `--mime`, and the `--mime-types` file once read (the built-in table
    /// is behind both).
    pub(crate) types: mime::MediaTypes,
    /// `--mime-types FILE`: read at start and again by each reload.
    pub(crate) mime_types: Option<PathBuf>,
    /// Sidecar codings looked for (`--precompressed`).
    pub(crate) precompressed: Precompressed,
    /// Every `--header` line, concatenated (CRLF-terminated each).
    pub(crate) headers: Box<[u8]>,
    /// `--cache-control` rules, in order (the first match wins).
    pub(crate) cache_rules: Vec<CacheRule>,
    /// `--error-page CODE=PATH`: status and request path of its page.
    pub(crate) error_pages: Vec<(u16, Box<[u8]>)>,
    /// `--fallback PATH`: the request path answered for a path that does not exist.
    pub(crate) fallback: Option<Box<[u8]>>,
    /// `--fallback-skip`: extensions (lowercase, no dot) that never fall back.
    pub(crate) fallback_skip: Vec<Box<[u8]>>,
    /// `--dotfiles`: whether paths with a segment beginning with `.` are served.
    pub(crate) dotfiles: dotfiles::Dotfiles,
    /// `--cors`: the origins that may read the site, with their lines.
    pub(crate) cors: cors::Cors,
    /// `--basic-auth`: the htpasswd file, the challenge, the exempt paths.
    pub(crate) auth: Option<auth::BasicAuth>,
    /// `--list-dirs`: a directory without `index.html` is answered with its listing.
    pub(crate) list_dirs: bool,
    /// `--etag`, and `SOURCE_DATE_EPOCH`: what validators are made of.
    pub(crate) validators: validators::Validators,
    /// `--compress`, `--compress-types`: what is sent gzip-compressed without a sidecar.
    pub(crate) compress: compress::Compress,
    /// `--redirect`, `--rewrite` and `--proxy`, in order (the first match answers).
    pub(crate) rules: Vec<rules::Rule>,
    /// Which request paths some rule may match (`rules::Prefilter`).
    pub(crate) rule_filter: rules::Prefilter,
    /// `--try-ext`: extensions (no dot) tried, in order, for a path that does not exist.
    pub(crate) try_ext: Vec<Box<[u8]>>,
    /// `--https-redirect`: a request a trusted proxy says came over plain HTTP gets 308.
    pub(crate) https_redirect: bool,
    /// `--allow` and `--deny`: checked at accept and, for a proxied client, per request.
    pub(crate) access: access::AccessList,
    /// `--rate-limit N`: requests per second (burst N) per client address; 0: none.
    pub(crate) rate_limit: u32,
    /// `--max-rate SIZE`: bytes per second per connection (`SO_MAX_PACING_RATE`); 0: none.
    pub(crate) max_rate: u32,
}

impl SiteRules {
    /// Some rule forwards requests to an upstream (`--proxy`).
    pub(crate) fn forwards(&self) -> bool {
        self.rules.iter().any(|r| r.upstream.is_some())
    }

    /// The page to send with `status`, if one is configured.
    pub(crate) fn error_page(&self, status: u16) -> Option<&[u8]> {
        self.error_pages
            .iter()
            .find(|(s, _)| *s == status)
            .map(|(_, p)| &**p)
    }

    /// True when a request that showed `admission` to `--basic-auth` may be served
    /// `path`: always without the flag, else `auth::BasicAuth::admits`. Every path a
    /// request is answered with asks this, its own and any it is sent to instead.
    pub(crate) fn admits(&self, admission: auth::Admission, path: &[u8]) -> bool {
        self.auth.as_ref().is_none_or(|a| a.admits(admission, path))
    }

    /// The fallback's path, when a request for `path` (which does not exist) gets it.
    pub(crate) fn fallback_for(&self, path: &[u8]) -> Option<&[u8]> {
        let fallback = self.fallback.as_deref()?;
        let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
        let skipped = memchr::memrchr(b'.', name).is_some_and(|dot| {
            let ext = &name[dot + 1..];
            self.fallback_skip
                .iter()
                .any(|s| s.eq_ignore_ascii_case(ext))
        });
        (!skipped).then_some(fallback)
    }

    /// The pages that must be regular files under the root: each `--error-page`'s and
    /// the fallback, with the flag that names them.
    pub(crate) fn pages(&self) -> impl Iterator<Item = (&'static str, &[u8])> {
        let errors = self.error_pages.iter().map(|(_, p)| ("--error-page", &**p));
        let fallback = self.fallback.iter().map(|p| ("--fallback", &**p));
        errors.chain(fallback)
    }

    /// Bytes the operator's lines may add to one response head: every `--header` line
    /// and the longest `--cache-control` line.
    pub(crate) fn head_bytes(&self) -> usize {
        let auth = self.auth.as_ref().map_or(0, auth::BasicAuth::head_bytes);
        head_bytes(self.headers.len(), &self.cache_rules) + self.cors.head_bytes() + auth
    }

    /// Bytes of the response-head area a connection needs for these rules (validated at
    /// start to fit `http::response::HEAD_AREA_MAX`).
    pub(crate) fn head_area(&self) -> usize {
        let area = crate::http::response::head_area(self.head_bytes(), self.types.longest());
        area.unwrap_or(crate::http::response::HEAD_AREA_MAX)
    }
}

/// Bytes the operator's lines add to one response head: `headers` bytes of `--header`
/// lines and the longest of the `--cache-control` lines (one rule matches a response).
pub(crate) fn head_bytes(headers: usize, cache_rules: &[CacheRule]) -> usize {
    let longest = cache_rules.iter().map(|r| r.line.as_bytes().len());
    headers + longest.max().unwrap_or(0)
}

/// Bytes a media type may have in a response head beside `lines` bytes of the
/// operator's lines (those [`head_bytes`] counts).
pub(crate) fn type_room(lines: usize) -> usize {
    use crate::http::response::{HEAD_AREA_MAX, HEAD_BASE_MAX};
    HEAD_AREA_MAX.saturating_sub(HEAD_BASE_MAX + lines)
}

/// One `--cache-control PATTERN=VALUE` rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CacheRule {
    /// Which request paths it covers.
    pub(crate) glob: Glob,
    /// The `Cache-Control` line it adds.
    pub(crate) line: HeaderLine,
}

impl CacheRule {
    /// Splits `PATTERN=VALUE` at the first `=` and validates both sides.
    pub(crate) fn parse(text: &str) -> Result<CacheRule, &'static str> {
        let (pattern, value) = text.split_once('=').ok_or("expected PATTERN=VALUE")?;
        Ok(CacheRule {
            glob: Glob::parse(pattern)?,
            line: HeaderLine::cache_control(value)?,
        })
    }
}

/// The `Cache-Control` line of the first rule matching `path`, if any.
pub(crate) fn cache_control<'r>(rules: &'r [CacheRule], path: &[u8]) -> Option<&'r [u8]> {
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

    #[test]
    fn fallback_skips_listed_extensions() {
        let rules = SiteRules {
            fallback: Some(Box::from(&b"/index.html"[..])),
            fallback_skip: vec![Box::from(&b"js"[..]), Box::from(&b"png"[..])],
            ..SiteRules::default()
        };
        let fb = Some(&b"/index.html"[..]);
        assert_eq!(rules.fallback_for(b"/about"), fb);
        assert_eq!(rules.fallback_for(b"/docs/intro/"), fb);
        assert_eq!(
            rules.fallback_for(b"/v1.2/page"),
            fb,
            "only the last segment counts"
        );
        assert_eq!(rules.fallback_for(b"/a/app.js"), None);
        assert_eq!(rules.fallback_for(b"/LOGO.PNG"), None);
        assert_eq!(rules.fallback_for(b"/app.jsx"), fb);
        assert_eq!(SiteRules::default().fallback_for(b"/about"), None);
    }
}
