//! Stage: file lookup. A decoded request path to an open file under the served root,
//! with the metadata a response needs (length, Last-Modified, strong ETag, media type).
//!
//! Input: the root directory fd (opened once by the master, `O_PATH | O_DIRECTORY`) and
//! the parser's decoded, dot-segment-free path (starts with `/`, no NUL). Output: a
//! [`Lookup`]. It does not write to sockets and does not evaluate Range or conditionals
//! (`http::range`, `http::conditional` do).
//!
//! Containment: every path is resolved with `openat2(root, path, RESOLVE_BENEATH |
//! RESOLVE_NO_MAGICLINKS)` (openat2(2), Linux ≥ 5.6): the kernel refuses `..` above the
//! root, absolute symlinks and any symlink whose target leaves the root (`EXDEV`), and
//! `/proc` magic links, whatever the request or the tree contains. Where the kernel has
//! no `openat2` (ENOSYS: before 5.6, user-mode QEMU), [`beneath`] walks the path segment
//! by segment instead and refuses every symlink.
//!
//! Nothing but a regular file is ever opened for reading: the path is first resolved
//! with `O_PATH` (which opens nothing: no FIFO rendezvous, no device driver `open`) and
//! `fstat`ed; only a regular file is then opened `O_RDONLY` by a second `openat2` of the
//! same path, and `fstat`ed again. A file swapped for another between the two is served
//! if it is still regular and refused (404) otherwise; the window cannot be closed
//! without `/proc/self/fd` reopening, and only someone who can write the tree can use
//! it. The second open is `O_NONBLOCK | O_NOCTTY` as a last guard. Revalidating a cached
//! entry needs only the first step ([`probe`]).
//!
//! Pre-compressed sidecars (`--precompressed`): when a regular file `F` is found, `F.br`,
//! `F.zst` and `F.gz` (those of [`FileOptions::precompressed`]) are resolved the same way,
//! without opening them, and recorded in [`FileMeta::sidecars`] when they are regular files
//! whose mtime is not older than `F`'s (in whole seconds). A sidecar that is missing, not regular, stale, or a
//! symlink leaving the root (refused by the same `RESOLVE_BENEATH`) is simply not usable.
//! Choosing among them is the responder's job (`http::encoding`); serving one is a lookup
//! of its own path.
//!
//! Dotfiles (`--dotfiles deny`, the default): a path with a segment beginning with `.`
//! is a missing file (404) before anything is resolved (`site::dotfiles`).
//!
//! Mapping (nginx's static module as the reference): a path ending in `/` serves its
//! `index.html` (under `--list-dirs`, a directory without one is opened for its listing
//! by [`dir`]); a directory named without the slash is a 301 to add it; ENOENT, ENOTDIR,
//! ENAMETOOLONG and non-regular files are 404; EACCES, EPERM, ELOOP, EMLINK and EXDEV
//! (an escaping symlink) are 403; EMFILE/ENFILE/ENOMEM are 503; anything else is 500.

pub mod beneath;
pub mod cache;
pub(crate) mod content_tag;
pub(crate) mod dir;

use crate::http::date::{format_imf, IMF_LEN};
use crate::http::encoding::{Coding, CodingSet, Precompressed};
use crate::site::dotfiles::Dotfiles;
use crate::site::mime::Types;
use crate::site::validators::{EtagMode, Validators};
use crate::site::SiteRules;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{FileType, OFlags, ResolveFlags};
use rustix::io::Errno;

/// Longest relative path we try to open (Linux `PATH_MAX` minus the NUL).
pub const PATH_MAX: usize = 4095;
const INDEX: &[u8] = b"index.html";

/// How files are described: the media-type table and the sidecars looked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileOptions {
    /// Media types (`--mime`, `--mime-types`, built in).
    pub(crate) types: Types,
    /// Sidecar codings looked for (`--precompressed`).
    pub(crate) precompressed: Precompressed,
    /// Whether dotfiles are served (`--dotfiles`): a hidden path is a missing file.
    pub(crate) dotfiles: Dotfiles,
    /// What validators are made of (`--etag`, `SOURCE_DATE_EPOCH`).
    pub(crate) validators: Validators,
}

