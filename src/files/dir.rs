//! Stage: file lookup, for directory listings (`--list-dirs`). A request path ending in
//! `/` whose `index.html` does not exist to the open directory; a name read from it to
//! what a listing says about that entry.
//!
//! Input: the root fd, the decoded request path (starts and ends with `/`), the
//! `--dotfiles` rule; then single names the listing read from the directory. Output: the
//! directory open for `getdents64` with its validator fields ([`DirMeta`]); per entry its
//! [`Kind`] and [`EntryMeta`]. It reads no entries itself (`listing` does) and renders
//! nothing.
//!
//! Containment is the one `files` gives every request: the directory is opened with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` (or the symlink-refusing walk where
//! the kernel has no `openat2`), `O_RDONLY | O_DIRECTORY`, so nothing but a directory
//! opens. An entry is looked at with `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: a name
//! read from a directory is one segment, so nothing is resolved. A symlink is listed as
//! what a request for it would be served: its path from the root is resolved as a
//! request's is (`O_PATH`, `fstat`), so a link that leaves the root (`EXDEV`), dangles
//! (`ENOENT`) or, without `openat2`, any link, is not listed. Only directories and regular
//! files are listed; FIFOs, sockets and devices, which are answered 404, are not.
//!
//! A directory is listed only when its `index.html` does not exist at all (`ENOENT`): one
//! that exists but is not served (a directory, a dangling link, a FIFO) keeps its 404.

use super::{openat2_beneath, INDEX, PATH_MAX};
use crate::site::dotfiles::Dotfiles;
use core::ffi::CStr;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

/// The directory's own metadata, which a listing's validators are made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DirMeta {
    /// Inode number.
    pub(crate) ino: u64,
    /// Modification time, Unix seconds (changes when an entry is added, removed or
    /// renamed; not when a file's contents change).
    pub(crate) mtime: i64,
    /// Modification time, nanoseconds part.
    pub(crate) mtime_nsec: u32,
    /// `st_size` of the directory.
    pub(crate) size: u64,
}

/// What an entry is listed as: directories sort first and link with a trailing `/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    /// A directory (or a symlink to one under the root).
    Dir,
    /// A regular file (or a symlink to one under the root).
    File,
}

/// What a listing shows of an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EntryMeta {
    /// Directory or file.
    pub(crate) kind: Kind,
    /// Bytes (of the file a symlink leads to, for a symlink).
    pub(crate) size: u64,
    /// Modification time, Unix seconds.
    pub(crate) mtime: i64,
}

/// Opens the directory at request path `path` for a listing: `None` when it is hidden
/// by `dotfiles`, cannot be opened as a directory under the root, or has an
/// `index.html` of any kind. `scratch` is overwritten.
pub(crate) fn open_dir(
    root: BorrowedFd<'_>,
    path: &[u8],
    scratch: &mut [u8; PATH_MAX + 1],
    dotfiles: Dotfiles,
) -> Option<(OwnedFd, DirMeta)> {
    if !path.ends_with(b"/") || dotfiles.hides(path) {
        return None;
    }
    let rel = dir_rel(path, scratch)?;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NONBLOCK;
    let fd = if rel == c"." {
        // The root itself: nothing to resolve (and the walk refuses a `.` segment).
        rustix::fs::openat(root, c".", flags | OFlags::CLOEXEC, Mode::empty())
    } else {
        openat2_beneath(root, rel, flags)
    }
    .ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    if kind_of(&st) != Some(Kind::Dir) {
        return None;
    }
    let index = c"index.html";
    debug_assert_eq!(index.to_bytes(), INDEX);
    match rustix::fs::statat(&fd, index, AtFlags::SYMLINK_NOFOLLOW) {
        Err(Errno::NOENT) => {}
        _ => return None,
    }
    #[allow(clippy::unnecessary_cast)] // the field widths differ between architectures
    let meta = DirMeta {
        ino: st.st_ino as u64,
        mtime: st.st_mtime as i64,
        mtime_nsec: st.st_mtime_nsec as u32,
        size: st.st_size.max(0) as u64,
    };
    Some((fd, meta))
}

