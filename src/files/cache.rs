//! A per-worker cache of small files: bytes and metadata, revalidated at a bounded rate.
//!
//! Input: lookups by decoded path, with the loop's monotonic time. Output: either a hit
//! (an entry index whose bytes the connection copies behind the response head and sends
//! with one `send`, or, when they do not fit there, one `sendmsg` of the head and the
//! bytes), or the plain [`Lookup`] for files the cache does not hold. All memory is allocated once in
//! [`FileCache::new`]: a table of entries and one arena of `entries × file_max` bytes
//! followed by each entry's key and file lines (`TEXT` bytes an entry), zero-filled by the allocator so pages are touched (and count in the worker's resident
//! memory) only when a file is stored in them.
//!
//! Policy: direct-mapped by a hash of the path (a collision replaces the older entry).
//! An entry is served without any syscall for `revalidate` after it was last checked;
//! then the next request re-resolves the path without opening it (`openat2(O_PATH)` +
//! `fstat` + `close`, [`probe`]) and compares inode, mtime, ctime and size; only a changed
//! file is opened again. **Staleness a user can see:** a changed, replaced or deleted
//! file may still be served from a worker's cache for up to `revalidate` (1 s by default)
//! after the change, each worker independently. A change in place that keeps size and
//! mtime (a build tool that normalizes mtimes) still moves the ctime, which no one but
//! the kernel sets, so it is noticed at the same recheck.
//!
//! Content ETags (`--etag content`, [`super::content_tag`]): a file stored in the arena is
//! hashed when it is loaded; a descriptor entry is hashed in slices by
//! [`FileCache::hash_turn`], which the loop calls once a turn (at most [`HASH_TURN_BYTES`]
//! a call, read through the entry's unused arena room), and is served without an ETag
//! until its hash is known. When the last slice is hashed the file is `fstat`ed again: a
//! file changed meanwhile gets no tag (its next revalidation loads it afresh).
//!
//! Larger files are cached as an **open descriptor** with their metadata (nginx's
//! `open_file_cache`): a hit then costs no `openat2`, `fstat` or `close`, only the
//! `sendfile`. A worker holds at most `entries` such descriptors. The same revalidation
//! applies; a file rewritten in place (same inode) within the period may be sent with
//! the old length: a shorter file ends the response early and the connection is closed.
//! So that a deleted or rotated file does not stay open for ever, the loop calls
//! [`FileCache::sweep`] about once a second: an unpinned descriptor entry unused for
//! [`IDLE_INTERVALS`] revalidation periods is closed, and one unused for a period whose
//! `fstat` shows no link left (`st_nlink == 0`) is closed at once. An entry in use is
//! never `fstat`ed by the sweep: its next revalidation notices the deletion.
//!
//! Sidecars: an entry's metadata holds its file's usable pre-compressed sidecars
//! ([`FileMeta::sidecars`]), found when it is loaded and looked for again at each
//! revalidation, so a hit costs no syscall for them either. A sidecar's bytes are an
//! entry of their own, under the sidecar's path ([`FileCache::lookup_plain`]).
//!
//! Head lines: an entry also holds the lines that describe its file in a full 200
//! (`Content-Type` .. `Accept-Ranges`, [`crate::http::response::write_file_lines`]),
//! rendered when it is loaded, so that answering a hit costs a copy of them instead of
//! formatting them again ([`FileCache::file_lines`]).
//!
//! Pins: a connection whose response is partly written from an entry pins it; a pinned
//! entry is never reloaded or replaced, so the bytes (or the descriptor) under a paused
//! write do not change.

mod compress;
mod gz_file;

use super::content_tag::{self, Hashing, Step};
use super::{open, probe, FileMeta, FileOptions, Lookup, Probe, PATH_MAX};
use crate::http::response::write_file_lines;
use crate::site::validators::EtagMode;
pub(crate) use compress::{Gz, MIN_SIZE as COMPRESS_MIN};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Duration;

/// Revalidation periods a descriptor entry may go unused before the sweep closes it.
pub(crate) const IDLE_INTERVALS: u64 = 3;

/// Bytes a call of [`FileCache::hash_turn`] hashes at most (about a millisecond of
/// SHA-256), so a large file never holds the loop for long.
pub(crate) const HASH_TURN_BYTES: usize = 256 * 1024;

