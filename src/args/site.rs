//! Stage 1, the everyday-serving flags: `--precompressed`, `--header`, `--cache-control`,
//! `--error-page`, `--fallback`, `--fallback-skip`, `--mime`, `--mime-types`, `--dotfiles`,
//! `--cors`, `--basic-auth` with `--basic-auth-realm` and `--basic-auth-skip`, `--compress`,
//! `--redirect`, `--rewrite`, `--proxy`, `--try-ext`, `--https-redirect`,
//! `--compress-types`, `--compress-cache`, `--etag`, `--allow`, `--deny`, `--rate-limit`,
//! `--max-rate`
//! (with `SOURCE_DATE_EPOCH` from the environment, `args::parse_serve_in`), and the
//! switch `--list-dirs`.
//!
//! Input: one flag and its value at a time, routed by its [`SiteFlag`] tag in the table
//! of `args/serve.rs` (no flag is matched by name here). Output: a
//! validated [`SiteArgs`], and from it the worker's [`SiteRules`]. Syntax only: whether
//! the pages exist under the root, what the `--mime-types` file says and the htpasswd
//! file are checked by `steerd check` and at start (`cmd::preflight`). Every refusal names the flag and the
//! value.

use super::{flag_error, ArgsError};
use crate::http::encoding::Precompressed;
use crate::http::response::{error_body, head_area};
use crate::site::access::AccessList;
use crate::site::auth::{check_realm, BasicAuth, DEFAULT_REALM};
use crate::site::compress::Compress;
use crate::site::cors::Cors;
use crate::site::dotfiles::Dotfiles;
use crate::site::field::HeaderLine;
use crate::site::glob::Glob;
use crate::site::mime::{self, MediaTypes, MimeOverride, TooLong};
use crate::site::net::CidrError;
use crate::site::rules::Rule;
use crate::site::validators::{EtagMode, Validators};
use crate::site::{type_room, CacheRule, SiteRules};
use std::path::PathBuf;

/// Which of these flags a serve table entry is (`args/serve.rs`): the table names each
/// flag once, and this tag routes its value to [`SiteArgs::apply`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SiteFlag {
    /// `--precompressed`
    Precompressed,
    /// `--header`
    Header,
    /// `--cache-control`
    CacheControl,
    /// `--error-page`
    ErrorPage,
    /// `--fallback`
    Fallback,
    /// `--fallback-skip`
    FallbackSkip,
    /// `--mime`
    Mime,
    /// `--mime-types`
    MimeTypes,
    /// `--dotfiles`
    Dotfiles,
    /// `--cors`
    Cors,
    /// `--basic-auth`
    BasicAuth,
    /// `--basic-auth-realm`
    BasicAuthRealm,
    /// `--basic-auth-skip`
    BasicAuthSkip,
    /// `--list-dirs`
    ListDirs,
    /// `--redirect`
    Redirect,
    /// `--rewrite`
    Rewrite,
    /// `--proxy`
    Proxy,
    /// `--try-ext`
    TryExt,
    /// `--https-redirect`
    HttpsRedirect,
    /// `--etag`
    Etag,
    /// `--compress`
    Compress,
    /// `--compress-types`
    CompressTypes,
    /// `--compress-cache`
    CompressCache,
    /// `--allow`
    Allow,
    /// `--deny`
    Deny,
    /// `--rate-limit`
    RateLimit,
    /// `--max-rate`
    MaxRate,
}

