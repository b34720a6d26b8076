//! Stage: file lookup, containment. Opens a relative path strictly under the root fd.
//!
//! Input: the root directory fd, the NUL-terminated relative path `files::open` built
//! from the parser's normalised path (no leading `/`, no empty, `.` or `..` segment), the
//! open flags. Output: the open fd, or the errno `files::errno_status` maps to a status.
//! It does not fstat, map statuses or look at the request.
//!
//! The kernel's `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` (openat2(2), Linux ≥
//! 5.6) is used when it exists. Kernels before 5.6, and user-mode QEMU (7.2), answer
//! `ENOSYS`; that is detected once per process (cached in an atomic) and every later
//! lookup walks the path instead: one `openat(dir, segment, O_PATH | O_DIRECTORY |
//! O_NOFOLLOW)` per directory segment from the root, then `openat(dir, last, flags |
//! O_NOFOLLOW)`. No symlink is ever followed, so nothing outside the root is reachable.
//! The cost of that: in the fallback a symlink inside the root is refused rather than
//! followed — as a directory segment `ENOTDIR` (404); as the last segment `ELOOP` (403),
//! or with `O_PATH` the link itself, which is not a regular file (404).

use core::ffi::CStr;
use core::sync::atomic::{AtomicU8, Ordering};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

const UNKNOWN: u8 = 0;
const PRESENT: u8 = 1;
const MISSING: u8 = 2;

/// Whether this process's kernel has `openat2`, learnt from its first answer.
static OPENAT2: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Opens `rel` under `root` with `flags`: `openat2(resolve)` where the kernel has it,
/// the symlink-refusing walk ([`walk`]) where it answers `ENOSYS`.
pub(crate) fn open(
    root: BorrowedFd<'_>,
    rel: &CStr,
    flags: OFlags,
    resolve: ResolveFlags,
) -> Result<OwnedFd, Errno> {
    if OPENAT2.load(Ordering::Relaxed) != MISSING {
        match rustix::fs::openat2(root, rel, flags, Mode::empty(), resolve) {
            Err(Errno::NOSYS) => OPENAT2.store(MISSING, Ordering::Relaxed),
            answer => {
                OPENAT2.store(PRESENT, Ordering::Relaxed);
                return answer;
            }
        }
    }
    walk(root, rel.to_bytes(), flags)
}

/// True when lookups under `root` use the walk because the kernel has no `openat2`
/// (asks the kernel once, with a harmless `O_PATH` open of the root itself).
pub fn fallback_in_use(root: BorrowedFd<'_>) -> bool {
    if OPENAT2.load(Ordering::Relaxed) == UNKNOWN {
        let probe = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let _ = open(root, c".", probe, ResolveFlags::BENEATH);
    }
    OPENAT2.load(Ordering::Relaxed) == MISSING
}

/// The warning a worker prints once at start when [`fallback_in_use`].
pub(crate) const FALLBACK_WARNING: &str = "warning: files: the kernel has no openat2 (ENOSYS): \
paths are resolved segment by segment and symlinks under the root are refused (403/404), \
not followed";

/// Opens the normalised relative path `rel` under `root` one segment at a time, never
/// following a symlink. A segment that is empty, `.` or `..` is refused (the caller
/// guarantees there is none): `NOENT` for the first two, `XDEV` (escape) for `..`.
pub(crate) fn walk(root: BorrowedFd<'_>, rel: &[u8], flags: OFlags) -> Result<OwnedFd, Errno> {
    let (dirs, last) = match memchr::memrchr(b'/', rel) {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (&b""[..], rel),
    };
    let mut dir: Option<OwnedFd> = None;
    if !dirs.is_empty() {
        for segment in dirs.split(|&b| b == b'/') {
            check_segment(segment)?;
            let at = dir.as_ref().map_or(root, |d| d.as_fd());
            let step = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            dir = Some(rustix::fs::openat(at, segment, step, Mode::empty())?);
        }
    }
    check_segment(last)?;
    let at = dir.as_ref().map_or(root, |d| d.as_fd());
    rustix::fs::openat(at, last, flags | OFlags::NOFOLLOW, Mode::empty())
}