impl FileOptions {
    /// The options the operator's rules set, for a serving loop: this makes the media
    /// types `'static`, an allocation that lives as long as the process, so a loop calls
    /// it once at start.
    pub(crate) fn serving(rules: &SiteRules) -> FileOptions {
        FileOptions {
            types: rules.types.leak(),
            precompressed: rules.precompressed,
            dotfiles: rules.dotfiles,
            validators: rules.validators,
        }
    }

    /// The options for a file served as itself (an error page, a sidecar): no sidecars.
    pub(crate) fn plain(self) -> FileOptions {
        FileOptions {
            precompressed: Precompressed::OFF,
            ..self
        }
    }
}

/// Bytes of an ETag's text: three hex numbers of at most 16 digits, four marks, and a
/// coding of at most four letters with its `-`.
const ETAG_CAP: usize = 2 + 16 + 1 + 8 + 1 + 16 + 5;

/// A strong ETag's text: under `--etag content` (the default) `"<32 hex digits>"`, the
/// first 16 bytes of the SHA-256 of the bytes ([`content_tag`]); under `--etag mtime`
/// `"<mtime seconds hex>.<mtime nanoseconds hex>-<size hex>"`; and for a sidecar
/// representation `-<coding>` before the closing quote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ETag {
    buf: [u8; ETAG_CAP],
    len: u8,
}

impl ETag {
    fn new(mtime: i64, nsec: u32, size: u64) -> ETag {
        let mut buf = [0u8; ETAG_CAP];
        let mut w = HexWriter {
            buf: &mut buf,
            len: 0,
        };
        w.put(b'"');
        w.hex(mtime as u64);
        w.put(b'.');
        w.hex(u64::from(nsec));
        w.put(b'-');
        w.hex(size);
        w.put(b'"');
        let len = w.len as u8;
        ETag { buf, len }
    }

    /// The tag of bytes whose SHA-256 is `digest`: its first 16 bytes in lowercase hex,
    /// what `sha256sum | cut -c1-32` prints.
    pub(crate) fn content(digest: &[u8; 32]) -> ETag {
        let mut buf = [0u8; ETAG_CAP];
        let mut w = HexWriter {
            buf: &mut buf,
            len: 0,
        };
        w.put(b'"');
        for &b in &digest[..16] {
            w.put(b"0123456789abcdef"[usize::from(b >> 4)]);
            w.put(b"0123456789abcdef"[usize::from(b & 15)]);
        }
        w.put(b'"');
        let len = w.len as u8;
        ETag { buf, len }
    }

    /// The tag of the same bytes sent as the `coding` representation of another file:
    /// this tag with `-<coding>` inside the quotes, so that it can never equal the tag of
    /// a file served as itself (RFC 9110 §8.8.3: one tag per representation).
    pub(crate) fn coded(&self, coding: Coding) -> ETag {
        let mut t = *self;
        let end = usize::from(t.len) - 1;
        let mut w = HexWriter {
            buf: &mut t.buf,
            len: end,
        };
        w.put(b'-');
        coding.token().bytes().for_each(|b| w.put(b));
        w.put(b'"');
        t.len = w.len as u8;
        t
    }

    /// The quoted tag.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..usize::from(self.len)]
    }
}

struct HexWriter<'a> {
    buf: &'a mut [u8; ETAG_CAP],
    len: usize,
}

impl HexWriter<'_> {
    fn put(&mut self, b: u8) {
        self.buf[self.len] = b;
        self.len += 1;
    }

    /// At most 16 digits, so three numbers, four marks and a coding always fit.
    fn hex(&mut self, v: u64) {
        let digits = (16 - (v.leading_zeros() / 4) as usize).max(1);
        for i in (0..digits).rev() {
            self.put(b"0123456789abcdef"[((v >> (i * 4)) & 15) as usize]);
        }
    }
}

