//! The lookup against a naive oracle (a linear walk with a case-insensitive compare, as
//! the table was searched before it was sorted), the precedence of the three tables, and
//! `--mime` parsing.

use super::*;

/// The naive oracle: the first entry of `table` whose extension equals `ext` in any case.
fn walk<'t>(table: &[(&'t [u8], &'t [u8])], ext: &[u8]) -> Option<&'t [u8]> {
    let found = table.iter().find(|(e, _)| e.eq_ignore_ascii_case(ext));
    found.map(|(_, t)| *t)
}

/// A small xorshift: the same probes on every run.
fn probes(n: usize) -> Vec<Vec<u8>> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let alphabet = b"abcdegijklmnoprstuvwxyzAMPTX0123456789-+._";
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 7) as usize;
            (0..len)
                .map(|i| alphabet[((x >> (8 + 5 * i)) % alphabet.len() as u64) as usize])
                .collect()
        })
        .collect()
}

#[test]
fn the_binary_search_agrees_with_a_linear_walk() {
    let table = builtin();
    let mut exts: Vec<Vec<u8>> = table.iter().map(|(e, _)| e.to_vec()).collect();
    exts.extend(table.iter().map(|(e, _)| e.to_ascii_uppercase()));
    exts.extend(table.iter().map(|(e, _)| [*e, b"x"].concat()));
    exts.extend(table.iter().map(|(e, _)| e[..e.len() - 1].to_vec()));
    exts.extend(probes(20_000));
    for ext in &exts {
        // The probe may hold a dot: the extension is what follows the last one.
        let last = ext.rsplit(|&b| b == b'.').next().unwrap_or(ext);
        let want = walk(table, last).unwrap_or(DEFAULT);
        let path = [b"/dir/file.", &ext[..]].concat();
        assert_eq!(for_path(&path), want, "{:?}", String::from_utf8_lossy(ext));
    }
}

#[test]
fn an_operator_table_agrees_with_a_linear_walk() {
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = probes(3_000)
        .into_iter()
        .filter(|e| !e.is_empty())
        .map(|e| {
            let t = format!("x/t{}", e.len());
            (e.to_ascii_lowercase(), t.into_bytes())
        })
        .collect();
    let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(e, t)| (&e[..], &t[..])).collect();
    let table = TypeTable::first_wins(refs.iter().copied()).leak();
    for ext in probes(20_000) {
        assert_eq!(table.get(&ext), walk(&refs, &ext), "{ext:?}");
    }
}

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
        // Issue 25: subtitles, HLS, and what nginx knows that steerd did not.
        "vtt",
        "m3u8",
        "ts",
        "mov",
        "m4a",
        "yaml",
        "xhtml",
        "svgz",
        "eot",
    ] {
        assert_ne!(for_path(format!("/f.{ext}").as_bytes()), DEFAULT, "{ext}");
    }
    assert_eq!(for_path(b"/a.vtt"), b"text/vtt; charset=utf-8");
}

#[test]
fn text_types_carry_utf8() {
    for (ext, media_type) in builtin() {
        let text = media_type.starts_with(b"text/");
        let charset = media_type.ends_with(b"; charset=utf-8");
        assert_eq!(text, charset, "{}", String::from_utf8_lossy(ext));
    }
}

#[test]
fn overrides_then_the_file_then_the_table() {
    let o = |t: &str| MimeOverride::parse(t).unwrap();
    let file = TypeTable::first_wins([
        (&b"md"[..], &b"text/x-file"[..]),
        (b"vtt", b"text/x-vtt"),
        (b"new", b"x/new"),
    ]);
    let types = MediaTypes::new(&[
        o("js=application/javascript"),
        o(".WASM=application/x-wasm"),
        o("md=text/x-markdown; charset=utf-8"),
        o("md=text/markdown"),
    ])
    .with_file(file)
    .leak();
    assert_eq!(types.for_path(b"/a.js"), b"application/javascript");
    assert_eq!(types.for_path(b"/a.wasm"), b"application/x-wasm");
    assert_eq!(
        types.for_path(b"/a.md"),
        b"text/markdown",
        "the last --mime wins, over the file"
    );
    assert_eq!(
        types.for_path(b"/a.VTT"),
        b"text/x-vtt",
        "the file over the table"
    );
    assert_eq!(types.for_path(b"/a.new"), b"x/new");
    assert_eq!(types.for_path(b"/a.css"), b"text/css; charset=utf-8");
    assert_eq!(types.for_path(b"/a.unknown"), DEFAULT);
    assert_eq!(MediaTypes::default().leak(), Types::BUILTIN);
}

#[test]
fn the_longest_type_counts_every_table() {
    assert_eq!(MediaTypes::default().longest(), LONGEST);
    let long = "x/".to_string() + &"y".repeat(LONGEST);
    let flags = MediaTypes::new(&[MimeOverride::parse(&format!("a={long}")).unwrap()]);
    assert_eq!(flags.longest(), LONGEST + 2);
    let file = TypeTable::first_wins([(&b"b"[..], long.as_bytes())]);
    assert_eq!(MediaTypes::default().with_file(file).longest(), LONGEST + 2);
}

#[test]
fn a_type_shared_by_consecutive_extensions_is_stored_once() {
    let t = TypeTable::first_wins([
        (&b"a"[..], &b"x/shared"[..]),
        (b"b", b"x/shared"),
        (b"a", b"x/later"),
    ]);
    assert_eq!(t.len(), 2);
    assert_eq!(&*t.text, b"x/sharedab");
    assert_eq!(
        t.leak().get(b"A"),
        Some(&b"x/shared"[..]),
        "the first of a wins"
    );
}

#[test]
fn bad_overrides_are_refused() {
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
