//! The built-in media types: nginx's `mime.types` (1.22, Debian's `nginx-common`) and the
//! common web types it lacks, as one table sorted by extension.
//!
//! Input: none (data). Output: [`TABLE`] and its [`KEYS`], searched by `super::Types`
//! with a binary search, and [`LONGEST`], which sizes the response-head area. Checked at
//! compile time: the extensions are lowercase, sorted and unique, and so are their keys
//! (the search relies on it).
//!
//! Deliberate differences from nginx (`tests/serving/mime_types.rs` holds the table against
//! `/etc/nginx/mime.types` with exactly these):
//!
//! - every `text/*` type carries `; charset=utf-8`, as steerd always has (nginx sends no
//!   charset unless configured);
//! - `js`: `text/javascript` (RFC 9239), not `application/javascript`;
//! - `xml`: `application/xml` (RFC 7303 §4.1 prefers it), not `text/xml`;
//! - `bmp`: `image/bmp` (registered), not `image/x-ms-bmp`;
//! - nginx's explicit `application/octet-stream` lines (`bin exe dll deb dmg iso img msi
//!   msp msm`) are not repeated: that type is the default for any unknown extension.
//!
//! Added beside nginx's: `vtt` (WebVTT subtitles), `srt`, `mpd` (DASH), `m3u`, `mjs`,
//! `map`, `md`, `markdown`, `csv`, `tsv`, `ics`, `yaml`, `yml`, `toml`, `jsonld`,
//! `geojson`, `webmanifest`, `xsl`, `xslt`, `epub`, `apng`, `heic`, `heif`, `jxl`, `ttf`,
//! `otf`, `ttc`, `wav`, `flac`, `aac`, `oga`, `opus`, `weba`, `ogv`, `mkv`, `gltf`, `glb`,
//! `gz`, `bz2`, `xz`, `zst`, `tar`.