/// What a response needs to know about a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMeta {
    /// Length in bytes.
    pub size: u64,
    /// Modification time, Unix seconds.
    pub(crate) mtime: i64,
    /// Modification time, nanoseconds part.
    pub(crate) mtime_nsec: u32,
    /// Inode number (to notice a file replaced by rename).
    pub(crate) ino: u64,
    /// Status change time, seconds and nanoseconds (to notice a change in place that
    /// keeps size and mtime: a write or a rename always moves it).
    pub(crate) ctime: (i64, u32),
    /// Strong validator; `None` while the content hash is not known (`--etag content`:
    /// the file cache computes it, [`content_tag`]).
    pub etag: Option<ETag>,
    /// `Last-Modified` text; `None` when the date is unknown ([`Validators::date_known`]).
    pub last_modified: Option<[u8; IMF_LEN]>,
    /// `Content-Type` value.
    pub mime: &'static [u8],
    /// The usable pre-compressed sidecars (empty until [`probe`] or [`open`] looks).
    pub(crate) sidecars: CodingSet,
}

impl FileMeta {
    /// Whether two metadata snapshots describe the same file contents (by inode, mtime,
    /// ctime and size: the revalidation rule of the cache).
    pub(crate) fn same_file(&self, other: &FileMeta) -> bool {
        (self.ino, self.mtime, self.mtime_nsec, self.ctime, self.size)
            == (
                other.ino,
                other.mtime,
                other.mtime_nsec,
                other.ctime,
                other.size,
            )
    }

    /// The modification time conditionals compare, `None` when the date is unknown.
    pub(crate) fn modified(&self) -> Option<i64> {
        self.last_modified.map(|_| self.mtime)
    }
}

/// The result of resolving a request path.
#[derive(Debug)]
pub enum Lookup {
    /// A regular file, open for reading.
    File(OwnedFd, FileMeta),
    /// A directory named without its trailing slash: 301 to `path/`.
    AddSlash,
    /// An error status (403, 404, 500, 503).
    Status(u16),
}

/// The status an `openat2`/`fstat` failure maps to.
pub(crate) fn errno_status(e: Errno) -> u16 {
    match e {
        Errno::NOENT | Errno::NOTDIR | Errno::NAMETOOLONG => 404,
        Errno::ACCESS | Errno::PERM | Errno::LOOP | Errno::MLINK | Errno::XDEV => 403,
        Errno::MFILE | Errno::NFILE | Errno::NOMEM => 503,
        _ => 500,
    }
}

/// Builds the NUL-terminated relative path to open into `out`: the request path without
/// its leading `/`, plus `index.html` when it ends in `/`. `None` if it is too long.
fn relative_path<'o>(path: &[u8], out: &'o mut [u8; PATH_MAX + 1]) -> Option<&'o core::ffi::CStr> {
    relative_path_with(path, b"", out)
}

/// [`relative_path`] with `suffix` appended (a sidecar's `.gz`).
fn relative_path_with<'o>(
    path: &[u8],
    suffix: &[u8],
    out: &'o mut [u8; PATH_MAX + 1],
) -> Option<&'o core::ffi::CStr> {
    let rel = path.strip_prefix(b"/").unwrap_or(path);
    let index: &[u8] = if rel.is_empty() || rel.ends_with(b"/") {
        INDEX
    } else {
        b""
    };
    let n = rel.len() + index.len() + suffix.len();
    if n >= PATH_MAX || memchr::memchr(0, rel).is_some() {
        return None;
    }
    let mut w = 0;
    for part in [rel, index, suffix] {
        out[w..w + part.len()].copy_from_slice(part);
        w += part.len();
    }
    out[n] = 0;
    core::ffi::CStr::from_bytes_with_nul(&out[..=n]).ok()
}

/// The request path of `path`'s sidecar for `coding`, written into `out`: `path` (with
/// `index.html` when it ends in `/`) and the coding's suffix. `None` if it does not fit.
pub(crate) fn sidecar_path<'o>(path: &[u8], coding: Coding, out: &'o mut [u8]) -> Option<&'o [u8]> {
    let index: &[u8] = if path.ends_with(b"/") { INDEX } else { b"" };
    let suffix = coding.suffix().as_bytes();
    let n = path.len() + index.len() + suffix.len();
    let place = out.get_mut(..n)?;
    let (a, rest) = place.split_at_mut(path.len());
    a.copy_from_slice(path);
    let (b, c) = rest.split_at_mut(index.len());
    b.copy_from_slice(index);
    c.copy_from_slice(suffix);
    Some(place)
}

