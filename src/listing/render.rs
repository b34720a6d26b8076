//! A listing's bytes: the HTML page or the JSON array, piece by piece into a fixed buffer.
//!
//! Input: the directory's request path, then one entry at a time (its name as the
//! directory holds it, and what `files::dir` found). Output: text appended to an
//! `http::response::Writer`. No allocation, no I/O; every piece has a bounded size
//! ([`START_MAX`], [`ENTRY_MAX`], [`END_MAX`]), so a caller that leaves that much room
//! never has a piece cut.
//!
//! Names are bytes, not text, and may hold anything but `/` and NUL:
//! - HTML (`text/html; charset=utf-8`): a link is the name percent-encoded byte by byte,
//!   every byte but `A-Z a-z 0-9 - . _ ~` (RFC 3986 unreserved), so a name with `"`,
//!   `<`, `%`, `#`, `?`, `:` or bytes that are not UTF-8 links to exactly itself, relative
//!   to the listing's URL (which ends in `/`); its text is the name with each invalid
//!   UTF-8 sequence shown as U+FFFD, `& < > " '` escaped and C0 controls and DEL as
//!   `&#xNN;`. A name holding a C0 control or DEL is shown without a link: no request
//!   can name it (the path decoder refuses those escapes with 400, `http/path.rs`). The
//!   page has no script, and the response forbids any (`Content-Security-Policy`,
//!   `conn/listing.rs`).
//! - JSON (`application/json`): `[{"name":…,"type":"dir"|"file","size":…,"mtime":…}, …]`
//!   one object a line; `name` is the name with each invalid UTF-8 sequence replaced by
//!   U+FFFD (as `String::from_utf8_lossy` does; such a name cannot be requested from the
//!   JSON alone, the HTML link can), `"` and `\` escaped, C0 controls and DEL as
//!   `\u00NN` (RFC 8259 §7 requires it of the controls; DEL too, for terminals);
//!   `size` is bytes for a file and `null` for a directory; `mtime` is Unix seconds (an
//!   integer, UTC).
//!
//! The page's request path is shown at most [`PATH_SHOWN`] bytes long (then `…`).

use crate::files::dir::{EntryMeta, Kind};
use crate::http::date::format_minutes;
use crate::http::response::Writer;

/// The two representations of a listing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// The page for people.
    Html,
    /// The array for programs.
    Json,
}

impl Format {
    /// The `Content-Type` value.
    pub(crate) fn media_type(self) -> &'static [u8] {
        match self {
            Format::Html => b"text/html; charset=utf-8",
            Format::Json => b"application/json",
        }
    }

    /// The token that ends the representation's ETag.
    pub(crate) fn token(self) -> &'static [u8] {
        match self {
            Format::Html => b"html",
            Format::Json => b"json",
        }
    }
}

/// Bytes of the request path a page shows.
pub(crate) const PATH_SHOWN: usize = 512;

/// The most bytes [`start`] writes (a test holds it).
pub(crate) const START_MAX: usize = 8 * 1024;

/// The most bytes [`entry`] writes (a test holds it).
pub(crate) const ENTRY_MAX: usize = 2560;

/// The most bytes [`end`] writes.
pub(crate) const END_MAX: usize = 64;

const STYLE: &str = "body{font:16px/1.5 system-ui,sans-serif;margin:0 auto;padding:.5em 1em;\
max-width:60em;color:#222;background:#fff}h1{font-size:1.2em;overflow-wrap:anywhere}\
table{border-collapse:collapse;width:100%}th,td{padding:.4em .5em;text-align:left;\
vertical-align:baseline}th{border-bottom:1px solid #bbb}td:first-child{overflow-wrap:anywhere}\
td+td{white-space:nowrap;color:#555;font-size:.9em}td:nth-child(2){text-align:right}\
tr:nth-child(even){background:#f4f4f4}a{color:#0645ad;text-decoration:none}\
a:hover{text-decoration:underline}\
@media (max-width:30em){body{padding:.5em}th,td{padding:.4em .3em}\
td+td{font-size:.8em}td+td+td{white-space:normal}}";