/// Longest path the cache keys on; longer paths are served uncached.
pub(crate) const KEY_MAX: usize = 192;

/// Room for an entry's rendered file lines: an ETag and a date take about 110 bytes,
/// leaving the media type over 150 (a longer one is formatted per response instead).
const FILE_LINES_MAX: usize = 288;

/// An entry's text at the arena's end: its key, then its file lines.
const TEXT: usize = KEY_MAX + FILE_LINES_MAX;

/// Sizes fixed at start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheConfig {
    /// Number of entries (0 disables the cache).
    pub entries: u32,
    /// Largest file stored, in bytes.
    pub file_max: u32,
    /// How long an entry is trusted before it is checked against the file again.
    pub revalidate: Duration,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            entries: 256,
            file_max: 64 * 1024,
            revalidate: Duration::from_secs(1),
        }
    }
}

/// An entry's state; its key and file lines are at the arena's end, zero pages the
/// worker touches only as entries fill (filling those `TEXT` bytes an entry here at start
/// made 120 KiB of each worker's RSS at start).
struct Entry {
    key_len: usize,
    meta: Option<FileMeta>,
    /// The open file, for an entry too large for the arena.
    file: Option<OwnedFd>,
    checked_ms: u64,
    /// Last hit (for the sweep of unused descriptors).
    used_ms: u64,
    pins: u32,
    /// When its file was last sent whole from pages found cached (0: never): trusted to
    /// stay so for a revalidation period ([`FileCache::resident`]).
    resident_ms: u64,
    /// Length of the file lines of a full 200 of `meta`; 0 when they did not fit.
    lines_len: usize,
    /// A descriptor entry's content hash in progress (`--etag content`).
    hashing: Option<Hashing>,
    /// The value of `stats.loads` when this entry's file was stored (its version).
    loaded: u64,
    /// Its compressed representation ([`compress`]).
    gz: Gz,
    /// A descriptor entry's `.gz` in `--compress-cache DIR`, when ready.
    gz_fd: Option<OwnedFd>,
}

/// The result of a cached lookup.
#[derive(Debug)]
pub enum Served {
    /// The file is in entry `index` (see [`FileCache::meta`] and [`FileCache::body`]).
    Hit(u32),
    /// Not cached: the uncached lookup's answer.
    Miss(Lookup),
}

/// Counters for tests and docs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups answered from memory.
    pub(crate) hits: u64,
    /// Files read into the arena.
    pub loads: u64,
    /// Revalidations (re-resolve and compare).
    pub revalidations: u64,
    /// Files compressed (gzip bytes made, [`compress`]).
    pub(crate) compressions: u64,
}

/// One worker's small-file cache.
pub struct FileCache {
    entries: Vec<Entry>,
    /// `file_max` bytes an entry, then from `text_at` `TEXT` bytes an entry ([`key`]).
    arena: Vec<u8>,
    text_at: usize,
    file_max: usize,
    revalidate_ms: u64,
    options: FileOptions,
    /// When [`FileCache::hash_turn`] has work: now, or when a slice it waits for is read.
    hash_wake: Option<u64>,
    /// Compressed representations ([`compress`]).
    gz: compress::Compressor,
    /// Running counters.
    pub stats: CacheStats,
}

/// The key's hash, eight bytes a step: each word is mixed in by a rotate, an xor and a
/// multiply by an odd constant (the step of rustc's FxHasher), the last partial word
/// zero-padded and the length folded in, so "/a" and "/a\0" differ. No adversary gains
/// more than evicting entries, so speed matters more than strength; the slot is taken
/// from the high bits ([`slot_of`]), which the multiplies fill.
fn hash(path: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let step = |h: u64, w: u64| (h.rotate_left(5) ^ w).wrapping_mul(K);
    let mut words = path.chunks_exact(8);
    let mut h = (path.len() as u64).wrapping_mul(K);
    for w in &mut words {
        h = step(h, u64::from_le_bytes(w.try_into().unwrap_or_default()));
    }
    let mut last = [0u8; 8];
    let rest = words.remainder();
    last[..rest.len()].copy_from_slice(rest);
    let h = step(h, u64::from_le_bytes(last));
    // A multiply carries bits only upwards: fold the high half down and multiply again,
    // so the last word's high bytes reach the high bits `slot_of` uses as well.
    (h ^ h >> 32).wrapping_mul(K)
}

