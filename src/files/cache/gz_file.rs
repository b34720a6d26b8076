//! `--compress-cache DIR`: the gzip bytes of a large file as a real `.gz` file, named by
//! the identity's content hash, written anonymously (`O_TMPFILE`) and linked into `DIR`
//! only when whole (`linkat`), then sent by `sendfile` like a sidecar.
//!
//! Input: the cache directory's descriptor, the identity's content ETag, the encoder's
//! output. Output: an open `.gz` file and its length. It does not compress (the caller
//! feeds the encoder) and does not decide which files are compressed.
//!
//! Names: `<32 hex digits>.gz`, the identity's content tag without its quotes, so a file
//! is compressed once for every worker, every restart and every replica sharing `DIR`;
//! a name already present is used as it is (a half-written file never gets a name: it
//! stays anonymous until `linkat`). Two workers compressing the same file at once both
//! finish; the second `linkat` finds the name taken (`EEXIST`) and its copy is dropped.
//! `linkat(fd, "", AT_EMPTY_PATH)` needs `CAP_DAC_READ_SEARCH`; without it the file is
//! linked through `/proc/self/fd/N` (`AT_SYMLINK_FOLLOW`), as open(2) describes for
//! `O_TMPFILE`. Files in `DIR` are never deleted by steerd: clearing it is the
//! operator's business (any time; a file being sent stays readable until closed).

use crate::files::ETag;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

/// Bytes of a name: 32 hex digits, `.gz`, NUL.
const NAME_LEN: usize = 32 + 3 + 1;

/// The `.gz` name for the file whose content tag is `tag` (`"<32 hex>"`).
fn name(tag: &ETag) -> Option<[u8; NAME_LEN]> {
    let hex = tag.as_bytes().get(1..33)?;
    let mut out = [0u8; NAME_LEN];
    out[..32].copy_from_slice(hex);
    out[32..35].copy_from_slice(b".gz");
    Some(out)
}

fn c_name(name: &[u8; NAME_LEN]) -> Option<&core::ffi::CStr> {
    core::ffi::CStr::from_bytes_with_nul(name).ok()
}

/// The `.gz` of `tag` already in `dir`, open for reading, and its length.
pub(super) fn existing(dir: BorrowedFd<'_>, tag: &ETag) -> Option<(OwnedFd, u64)> {
    let name = name(tag)?;
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, c_name(&name)?, flags, Mode::empty()).ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    let regular = rustix::fs::FileType::from_raw_mode(st.st_mode as _).is_file();
    regular.then_some((fd, st.st_size.max(0) as u64))
}

/// An anonymous file in `dir` to write a compression into.
pub(super) fn anonymous(dir: BorrowedFd<'_>) -> Result<OwnedFd, Errno> {
    let flags = OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC;
    rustix::fs::openat(dir, c".", flags, Mode::from_raw_mode(0o644))
}

/// Appends `bytes` to `file` at `at`; false on an error (a full disk).
pub(super) fn append(file: BorrowedFd<'_>, mut bytes: &[u8], mut at: u64) -> bool {
    while !bytes.is_empty() {
        match rustix::io::pwrite(file, bytes, at) {
            Ok(0) => return false,
            Ok(n) => {
                bytes = &bytes[n..];
                at += n as u64;
            }
            Err(Errno::INTR) => {}
            Err(_) => return false,
        }
    }
    true
}

/// Gives the finished anonymous `file` its name in `dir`; true when the name now holds
/// these bytes or another worker's copy of them.
pub(super) fn link(dir: BorrowedFd<'_>, file: &OwnedFd, tag: &ETag) -> bool {
    let Some(name) = name(tag) else {
        return false;
    };
    let Some(new) = c_name(&name) else {
        return false;
    };
    let linked = match rustix::fs::linkat(file, c"", dir, new, AtFlags::EMPTY_PATH) {
        Err(Errno::NOENT | Errno::PERM) => {
            let proc = format_proc_fd(file.as_fd());
            let path = core::ffi::CStr::from_bytes_until_nul(&proc).unwrap_or(c"");
            rustix::fs::linkat(rustix::fs::CWD, path, dir, new, AtFlags::SYMLINK_FOLLOW)
        }
        other => other,
    };
    matches!(linked, Ok(()) | Err(Errno::EXIST))
}

/// `/proc/self/fd/<n>` and a NUL, in a fixed buffer.
fn format_proc_fd(fd: BorrowedFd<'_>) -> [u8; 32] {
    use rustix::fd::AsRawFd;
    let mut out = [0u8; 32];
    let prefix = b"/proc/self/fd/";
    out[..prefix.len()].copy_from_slice(prefix);
    let mut n = fd.as_raw_fd().unsigned_abs();
    let mut digits = [0u8; 10];
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for (i, d) in digits[..len].iter().rev().enumerate() {
        out[prefix.len() + i] = *d;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_proc_paths() {
        let tag = crate::files::content_tag::of_bytes(b"abc");
        let n = name(&tag).unwrap();
        assert_eq!(&n[..], b"ba7816bf8f01cfea414140de5dae2223.gz\0");
        let fd = rustix::fs::open(c"/", OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).unwrap();
        let p = format_proc_fd(fd.as_fd());
        let want = format!("/proc/self/fd/{}", rustix::fd::AsRawFd::as_raw_fd(&fd));
        assert_eq!(
            core::ffi::CStr::from_bytes_until_nul(&p).unwrap().to_str(),
            Ok(want.as_str())
        );
    }
}
