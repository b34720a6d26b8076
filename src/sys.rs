//! Raw system calls rustix lacks. The only module allowed `unsafe`.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

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
