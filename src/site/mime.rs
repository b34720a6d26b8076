//! Media types by file extension: a built-in table of the common web types, and the
//! operator's `--mime EXT=TYPE` overrides in front of it.
//!
//! Input: a decoded path. Output: a `Content-Type` value. The extension is compared
//! case-insensitively (`photo.JPG` is `image/jpeg`, as lighttpd does); an unknown or
//! missing extension is `application/octet-stream` (the type nginx's shipped config uses).
//! Text types carry `charset=utf-8`. A lookup walks the overrides (usually none) and then
//! the table, comparing lengths first; it allocates nothing. The overrides are made
//! `'static` once at start ([`Types::new`]), so a file's metadata can hold its type as a
//! plain `&'static [u8]`.

use crate::http::tables::{FIELD_VALUE, TOKEN};

/// The type sent when the extension is unknown.
pub const DEFAULT: &[u8] = b"application/octet-stream";

/// (extension, type), extensions in lowercase.
const TABLE: &[(&[u8], &[u8])] = &[
    (b"html", b"text/html; charset=utf-8"),
    (b"htm", b"text/html; charset=utf-8"),
    (b"css", b"text/css; charset=utf-8"),
    (b"js", b"text/javascript; charset=utf-8"),
    (b"mjs", b"text/javascript; charset=utf-8"),
    (b"json", b"application/json"),
    (b"map", b"application/json"),
    (b"webmanifest", b"application/manifest+json"),
    (b"txt", b"text/plain; charset=utf-8"),
    (b"md", b"text/markdown; charset=utf-8"),
    (b"csv", b"text/csv; charset=utf-8"),
    (b"xml", b"application/xml"),
    (b"rss", b"application/rss+xml"),
    (b"atom", b"application/atom+xml"),
    (b"svg", b"image/svg+xml"),
    (b"png", b"image/png"),
    (b"jpg", b"image/jpeg"),
    (b"jpeg", b"image/jpeg"),
    (b"gif", b"image/gif"),
    (b"webp", b"image/webp"),
    (b"avif", b"image/avif"),
    (b"ico", b"image/x-icon"),
    (b"bmp", b"image/bmp"),
    (b"woff", b"font/woff"),
    (b"woff2", b"font/woff2"),
    (b"ttf", b"font/ttf"),
    (b"otf", b"font/otf"),
    (b"wasm", b"application/wasm"),
    (b"pdf", b"application/pdf"),
    (b"zip", b"application/zip"),
    (b"gz", b"application/gzip"),
    (b"zst", b"application/zstd"),
    (b"tar", b"application/x-tar"),
    (b"mp3", b"audio/mpeg"),
    (b"ogg", b"audio/ogg"),
    (b"wav", b"audio/wav"),
    (b"mp4", b"video/mp4"),
    (b"webm", b"video/webm"),
];

/// Bytes of the longest built-in type.
pub const LONGEST: usize = {
    let mut i = 0;
    let mut n = 0;
    while i < TABLE.len() {
        if TABLE[i].1.len() > n {
            n = TABLE[i].1.len();
        }
        i += 1;
    }
    n
};

/// One `--mime EXT=TYPE`, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MimeOverride {
    /// The extension, lowercase, without its dot.
    pub ext: String,
    /// The `Content-Type` value.
    pub media_type: String,
}

impl MimeOverride {
    /// Parses `EXT=TYPE`: EXT is a token without `.` (a leading `.` is dropped), TYPE is
    /// `type/subtype` (tokens) with optional `; parameter`s (RFC 9110 §8.3.1).
    pub fn parse(text: &str) -> Result<MimeOverride, &'static str> {
        let (ext, media_type) = text.split_once('=').ok_or("expected EXT=TYPE")?;
        let ext = ext.strip_prefix('.').unwrap_or(ext);
        if ext.is_empty() || ext.contains('.') || !is_token(ext.as_bytes()) {
            return Err("EXT must be an extension such as js or webmanifest");
        }
        let (essence, params) = media_type
            .split_once(';')
            .map_or((media_type, None), |(e, p)| (e, Some(p)));
        let well_formed = essence
            .split_once('/')
            .is_some_and(|(t, s)| is_token(t.as_bytes()) && is_token(s.as_bytes()));
        if !well_formed {
            return Err("TYPE must be type/subtype, such as text/plain; charset=utf-8");
        }
        if params.is_some_and(|p| !p.bytes().all(|b| FIELD_VALUE[usize::from(b)])) {
            return Err("TYPE holds a control character");
        }
        Ok(MimeOverride {
            ext: ext.to_ascii_lowercase(),
            media_type: media_type.to_string(),
        })
    }
}

fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| TOKEN[usize::from(b)])
}

/// The media-type lookup: overrides first, then the built-in table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Types {
    overrides: &'static [(&'static [u8], &'static [u8])],
}

impl Types {
    /// The built-in table alone.
    pub const BUILTIN: Types = Types { overrides: &[] };

    /// The table with `overrides` in front (a later override of the same extension
    /// wins). Their text is leaked: it lives as long as the process, like the flags.
    pub fn new(overrides: &[MimeOverride]) -> Types {
        if overrides.is_empty() {
            return Types::BUILTIN;
        }
        let pairs: Vec<(&'static [u8], &'static [u8])> = overrides
            .iter()
            .rev()
            .map(|o| (leak(&o.ext), leak(&o.media_type)))
            .collect();
        Types {
            overrides: Box::leak(pairs.into_boxed_slice()),
        }
    }

    /// Bytes of the longest type it can give.
    pub fn longest(&self) -> usize {
        let overrides = self.overrides.iter().map(|(_, t)| t.len());
        overrides.max().unwrap_or(0).max(LONGEST)
    }

    /// The `Content-Type` for `path` (only the last segment's extension counts).
    pub fn for_path(&self, path: &[u8]) -> &'static [u8] {
        let name = match memchr::memrchr(b'/', path) {
            Some(i) => &path[i + 1..],
            None => path,
        };
        let Some(dot) = memchr::memrchr(b'.', name) else {
            return DEFAULT;
        };
        let ext = &name[dot + 1..];
        let found = |table: &'static [(&'static [u8], &'static [u8])]| {
            table
                .iter()
                .find(|(e, _)| e.eq_ignore_ascii_case(ext))
                .map(|(_, t)| *t)
        };
        found(self.overrides)
            .or_else(|| found(TABLE))
            .unwrap_or(DEFAULT)
    }
}

fn leak(text: &str) -> &'static [u8] {
    Box::leak(Box::<[u8]>::from(text.as_bytes()))
}

/// The built-in `Content-Type` for `path`.
pub fn for_path(path: &[u8]) -> &'static [u8] {
    Types::BUILTIN.for_path(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_extension_case_insensitive() {
        assert_eq!(for_path(b"/a/index.html"), b"text/html; charset=utf-8");
        assert_eq!(for_path(b"/photo.JPG"), b"image/jpeg");
        assert_eq!(for_path(b"/x.tar.gz"), b"application/gzip");
        assert_eq!(for_path(b"/README"), DEFAULT);
        assert_eq!(for_path(b"/dir.d/file"), DEFAULT);
        assert_eq!(for_path(b"/trailing."), DEFAULT);
        assert_eq!(for_path(b"/.woff2"), b"font/woff2");
    }

    #[test]
    fn the_types_a_modern_site_ships_are_built_in() {
        for ext in [
            "html",
            "css",
            "js",
            "mjs",
            "json",
            "map",
            "wasm",
            "svg",
            "png",
            "jpg",
            "gif",
            "webp",
            "avif",
            "ico",
            "woff",
            "woff2",
            "ttf",
            "otf",
            "txt",
            "xml",
            "pdf",
            "webmanifest",
            "mp4",
            "webm",
            "mp3",
            "ogg",
            "wav",
            "zip",
            "gz",
            "tar",
        ] {
            assert_ne!(for_path(format!("/f.{ext}").as_bytes()), DEFAULT, "{ext}");
        }
    }

    #[test]
    fn overrides_come_first() {
        let o = |t: &str| MimeOverride::parse(t).unwrap();
        let types = Types::new(&[
            o("js=application/javascript"),
            o(".WASM=application/x-wasm"),
            o("md=text/x-markdown; charset=utf-8"),
            o("md=text/markdown"),
        ]);
        assert_eq!(types.for_path(b"/a.js"), b"application/javascript");
        assert_eq!(types.for_path(b"/a.wasm"), b"application/x-wasm");
        assert_eq!(
            types.for_path(b"/a.md"),
            b"text/markdown",
            "the last one wins"
        );
        assert_eq!(types.for_path(b"/a.css"), b"text/css; charset=utf-8");
        assert_eq!(types.for_path(b"/a.unknown"), DEFAULT);
        for bad in [
            "js",
            "=text/plain",
            "js=",
            "js=text",
            "js=text/",
            "js=/plain",
            "a.b=text/plain",
            "j s=text/plain",
            "js=text/pl ain",
            "js=text/plain; x=\r\n\0",
        ] {
            assert!(MimeOverride::parse(bad).is_err(), "{bad:?}");
        }
    }
}
