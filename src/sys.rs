//! Raw system calls rustix lacks. The only module allowed `unsafe`.
#![allow(unsafe_code)]

/// `setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, secs)` — a listener's `accept` returns a
/// connection only once its first data has arrived (or `secs` have passed), so the
/// accepting process can read the request at once. rustix has no wrapper for it.
/// See tcp(7).
pub fn set_tcp_defer_accept(fd: rustix::fd::BorrowedFd<'_>, secs: u32) -> std::io::Result<()> {
    use rustix::fd::AsRawFd;
    let value = libc::c_int::try_from(secs).unwrap_or(libc::c_int::MAX);
    let len = core::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `fd` is borrowed, so it stays open for the call; the kernel reads exactly
    // `len` bytes from `&value`, a live c_int on this stack frame.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_DEFER_ACCEPT,
            (&value as *const libc::c_int).cast(),
            len,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