/// Metadata of an open file, from `fstat` (media type from the built-in table, the
/// default validators).
pub(crate) fn meta_of(fd: BorrowedFd<'_>, path: &[u8]) -> Result<(FileType, FileMeta), Errno> {
    meta_with(fd, path, &FileOptions::default())
}

/// Metadata of an open file, from `fstat`, its media type and validators as `opts` say.
/// Under `--etag content` the ETag is left unknown: the bytes are not read here.
fn meta_with(
    fd: BorrowedFd<'_>,
    path: &[u8],
    opts: &FileOptions,
) -> Result<(FileType, FileMeta), Errno> {
    let st = rustix::fs::fstat(fd)?;
    #[allow(clippy::unnecessary_cast)] // the field widths differ between architectures
    let (mtime, nsec, size, ino, ctime) = (
        st.st_mtime as i64,
        st.st_mtime_nsec as u32,
        st.st_size.max(0) as u64,
        st.st_ino as u64,
        (st.st_ctime as i64, st.st_ctime_nsec as u32),
    );
    let v = &opts.validators;
    let meta = FileMeta {
        size,
        mtime,
        mtime_nsec: nsec,
        ino,
        ctime,
        etag: (v.etag == EtagMode::Mtime).then(|| ETag::new(mtime, nsec, size)),
        last_modified: v.date_known(mtime).then(|| format_imf(mtime)),
        mime: opts
            .types
            .for_path(if path.ends_with(b"/") { INDEX } else { path }),
        sidecars: CodingSet::EMPTY,
    };
    Ok((FileType::from_raw_mode(st.st_mode as _), meta))
}

/// What resolving a path without opening it found.
#[derive(Debug)]
pub(crate) enum Probe {
    /// A regular file, with its metadata (not open).
    File(FileMeta),
    /// Anything else: the answer.
    Other(Lookup),
}

fn openat2_beneath(
    root: BorrowedFd<'_>,
    rel: &core::ffi::CStr,
    flags: OFlags,
) -> Result<OwnedFd, Errno> {
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    beneath::open(root, rel, flags | OFlags::CLOEXEC, resolve)
}

/// Resolves `path` (decoded, starting with `/`) under `root` with `O_PATH`, so that no
/// node is opened: `openat2`, `fstat`, `close`; then, for a regular file, its sidecars
/// the same way (one failing `openat2` for each one missing). `scratch` is overwritten.
pub(crate) fn probe(
    root: BorrowedFd<'_>,
    path: &[u8],
    scratch: &mut [u8; PATH_MAX + 1],
    opts: &FileOptions,
) -> Probe {
    let Some(rel) = relative_path(path, scratch) else {
        return Probe::Other(Lookup::Status(404));
    };
    let node = match openat2_beneath(root, rel, OFlags::PATH) {
        Ok(fd) => fd,
        Err(e) => return Probe::Other(Lookup::Status(errno_status(e))),
    };
    match meta_with(node.as_fd(), path, opts) {
        Ok((FileType::RegularFile, mut meta)) => {
            drop(node);
            meta.sidecars = usable_sidecars(root, path, &meta, opts, scratch);
            Probe::File(meta)
        }
        Ok((FileType::Directory, _)) if !path.ends_with(b"/") => Probe::Other(Lookup::AddSlash),
        Ok(_) => Probe::Other(Lookup::Status(404)),
        Err(e) => Probe::Other(Lookup::Status(errno_status(e))),
    }
}

/// The sidecars of `file` (found at `path`) that may be served for it: regular files
/// under the root, not older than it.
fn usable_sidecars(
    root: BorrowedFd<'_>,
    path: &[u8],
    file: &FileMeta,
    opts: &FileOptions,
    scratch: &mut [u8; PATH_MAX + 1],
) -> CodingSet {
    let mut usable = CodingSet::EMPTY;
    for coding in opts.precompressed.iter() {
        let Some(rel) = relative_path_with(path, coding.suffix().as_bytes(), scratch) else {
            continue;
        };
        let Ok(node) = openat2_beneath(root, rel, OFlags::PATH) else {
            continue;
        };
        // Whole seconds, as HTTP dates count: `brotli -k` and other tools copy the
        // original's mtime truncated to the second.
        let fresh = match meta_of(node.as_fd(), path) {
            Ok((FileType::RegularFile, m)) => m.mtime >= file.mtime,
            _ => false,
        };
        if fresh {
            usable = usable.with(coding);
        }
    }
    usable
}

