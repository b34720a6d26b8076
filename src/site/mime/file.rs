//! The `--mime-types FILE` format, the one of `/etc/mime.types` (Debian's `media-types`,
//! Apache's `conf/mime.types`): one media type per line followed by its extensions,
//! separated by spaces or tabs; a word that begins with `#` starts a comment to the end
//! of the line; blank lines and types without extensions are allowed.
//!
//! ```text
//! # subtitles and streams
//! text/vtt                        vtt
//! application/vnd.apple.mpegurl   m3u8
//! ```
//!
//! Input: the file's bytes (read by `preflight::media_types`) and the room a type has in
//! a response head. Output: a [`TypeTable`] in which the first line naming an extension
//! wins (a later one is ignored), or the first bad line as a [`LineError`]. Pure: it reads
//! nothing itself. A type is `type/subtype`, tokens both (RFC 9110 §8.3.1; a file line
//! cannot carry parameters, since a space ends the word); a `text/*` type is given
//! `; charset=utf-8`, as the built-in ones are. An extension is a token (a leading `.`
//! is dropped), compared in lowercase. One that still holds a dot (Debian's file lists
//! `cwl.json`, `tm.jsonld`, `pcf.Z`) is accepted and left out: a path's extension is what
//! follows its last dot, as in nginx, so it could never match. nginx's own
//! `types { ... }` block is a different format: its first line is refused (`types` is not
//! a media type).

use super::{is_token, TooLong, TypeTable};
use core::fmt;

/// Appended to a `text/*` type.
const CHARSET: &[u8] = b"; charset=utf-8";

/// A line of the file that cannot be used: its number (from 1) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LineError {
    /// The line's number, counted from 1.
    pub(crate) line: usize,
    /// What is wrong with it.
    pub(crate) kind: LineErrorKind,
}

/// What is wrong with a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LineErrorKind {
    /// Its first word is not `type/subtype`.
    NotAType(String),
    /// One of its extensions is not a token.
    BadExtension(String),
    /// Its type does not fit in a response head beside the operator's lines.
    TooLong(TooLong),
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.line)?;
        match &self.kind {
            LineErrorKind::NotAType(w) => write!(
                f,
                "{w:?} is not a media type (expected TYPE EXT..., such as text/vtt vtt)"
            ),
            LineErrorKind::BadExtension(w) => {
                write!(f, "{w:?} is not an extension (expected a name such as vtt)")
            }
            LineErrorKind::TooLong(t) => t.fmt(f),
        }
    }
}

/// Parses the whole file; `room` is the longest type a response head has room for and
/// `lines` the bytes of the operator's lines beside it (for the message).
pub(crate) fn parse(text: &[u8], room: usize, lines: usize) -> Result<TypeTable, LineError> {
    let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        let fail = |kind| LineError { line: i + 1, kind };
        let mut words = line
            .split(|&b| b == b' ' || b == b'\t' || b == b'\r')
            .filter(|w| !w.is_empty())
            .take_while(|w| w[0] != b'#');
        let Some(media_type) = words.next() else {
            continue;
        };
        let media_type = checked_type(media_type).map_err(fail)?;
        if media_type.len() > room {
            return Err(fail(LineErrorKind::TooLong(TooLong {
                len: media_type.len(),
                room,
                lines,
            })));
        }
        for word in words {
            let ext = word.strip_prefix(b".").unwrap_or(word);
            if !is_token(ext) {
                return Err(fail(LineErrorKind::BadExtension(lossy(word))));
            }
            // A compound extension (`tm.json`) is never what follows a path's last dot.
            if !ext.contains(&b'.') {
                pairs.push((ext.to_ascii_lowercase(), media_type.clone()));
            }
        }
    }
    Ok(TypeTable::first_wins(
        pairs.iter().map(|(e, t)| (e.as_slice(), t.as_slice())),
    ))
}

/// `type/subtype` as sent: with `; charset=utf-8` for a `text/*` type.
fn checked_type(word: &[u8]) -> Result<Vec<u8>, LineErrorKind> {
    let well_formed = memchr::memchr(b'/', word)
        .is_some_and(|slash| is_token(&word[..slash]) && is_token(&word[slash + 1..]));
    if !well_formed {
        return Err(LineErrorKind::NotAType(lossy(word)));
    }
    let mut sent = word.to_vec();
    if word.len() > 5 && word[..5].eq_ignore_ascii_case(b"text/") {
        sent.extend_from_slice(CHARSET);
    }
    Ok(sent)
}

fn lossy(word: &[u8]) -> String {
    String::from_utf8_lossy(word).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> TypeTable {
        parse(text.as_bytes(), 1000, 0).unwrap()
    }

    fn error(text: &str) -> LineError {
        parse(text.as_bytes(), 40, 7).unwrap_err()
    }

    #[test]
    fn lines_comments_and_the_first_line_wins() {
        let t = table(
            "# comment\n\
             \n\
             text/vtt\t\tvtt  # WebVTT\n\
             application/x-none\n\
             video/mp2t ts .M2T\r\n\
             application/typescript ts tsx\n\
             image/png png # png2 is commented out\n\
             application/tm+json tm.jsonld tm.json jsontm\n",
        );
        let types = t.leak();
        assert_eq!(types.get(b"vtt"), Some(&b"text/vtt; charset=utf-8"[..]));
        assert_eq!(types.get(b"ts"), Some(&b"video/mp2t"[..]), "first wins");
        assert_eq!(types.get(b"m2t"), Some(&b"video/mp2t"[..]));
        assert_eq!(types.get(b"tsx"), Some(&b"application/typescript"[..]));
        assert_eq!(types.get(b"png"), Some(&b"image/png"[..]));
        assert_eq!(types.get(b"png2"), None);
        assert_eq!(types.get(b"WebVTT"), None);
        assert_eq!(types.get(b"jsontm"), Some(&b"application/tm+json"[..]));
        assert_eq!(types.get(b"json"), None, "a compound extension is left out");
        assert_eq!(types.get(b"tm.json"), None);
        assert_eq!(table("").leak().get(b"vtt"), None);
    }

    #[test]
    fn bad_lines_are_named_by_number() {
        let e = error("text/plain txt\ntypes {\n");
        assert_eq!(e.line, 2);
        assert_eq!(e.kind, LineErrorKind::NotAType("types".into()));
        assert!(e
            .to_string()
            .starts_with("2: \"types\" is not a media type"));
        for (text, line) in [
            ("vtt text/vtt", 1),
            ("\n\ntext/ vtt", 3),
            ("/plain txt", 1),
            ("text/pl\u{e9}in txt", 1),
            ("text/plain;charset=x txt", 1),
        ] {
            let e = error(text);
            assert_eq!(e.line, line, "{text:?}");
            assert!(matches!(e.kind, LineErrorKind::NotAType(_)), "{text:?}");
        }
        for text in ["text/plain vtt;", "text/plain t\u{1}xt", "text/plain ."] {
            let e = error(text);
            assert!(matches!(e.kind, LineErrorKind::BadExtension(_)), "{text:?}");
        }
    }

    #[test]
    fn a_type_longer_than_the_room_is_refused_with_the_figures() {
        let long = format!("text/{}", "x".repeat(20));
        assert!(parse(format!("{long} x").as_bytes(), 40, 7).is_ok());
        let e = error(&format!("# ok\n{long}x x"));
        assert_eq!(e.line, 2);
        assert_eq!(
            e.to_string(),
            "2: TYPE is 41 bytes; a response head has room for a type of at most 40 \
             (beside 7 bytes of --header and --cache-control lines)"
        );
    }
}
