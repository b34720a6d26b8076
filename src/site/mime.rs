//! Media types by file extension: the operator's `--mime EXT=TYPE` first, then the
//! `--mime-types FILE` table, then the built-in table ([`table`]).
//!
//! Input: a decoded path. Output: a `Content-Type` value. The extension is compared
//! case-insensitively (`photo.JPG` is `image/jpeg`, as lighttpd does); an unknown or
//! missing extension is `application/octet-stream` (the type nginx's shipped config uses).
//! Text types carry `charset=utf-8`.
//!
//! Two forms of the same tables. [`MediaTypes`] is owned: what the configuration
//! carries, what a reload replaces (the file is read again by `preflight::media_types`;
//! parsing it is [`file`]'s business), dropped when no longer used. [`Types`] is the
//! serving form, `Copy` and `'static`, so that a file's metadata holds its type as a
//! plain `&'static [u8]`: a serving loop makes it once at start ([`MediaTypes::leak`]),
//! after its worker is pinned, so the master never leaks a table it may replace.
//!
//! A lookup is up to three binary searches over extensions sorted in lowercase (the
//! operator's tables are usually empty, and an empty one is no search). Each compares a
//! [`fold_key`] first: the extension's first eight bytes folded to lowercase in one
//! integer, the whole extension only when the keys are equal. No allocation, no copy.
//! Against the linear walk it replaced: `cargo bench --bench mime_lookup`.

pub(crate) mod file;
mod table;

use crate::http::tables::{FIELD_VALUE, TOKEN};
use core::cmp::Ordering;
use core::fmt;

/// The type sent when the extension is unknown.
pub const DEFAULT: &[u8] = b"application/octet-stream";

/// Bytes of the longest built-in type.
pub(crate) const LONGEST: usize = table::LONGEST;

/// The built-in table, (extension, type) sorted by extension: for the tests and benches
/// that hold it against an oracle or another server's list.
pub fn builtin() -> &'static [(&'static [u8], &'static [u8])] {
    table::TABLE
}

/// One `--mime EXT=TYPE`, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MimeOverride {
    /// The extension, lowercase, without its dot.
    pub(crate) ext: String,
    /// The `Content-Type` value.
    pub(crate) media_type: String,
}

impl MimeOverride {
    /// Parses `EXT=TYPE`: EXT is a token without `.` (a leading `.` is dropped), TYPE is
    /// `type/subtype` (tokens) with optional `; parameter`s (RFC 9110 §8.3.1).
    pub(crate) fn parse(text: &str) -> Result<MimeOverride, &'static str> {
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

/// A type too long for a response head beside the operator's lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TooLong {
    /// Bytes of the type.
    pub(crate) len: usize,
    /// Bytes a type may have (`site::type_room`).
    pub(crate) room: usize,
    /// Bytes of the `--header` and `--cache-control` lines beside it.
    pub(crate) lines: usize,
}

impl fmt::Display for TooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TYPE is {} bytes; a response head has room for a type of at most {} (beside {} \
             bytes of --header and --cache-control lines)",
            self.len, self.room, self.lines
        )
    }
}

/// The first eight bytes of `ext` folded to lowercase, big-endian, zero-padded: two
/// keys compare as those bytes do, so a table sorted by extension is sorted by key.
/// Extensions hold no zero byte (they are tokens; a probe is a decoded path, which the
/// parser keeps free of NUL).
pub(crate) const fn fold_key(ext: &[u8]) -> u64 {
    let mut key = 0u64;
    let mut i = 0;
    while i < 8 {
        key <<= 8;
        if i < ext.len() {
            key |= ext[i].to_ascii_lowercase() as u64;
        }
        i += 1;
    }
    key
}

/// `key` (lowercase) against `probe` folded to lowercase, bytewise: the order the tables
/// are sorted in, for extensions whose first eight bytes are the same.
fn cmp_folded(key: &[u8], probe: &[u8]) -> Ordering {
    for (&k, &p) in key.iter().zip(probe) {
        match k.cmp(&p.to_ascii_lowercase()) {
            Ordering::Equal => {}
            other => return other,
        }
    }
    key.len().cmp(&probe.len())
}

/// Where an extension or a type lies in a [`TypeTable`]'s text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    at: u32,
    len: u32,
}

impl Span {
    fn get(self, text: &[u8]) -> &[u8] {
        &text[self.at as usize..][..self.len as usize]
    }
}

/// Appends `bytes` to `text`: where they lie.
fn put(text: &mut Vec<u8>, bytes: &[u8]) -> Span {
    let at = u32::try_from(text.len()).expect("a type table is under 4 GiB");
    text.extend_from_slice(bytes);
    Span {
        at,
        len: bytes.len() as u32,
    }
}

/// One extension and its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    /// [`fold_key`] of the extension: most comparisons end here.
    key: u64,
    ext: Span,
    media_type: Span,
}

/// An operator's table, owned: every extension once, sorted in lowercase, with its type.
/// Two allocations whatever its size (the text and the entries).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TypeTable {
    text: Box<[u8]>,
    entries: Box<[Entry]>,
}