/// The everyday-serving options of `serve` (and `check`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SiteArgs {
    /// `--precompressed LIST|off` (default `br,zstd,gzip`).
    pub(crate) precompressed: Precompressed,
    /// `--header 'Name: value'`, in order.
    pub(crate) headers: Vec<HeaderLine>,
    /// `--cache-control PATTERN=VALUE`, in order.
    pub(crate) cache_rules: Vec<CacheRule>,
    /// `--error-page CODE=PATH`: status and request path (with its leading `/`).
    pub(crate) error_pages: Vec<(u16, String)>,
    /// `--fallback PATH`, as a request path.
    pub(crate) fallback: Option<String>,
    /// `--fallback-skip LIST`: extensions, lowercase, without their dot.
    pub(crate) fallback_skip: Vec<String>,
    /// `--mime EXT=TYPE`, in order.
    pub(crate) mime: Vec<MimeOverride>,
    /// `--dotfiles deny|allow` (default `deny`).
    pub(crate) dotfiles: Dotfiles,
    /// `--cors ORIGIN|*`, every one given.
    pub(crate) cors: Cors,
    /// `--mime-types FILE` (read by `steerd check`, at start and at each reload).
    pub(crate) mime_types: Option<PathBuf>,
    /// `--basic-auth FILE`.
    pub(crate) basic_auth: Option<PathBuf>,
    /// `--basic-auth-realm REALM`.
    pub(crate) basic_auth_realm: Option<String>,
    /// `--basic-auth-skip GLOB`, in order.
    pub(crate) basic_auth_skip: Vec<Glob>,
    /// `--list-dirs`.
    pub list_dirs: bool,
    /// `--etag content|mtime` (default `content`).
    pub(crate) etag: EtagMode,
    /// `SOURCE_DATE_EPOCH` from the server's environment.
    pub(crate) source_date_epoch: Option<i64>,
    /// `--compress gzip|off` (default `gzip`) and `--compress-types LIST`.
    pub(crate) compress: Compress,
    /// `--redirect`, `--rewrite` and `--proxy`, in the order given.
    pub(crate) rules: Vec<Rule>,
    /// `--try-ext EXT`, in order: extensions, without their dot.
    pub(crate) try_ext: Vec<String>,
    /// `--https-redirect`.
    pub(crate) https_redirect: bool,
    /// `--allow` and `--deny`, each entry with where it was given.
    pub(crate) access: AccessList,
    /// `--rate-limit N` (0: none).
    pub(crate) rate_limit: u32,
    /// `--max-rate SIZE` in bytes per second (0: none).
    pub(crate) max_rate: u32,
    /// Where the next rule comes from, when not from a flag (`FILE:LINE`, set by the
    /// configuration file's reader).
    pub(crate) rule_source: Option<String>,
}