/// The kind of entry `name` of `dir` (the directory at request path `path`) for
/// sorting: from the type `getdents64` gave, looking further only for a symlink or an
/// unknown type (some file systems give `DT_UNKNOWN`). `None`: not listed.
pub(crate) fn entry_kind(
    root: BorrowedFd<'_>,
    dir: BorrowedFd<'_>,
    path: &[u8],
    name: &CStr,
    d_type: FileType,
    scratch: &mut [u8; PATH_MAX + 1],
) -> Option<Kind> {
    match d_type {
        FileType::Directory => Some(Kind::Dir),
        FileType::RegularFile => Some(Kind::File),
        FileType::Symlink | FileType::Unknown => {
            entry_meta(root, dir, path, name, scratch).map(|m| m.kind)
        }
        _ => None,
    }
}

/// What a listing shows of entry `name` of `dir` (the directory at request path
/// `path`): its own metadata, or for a symlink that of what it leads to under the root.
/// `None`: gone since it was read, or not listed. `scratch` is overwritten.
pub(crate) fn entry_meta(
    root: BorrowedFd<'_>,
    dir: BorrowedFd<'_>,
    path: &[u8],
    name: &CStr,
    scratch: &mut [u8; PATH_MAX + 1],
) -> Option<EntryMeta> {
    let mut st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    if FileType::from_raw_mode(st.st_mode as _) == FileType::Symlink {
        let rel = entry_rel(path, name.to_bytes(), scratch)?;
        let node = openat2_beneath(root, rel, OFlags::PATH).ok()?;
        st = rustix::fs::fstat(node.as_fd()).ok()?;
    }
    #[allow(clippy::unnecessary_cast)] // the field widths differ between architectures
    Some(EntryMeta {
        kind: kind_of(&st)?,
        size: st.st_size.max(0) as u64,
        mtime: st.st_mtime as i64,
    })
}

fn kind_of(st: &Stat) -> Option<Kind> {
    match FileType::from_raw_mode(st.st_mode as _) {
        FileType::Directory => Some(Kind::Dir),
        FileType::RegularFile => Some(Kind::File),
        _ => None,
    }
}

/// The directory at request path `path` relative to the root, NUL-terminated: `/a/b/`
/// is `a/b`, `/` is `.`. `None`: too long, or a NUL inside.
fn dir_rel<'o>(path: &[u8], out: &'o mut [u8; PATH_MAX + 1]) -> Option<&'o CStr> {
    let rel = path.strip_prefix(b"/").unwrap_or(path);
    let rel = rel.strip_suffix(b"/").unwrap_or(rel);
    let rel: &[u8] = if rel.is_empty() { b"." } else { rel };
    terminated(&[rel], out)
}

/// Entry `name` of the directory at request path `path`, relative to the root and
/// NUL-terminated (`/a/` and `x` give `a/x`).
fn entry_rel<'o>(path: &[u8], name: &[u8], out: &'o mut [u8; PATH_MAX + 1]) -> Option<&'o CStr> {
    let dir = path.strip_prefix(b"/").unwrap_or(path);
    terminated(&[dir, name], out)
}

