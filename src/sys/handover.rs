//! Raw calls for handing descriptors across `execve`: adopting the descriptors a parent
//! named in the environment (socket activation, a binary upgrade), and, in a forked child
//! about to exec, moving descriptors to the numbers the new program expects.
//!
//! Input: fd numbers and C strings. Output: owned fds, or the error of the call that
//! failed. It knows nothing of the protocol that names the numbers (`inherit.rs`) or of
//! when an upgrade happens (the master).
#![allow(unsafe_code)]

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// `fcntl(fd, F_GETFD)` then `fcntl(fd, F_SETFD, FD_CLOEXEC)` — take ownership of a
/// descriptor this process inherited, closed on any later `execve`.
///
/// Fails with `EBADF` when no such descriptor is open. The caller must adopt each number
/// at most once and must not otherwise use it (sd_listen_fds(3) unsets the variables that
/// name them for the same reason). See fcntl(2).
pub(crate) fn adopt_fd(raw: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: F_GETFD only reads the descriptor table entry of `raw`; an unknown number
    // returns -1/EBADF and touches no memory.
    if raw < 0 || unsafe { libc::fcntl(raw, libc::F_GETFD) } < 0 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    // SAFETY: `raw` is open (checked just above) and the caller adopts each number once,
    // so this OwnedFd is its only owner.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC)?;
    Ok(fd)
}

/// Moves `fds[i]` to number `first + i`, each without `FD_CLOEXEC`, for a forked child
/// that then calls [`exec`]: first every source is copied above the target range
/// (`F_DUPFD_CLOEXEC`), so no `dup2` overwrites a source not yet moved, then `dup2`
/// puts each copy in place (a `dup2` target never carries `FD_CLOEXEC`).
///
/// Only for a child that execs next: whatever the targets held is closed silently, and the
/// copies above the range close at the exec. See dup(2), fcntl(2).
pub(crate) fn place_fds(fds: &[RawFd], first: RawFd) -> io::Result<()> {
    let above = first.saturating_add(fds.len() as RawFd);
    let mut copies = Vec::with_capacity(fds.len());
    for &fd in fds {
        // SAFETY: F_DUPFD_CLOEXEC reads the table entry of `fd` and makes a new one; it
        // touches no memory of this process.
        let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, above) };
        if copy < 0 {
            return Err(io::Error::last_os_error());
        }
        copies.push(copy);
    }
    for (i, &copy) in copies.iter().enumerate() {
        // SAFETY: dup2 only changes the descriptor table; the target number belongs to no
        // Rust owner the child still uses, since the child execs next.
        if unsafe { libc::dup2(copy, first + i as RawFd) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `execve(path, argv, envp)` — replace this process's program. Returns only on failure.
///
/// `argv` and `env` are NUL-terminated C strings; the pointer arrays given to the kernel
/// end with a null pointer, as execve(2) requires.
pub(crate) fn exec(path: &CStr, argv: &[CString], env: &[CString]) -> io::Error {
    let mut args: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    args.push(core::ptr::null());
    let mut vars: Vec<*const libc::c_char> = env.iter().map(|e| e.as_ptr()).collect();
    vars.push(core::ptr::null());
    // SAFETY: `path`, every `argv`/`env` string and both pointer arrays (null-terminated)
    // are alive across the call; execve only reads them.
    unsafe { libc::execve(path.as_ptr(), args.as_ptr(), vars.as_ptr()) };
    io::Error::last_os_error()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn adopting_a_closed_number_fails_and_an_open_one_is_owned() {
        assert!(adopt_fd(-1).is_err());
        assert!(adopt_fd(1 << 20).is_err());
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let raw = OwnedFd::from(a);
        let n = std::os::fd::IntoRawFd::into_raw_fd(raw);
        let fd = adopt_fd(n).expect("open");
        assert_eq!(fd.as_raw_fd(), n);
        let flags = rustix::io::fcntl_getfd(&fd).unwrap();
        assert!(flags.contains(rustix::io::FdFlags::CLOEXEC));
    }
}
