//! Stage 1, the everyday-serving flags: `--precompressed`, `--header`, `--cache-control`,
//! `--error-page`, `--fallback`, `--fallback-skip`, `--mime`, `--dotfiles` and `--cors`,
//! and the switch `--list-dirs`.
//!
//! Input: one flag and its value at a time (from `args::parse_serve`). Output: a
//! validated [`SiteArgs`], and from it the worker's [`SiteRules`]. Syntax only: whether
//! the pages exist under the root is checked by `steerd check` and at start
//! (`cmd::preflight`). Every refusal names the flag and the value.

use super::{flag_error, ArgsError};
use crate::http::encoding::Precompressed;
use crate::http::response::{error_body, head_area, HEAD_AREA_MAX, HEAD_BASE_MAX};
use crate::site::cors::Cors;
use crate::site::dotfiles::Dotfiles;
use crate::site::field::HeaderLine;
use crate::site::mime::{self, MimeOverride, Types};
use crate::site::{CacheRule, SiteRules};

/// The everyday-serving options of `serve` (and `check`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SiteArgs {
    /// `--precompressed LIST|off` (default `br,zstd,gzip`).
    pub precompressed: Precompressed,
    /// `--header 'Name: value'`, in order.
    pub headers: Vec<HeaderLine>,
    /// `--cache-control PATTERN=VALUE`, in order.
    pub cache_rules: Vec<CacheRule>,
    /// `--error-page CODE=PATH`: status and request path (with its leading `/`).
    pub error_pages: Vec<(u16, String)>,
    /// `--fallback PATH`, as a request path.
    pub fallback: Option<String>,
    /// `--fallback-skip LIST`: extensions, lowercase, without their dot.
    pub fallback_skip: Vec<String>,
    /// `--mime EXT=TYPE`, in order.
    pub mime: Vec<MimeOverride>,
    /// `--dotfiles deny|allow` (default `deny`).
    pub dotfiles: Dotfiles,
    /// `--cors ORIGIN|*`, every one given.
    pub cors: Cors,
    /// `--list-dirs` (a switch: `args::parse_serve` sets it).
    pub list_dirs: bool,
}

/// The flags this file parses.
pub const FLAGS: [&str; 9] = [
    "--precompressed",
    "--header",
    "--cache-control",
    "--error-page",
    "--fallback",
    "--fallback-skip",
    "--mime",
    "--dotfiles",
    "--cors",
];

impl SiteArgs {
    /// Applies one of [`FLAGS`] with its value.
    pub fn set(&mut self, flag: &str, value: &str) -> Result<(), ArgsError> {
        let named = |why: &str| flag_error(format!("{flag} {value:?}: {why}"));
        match flag {
            "--precompressed" => self.precompressed = Precompressed::parse(value).map_err(named)?,
            "--header" => self.headers.push(HeaderLine::parse(value).map_err(named)?),
            "--cache-control" => self
                .cache_rules
                .push(CacheRule::parse(value).map_err(named)?),
            "--error-page" => self.error_pages.push(error_page(value).map_err(named)?),
            "--fallback" => self.fallback = Some(request_path(value).map_err(named)?),
            "--fallback-skip" => self.fallback_skip = extensions(value).map_err(named)?,
            "--mime" => self.mime.push(MimeOverride::parse(value).map_err(named)?),
            "--dotfiles" => self.dotfiles = Dotfiles::parse(value).map_err(named)?,
            "--cors" => self.cors.add(value).map_err(named)?,
            _ => return Err(flag_error(format!("unknown flag {flag:?} (see --help)"))),
        }
        Ok(())
    }

    /// Checks what only the whole set shows: the operator's lines must leave the largest
    /// response head within the largest head area (`http::response::head_area`).
    /// When the lines fit beside the built-in types but not beside the longest `--mime`
    /// type, that `--mime` is named; otherwise `--header` and `--cache-control` are.
    pub fn validate(&self) -> Result<(), ArgsError> {
        self.validate_pages()?;
        let longest = self.mime.iter().max_by_key(|m| m.media_type.len());
        let mime_max = longest.map_or(0, |m| m.media_type.len()).max(mime::LONGEST);
        let used = self.rules_lines();
        if head_area(used, mime_max).is_some() {
            return Ok(());
        }
        let type_room = HEAD_AREA_MAX.saturating_sub(HEAD_BASE_MAX + used);
        if let Some(m) = longest.filter(|_| head_area(used, mime::LONGEST).is_some()) {
            return Err(flag_error(format!(
                "--mime {}=TYPE: TYPE is {} bytes; a response head has room for a type of at \
                 most {type_room} (beside {used} bytes of --header and --cache-control lines)",
                m.ext,
                m.media_type.len()
            )));
        }
        let room = HEAD_AREA_MAX.saturating_sub(HEAD_BASE_MAX + mime_max);
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

    fn rules_lines(&self) -> usize {
        let headers: usize = self.headers.iter().map(|h| h.as_bytes().len()).sum();
        crate::site::head_bytes(headers, &self.cache_rules) + self.cors.head_bytes()
    }

    /// The rules a worker serves with (the media types are made `'static` here, once).
    pub fn rules(&self) -> SiteRules {
        let bytes = |s: &str| Box::<[u8]>::from(s.as_bytes());
        SiteRules {
            types: Types::new(&self.mime),
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
            list_dirs: self.list_dirs,
        }
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
    value
        .split(',')
        .map(|e| {
            let e = e.strip_prefix('.').unwrap_or(e);
            let plain = !e.is_empty()
                && e.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            plain
                .then(|| e.to_ascii_lowercase())
                .ok_or("expected extensions such as css,js,png")
        })
        .collect()
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
        assert_eq!(r.types.for_path(b"/r.md"), b"text/markdown");
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
        assert!(e
            .message
            .contains(&format!("at most {}", HEAD_AREA_MAX - HEAD_BASE_MAX)));
    }
}