/// The entry for `hash` among `len`: the high half of `hash × len` (a multiply where `%`
/// would divide, tens of cycles on the request path), always below `len`.
fn slot_of(hash: u64, len: usize) -> u32 {
    ((u128::from(hash) * len as u128) >> 64) as u32
}

impl FileCache {
    /// Allocates the table and the arena (the only allocation the cache ever makes).
    pub fn new(cfg: CacheConfig) -> FileCache {
        let n = cfg.entries as usize;
        let entries = (0..n)
            .map(|_| Entry {
                key_len: 0,
                meta: None,
                file: None,
                checked_ms: 0,
                used_ms: 0,
                pins: 0,
                resident_ms: 0,
                lines_len: 0,
                hashing: None,
                loaded: 0,
                gz: Gz::Untried,
                gz_fd: None,
            })
            .collect();
        FileCache {
            entries,
            arena: vec![0u8; n * (cfg.file_max as usize + TEXT)],
            text_at: n * cfg.file_max as usize,
            file_max: cfg.file_max as usize,
            revalidate_ms: cfg.revalidate.as_millis() as u64,
            options: FileOptions::default(),
            hash_wake: None,
            gz: compress::Compressor::default(),
            stats: CacheStats::default(),
        }
    }

    /// The cache describing files with `options` (media types, sidecars looked for).
    pub(crate) fn with_options(mut self, options: FileOptions) -> FileCache {
        self.options = options;
        self
    }

    /// How this cache describes files.
    pub(crate) fn options(&self) -> &FileOptions {
        &self.options
    }

    /// Metadata of a hit entry.
    pub fn meta(&self, index: u32) -> Option<&FileMeta> {
        self.entries.get(index as usize)?.meta.as_ref()
    }

    /// The rendered file lines of a full 200 of a hit entry's file, unless they did not
    /// fit.
    pub fn file_lines(&self, index: u32) -> Option<&[u8]> {
        let e = self.entries.get(index as usize)?;
        let at = self.text_at + index as usize * TEXT + KEY_MAX;
        (e.meta.is_some() && e.lines_len > 0).then(|| &self.arena[at..at + e.lines_len])
    }

