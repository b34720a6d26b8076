//! Reads of a regular file that never wait for the disk: `preadv2(RWF_NOWAIT)`, and the
//! `posix_fadvise(WILLNEED)` that asks for a range that was not cached.
//!
//! Input: a borrowed fd, a buffer, an offset. Output: bytes read or the errno. Which
//! slices are read when is the caller's business (`files::hashing`); nothing here
//! imports from the rest of the crate. No `unsafe`: rustix has both calls.

use rustix::fd::BorrowedFd;
use rustix::fs::Advice;
use rustix::io::{Errno, IoSliceMut, ReadWriteFlags};

/// `preadv2(fd, [buf], offset, RWF_NOWAIT)` — read what the page cache holds now.
///
/// `EAGAIN`: the first page of the range is not cached, nothing was read (a short count
/// means a later page is not). `EOPNOTSUPP`: the file system (or a kernel before 4.14)
/// does not take `RWF_NOWAIT`; the caller decides whether a plain `pread` will do. See
/// preadv2(2).
pub(crate) fn pread_nowait(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    offset: u64,
) -> Result<usize, Errno> {
    let mut bufs = [IoSliceMut::new(buf)];
    rustix::io::preadv2(fd, &mut bufs, offset, ReadWriteFlags::NOWAIT)
}

/// `posix_fadvise(fd, offset, len, POSIX_FADV_WILLNEED)` — start reading the range into
/// the page cache without waiting for it.
///
/// The kernel queues readahead for the range and returns; errors only for a bad fd or
/// advice. See posix_fadvise(2).
pub(crate) fn will_need(fd: BorrowedFd<'_>, offset: u64, len: u64) -> Result<(), Errno> {
    rustix::fs::fadvise(
        fd,
        offset,
        core::num::NonZeroU64::new(len),
        Advice::WillNeed,
    )
}