fn check_segment(segment: &[u8]) -> Result<(), Errno> {
    match segment {
        b".." => Err(Errno::XDEV),
        b"" | b"." => Err(Errno::NOENT),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    const FILE: OFlags = OFlags::RDONLY
        .union(OFlags::CLOEXEC)
        .union(OFlags::NONBLOCK);

    /// A temporary tree: `root/a/b/f.txt`, `root/top.txt`, a secret beside the root, and
    /// symlinks inside the root pointing in and out.
    struct Tree {
        base: std::path::PathBuf,
        root: OwnedFd,
    }

    impl Tree {
        fn new(name: &str) -> Tree {
            let base =
                std::env::temp_dir().join(format!("steerd-beneath-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&base);
            let r = base.join("root");
            std::fs::create_dir_all(r.join("a/b")).unwrap();
            std::fs::write(r.join("a/b/f.txt"), b"inner").unwrap();
            std::fs::write(r.join("top.txt"), b"top").unwrap();
            std::fs::write(base.join("secret.txt"), b"secret").unwrap();
            symlink("../secret.txt", r.join("up.txt")).unwrap();
            symlink(base.join("secret.txt"), r.join("abs.txt")).unwrap();
            symlink("..", r.join("updir")).unwrap();
            symlink("/", r.join("slash")).unwrap();
            symlink("top.txt", r.join("in.txt")).unwrap();
            symlink("a", r.join("indir")).unwrap();
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
            let root = rustix::fs::open(&r, flags, Mode::empty()).unwrap();
            Tree { base, root }
        }

        fn read(&self, rel: &str) -> Result<Vec<u8>, Errno> {
            let fd = walk(self.root.as_fd(), rel.as_bytes(), FILE)?;
            Ok(std::fs::read(format!("/proc/self/fd/{}", fd_num(&fd))).unwrap())
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.base);
        }
    }

    fn fd_num(fd: &OwnedFd) -> i32 {
        use rustix::fd::AsRawFd;
        fd.as_raw_fd()
    }

    #[test]
    fn walk_opens_files_under_the_root() {
        let t = Tree::new("plain");
        assert_eq!(t.read("top.txt").unwrap(), b"top");
        assert_eq!(t.read("a/b/f.txt").unwrap(), b"inner");
        let dir = walk(t.root.as_fd(), b"a/b", FILE).unwrap();
        let st = rustix::fs::fstat(&dir).unwrap();
        assert_eq!(
            rustix::fs::FileType::from_raw_mode(st.st_mode as _),
            rustix::fs::FileType::Directory
        );
    }

    #[test]
    fn walk_refuses_symlinks_that_escape() {
        let t = Tree::new("escape");
        assert_eq!(t.read("up.txt"), Err(Errno::LOOP));
        assert_eq!(t.read("abs.txt"), Err(Errno::LOOP));
        assert_eq!(t.read("updir/secret.txt"), Err(Errno::NOTDIR));
        assert_eq!(t.read("slash/etc/passwd"), Err(Errno::NOTDIR));
    }

    #[test]
    fn walk_refuses_symlinks_inside_the_root_too() {
        let t = Tree::new("inside");
        assert_eq!(t.read("in.txt"), Err(Errno::LOOP));
        assert_eq!(t.read("indir/b/f.txt"), Err(Errno::NOTDIR));
        let link = walk(t.root.as_fd(), b"in.txt", OFlags::PATH | OFlags::CLOEXEC).unwrap();
        let st = rustix::fs::fstat(&link).unwrap();
        assert_eq!(
            rustix::fs::FileType::from_raw_mode(st.st_mode as _),
            rustix::fs::FileType::Symlink,
            "O_PATH opens the link, not its target"
        );
    }

    #[test]
    fn walk_refuses_dot_segments_and_empty_ones() {
        let t = Tree::new("dots");
        assert_eq!(t.read("../secret.txt"), Err(Errno::XDEV));
        assert_eq!(t.read("a/../../secret.txt"), Err(Errno::XDEV));
        assert_eq!(t.read("a/.."), Err(Errno::XDEV));
        assert_eq!(t.read("./top.txt"), Err(Errno::NOENT));
        assert_eq!(t.read("a//b/f.txt"), Err(Errno::NOENT));
        assert_eq!(t.read(""), Err(Errno::NOENT));
    }

    #[test]
    fn walk_reports_missing_and_not_a_directory() {
        let t = Tree::new("missing");
        assert_eq!(t.read("nope.txt"), Err(Errno::NOENT));
        assert_eq!(t.read("a/nope/f.txt"), Err(Errno::NOENT));
        assert_eq!(t.read("top.txt/f.txt"), Err(Errno::NOTDIR));
        assert_eq!(t.read("a/b/f.txt/x"), Err(Errno::NOTDIR));
    }

    #[test]
    fn open_agrees_with_walk_on_a_file_under_the_root() {
        let t = Tree::new("open");
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        let fd = open(t.root.as_fd(), c"a/b/f.txt", FILE, resolve).unwrap();
        let path = format!("/proc/self/fd/{}", fd_num(&fd));
        assert_eq!(std::fs::read(path).unwrap(), b"inner");
        let escape = open(t.root.as_fd(), c"up.txt", FILE, resolve);
        assert!(
            matches!(escape, Err(Errno::XDEV) | Err(Errno::LOOP)),
            "{escape:?}"
        );
        let _ = fallback_in_use(t.root.as_fd());
    }
}
