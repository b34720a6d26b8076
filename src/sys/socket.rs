//! Socket calls rustix lacks: `TCP_DEFER_ACCEPT`, `SO_BINDTODEVICE`, attaching a classic
//! BPF program to a reuseport group, and the bytes a TCP socket has not had acknowledged
//! (`SIOCOUTQ`).
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

/// `setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, rate)` — cap what the socket sends at
/// `rate` bytes per second; `u32::MAX` lifts the cap.
///
/// TCP paces by itself (since Linux 4.13) once a socket asks for pacing, or the `fq`
/// qdisc does; either way no timer of the caller's is needed. The kernel takes a 32-bit
/// value (a 64-bit one since 5.x as well). See socket(7).
pub(crate) fn set_max_pacing_rate(fd: BorrowedFd<'_>, rate: u32) -> io::Result<()> {
    // SAFETY: `rate` lives across the call and the length passed is its exact size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_MAX_PACING_RATE,
            (&rate as *const u32).cast(),
            core::mem::size_of::<u32>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `ioctl(fd, SIOCOUTQ, &n)` — the bytes of a TCP socket's send queue the peer has not
/// acknowledged yet (sent or not).
///
/// 0 once the peer has everything. A socket whose network namespace goes away while this
/// is not 0 loses the rest (a container stopped right after its last process exits), so
/// a stopping worker waits for 0 before it closes. `SIOCOUTQ` is `TIOCOUTQ`. See tcp(7).
pub(crate) fn unacked_bytes(fd: BorrowedFd<'_>) -> io::Result<u32> {
    let mut n: libc::c_int = 0;
    // SAFETY: TIOCOUTQ writes one c_int to the pointer, which points to `n`, alive across
    // the call.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCOUTQ, &mut n as *mut libc::c_int) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(u32::try_from(n).unwrap_or(0))
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

/// `getsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE)` — the interface name the socket is bound
/// to, empty when it is bound to none.
///
/// A reuseport group holds only sockets bound to the same device (`sk_bound_dev_if`), so a
/// member made beside a passed socket (systemd's `BindToDevice=`) must copy it. See
/// socket(7).
pub(crate) fn bound_device(fd: BorrowedFd<'_>) -> io::Result<Vec<u8>> {
    let mut name = [0u8; libc::IFNAMSIZ];
    let mut len = name.len() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes to `name`, which has exactly `len`
    // bytes and lives across the call, and stores the length it wrote in `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_BINDTODEVICE,
            name.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let got = &name[..(len as usize).min(name.len())];
    let end = got.iter().position(|&b| b == 0).unwrap_or(got.len());
    Ok(got[..end].to_vec())
}

/// `setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, name)` — receive only packets that
/// arrived on interface `name` (at most `IFNAMSIZ - 1` bytes).
///
/// Since Linux 5.7 an unprivileged process may bind a socket not bound yet; changing a
/// binding needs `CAP_NET_RAW`. See socket(7).
pub(crate) fn bind_to_device(fd: BorrowedFd<'_>, name: &[u8]) -> io::Result<()> {
    if name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: the kernel reads `name.len()` bytes from `name`, borrowed across the call.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_BINDTODEVICE,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