    /// The open file of a hit entry that holds a descriptor instead of bytes.
    pub fn file(&self, index: u32) -> Option<BorrowedFd<'_>> {
        self.entries
            .get(index as usize)?
            .file
            .as_ref()
            .map(|f| f.as_fd())
    }

    /// Bytes of a hit entry (valid while it is pinned or until the next lookup).
    pub fn body(&self, index: u32) -> &[u8] {
        if self.file(index).is_some() {
            return &[];
        }
        let size = self.meta(index).map_or(0, |m| m.size as usize);
        let start = index as usize * self.file_max;
        self.arena.get(start..start + size).unwrap_or(&[])
    }

    /// Keeps entry `index` unchanged until [`FileCache::unpin`].
    pub fn pin(&mut self, index: u32) {
        if let Some(e) = self.entries.get_mut(index as usize) {
            e.pins += 1;
        }
    }

    /// Releases one pin.
    pub fn unpin(&mut self, index: u32) {
        if let Some(e) = self.entries.get_mut(index as usize) {
            e.pins = e.pins.saturating_sub(1);
        }
    }

    /// Entry `index`'s file was sent whole from cached pages within the last
    /// revalidation period: its pages are trusted to be cached without asking the kernel
    /// (`conn::ensure_pages`). Pages evicted within that period are read on the loop.
    pub(crate) fn resident(&self, index: u32, now_ms: u64) -> bool {
        let e = self.entries.get(index as usize);
        e.is_some_and(|e| {
            e.resident_ms > 0 && now_ms.saturating_sub(e.resident_ms) < self.revalidate_ms
        })
    }

    /// Notes that entry `index`'s file was just sent whole from pages found cached.
    pub(crate) fn mark_resident(&mut self, index: u32, now_ms: u64) {
        if let Some(e) = self.entries.get_mut(index as usize) {
            e.resident_ms = now_ms.max(1);
        }
    }

    /// Looks `path` up, revalidating or loading as the policy says.
    pub fn lookup(
        &mut self,
        root: BorrowedFd<'_>,
        path: &[u8],
        now_ms: u64,
        scratch: &mut [u8; PATH_MAX + 1],
    ) -> Served {
        let opts = self.options;
        self.lookup_as(root, path, now_ms, scratch, &opts)
    }

    /// [`FileCache::lookup`] of a file served as itself, whose sidecars do not matter
    /// (a sidecar, an error page): when it is not cached, none are looked for. An entry
    /// it loads is described as [`FileCache::lookup`] would, so that a path looked up
    /// both ways always shows the same sidecars.
    pub(crate) fn lookup_plain(
        &mut self,
        root: BorrowedFd<'_>,
        path: &[u8],
        now_ms: u64,
        scratch: &mut [u8; PATH_MAX + 1],
    ) -> Served {
        let opts = self.options.plain();
        self.lookup_as(root, path, now_ms, scratch, &opts)
    }

    /// `uncached`: the options of a lookup the cache does not hold.
    fn lookup_as(
        &mut self,
        root: BorrowedFd<'_>,
        path: &[u8],
        now_ms: u64,
        scratch: &mut [u8; PATH_MAX + 1],
        uncached: &FileOptions,
    ) -> Served {
        if self.entries.is_empty() || path.len() > KEY_MAX {
            return Served::Miss(open(root, path, scratch, uncached));
        }
        let options = self.options;
        let opts = &options;
        let index = slot_of(hash(path), self.entries.len());
        let e = &mut self.entries[index as usize];
        let same_key = e.meta.is_some() && key(&self.arena, self.text_at, index, e.key_len) == path;
        if same_key && now_ms.saturating_sub(e.checked_ms) < self.revalidate_ms {
            e.used_ms = now_ms;
            self.stats.hits += 1;
            return Served::Hit(index);
        }
        if same_key {
            self.stats.revalidations += 1;
            match probe(root, path, scratch, opts) {
                Probe::File(meta) if self.refresh_if_same(index, &meta, now_ms) => {
                    return Served::Hit(index)
                }
                // Changed: opened afresh below.
                Probe::File(_) => {}
                Probe::Other(answer) => return self.store(index, path, answer, now_ms),
            }
        }
        let found = open(root, path, scratch, opts);
        self.store(index, path, found, now_ms)
    }

    /// Whether a revalidation found the entry's file unchanged (then it is trusted for
    /// another period, with the sidecars found this time).
    fn refresh_if_same(&mut self, index: u32, meta: &FileMeta, now_ms: u64) -> bool {
        let e = &mut self.entries[index as usize];
        let Some(held) = e.meta.as_mut().filter(|m| m.same_file(meta)) else {
            return false;
        };
        held.sidecars = meta.sidecars;
        e.checked_ms = now_ms;
        e.used_ms = now_ms;
        self.stats.hits += 1;
        true
    }

    /// Decides what to do with a fresh lookup for the entry's slot.
    fn store(&mut self, index: u32, path: &[u8], found: Lookup, now_ms: u64) -> Served {
        let file_max = self.file_max;
        let e = &mut self.entries[index as usize];
        let ours = key(&self.arena, self.text_at, index, e.key_len) == path;
        let (fd, meta) = match found {
            Lookup::File(fd, meta) => (fd, meta),
            other => {
                if e.pins == 0 && ours {
                    e.forget();
                }
                return Served::Miss(other);
            }
        };
        if ours && self.refresh_if_same(index, &meta, now_ms) {
            return Served::Hit(index);
        }
        let e = &mut self.entries[index as usize];
        if e.pins > 0 {
            return Served::Miss(Lookup::File(fd, meta));
        }
        e.forget();
        let mut meta = meta;
        let content = self.options.validators.etag == EtagMode::Content;
        if meta.size > file_max as u64 {
            e.file = Some(fd);
            if content {
                e.hashing = Some(Hashing::new(meta.size));
                self.hash_wake = Some(now_ms);
            }
        } else {
            let start = index as usize * file_max;
            let dst = &mut self.arena[start..start + meta.size as usize];
            if !read_exact_at(fd.as_fd(), dst) {
                return Served::Miss(Lookup::File(fd, meta));
            }
            if content {
                meta.etag = Some(content_tag::of_bytes(dst));
            }
        }
        let (key, lines) = text_mut(&mut self.arena[self.text_at..], index);
        key[..path.len()].copy_from_slice(path);
        e.key_len = path.len();
        e.lines_len = render_lines(lines, &meta);
        e.meta = Some(meta);
        e.checked_ms = now_ms;
        e.used_ms = now_ms;
        self.stats.loads += 1;
        e.loaded = self.stats.loads;
        Served::Hit(index)
    }
}