impl SiteArgs {
    /// Applies the flag `to` (spelled `flag`) with its value (empty for a switch), as
    /// the serve table routes it here.
    #[inline(never)]
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn apply(&mut self, to: SiteFlag, flag: &str, value: &str) -> Result<(), ArgsError> {
        let named = |why: &str| flag_error(format!("{flag} {value:?}: {why}"));
        match to {
            SiteFlag::Precompressed => {
                self.precompressed = Precompressed::parse(value).map_err(named)?
            }
            SiteFlag::Header => self.headers.push(HeaderLine::parse(value).map_err(named)?),
            SiteFlag::CacheControl => self
                .cache_rules
                .push(CacheRule::parse(value).map_err(named)?),
            SiteFlag::ErrorPage => self.error_pages.push(error_page(value).map_err(named)?),
            SiteFlag::Fallback => self.fallback = Some(request_path(value).map_err(named)?),
            SiteFlag::FallbackSkip => self.fallback_skip = extensions(value).map_err(named)?,
            SiteFlag::Mime => self.mime.push(MimeOverride::parse(value).map_err(named)?),
            SiteFlag::Dotfiles => self.dotfiles = Dotfiles::parse(value).map_err(named)?,
            SiteFlag::Etag => self.etag = EtagMode::parse(value).map_err(named)?,
            SiteFlag::Compress => {
                self.compress.gzip = Compress::parse_mode(value).map_err(named)?
            }
            SiteFlag::CompressTypes => self.compress.set_types(value).map_err(named)?,
            SiteFlag::CompressCache if value.is_empty() => {
                return Err(named("expected a directory"))
            }
            SiteFlag::CompressCache => self.compress.cache_dir = Some(PathBuf::from(value)),
            SiteFlag::Cors => self.cors.add(value).map_err(named)?,
            SiteFlag::MimeTypes if value.is_empty() => return Err(named("expected a file")),
            SiteFlag::MimeTypes => self.mime_types = Some(PathBuf::from(value)),
            SiteFlag::BasicAuth if value.is_empty() => {
                return Err(named("expected an htpasswd file"))
            }
            SiteFlag::BasicAuth => self.basic_auth = Some(PathBuf::from(value)),
            SiteFlag::BasicAuthRealm => {
                check_realm(value).map_err(named)?;
                self.basic_auth_realm = Some(value.to_string());
            }
            SiteFlag::BasicAuthSkip => self
                .basic_auth_skip
                .push(Glob::parse(value).map_err(named)?),
            SiteFlag::ListDirs => self.list_dirs = true,
            SiteFlag::Redirect | SiteFlag::Rewrite => {
                let source = self.source(flag, value);
                let redirect = to == SiteFlag::Redirect;
                let rule = Rule::parse(value, redirect, &source).map_err(|e| named(&e))?;
                self.rules.push(rule);
            }
            SiteFlag::Proxy => {
                let rule = Rule::proxy(value, &self.source(flag, value));
                self.rules.push(rule.map_err(|e| named(&e))?);
            }
            SiteFlag::TryExt => self.try_ext.push(extension(value).map_err(named)?),
            SiteFlag::HttpsRedirect => self.https_redirect = true,
            SiteFlag::Allow | SiteFlag::Deny => {
                let given = self.source(flag, value);
                let l = &mut self.access;
                let added = match to {
                    SiteFlag::Allow => l.allow(value, &given),
                    _ => l.deny(value, &given),
                };
                added.map_err(|e| match (to, e) {
                    (SiteFlag::Allow, CidrError::Address) => {
                        named("expected a network (10.0.0.0/8, fd00::/8), private or loopback")
                    }
                    _ => named(&e.to_string()),
                })?
            }
            SiteFlag::RateLimit => self.rate_limit = rate_limit(value).map_err(named)?,
            SiteFlag::MaxRate => self.max_rate = super::parse_size(flag, value)?,
        }
        Ok(())
    }

    /// Where a rule or list entry was given: `FILE:LINE`, or the flag and its value.
    fn source(&self, flag: &str, value: &str) -> String {
        match &self.rule_source {
            Some(at) => at.clone(),
            None => format!("{flag} {value}"),
        }
    }

