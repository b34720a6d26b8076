//! `--compress gzip|off`, `--compress-types LIST` and `--compress-cache DIR`: which files
//! are sent gzip-compressed when no sidecar serves the request (compressed once per file
//! version, `files::cache`), and where large files' gzip bytes are kept.
//!
//! Input: the flags' values. Output: a [`Compress`] the responder asks, per file, whether
//! its media type is compressible. No I/O, no allocation after parsing.
//!
//! A media type is compared without its parameters (`text/css; charset=utf-8` is
//! `text/css`), case-insensitively; `type/*` in the list matches every subtype. Types
//! whose bytes are already compressed (PNG, JPEG, GIF, WebP, AVIF, video, audio, archives,
//! WOFF2) are never compressed, whatever the list says.

/// The default `--compress-types`: text, JSON, JavaScript, SVG, XML, wasm.
pub(crate) const DEFAULT_TYPES: &str = "text/*,application/json,application/javascript,\
application/manifest+json,image/svg+xml,application/xml,application/wasm";

/// Already compressed: never worth compressing again.
const NEVER: [&[u8]; 10] = [
    b"image/png",
    b"image/jpeg",
    b"image/gif",
    b"image/webp",
    b"image/avif",
    b"application/zip",
    b"application/gzip",
    b"application/x-7z-compressed",
    b"application/zstd",
    b"font/woff2",
];

/// The `--compress` rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Compress {
    /// `--compress gzip` (the default) or `off`.
    pub(crate) gzip: bool,
    /// `--compress-types`: media types, lowercase, `type/*` for a whole type.
    types: Vec<Box<[u8]>>,
    /// `--compress-cache DIR`: where large files' `.gz` are written.
    pub(crate) cache_dir: Option<std::path::PathBuf>,
}

impl Default for Compress {
    fn default() -> Self {
        Compress {
            gzip: true,
            types: parse_types(DEFAULT_TYPES).unwrap_or_default(),
            cache_dir: None,
        }
    }
}

impl Compress {
    /// `gzip` or `off`.
    pub(crate) fn parse_mode(value: &str) -> Result<bool, &'static str> {
        match value {
            "gzip" => Ok(true),
            "off" => Ok(false),
            _ => Err("expected gzip or off"),
        }
    }

    /// Sets the `--compress-types` list.
    pub(crate) fn set_types(&mut self, value: &str) -> Result<(), &'static str> {
        self.types = parse_types(value)?;
        Ok(())
    }

    /// Whether a file of media type `mime` (a `Content-Type` value) is compressed.
    pub(crate) fn wants(&self, mime: &[u8]) -> bool {
        let end = memchr::memchr(b';', mime).unwrap_or(mime.len());
        let essence = mime[..end].trim_ascii();
        let listed = |t: &[u8]| match t.strip_suffix(b"*") {
            Some(family) => essence.len() > family.len() && prefix_ci(essence, family),
            None => essence.eq_ignore_ascii_case(t),
        };
        let already = |n: &&[u8]| essence.eq_ignore_ascii_case(n);
        let media = |p: &[u8]| prefix_ci(essence, p);
        self.gzip
            && self.types.iter().any(|t| listed(t))
            && !NEVER.iter().any(already)
            && !media(b"video/")
            && !media(b"audio/")
    }
}

fn prefix_ci(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// A comma-separated list of `type/subtype` or `type/*`.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn parse_types(value: &str) -> Result<Vec<Box<[u8]>>, &'static str> {
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_graphic() && !b"/*,".contains(&b))
    };
    value
        .split(',')
        .map(|t| {
            let (ty, sub) = t
                .split_once('/')
                .ok_or("expected a list of type/subtype or type/*")?;
            if !token(ty) || !(token(sub) || sub == "*") {
                return Err("expected a list of type/subtype or type/*");
            }
            Ok(t.to_ascii_lowercase().into_bytes().into_boxed_slice())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Media types and whether the default list compresses them.
    const DEFAULT_CASES: &[(&str, bool)] = &[
        ("text/html; charset=utf-8", true),
        ("text/css", true),
        ("application/javascript", true),
        ("application/json", true),
        ("image/svg+xml", true),
        ("application/wasm", true),
        ("TEXT/Plain", true),
        ("image/png", false),
        ("image/jpeg", false),
        ("video/mp4", false),
        ("application/zip", false),
        ("application/octet-stream", false),
        ("text/", false),
    ];

    #[test]
    fn the_default_list_takes_text_and_leaves_images() {
        let c = Compress::default();
        for &(mime, want) in DEFAULT_CASES {
            assert_eq!(c.wants(mime.as_bytes()), want, "{mime}");
        }
    }

    #[test]
    fn a_list_never_reaches_compressed_types_and_off_takes_nothing() {
        let mut c = Compress::default();
        c.set_types("image/*,video/*,application/zip").unwrap();
        assert!(c.wants(b"image/bmp"));
        assert!(!c.wants(b"image/png") && !c.wants(b"video/webm"));
        assert!(!c.wants(b"application/zip"));
        c.gzip = false;
        assert!(!c.wants(b"image/bmp"));
        for bad in ["", "text", "text/", "/x", "text/*,", "te*t/html", "a b/c"] {
            assert!(c.set_types(bad).is_err(), "{bad:?}");
        }
        assert_eq!(Compress::parse_mode("gzip"), Ok(true));
        assert_eq!(Compress::parse_mode("off"), Ok(false));
        assert!(Compress::parse_mode("br").is_err());
    }
}
