//! Reads of regular files that must not wait for the disk.
//!
//! Input: a borrowed file, a buffer, an offset. Output: the bytes already in the page
//! cache, or `EAGAIN`. Nothing here decides what to do about a miss (`crate::disk` does).

use rustix::fd::BorrowedFd;
use rustix::io::{Errno, ReadWriteFlags};

/// `preadv2(fd, [buf], offset, RWF_NOWAIT)` — reads what of `buf.len()` bytes from
/// `offset` is in the page cache and up to date, without starting or waiting for I/O.
///
/// `Ok(n)` with `n < buf.len()`: only the first `n` bytes were cached (or the file ends);
/// `Err(EAGAIN)`: the first page is not cached (or still being read). Since Linux 4.14;
/// older kernels and file systems without it answer `EOPNOTSUPP`. See preadv2(2).
pub(crate) fn pread_nowait(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    offset: u64,
) -> Result<usize, Errno> {
    loop {
        let mut bufs = [rustix::io::IoSliceMut::new(&mut *buf)];
        match rustix::io::preadv2(fd, &mut bufs, offset, ReadWriteFlags::NOWAIT) {
            Err(Errno::INTR) => continue,
            other => return other,
        }
    }
}