/// `parts` joined into `out` with a NUL after them.
fn terminated<'o>(parts: &[&[u8]], out: &'o mut [u8; PATH_MAX + 1]) -> Option<&'o CStr> {
    let n: usize = parts.iter().map(|p| p.len()).sum();
    if n >= PATH_MAX {
        return None;
    }
    let mut w = 0;
    for part in parts {
        out[w..w + part.len()].copy_from_slice(part);
        w += part.len();
    }
    out[n] = 0;
    CStr::from_bytes_with_nul(&out[..=n]).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Tree {
        base: std::path::PathBuf,
        root: OwnedFd,
    }

    impl Tree {
        fn new(name: &str) -> Tree {
            let base =
                std::env::temp_dir().join(format!("steerd-dir-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&base);
            let r = base.join("root");
            std::fs::create_dir_all(r.join("list/sub")).unwrap();
            std::fs::create_dir_all(r.join("indexed")).unwrap();
            std::fs::create_dir_all(r.join(".hidden")).unwrap();
            std::fs::create_dir_all(r.join("odd/index.html")).unwrap();
            std::fs::write(r.join("indexed/index.html"), "i").unwrap();
            std::fs::write(r.join("list/f.txt"), "12345").unwrap();
            std::fs::write(base.join("secret"), "s").unwrap();
            symlink("f.txt", r.join("list/to-file")).unwrap();
            symlink("../list/sub", r.join("list/to-dir")).unwrap();
            symlink("../../secret", r.join("list/out")).unwrap();
            symlink("nowhere", r.join("list/dangling")).unwrap();
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
            let root = rustix::fs::open(&r, flags, Mode::empty()).unwrap();
            Tree { base, root }
        }

        fn open(&self, path: &str, dotfiles: Dotfiles) -> Option<(OwnedFd, DirMeta)> {
            let mut s = [0u8; PATH_MAX + 1];
            open_dir(self.root.as_fd(), path.as_bytes(), &mut s, dotfiles)
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.base);
        }
    }

    #[test]
    fn only_directories_without_an_index_open() {
        let t = Tree::new("open");
        assert!(t.open("/", Dotfiles::Deny).is_some());
        assert!(t.open("/list/", Dotfiles::Deny).is_some());
        // A symlink to a directory under the root: followed by openat2, refused by the
        // walk that stands in for it where the kernel has none (user-mode QEMU).
        let follows = !super::super::beneath::fallback_in_use(t.root.as_fd());
        assert_eq!(t.open("/list/to-dir/", Dotfiles::Deny).is_some(), follows);
        assert!(t.open("/list", Dotfiles::Deny).is_none(), "no slash");
        assert!(t.open("/indexed/", Dotfiles::Deny).is_none());
        assert!(
            t.open("/odd/", Dotfiles::Deny).is_none(),
            "index.html is a dir"
        );
        assert!(t.open("/list/f.txt/", Dotfiles::Deny).is_none());
        assert!(t.open("/missing/", Dotfiles::Deny).is_none());
        assert!(t.open("/.hidden/", Dotfiles::Deny).is_none());
        assert!(t.open("/.hidden/", Dotfiles::Allow).is_some());
        let (_, a) = t.open("/list/", Dotfiles::Deny).unwrap();
        let (_, b) = t.open("/list/", Dotfiles::Deny).unwrap();
        assert_eq!(a, b, "the same metadata twice");
    }

    #[test]
    fn symlinks_are_what_they_lead_to_under_the_root() {
        let t = Tree::new("entries");
        let (dir, _) = t.open("/list/", Dotfiles::Deny).unwrap();
        let mut s = [0u8; PATH_MAX + 1];
        let mut meta = |name: &CStr| {
            entry_meta(t.root.as_fd(), dir.as_fd(), b"/list/", name, &mut s).map(|m| m.kind)
        };
        assert_eq!(meta(c"f.txt"), Some(Kind::File));
        assert_eq!(meta(c"sub"), Some(Kind::Dir));
        assert_eq!(meta(c"gone"), None);
        if super::super::beneath::fallback_in_use(t.root.as_fd()) {
            assert_eq!(meta(c"to-file"), None, "the walk follows no link");
        } else {
            assert_eq!(meta(c"to-file"), Some(Kind::File));
            assert_eq!(meta(c"to-dir"), Some(Kind::Dir));
        }
        assert_eq!(meta(c"out"), None, "leaves the root");
        assert_eq!(meta(c"dangling"), None);
        let m = entry_meta(t.root.as_fd(), dir.as_fd(), b"/list/", c"f.txt", &mut s).unwrap();
        assert_eq!(m.size, 5);
        let kind = entry_kind(
            t.root.as_fd(),
            dir.as_fd(),
            b"/list/",
            c"whatever",
            FileType::Fifo,
            &mut s,
        );
        assert_eq!(kind, None, "only directories and regular files");
    }

    #[test]
    fn relative_paths_of_directories_and_entries() {
        let mut s = [0u8; PATH_MAX + 1];
        assert_eq!(dir_rel(b"/", &mut s).unwrap(), c".");
        assert_eq!(dir_rel(b"/a/b/", &mut s).unwrap(), c"a/b");
        assert_eq!(entry_rel(b"/", b"x", &mut s).unwrap(), c"x");
        assert_eq!(entry_rel(b"/a/b/", b"x", &mut s).unwrap(), c"a/b/x");
        assert!(dir_rel(b"/a\0/", &mut s).is_none());
        assert!(entry_rel(&[b'a'; PATH_MAX], b"x", &mut s).is_none());
    }
}