    /// Checks what only the whole set shows: the operator's lines must leave the largest
    /// response head within the largest head area (`http::response::head_area`).
    /// When the lines fit beside the built-in types but not beside the longest `--mime`
    /// type, that `--mime` is named; otherwise `--header` and `--cache-control` are.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn validate(&self) -> Result<(), ArgsError> {
        self.validate_pages()?;
        self.validate_auth()?;
        let longest = self.mime.iter().max_by_key(|m| m.media_type.len());
        let mime_max = longest.map_or(0, |m| m.media_type.len()).max(mime::LONGEST);
        let used = self.rules_lines();
        if head_area(used, mime_max).is_some() {
            return Ok(());
        }
        if let Some(m) = longest.filter(|_| head_area(used, mime::LONGEST).is_some()) {
            let too_long = TooLong {
                len: m.media_type.len(),
                room: type_room(used),
                lines: used,
            };
            return Err(flag_error(format!("--mime {}=TYPE: {too_long}", m.ext)));
        }
        let room = type_room(mime_max);
        Err(flag_error(format!(
            "--header and --cache-control: the lines add {used} bytes to a response head \
             (every --header and the longest --cache-control, beside a {mime_max}-byte media \
             type); at most {room} fit"
        )))
    }

    /// Under `--dotfiles deny` an `--error-page` or `--fallback` that is a dotfile would
    /// never be served: refused here, naming the flag, rather than a 404 at every use.
    fn validate_pages(&self) -> Result<(), ArgsError> {
        let errors = self
            .error_pages
            .iter()
            .map(|(c, p)| (format!("--error-page {c}="), p));
        let fallback = self.fallback.iter().map(|p| ("--fallback ".to_string(), p));
        match errors
            .chain(fallback)
            .find(|(_, p)| self.dotfiles.hides(p.as_bytes()))
        {
            Some((flag, path)) => Err(flag_error(format!(
                "{flag}{path}: a dotfile, which --dotfiles deny (the default) never serves; \
                 rename it or add --dotfiles allow"
            ))),
            None => Ok(()),
        }
    }

    /// `--basic-auth-realm` and `--basic-auth-skip` mean nothing without `--basic-auth`.
    fn validate_auth(&self) -> Result<(), ArgsError> {
        let alone = match (&self.basic_auth, &self.basic_auth_realm) {
            (Some(_), _) => None,
            (None, Some(_)) => Some("--basic-auth-realm"),
            (None, None) => (!self.basic_auth_skip.is_empty()).then_some("--basic-auth-skip"),
        };
        match alone {
            Some(flag) => Err(flag_error(format!(
                "{flag} needs --basic-auth FILE (the htpasswd file it applies to)"
            ))),
            None => Ok(()),
        }
    }

    fn rules_lines(&self) -> usize {
        let headers: usize = self.headers.iter().map(|h| h.as_bytes().len()).sum();
        let auth = self.auth().as_ref().map_or(0, BasicAuth::head_bytes);
        crate::site::head_bytes(headers, &self.cache_rules) + self.cors.head_bytes() + auth
    }

    /// The `--basic-auth` rule, when the flag is given.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn auth(&self) -> Option<BasicAuth> {
        let realm = self.basic_auth_realm.as_deref().unwrap_or(DEFAULT_REALM);
        let skip = self.basic_auth_skip.clone();
        self.basic_auth
            .as_ref()
            .map(|file| BasicAuth::new(file.clone(), realm, skip))
    }

    /// The rules a worker serves with (the media types are made `'static` here, once).
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub fn rules(&self) -> SiteRules {
        let bytes = |s: &str| Box::<[u8]>::from(s.as_bytes());
        SiteRules {
            types: MediaTypes::new(&self.mime),
            mime_types: self.mime_types.clone(),
            precompressed: self.precompressed,
            headers: self
                .headers
                .iter()
                .flat_map(|h| h.as_bytes())
                .copied()
                .collect(),
            cache_rules: self.cache_rules.clone(),
            error_pages: self
                .error_pages
                .iter()
                .map(|(c, p)| (*c, bytes(p)))
                .collect(),
            fallback: self.fallback.as_deref().map(bytes),
            fallback_skip: self.fallback_skip.iter().map(|e| bytes(e)).collect(),
            dotfiles: self.dotfiles,
            cors: self.cors.clone(),
            auth: self.auth(),
            list_dirs: self.list_dirs,
            validators: Validators {
                etag: self.etag,
                source_date_epoch: self.source_date_epoch,
            },
            compress: self.compress.clone(),
            rules: self.rules.clone(),
            rule_filter: crate::site::rules::Prefilter::of(&self.rules),
            try_ext: self.try_ext.iter().map(|e| bytes(e)).collect(),
            https_redirect: self.https_redirect,
            access: self.access.clone(),
            rate_limit: self.rate_limit,
            max_rate: self.max_rate,
        }
    }
}

/// `--rate-limit N`: requests per second per client address, 1 to 1,000,000.
fn rate_limit(value: &str) -> Result<u32, &'static str> {
    match value.parse::<u32>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ => Err("expected requests per second, 1 to 1000000"),
    }
}