impl TypeTable {
    /// The table of `pairs` (extension in lowercase, type), the first pair of an
    /// extension winning. Each pair is put in its place as it comes (a binary search and
    /// an insertion: a few thousand extensions at most, read at start), which keeps a
    /// generic sort out of the binary; a type the previous pair had too (the extensions
    /// of one line) is stored once.
    pub(crate) fn first_wins<'p>(
        pairs: impl IntoIterator<Item = (&'p [u8], &'p [u8])>,
    ) -> TypeTable {
        let mut text = Vec::new();
        let mut entries: Vec<Entry> = Vec::new();
        let mut previous: Option<(&[u8], Span)> = None;
        for (ext, media_type) in pairs {
            let key = fold_key(ext);
            let place = entries.binary_search_by(|e| {
                let by_key = e.key.cmp(&key);
                by_key.then_with(|| cmp_folded(e.ext.get(&text), ext))
            });
            let Err(at) = place else {
                continue;
            };
            let media_span = match previous {
                Some((before, span)) if before == media_type => span,
                _ => put(&mut text, media_type),
            };
            previous = Some((media_type, media_span));
            let entry = Entry {
                key,
                ext: put(&mut text, ext),
                media_type: media_span,
            };
            entries.insert(at, entry);
        }
        TypeTable {
            text: text.into_boxed_slice(),
            entries: entries.into_boxed_slice(),
        }
    }

    /// Bytes of its longest type (0 when empty).
    pub(crate) fn longest(&self) -> usize {
        let lens = self.entries.iter().map(|e| e.media_type.len as usize);
        lens.max().unwrap_or(0)
    }

    /// Extensions it holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// A copy that lives as long as the process (two allocations, never freed).
    pub(crate) fn leak(&self) -> StaticTable {
        if self.entries.is_empty() {
            return StaticTable::EMPTY;
        }
        StaticTable {
            text: Box::leak(self.text.clone()),
            entries: Box::leak(self.entries.clone()),
        }
    }
}

/// A [`TypeTable`] made `'static`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StaticTable {
    text: &'static [u8],
    entries: &'static [Entry],
}

impl Default for StaticTable {
    fn default() -> Self {
        StaticTable::EMPTY
    }
}

impl StaticTable {
    /// No extension.
    pub(crate) const EMPTY: StaticTable = StaticTable {
        text: &[],
        entries: &[],
    };

    /// The type of `ext` (any case), if the table has it.
    #[cfg(test)]
    pub(crate) fn get(&self, ext: &[u8]) -> Option<&'static [u8]> {
        self.get_keyed(ext, fold_key(ext))
    }

    /// [`Self::get`] with `ext`'s [`fold_key`] already made.
    fn get_keyed(&self, ext: &[u8], key: u64) -> Option<&'static [u8]> {
        if self.entries.is_empty() {
            return None;
        }
        let text = self.text;
        let at = self
            .entries
            .binary_search_by(|e| {
                let by_key = e.key.cmp(&key);
                by_key.then_with(|| cmp_folded(e.ext.get(text), ext))
            })
            .ok()?;
        Some(self.entries[at].media_type.get(text))
    }
}

/// The built-in type of `ext` (any case): its key among the built-in keys (each unique,
/// checked at compile time), then the whole extension once.
fn builtin_type(ext: &[u8], key: u64) -> Option<&'static [u8]> {
    let at = table::KEYS.binary_search(&key).ok()?;
    let (known, media_type) = table::TABLE[at];
    known.eq_ignore_ascii_case(ext).then_some(media_type)
}

/// The operator's media types, owned: `--mime` (the last one of an extension winning)
/// and the `--mime-types` file as last read (empty until read).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct MediaTypes {
    flags: TypeTable,
    file: TypeTable,
}

impl MediaTypes {
    /// The `--mime` overrides, in command-line order (a later one of an extension wins).
    pub(crate) fn new(overrides: &[MimeOverride]) -> MediaTypes {
        let last_first = overrides
            .iter()
            .rev()
            .map(|o| (o.ext.as_bytes(), o.media_type.as_bytes()));
        MediaTypes {
            flags: TypeTable::first_wins(last_first),
            file: TypeTable::default(),
        }
    }

    /// These overrides with `file` (a `--mime-types` table) between them and the
    /// built-in table, replacing any file table before.
    pub(crate) fn with_file(self, file: TypeTable) -> MediaTypes {
        MediaTypes { file, ..self }
    }

    /// Bytes of the longest type a lookup can give.
    pub(crate) fn longest(&self) -> usize {
        self.flags.longest().max(self.file.longest()).max(LONGEST)
    }

    /// The serving form, made `'static` once per serving loop (it allocates; see the
    /// module doc).
    pub(crate) fn leak(&self) -> Types {
        Types {
            flags: self.flags.leak(),
            file: self.file.leak(),
        }
    }
}

/// The media-type lookup a loop serves with: `--mime`, then the file, then the
/// built-in table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Types {
    flags: StaticTable,
    file: StaticTable,
}

impl Types {
    /// The built-in table alone.
    pub(crate) const BUILTIN: Types = Types {
        flags: StaticTable::EMPTY,
        file: StaticTable::EMPTY,
    };

    /// The `Content-Type` for `path` (only the last segment's extension counts).
    pub(crate) fn for_path(&self, path: &[u8]) -> &'static [u8] {
        // From the end to the first `.` or `/`: only the extension is read, where
        // searching the whole path for its last `/` and then for the last `.` read it all.
        let Some(at) = path.iter().rposition(|&b| b == b'.' || b == b'/') else {
            return DEFAULT;
        };
        if path[at] == b'/' {
            return DEFAULT;
        }
        let ext = &path[at + 1..];
        let key = fold_key(ext);
        self.flags
            .get_keyed(ext, key)
            .or_else(|| self.file.get_keyed(ext, key))
            .or_else(|| builtin_type(ext, key))
            .unwrap_or(DEFAULT)
    }
}

/// The built-in `Content-Type` for `path`.
pub fn for_path(path: &[u8]) -> &'static [u8] {
    Types::BUILTIN.for_path(path)
}

#[cfg(test)]
mod tests;