/// (extension, type): extensions lowercase and sorted bytewise, each once.
pub(super) const TABLE: &[(&[u8], &[u8])] = &[
    (b"3gp", b"video/3gpp"),
    (b"3gpp", b"video/3gpp"),
    (b"7z", b"application/x-7z-compressed"),
    (b"aac", b"audio/aac"),
    (b"ai", b"application/postscript"),
    (b"apng", b"image/apng"),
    (b"asf", b"video/x-ms-asf"),
    (b"asx", b"video/x-ms-asf"),
    (b"atom", b"application/atom+xml"),
    (b"avi", b"video/x-msvideo"),
    (b"avif", b"image/avif"),
    (b"bmp", b"image/bmp"),
    (b"bz2", b"application/x-bzip2"),
    (b"cco", b"application/x-cocoa"),
    (b"crt", b"application/x-x509-ca-cert"),
    (b"css", b"text/css; charset=utf-8"),
    (b"csv", b"text/csv; charset=utf-8"),
    (b"der", b"application/x-x509-ca-cert"),
    (b"doc", b"application/msword"),
    (
        b"docx",
        b"application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ),
    (b"ear", b"application/java-archive"),
    (b"eot", b"application/vnd.ms-fontobject"),
    (b"eps", b"application/postscript"),
    (b"epub", b"application/epub+zip"),
    (b"flac", b"audio/flac"),
    (b"flv", b"video/x-flv"),
    (b"geojson", b"application/geo+json"),
    (b"gif", b"image/gif"),
    (b"glb", b"model/gltf-binary"),
    (b"gltf", b"model/gltf+json"),
    (b"gz", b"application/gzip"),
    (b"heic", b"image/heic"),
    (b"heif", b"image/heif"),
    (b"hqx", b"application/mac-binhex40"),
    (b"htc", b"text/x-component; charset=utf-8"),
    (b"htm", b"text/html; charset=utf-8"),
    (b"html", b"text/html; charset=utf-8"),
    (b"ico", b"image/x-icon"),
    (b"ics", b"text/calendar; charset=utf-8"),
    (b"jad", b"text/vnd.sun.j2me.app-descriptor; charset=utf-8"),
    (b"jar", b"application/java-archive"),
    (b"jardiff", b"application/x-java-archive-diff"),
    (b"jng", b"image/x-jng"),
    (b"jnlp", b"application/x-java-jnlp-file"),
    (b"jpeg", b"image/jpeg"),
    (b"jpg", b"image/jpeg"),
    (b"js", b"text/javascript; charset=utf-8"),
    (b"json", b"application/json"),
    (b"jsonld", b"application/ld+json"),
    (b"jxl", b"image/jxl"),
    (b"kar", b"audio/midi"),
    (b"kml", b"application/vnd.google-earth.kml+xml"),
    (b"kmz", b"application/vnd.google-earth.kmz"),
    (b"m3u", b"audio/x-mpegurl"),
    (b"m3u8", b"application/vnd.apple.mpegurl"),
    (b"m4a", b"audio/x-m4a"),
    (b"m4v", b"video/x-m4v"),
    (b"map", b"application/json"),
    (b"markdown", b"text/markdown; charset=utf-8"),
    (b"md", b"text/markdown; charset=utf-8"),
    (b"mid", b"audio/midi"),
    (b"midi", b"audio/midi"),
    (b"mjs", b"text/javascript; charset=utf-8"),
    (b"mkv", b"video/x-matroska"),
    (b"mml", b"text/mathml; charset=utf-8"),
    (b"mng", b"video/x-mng"),
    (b"mov", b"video/quicktime"),
    (b"mp3", b"audio/mpeg"),
    (b"mp4", b"video/mp4"),
    (b"mpd", b"application/dash+xml"),
    (b"mpeg", b"video/mpeg"),
    (b"mpg", b"video/mpeg"),
    (b"odg", b"application/vnd.oasis.opendocument.graphics"),
    (b"odp", b"application/vnd.oasis.opendocument.presentation"),
    (b"ods", b"application/vnd.oasis.opendocument.spreadsheet"),
    (b"odt", b"application/vnd.oasis.opendocument.text"),
    (b"oga", b"audio/ogg"),
    (b"ogg", b"audio/ogg"),
    (b"ogv", b"video/ogg"),
    (b"opus", b"audio/ogg"),
    (b"otf", b"font/otf"),
    (b"pdb", b"application/x-pilot"),
    (b"pdf", b"application/pdf"),
    (b"pem", b"application/x-x509-ca-cert"),
    (b"pl", b"application/x-perl"),
    (b"pm", b"application/x-perl"),
    (b"png", b"image/png"),
    (b"ppt", b"application/vnd.ms-powerpoint"),
    (
        b"pptx",
        b"application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ),
    (b"prc", b"application/x-pilot"),
    (b"ps", b"application/postscript"),
    (b"ra", b"audio/x-realaudio"),
    (b"rar", b"application/x-rar-compressed"),
    (b"rpm", b"application/x-redhat-package-manager"),
    (b"rss", b"application/rss+xml"),
    (b"rtf", b"application/rtf"),
    (b"run", b"application/x-makeself"),
    (b"sea", b"application/x-sea"),
    (b"shtml", b"text/html; charset=utf-8"),
    (b"sit", b"application/x-stuffit"),
    (b"srt", b"application/x-subrip"),
    (b"svg", b"image/svg+xml"),
    (b"svgz", b"image/svg+xml"),
    (b"swf", b"application/x-shockwave-flash"),
    (b"tar", b"application/x-tar"),
    (b"tcl", b"application/x-tcl"),
    (b"tif", b"image/tiff"),
    (b"tiff", b"image/tiff"),
    (b"tk", b"application/x-tcl"),
    (b"toml", b"application/toml"),
    (b"ts", b"video/mp2t"),
    (b"tsv", b"text/tab-separated-values; charset=utf-8"),
    (b"ttc", b"font/collection"),
    (b"ttf", b"font/ttf"),
    (b"txt", b"text/plain; charset=utf-8"),
    (b"vtt", b"text/vtt; charset=utf-8"),
    (b"war", b"application/java-archive"),
    (b"wasm", b"application/wasm"),
    (b"wav", b"audio/wav"),
    (b"wbmp", b"image/vnd.wap.wbmp"),
    (b"weba", b"audio/webm"),
    (b"webm", b"video/webm"),
    (b"webmanifest", b"application/manifest+json"),
    (b"webp", b"image/webp"),
    (b"wml", b"text/vnd.wap.wml; charset=utf-8"),
    (b"wmlc", b"application/vnd.wap.wmlc"),
    (b"wmv", b"video/x-ms-wmv"),
    (b"woff", b"font/woff"),
    (b"woff2", b"font/woff2"),
    (b"xhtml", b"application/xhtml+xml"),
    (b"xls", b"application/vnd.ms-excel"),
    (
        b"xlsx",
        b"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ),
    (b"xml", b"application/xml"),
    (b"xpi", b"application/x-xpinstall"),
    (b"xsl", b"application/xslt+xml"),
    (b"xslt", b"application/xslt+xml"),
    (b"xspf", b"application/xspf+xml"),
    (b"xz", b"application/x-xz"),
    (b"yaml", b"application/yaml"),
    (b"yml", b"application/yaml"),
    (b"zip", b"application/zip"),
    (b"zst", b"application/zstd"),
];

/// Bytes of the longest built-in type.
pub(super) const LONGEST: usize = {
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

/// `super::fold_key` of each extension of [`TABLE`], in its order.
pub(super) const KEYS: [u64; TABLE.len()] = {
    let mut keys = [0; TABLE.len()];
    let mut i = 0;
    while i < TABLE.len() {
        keys[i] = super::fold_key(TABLE[i].0);
        i += 1;
    }
    keys
};

/// `a < b` bytewise, in a `const` context.
const fn before(a: &[u8], b: &[u8]) -> bool {
    let mut i = 0;
    while i < a.len() && i < b.len() {
        if a[i] != b[i] {
            return a[i] < b[i];
        }
        i += 1;
    }
    a.len() < b.len()
}

const fn lowercase(s: &[u8]) -> bool {
    let mut i = 0;
    while i < s.len() {
        if s[i].is_ascii_uppercase() {
            return false;
        }
        i += 1;
    }
    true
}

// The binary search in `super` needs this order; a table edited out of order fails here.
const _: () = {
    let mut i = 0;
    while i < TABLE.len() {
        assert!(lowercase(TABLE[i].0), "built-in extensions are lowercase");
        assert!(
            i == 0 || before(TABLE[i - 1].0, TABLE[i].0),
            "built-in extensions are sorted and unique"
        );
        assert!(
            i == 0 || KEYS[i - 1] < KEYS[i],
            "no two built-in extensions share their first eight bytes"
        );
        i += 1;
    }
};
