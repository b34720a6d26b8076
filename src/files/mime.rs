//! Media types by file extension: a built-in table of the common web types.
//!
//! Input: a decoded path. Output: a `Content-Type` value. The extension is compared
//! case-insensitively (`photo.JPG` is `image/jpeg`, as lighttpd does); an unknown or
//! missing extension is `application/octet-stream` (the type nginx's shipped config uses).
//! Text types carry `charset=utf-8`.

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
    (b"tar", b"application/x-tar"),
    (b"mp3", b"audio/mpeg"),
    (b"ogg", b"audio/ogg"),
    (b"wav", b"audio/wav"),
    (b"mp4", b"video/mp4"),
    (b"webm", b"video/webm"),
];

/// The `Content-Type` for `path` (only the last segment's extension counts).
pub fn for_path(path: &[u8]) -> &'static [u8] {
    let name = match memchr::memrchr(b'/', path) {
        Some(i) => &path[i + 1..],
        None => path,
    };
    let Some(dot) = memchr::memrchr(b'.', name) else {
        return DEFAULT;
    };
    let ext = &name[dot + 1..];
    TABLE
        .iter()
        .find(|(e, _)| e.eq_ignore_ascii_case(ext))
        .map_or(DEFAULT, |(_, t)| t)
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
}