impl FileCache {
    /// When the loop should call [`FileCache::hash_turn`] next (ms), if it has work.
    #[inline]
    pub(crate) fn hash_wake(&self) -> Option<u64> {
        self.hash_wake
    }

    /// Hashes slices of descriptor entries whose content tag is not known yet, at most
    /// [`HASH_TURN_BYTES`] in all; a slice the page cache does not hold is asked for and
    /// left for a later call. Called by the loop once a turn while [`FileCache::hash_wake`]
    /// is due.
    pub(crate) fn hash_turn(&mut self, now_ms: u64) {
        if self.hash_wake.is_none_or(|at| at > now_ms) {
            return;
        }
        let (mut budget, mut wake) = (HASH_TURN_BYTES, None::<u64>);
        for index in 0..self.entries.len() {
            if self.entries[index].hashing.is_none() {
                continue;
            }
            let at = if budget == 0 {
                Some(now_ms)
            } else {
                self.hash_entry(index, now_ms, &mut budget)
            };
            wake = match (wake, at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        self.hash_wake = wake;
    }

    /// Steps entry `index`'s hash while `budget` lasts; when it needs another call.
    fn hash_entry(&mut self, index: usize, now_ms: u64, budget: &mut usize) -> Option<u64> {
        let room = &mut self.arena[index * self.file_max..][..self.file_max];
        let e = &mut self.entries[index];
        let (Some(fd), Some(h)) = (e.file.as_ref(), e.hashing.as_mut()) else {
            e.hashing = None;
            return None;
        };
        let slice = room.len().min(*budget);
        loop {
            match h.step(fd.as_fd(), &mut room[..slice], now_ms) {
                Step::More if *budget > slice => *budget -= slice,
                Step::More => {
                    *budget = 0;
                    return Some(now_ms);
                }
                Step::Wait(at) => return Some(at),
                Step::Done(tag) => break self.tag_known(index, tag),
                Step::Failed => break,
            }
        }
        self.entries[index].hashing = None;
        None
    }

    /// Entry `index`'s hash is done: its tag, and its lines again, unless the file
    /// changed while it was read.
    fn tag_known(&mut self, index: usize, tag: super::ETag) {
        let e = &mut self.entries[index];
        let (Some(fd), Some(meta)) = (e.file.as_ref(), e.meta.as_mut()) else {
            return;
        };
        let unchanged = super::meta_of(fd.as_fd(), b"")
            .is_ok_and(|(_, now)| now.ctime == meta.ctime && now.size == meta.size);
        if !unchanged {
            return;
        }
        meta.etag = Some(tag);
        let meta = *meta;
        let (_, lines) = text_mut(&mut self.arena[self.text_at..], index as u32);
        e.lines_len = render_lines(lines, &meta);
    }

    /// Closes unpinned descriptor entries that went unused for [`IDLE_INTERVALS`]
    /// revalidation periods, or for one period if their file has no link left. Called
    /// by the loop about once a second; `fstat`s only entries unused for a period.
    pub(crate) fn sweep(&mut self, now_ms: u64) {
        let period = self.revalidate_ms;
        for e in &mut self.entries {
            let Some(file) = e.file.as_ref() else {
                continue;
            };
            let idle = now_ms.saturating_sub(e.used_ms);
            if e.pins > 0 || idle < period {
                continue;
            }
            let unlinked = rustix::fs::fstat(file).map_or(true, |st| st.st_nlink == 0);
            if unlinked || idle >= period.saturating_mul(IDLE_INTERVALS) {
                e.forget();
            }
        }
    }
}

impl Entry {
    /// Empties the entry (closing its descriptor, if any).
    fn forget(&mut self) {
        self.meta = None;
        self.file = None;
        self.hashing = None;
        self.gz = Gz::Untried;
        self.gz_fd = None;
        self.key_len = 0;
        self.resident_ms = 0;
    }
}

/// Entry `index`'s key, `len` bytes, in an arena whose texts start at `text_at`.
fn key(arena: &[u8], text_at: usize, index: u32, len: usize) -> &[u8] {
    let at = text_at + index as usize * TEXT;
    &arena[at..at + len]
}

/// Entry `index`'s key room (`KEY_MAX` bytes) and file lines room in `all`, to write.
fn text_mut(all: &mut [u8], index: u32) -> (&mut [u8], &mut [u8]) {
    all[index as usize * TEXT..][..TEXT].split_at_mut(KEY_MAX)
}

/// Renders `meta`'s file lines into `out`; their length, 0 when they do not fit.
fn render_lines(out: &mut [u8], meta: &FileMeta) -> usize {
    let etag = meta.etag.as_ref().map(|t| t.as_bytes());
    write_file_lines(out, meta.mime, meta.size, meta.last_modified.as_ref(), etag).unwrap_or(0)
}

/// Fills `dst` from the page cache (`preadv2(RWF_NOWAIT)`); false on an error, a file
/// that shrank, or a page not cached: the loop never waits for the disk here, and the
/// file is then sent as an uncached one (its read goes off the loop, `crate::disk`),
/// to be stored by a later request once its pages are in.
fn read_exact_at(fd: BorrowedFd<'_>, dst: &mut [u8]) -> bool {
    let mut done = 0;
    while done < dst.len() {
        let at = done as u64;
        let read = match crate::sys::pread_nowait(fd, &mut dst[done..], at) {
            Err(rustix::io::Errno::AGAIN) => return false,
            // No `RWF_NOWAIT` here (a file system without it, a kernel or an emulator
            // without `preadv2`): read as before.
            Err(_) => rustix::io::pread(fd, &mut dst[done..], at),
            read => read,
        };
        match read {
            Ok(0) => return false,
            Ok(n) => done += n,
            Err(_) => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The multiply-shift slot stays in range and spreads families of similar paths about
    /// as a random function would.
    #[test]
    fn similar_paths_spread_over_the_slots() {
        // n keys into n slots: a random function fills 1 - 1/e of them (63%); each family
        // must reach 55%. The families differ where a weak hash loses bits: the middle,
        // the last byte only, the high bytes of the last word, a full last word.
        type Family = (&'static str, fn(usize) -> String);
        let families: [Family; 5] = [
            ("/img/{i}.png", |i| format!("/img/{i}.png")),
            ("/{i}", |i| format!("/{i}")),
            ("/abcde + 2 chars", |i| {
                const SET: &[u8; 64] =
                    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_";
                let (a, b) = (SET[i % 64] as char, SET[i / 64 % 64] as char);
                format!("/abcde{a}{b}")
            }),
            ("/assets/{:08x}", |i| format!("/assets/{i:08x}")),
            ("/static/{:016x}", |i| format!("/static/{i:016x}")),
        ];
        for (name, key) in families {
            for n in [256, 4096] {
                let mut used = vec![false; n];
                for i in 0..n {
                    used[slot_of(hash(key(i).as_bytes()), n) as usize] = true;
                }
                let distinct = used.iter().filter(|&&u| u).count();
                assert!(
                    distinct * 100 >= n * 55,
                    "{name}: {distinct} of {n} slots used"
                );
            }
        }
        for len in [1, 3, 256, 1000] {
            assert!(slot_of(u64::MAX, len) < len as u32);
        }
    }

    /// Keys that differ in one byte anywhere, or only in length (a trailing zero byte),
    /// hash apart; long keys use every word.
    #[test]
    fn the_hash_sees_every_byte_and_the_length() {
        let base: Vec<u8> = (0..40).map(|i| b'a' + i % 26).collect();
        for len in 0..=base.len() {
            let key = &base[..len];
            let mut padded = key.to_vec();
            padded.push(0);
            assert_ne!(hash(key), hash(&padded), "length {len}");
            for i in 0..len {
                let mut other = key.to_vec();
                other[i] ^= 0x20;
                assert_ne!(hash(key), hash(&other), "byte {i} of {len}");
            }
        }
    }
}
