//! Content ETags: the first 16 bytes of a file's SHA-256, in hex (`files::ETag::content`),
//! computed once per file version and kept with its file cache entry.
//!
//! Input: the bytes of a small file (already read into the cache), or the descriptor of
//! a large one and a buffer to read it through. Output: the tag, or for a large file one
//! [`Step`] of its hash per call. It does not decide which entries are hashed when (the
//! cache does, [`crate::files::cache::FileCache::hash_turn`]).
//!
//! Why SHA-256: the tag must be the same for the same bytes in every process, on every
//! machine and after every restart, so it cannot be keyed or seeded; the chance that a
//! changed file keeps its tag must be negligible (128 bits kept); and the crate already
//! has SHA-256 of its own (`crypt::sha2`, FIPS 180-4 vectors), so the tag costs no new
//! code and anyone can compute it: `sha256sum FILE | cut -c1-32`. It is slower than a
//! non-cryptographic hash, which matters little: it runs once
//! per version of a file, never per request.
//!
//! A large file is read in slices with `preadv2(RWF_NOWAIT)` (`sys::pread_nowait`), so
//! a slice the page cache does not hold is never waited for: it is asked for with
//! `posix_fadvise(WILLNEED)` and read again [`RETRY_MS`] later. On a file system that
//! refuses `RWF_NOWAIT` (`EOPNOTSUPP`), or with no `preadv2` at all (`ENOSYS`: a kernel
//! before 4.6, user-mode QEMU 7.2), the slice is read with a plain `pread`, as the cache
//! reads small files then.

use super::ETag;
use crate::crypt::sha2::Sha256;
use rustix::fd::BorrowedFd;
use rustix::io::Errno;

/// How long a slice that was not cached is left to the readahead before it is read again.
pub(crate) const RETRY_MS: u64 = 5;

/// The tag of `bytes`, in one go.
pub(crate) fn of_bytes(bytes: &[u8]) -> ETag {
    let mut sha = Sha256::new();
    sha.update(bytes);
    ETag::content(&sha.finish())
}

/// A large file's hash in progress.
#[derive(Clone)]
pub(crate) struct Hashing {
    sha: Sha256,
    /// Bytes hashed so far.
    at: u64,
    /// The file's size when it was looked up.
    size: u64,
    /// Not before this time (ms): the slice at `at` was not cached.
    retry_at: u64,
}

/// What one step of a [`Hashing`] came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// A slice was hashed; there is more.
    More,
    /// The next slice is being read in: call again at this time (ms).
    Wait(u64),
    /// Every byte is hashed: the tag.
    Done(ETag),
    /// The file shrank or could not be read: no tag for this version.
    Failed,
}

impl Hashing {
    /// The hash of a file of `size` bytes, from its start.
    pub(crate) fn new(size: u64) -> Hashing {
        Hashing {
            sha: Sha256::new(),
            at: 0,
            size,
            retry_at: 0,
        }
    }

    /// Reads and hashes the next slice (at most `buf.len()` bytes) of `fd`.
    pub(crate) fn step(&mut self, fd: BorrowedFd<'_>, buf: &mut [u8], now_ms: u64) -> Step {
        if self.at == self.size {
            return Step::Done(ETag::content(&core::mem::take(&mut self.sha).finish()));
        }
        if now_ms < self.retry_at {
            return Step::Wait(self.retry_at);
        }
        let want = (self.size - self.at).min(buf.len() as u64) as usize;
        if want == 0 {
            return Step::Failed;
        }
        let slice = &mut buf[..want];
        let read = match crate::sys::pread_nowait(fd, slice, self.at) {
            Err(Errno::OPNOTSUPP | Errno::NOSYS) => rustix::io::pread(fd, &mut *slice, self.at),
            other => other,
        };
        match read {
            Ok(0) => Step::Failed,
            Ok(n) => {
                self.sha.update(&slice[..n]);
                self.at += n as u64;
                Step::More
            }
            Err(Errno::AGAIN) => {
                let _ = crate::sys::will_need(fd, self.at, want as u64);
                self.retry_at = now_ms + RETRY_MS;
                Step::Wait(self.retry_at)
            }
            Err(Errno::INTR) => Step::More,
            Err(_) => Step::Failed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fd::AsFd;
    use std::io::Write;

    /// `sha256sum` of "abc" (FIPS 180-4 B.1), first 32 digits.
    const ABC: &[u8] = b"\"ba7816bf8f01cfea414140de5dae2223\"";

    #[test]
    fn the_tag_is_the_sha256_prefix() {
        assert_eq!(of_bytes(b"abc").as_bytes(), ABC);
        assert_eq!(
            of_bytes(b"").as_bytes(),
            b"\"e3b0c44298fc1c149afbf4c8996fb924\""
        );
    }

    #[test]
    fn slices_of_a_file_give_the_tag_of_its_bytes() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 + i / 300) as u8).collect();
        let mut f = tempfile();
        f.write_all(&data).unwrap();
        let mut h = Hashing::new(data.len() as u64);
        let mut buf = [0u8; 4096];
        let mut steps = 0;
        let tag = loop {
            steps += 1;
            assert!(steps < 10_000, "no end");
            match h.step(f.as_fd(), &mut buf, steps) {
                Step::More | Step::Wait(_) => {}
                Step::Done(t) => break t,
                Step::Failed => panic!("failed"),
            }
        };
        assert_eq!(tag, of_bytes(&data));
    }

    #[test]
    fn a_file_that_shrank_fails() {
        let mut f = tempfile();
        f.write_all(b"short").unwrap();
        let mut h = Hashing::new(100);
        let mut buf = [0u8; 64];
        assert_eq!(h.step(f.as_fd(), &mut buf, 0), Step::More);
        assert_eq!(h.step(f.as_fd(), &mut buf, 0), Step::Failed);
    }

    fn tempfile() -> std::fs::File {
        let dir = std::env::temp_dir();
        let path = dir.join(format!(
            "steerd-content-tag-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let _ = std::fs::remove_file(&path);
        f
    }
}