/// `CODE=PATH`: an error status steerd sends, and a request path.
fn error_page(value: &str) -> Result<(u16, String), &'static str> {
    let (code, path) = value
        .split_once('=')
        .ok_or("expected CODE=PATH, such as 404=/404.html")?;
    let code: u16 = code
        .parse()
        .map_err(|_| "CODE must be a status such as 404")?;
    if code < 400 || error_body(code).is_empty() {
        return Err(
            "CODE must be an error status steerd sends (403, 404, 405, 416, 500, 503, ...)",
        );
    }
    Ok((code, request_path(path)?))
}

/// A path under the root as a request path: a leading `/` is added; no NUL, no `.` or
/// `..` segment, nothing empty.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn request_path(value: &str) -> Result<String, &'static str> {
    let rel = value.strip_prefix('/').unwrap_or(value);
    if rel.is_empty() || rel.ends_with('/') {
        return Err("expected a file under the root, such as /index.html");
    }
    if rel
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
        || rel.contains('\0')
    {
        return Err("the path must stay under the root (no empty, . or .. segment)");
    }
    Ok(format!("/{rel}"))
}

/// `ext,ext,...`: extensions (a leading `.` is dropped), lowercase.
fn extensions(value: &str) -> Result<Vec<String>, &'static str> {
    let one = |e| extension(e).map(|e| e.to_ascii_lowercase());
    let all: Result<Vec<String>, _> = value.split(',').map(one).collect();
    all.map_err(|_| "expected extensions such as css,js,png")
}

