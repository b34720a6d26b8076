//! Socket options rustix lacks: `TCP_DEFER_ACCEPT` and attaching a classic BPF program
//! to a reuseport group.
//!
//! Input: borrowed fds and plain values (the program as `asm_bpf::Insn`s). Output:
//! `io::Result`s. Which sockets get which option is `listen.rs`'s business; nothing here
//! imports from the rest of the crate.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// `setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, secs)` — wake the listener only when
/// data has arrived on a new connection.
///
/// The kernel turns seconds into a count of SYN-ACK retransmissions, so the wait is
/// rounded; a connection that has sent nothing by then is queued for `accept` anyway.
/// See tcp(7).
pub fn set_tcp_defer_accept(fd: BorrowedFd<'_>, secs: u32) -> io::Result<()> {
    let value = libc::c_int::try_from(secs).unwrap_or(libc::c_int::MAX);
    // SAFETY: `value` lives across the call and the length passed is its exact size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_DEFER_ACCEPT,
            (&value as *const libc::c_int).cast(),
            core::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, {len, prog})` — attach a classic
/// BPF program that picks the listener index for each new connection of `fd`'s reuseport
/// group.
///
/// Attach once, after every member has called `listen()`: the program belongs to the group
/// and a socket that carries its own program before `bind` makes a separate group
/// (`EADDRINUSE`). An index past the group's size falls back to the hash. Old kernels and
/// gVisor answer `ENOPROTOOPT` or `EINVAL`. See socket(7), `net/core/sock_reuseport.c`.
pub fn attach_reuseport_cbpf(fd: BorrowedFd, prog: &[asm_bpf::Insn]) -> io::Result<()> {
    let len = u16::try_from(prog.len())
        .map_err(|_| io::Error::other("BPF program longer than 65535 instructions"))?;
    let fprog = libc::sock_fprog {
        len,
        filter: prog.as_ptr().cast::<libc::sock_filter>().cast_mut(),
    };
    // SAFETY: `asm_bpf::Insn` is `#[repr(C)]` with the layout of `struct sock_filter`, the
    // pointer covers `len` instructions borrowed for the call, and the kernel only reads
    // them (it copies the program).
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_REUSEPORT_CBPF,
            (&fprog as *const libc::sock_fprog).cast(),
            core::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