/// Resolves `path` under `root` and opens it for reading if it is a regular file:
/// [`probe`], then `openat2(O_RDONLY)` and `fstat` (five syscalls on success, plus the
/// sidecar probes).
pub fn open(
    root: BorrowedFd<'_>,
    path: &[u8],
    scratch: &mut [u8; PATH_MAX + 1],
    opts: &FileOptions,
) -> Lookup {
    if opts.dotfiles.hides(path) {
        return Lookup::Status(404);
    }
    let sidecars = match probe(root, path, scratch, opts) {
        Probe::File(meta) => meta.sidecars,
        Probe::Other(answer) => return answer,
    };
    let Some(rel) = relative_path(path, scratch) else {
        return Lookup::Status(404);
    };
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY;
    let fd = match openat2_beneath(root, rel, flags) {
        Ok(fd) => fd,
        Err(e) => return Lookup::Status(errno_status(e)),
    };
    match meta_with(fd.as_fd(), path, opts) {
        Ok((FileType::RegularFile, meta)) => Lookup::File(fd, FileMeta { sidecars, ..meta }),
        Ok(_) => Lookup::Status(404),
        Err(e) => Lookup::Status(errno_status(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etag_shape() {
        let t = ETag::new(0x5f3e8c1a, 0, 0x264);
        assert_eq!(t.as_bytes(), b"\"5f3e8c1a.0-264\"");
        let t = ETag::new(-1, u32::MAX, u64::MAX);
        assert_eq!(t.as_bytes().len(), 2 + 16 + 1 + 8 + 1 + 16);
    }

    #[test]
    fn coded_etags_differ_from_the_plain_one() {
        let t = ETag::new(0x5f3e8c1a, 0x1f, 0x264);
        assert_eq!(
            t.coded(Coding::Gzip).as_bytes(),
            b"\"5f3e8c1a.1f-264-gzip\""
        );
        assert_eq!(
            t.coded(Coding::Zstd).as_bytes(),
            b"\"5f3e8c1a.1f-264-zstd\""
        );
        let t = ETag::new(-1, u32::MAX, u64::MAX);
        assert_eq!(t.coded(Coding::Zstd).as_bytes().len(), ETAG_CAP);
    }

    #[test]
    fn sidecar_paths() {
        let mut out = [0u8; 64];
        let p = sidecar_path(b"/a/app.js", Coding::Gzip, &mut out).unwrap();
        assert_eq!(p, b"/a/app.js.gz");
        let p = sidecar_path(b"/docs/", Coding::Zstd, &mut out).unwrap();
        assert_eq!(p, b"/docs/index.html.zst");
        assert!(sidecar_path(&[b'a'; 62], Coding::Br, &mut out).is_none());
        let mut s = [0u8; PATH_MAX + 1];
        let rel = relative_path_with(b"/", b".br", &mut s).unwrap();
        assert_eq!(rel.to_bytes(), b"index.html.br");
    }

    #[test]
    fn relative_paths() {
        let mut s = [0u8; PATH_MAX + 1];
        assert_eq!(
            relative_path(b"/", &mut s).unwrap().to_bytes(),
            b"index.html"
        );
        assert_eq!(
            relative_path(b"/a/b/", &mut s).unwrap().to_bytes(),
            b"a/b/index.html"
        );
        assert_eq!(
            relative_path(b"/a.txt", &mut s).unwrap().to_bytes(),
            b"a.txt"
        );
        assert!(relative_path(b"/a\0b", &mut s).is_none());
        assert!(relative_path(&[b'a'; PATH_MAX + 3], &mut s).is_none());
    }

    #[test]
    fn errno_mapping() {
        assert_eq!(errno_status(Errno::NOENT), 404);
        assert_eq!(errno_status(Errno::XDEV), 403);
        assert_eq!(errno_status(Errno::MFILE), 503);
        assert_eq!(errno_status(Errno::IO), 500);
    }
}