/// One extension (a leading `.` is dropped): letters, digits, `_` and `-`.
fn extension(value: &str) -> Result<String, &'static str> {
    let e = value.strip_prefix('.').unwrap_or(value);
    let plain = !e.is_empty()
        && e.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    plain
        .then(|| e.to_string())
        .ok_or("expected an extension such as html")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(pairs: &[(&str, &str)]) -> Result<SiteArgs, ArgsError> {
        let mut a = SiteArgs::default();
        for (f, v) in pairs {
            a.set(f, v)?;
        }
        a.validate()?;
        Ok(a)
    }

    #[test]
    fn every_flag_lands_in_the_rules() {
        let a = set(&[
            ("--precompressed", "gzip"),
            ("--header", "X-A: 1"),
            ("--header", "X-B:2"),
            ("--cache-control", "/assets/**=max-age=31536000"),
            ("--error-page", "404=404.html"),
            ("--fallback", "/index.html"),
            ("--fallback-skip", ".CSS,js"),
            ("--mime", "md=text/markdown"),
        ])
        .unwrap();
        let r = a.rules();
        assert_eq!(&*r.headers, b"X-A: 1\r\nX-B: 2\r\n");
        assert_eq!(r.error_page(404), Some(&b"/404.html"[..]));
        assert_eq!(r.fallback_for(b"/deep/link"), Some(&b"/index.html"[..]));
        assert_eq!(r.fallback_for(b"/a.css"), None);
        assert_eq!(r.types.leak().for_path(b"/r.md"), b"text/markdown");
        assert_eq!(r.precompressed.iter().count(), 1);
        let pages: Vec<_> = r.pages().collect();
        assert_eq!(
            pages,
            [
                ("--error-page", &b"/404.html"[..]),
                ("--fallback", &b"/index.html"[..])
            ]
        );
    }

    #[test]
    fn refusals_name_the_flag_and_value() {
        for (flag, value) in [
            ("--precompressed", "deflate"),
            ("--header", "X-Bad\r\n: y"),
            ("--header", "Content-Length: 1"),
            ("--cache-control", "no-pattern"),
            ("--error-page", "200=/ok.html"),
            ("--error-page", "404"),
            ("--error-page", "999=/x.html"),
            ("--error-page", "404=/../secret"),
            ("--fallback", "/"),
            ("--fallback", "a/./b"),
            ("--fallback-skip", "css,,js"),
            ("--mime", "md"),
            ("--mime-types", ""),
        ] {
            let e = set(&[(flag, value)]).unwrap_err();
            assert!(e.message.starts_with(flag), "{flag} {value}: {e}");
        }
    }

    #[test]
    fn dotfile_pages_are_refused_unless_allowed() {
        for (flag, value, needle) in [
            (
                "--error-page",
                "404=/.404.html",
                "--error-page 404=/.404.html: a dotfile",
            ),
            (
                "--fallback",
                "/.app/index.html",
                "--fallback /.app/index.html: a dotfile",
            ),
        ] {
            let e = set(&[(flag, value)]).unwrap_err();
            assert!(e.message.starts_with(needle), "{e}");
            assert!(set(&[(flag, value), ("--dotfiles", "allow")]).is_ok());
        }
        assert!(set(&[("--error-page", "404=/.well-known/404.html")]).is_ok());
        let e = set(&[("--dotfiles", "maybe")]).unwrap_err();
        assert!(e.message.starts_with("--dotfiles \"maybe\""), "{e}");
    }

    #[test]
    fn basic_auth_flags() {
        let a = set(&[
            ("--basic-auth", "/etc/steerd/htpasswd"),
            ("--basic-auth-realm", "Team docs"),
            ("--basic-auth-skip", "/favicon.ico"),
            ("--basic-auth-skip", "/public/**"),
        ])
        .unwrap();
        let auth = a.rules().auth.expect("the rule");
        assert_eq!(auth.file, PathBuf::from("/etc/steerd/htpasswd"));
        assert!(auth.skips(b"/public/x.css") && auth.skips(b"/favicon.ico"));
        assert!(String::from_utf8_lossy(auth.challenge()).contains("realm=\"Team docs\""));
        let plain = set(&[("--basic-auth", "h")]).unwrap().rules().auth.unwrap();
        assert!(String::from_utf8_lossy(plain.challenge()).contains("realm=\"steerd\""));
        assert!(set(&[]).unwrap().rules().auth.is_none());
        for (pairs, needle) in [
            (
                &[("--basic-auth-realm", "x")][..],
                "--basic-auth-realm needs --basic-auth",
            ),
            (
                &[("--basic-auth-skip", "/a")][..],
                "--basic-auth-skip needs --basic-auth",
            ),
            (
                &[("--basic-auth", "h"), ("--basic-auth-realm", "a\"b")][..],
                "--basic-auth-realm \"a\\\"b\"",
            ),
            (
                &[("--basic-auth", "h"), ("--basic-auth-skip", "a b")][..],
                "--basic-auth-skip \"a b\"",
            ),
            (
                &[("--basic-auth", "")][..],
                "--basic-auth \"\": expected an htpasswd file",
            ),
        ] {
            let e = set(pairs).unwrap_err();
            assert!(e.message.starts_with(needle), "{pairs:?}: {e}");
        }
    }

    #[test]
    fn lines_too_long_for_a_head_are_refused() {
        let long = format!("X-Long: {}", "v".repeat(2500));
        assert!(set(&[("--header", &long)]).is_ok());
        let cache = format!("/**=max-age=1, {}", "x".repeat(1500));
        assert!(set(&[("--header", &long), ("--cache-control", &cache)]).is_ok());
        let longer = format!("X-Longer: {}", "v".repeat(3000));
        let e = set(&[("--header", &longer), ("--header", &longer)]).unwrap_err();
        assert!(e.message.contains("at most"), "{e}");
    }

    #[test]
    fn a_type_too_long_for_a_head_is_blamed_on_mime() {
        let long = format!("x=text/{}", "p".repeat(6000));
        let e = set(&[("--mime", &long)]).unwrap_err();
        assert!(
            e.message.starts_with("--mime x=TYPE: TYPE is 6005 bytes"),
            "{e}"
        );
        assert!(e.message.contains(&format!("at most {}", type_room(0))));
    }
}