/// The page's beginning (through the header row and, below the root, the parent's
/// row), or the array's `[`.
pub(super) fn start(w: &mut Writer<'_>, format: Format, path: &[u8]) {
    if format == Format::Json {
        w.put(b"[");
        return;
    }
    w.put(b"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n");
    w.put(b"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    w.put(b"<title>Index of ");
    put_path(w, path);
    w.put(b"</title>\n<style>")
        .put(STYLE.as_bytes())
        .put(b"</style>\n");
    w.put(b"</head><body>\n<h1>Index of ");
    put_path(w, path);
    w.put(b"</h1>\n<table>\n<thead><tr><th>Name</th><th>Size</th><th>Modified (UTC)</th>");
    w.put(b"</tr></thead>\n<tbody>\n");
    if path != b"/" {
        w.put(b"<tr><td><a href=\"../\">../</a></td><td></td><td></td></tr>\n");
    }
}

/// One entry: a table row, or an object of the array (`first`: no comma before it).
pub(super) fn entry(
    w: &mut Writer<'_>,
    format: Format,
    first: bool,
    name: &[u8],
    meta: &EntryMeta,
) {
    let dir = meta.kind == Kind::Dir;
    match format {
        Format::Html => {
            let linked = is_requestable(name);
            w.put(b"<tr><td>");
            if linked {
                w.put(b"<a href=\"");
                put_href(w, name);
                w.put(if dir { b"/\">" } else { b"\">" });
            }
            put_html(w, name);
            w.put(if dir { b"/" } else { b"" });
            w.put(if linked {
                b"</a></td><td>"
            } else {
                b"</td><td>"
            });
            if dir {
                w.put(b"-");
            } else {
                put_size(w, meta.size);
            }
            w.put(b"</td><td>").put(&format_minutes(meta.mtime));
            w.put(b"</td></tr>\n");
        }
        Format::Json => {
            w.put(if first {
                b"\n{\"name\":\""
            } else {
                b",\n{\"name\":\""
            });
            put_json(w, name);
            w.put(if dir {
                b"\",\"type\":\"dir\",\"size\":null"
            } else {
                b"\",\"type\":\"file\",\"size\":"
            });
            if !dir {
                w.num(meta.size);
            }
            w.put(b",\"mtime\":");
            if meta.mtime < 0 {
                w.put(b"-");
            }
            w.num(meta.mtime.unsigned_abs()).put(b"}");
        }
    }
}

/// The page's end, or the array's `]`.
pub(super) fn end(w: &mut Writer<'_>, format: Format) {
    match format {
        Format::Html => w.put(b"</tbody>\n</table>\n</body></html>\n"),
        Format::Json => w.put(b"\n]\n"),
    };
}

/// The request path as the page shows it: at most [`PATH_SHOWN`] bytes, cut before a
/// UTF-8 continuation byte, then `…`.
fn put_path(w: &mut Writer<'_>, path: &[u8]) {
    if path.len() <= PATH_SHOWN {
        return put_html(w, path);
    }
    let mut cut = PATH_SHOWN;
    while cut > 0 && path[cut] & 0xc0 == 0x80 {
        cut -= 1;
    }
    put_html(w, &path[..cut]);
    w.put("…".as_bytes());
}

/// Whether a request can name `name`: the path decoder refuses an escape of a C0 control
/// or DEL (`http/path.rs`), and the request line cannot carry one raw, so such a name gets
/// no link (it would answer 400).
fn is_requestable(name: &[u8]) -> bool {
    !name.iter().any(|&b| is_control(b))
}

/// C0 controls and DEL: the bytes a request path cannot hold and a page must not carry
/// raw (an ESC would reach the terminal of whoever fetches the page with curl).
fn is_control(b: u8) -> bool {
    b < 0x20 || b == 0x7f
}

/// A name as HTML text: each invalid UTF-8 sequence as U+FFFD, `& < > " '` escaped,
/// C0 controls and DEL as `&#xNN;`.
fn put_html(w: &mut Writer<'_>, name: &[u8]) {
    for chunk in name.utf8_chunks() {
        for &b in chunk.valid().as_bytes() {
            match b {
                b'&' => w.put(b"&amp;"),
                b'<' => w.put(b"&lt;"),
                b'>' => w.put(b"&gt;"),
                b'"' => w.put(b"&quot;"),
                b'\'' => w.put(b"&#39;"),
                _ if is_control(b) => w.put(b"&#x").put(&hex_pair(b, HEX_UPPER)).put(b";"),
                _ => w.put(&[b]),
            };
        }
        if !chunk.invalid().is_empty() {
            w.put(REPLACEMENT);
        }
    }
}

/// U+FFFD REPLACEMENT CHARACTER, UTF-8.
const REPLACEMENT: &[u8] = "\u{fffd}".as_bytes();

/// A name as a JSON string's contents: each invalid UTF-8 sequence as U+FFFD, `"`, `\`,
/// C0 controls and DEL escaped.
fn put_json(w: &mut Writer<'_>, name: &[u8]) {
    for chunk in name.utf8_chunks() {
        for &b in chunk.valid().as_bytes() {
            match b {
                b'"' => w.put(b"\\\""),
                b'\\' => w.put(b"\\\\"),
                _ if is_control(b) => w.put(b"\\u00").put(&hex_pair(b, HEX_LOWER)),
                _ => w.put(&[b]),
            };
        }
        if !chunk.invalid().is_empty() {
            w.put(REPLACEMENT);
        }
    }
}

/// A name as a relative link: every byte but RFC 3986's unreserved ones percent-encoded.
fn put_href(w: &mut Writer<'_>, name: &[u8]) {
    for &b in name {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            w.put(&[b]);
        } else {
            w.put(b"%").put(&hex_pair(b, HEX_UPPER));
        }
    }
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";
const HEX_LOWER: &[u8; 16] = b"0123456789abcdef";

/// A byte as two hex digits from `digits`.
fn hex_pair(b: u8, digits: &[u8; 16]) -> [u8; 2] {
    [digits[usize::from(b >> 4)], digits[usize::from(b & 15)]]
}

/// A size for people: bytes below 1 KiB, else one decimal (rounded down) and a binary unit.
fn put_size(w: &mut Writer<'_>, size: u64) {
    const UNITS: [&[u8]; 6] = [b" KiB", b" MiB", b" GiB", b" TiB", b" PiB", b" EiB"];
    if size < 1024 {
        w.num(size).put(b" B");
        return;
    }
    let mut unit = 0;
    while unit + 1 < UNITS.len() && size >> (10 * (unit + 2)) > 0 {
        unit += 1;
    }
    let tenths = (u128::from(size) * 10) >> (10 * (unit + 1));
    let tenths = tenths as u64;
    w.num(tenths / 10)
        .put(b".")
        .num(tenths % 10)
        .put(UNITS[unit]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(run: impl FnOnce(&mut Writer<'_>)) -> String {
        let mut buf = vec![0u8; 64 * 1024];
        let mut w = Writer::new(&mut buf);
        run(&mut w);
        let n = w.finish().expect("fits");
        String::from_utf8(buf[..n].to_vec()).expect("always UTF-8")
    }

    fn file(size: u64) -> EntryMeta {
        EntryMeta {
            kind: Kind::File,
            size,
            mtime: 784_111_777,
        }
    }

    const DIR: EntryMeta = EntryMeta {
        kind: Kind::Dir,
        size: 4096,
        mtime: 0,
    };

    #[test]
    fn hostile_names_are_escaped_and_linked_byte_for_byte() {
        let row = text(|w| entry(w, Format::Html, true, b"<script>\"&'% #?:\xff", &file(3)));
        assert_eq!(
            row,
            "<tr><td><a href=\"%3Cscript%3E%22%26%27%25%20%23%3F%3A%FF\">\
             &lt;script&gt;&quot;&amp;&#39;% #?:\u{fffd}</a></td><td>3 B</td>\
             <td>1994-11-06 08:49</td></tr>\n"
        );
        let row = text(|w| entry(w, Format::Html, true, b"a b", &DIR));
        assert_eq!(
            row,
            "<tr><td><a href=\"a%20b/\">a b/</a></td><td>-</td><td>1970-01-01 00:00</td></tr>\n"
        );
    }

    #[test]
    fn a_name_with_a_control_byte_is_shown_escaped_and_not_linked() {
        let row = text(|w| entry(w, Format::Html, true, b"a\tb\x1b[31m\x7f", &file(3)));
        assert_eq!(
            row,
            "<tr><td>a&#x09;b&#x1B;[31m&#x7F;</td><td>3 B</td><td>1994-11-06 08:49</td></tr>\n"
        );
        let row = text(|w| entry(w, Format::Html, true, b"\x01", &DIR));
        assert_eq!(
            row,
            "<tr><td>&#x01;/</td><td>-</td><td>1970-01-01 00:00</td></tr>\n"
        );
        let json = text(|w| entry(w, Format::Json, true, b"\x1b\x7f", &DIR));
        assert!(json.contains("\"name\":\"\\u001b\\u007f\""), "{json}");
    }

    #[test]
    fn json_names_are_valid_strings_whatever_the_bytes() {
        let names: [&[u8]; 5] = [
            b"\"q\\",
            b"\x01\n\x1f",
            b"\xff\xfe",
            b"caf\xc3\xa9",
            b"a\xc3",
        ];
        let mut doc = String::from("[");
        for (i, name) in names.iter().enumerate() {
            doc += &text(|w| entry(w, Format::Json, i == 0, name, &file(i as u64)));
        }
        doc += &text(|w| entry(w, Format::Json, false, b"d", &DIR));
        doc += &text(|w| end(w, Format::Json));
        let v: serde_json::Value = serde_json::from_str(&doc).expect(&doc);
        let got: Vec<&str> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            got,
            [
                "\"q\\",
                "\u{1}\n\u{1f}",
                "\u{fffd}\u{fffd}",
                "café",
                "a\u{fffd}",
                "d"
            ]
        );
        for name in names {
            assert!(
                got.contains(&String::from_utf8_lossy(name).as_ref()),
                "lossy, as std"
            );
        }
        assert_eq!(v[0]["type"], "file");
        assert_eq!(v[5]["type"], "dir");
        assert_eq!(v[5]["size"], serde_json::Value::Null);
        assert_eq!(v[3]["mtime"], 784_111_777);
        let negative = EntryMeta {
            mtime: -5,
            ..file(1)
        };
        let one = text(|w| entry(w, Format::Json, true, b"x", &negative));
        assert!(one.ends_with(",\"mtime\":-5}"), "{one}");
    }

    #[test]
    fn sizes_for_people() {
        for (size, want) in [
            (0, "0 B"),
            (1023, "1023 B"),
            (1024, "1.0 KiB"),
            (1536, "1.5 KiB"),
            (1024 * 1024 - 1, "1023.9 KiB"),
            (1024 * 1024, "1.0 MiB"),
            (5 << 30, "5.0 GiB"),
            (u64::MAX, "15.9 EiB"),
        ] {
            assert_eq!(text(|w| put_size(w, size)), want, "{size}");
        }
    }

    #[test]
    fn the_page_shows_its_path_and_a_parent_link_below_the_root() {
        let page = text(|w| start(w, Format::Html, b"/a <b>/"));
        assert!(
            page.contains("<title>Index of /a &lt;b&gt;/</title>"),
            "{page}"
        );
        assert!(page.contains("name=\"viewport\""));
        assert!(page.contains("href=\"../\""));
        assert!(!page.contains("<script"));
        assert!(!text(|w| start(w, Format::Html, b"/")).contains("href=\"../\""));
        let long = [b"/".as_slice(), &"é".repeat(400).into_bytes(), b"/"].concat();
        let page = text(|w| start(w, Format::Html, &long));
        assert!(
            page.contains(&format!("Index of /{}…</title>", "é".repeat(255))),
            "cut at a character"
        );
    }

    /// The bounds callers rely on, with the worst names and paths there are.
    #[test]
    fn every_piece_fits_its_stated_bound() {
        let worst_path = [b"/".as_slice(), &[b'"'; 4094]].concat();
        for format in [Format::Html, Format::Json] {
            let n = text(|w| start(w, format, &worst_path)).len();
            assert!(n <= START_MAX, "{format:?} start {n}");
            for byte in [b'"', b'\'', 0x01, 0x7f, 0xff, b'a'] {
                let name = [byte; 255];
                for meta in [
                    file(u64::MAX),
                    DIR,
                    EntryMeta {
                        mtime: i64::MIN,
                        ..file(u64::MAX)
                    },
                ] {
                    let n = text(|w| entry(w, format, false, &name, &meta)).len();
                    assert!(n <= ENTRY_MAX, "{format:?} {byte} {n}");
                }
            }
            assert!(text(|w| end(w, format)).len() <= END_MAX);
        }
    }
}
