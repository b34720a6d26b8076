//! Where access log lines go: a file (appended, reopened on request), the inherited
//! standard output, or the local syslog daemon's datagram socket.
//!
//! Input: a [`LogTarget`] (what `--access-log` names; no syscall made yet). Output: an
//! open [`Dest`] that writes whole buffers of lines. A failed or refused write drops the
//! lines it carried: logging never stalls serving on an error (a file or standard output
//! is written with plain `write`, so a full pipe on standard output does make the worker
//! wait, as nginx's workers do).
//!
//! - A file is opened `O_WRONLY | O_APPEND | O_CREAT` (mode 0644), so lines from several
//!   workers never interleave within a line (each flush is one `write` of whole lines).
//! - Standard output is the descriptor the process inherited, never reopened by path,
//!   so it works under `--user` whatever the container runtime handed over.
//! - Syslog is a `SOCK_DGRAM` Unix socket connected to `/dev/log` (or the path
//!   `--syslog-socket` gives), one datagram per line, sent without blocking; a daemon that
//!   restarted is reconnected once per flush. Framing: [`crate::log_line::syslog`].

use crate::config::LogTarget;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{Access, Mode, OFlags};
use rustix::io::Errno;
use rustix::net::{AddressFamily, SendFlags, SocketAddrUnix, SocketFlags, SocketType};
use std::io;
use std::path::{Path, PathBuf};

/// An open destination.
#[derive(Debug)]
pub enum Dest {
    /// Lines are dropped.
    Off,
    /// An appended file and the path it is reopened from.
    File(PathBuf, OwnedFd),
    /// Standard output.
    Stdout,
    /// A connected datagram socket and the path it reconnects to.
    Syslog(PathBuf, OwnedFd),
}

fn open_file(path: &Path) -> io::Result<OwnedFd> {
    let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE | OFlags::CLOEXEC;
    Ok(rustix::fs::open(path, flags, Mode::from_raw_mode(0o644))?)
}

/// `socket(AF_UNIX, SOCK_DGRAM)` connected to `path`, non-blocking.
fn connect_syslog(path: &Path) -> io::Result<OwnedFd> {
    let flags = SocketFlags::CLOEXEC | SocketFlags::NONBLOCK;
    let fd = rustix::net::socket_with(AddressFamily::UNIX, SocketType::DGRAM, flags, None)?;
    rustix::net::connect(&fd, &SocketAddrUnix::new(path)?)?;
    Ok(fd)
}

/// Whether `target` could be opened by this process, without creating or sending
/// anything: an existing file must open for appending, a missing one needs a writable
/// directory; the syslog socket must accept a connection. What `steerd check` and
/// `serve` verify before binding (the master again as `--user`).
pub fn check(target: &LogTarget) -> io::Result<()> {
    match target {
        LogTarget::Off | LogTarget::Stdout => Ok(()),
        LogTarget::File(p) => appendable(p),
        LogTarget::Syslog(p) => connect_syslog(p).map(drop),
    }
}

/// Whether `log` can be opened for appending, without creating it.
fn appendable(log: &Path) -> io::Result<()> {
    let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::CLOEXEC | OFlags::NOCTTY;
    match rustix::fs::open(log, flags, Mode::empty()) {
        Ok(_) => Ok(()),
        Err(Errno::NOENT) => {
            let dir = match log.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            Ok(rustix::fs::access(dir, Access::WRITE_OK | Access::EXEC_OK)?)
        }
        Err(e) => Err(e.into()),
    }
}

impl Dest {
    /// Opens `target` as the current process (its user decides what it may open).
    pub fn open(target: &LogTarget) -> io::Result<Dest> {
        Ok(match target {
            LogTarget::Off => Dest::Off,
            LogTarget::File(p) => Dest::File(p.clone(), open_file(p)?),
            LogTarget::Stdout => Dest::Stdout,
            LogTarget::Syslog(p) => Dest::Syslog(p.clone(), connect_syslog(p)?),
        })
    }

    /// Opens the file again (after a rotation moved it) or reconnects the socket; the
    /// old descriptor stays in use if that fails.
    pub fn reopen(&mut self) -> io::Result<()> {
        match self {
            Dest::File(p, fd) => *fd = open_file(p)?,
            Dest::Syslog(p, fd) => *fd = connect_syslog(p)?,
            Dest::Off | Dest::Stdout => {}
        }
        Ok(())
    }

    /// Whether lines are datagrams with a syslog frame head.
    pub fn is_syslog(&self) -> bool {
        matches!(self, Dest::Syslog(..))
    }

    /// Whether lines go anywhere.
    pub fn is_off(&self) -> bool {
        matches!(self, Dest::Off)
    }

    /// Writes `lines` (whole lines, each ending in `\n`).
    pub fn write(&mut self, lines: &[u8]) {
        match self {
            Dest::Off => {}
            Dest::File(_, fd) => write_all(fd.as_fd(), lines),
            Dest::Stdout => write_all(std::io::stdout().as_fd(), lines),
            Dest::Syslog(path, fd) => {
                if send_datagrams(fd.as_fd(), lines) == Err(Errno::CONNREFUSED) {
                    // The daemon restarted (its socket is new): reconnect once, retry.
                    if let Ok(new) = connect_syslog(path) {
                        *fd = new;
                        let _ = send_datagrams(fd.as_fd(), lines);
                    }
                }
            }
        }
    }
}

/// `write` until done, retried on a short write and `EINTR`; any other end drops the rest.
fn write_all(fd: BorrowedFd<'_>, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        match rustix::io::write(fd, bytes) {
            Ok(0) => return,
            Ok(n) => bytes = &bytes[n..],
            Err(Errno::INTR) => {}
            Err(_) => return,
        }
    }
}

/// One datagram per line, without its newline. Stops at the first refusal (a full
/// daemon queue gives `EAGAIN`: the rest is dropped, never waited for).
fn send_datagrams(fd: BorrowedFd<'_>, lines: &[u8]) -> Result<(), Errno> {
    let mut sent_one = false;
    for line in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        loop {
            match rustix::net::send(fd, line, SendFlags::DONTWAIT) {
                Ok(_) => break,
                Err(Errno::INTR) => {}
                // Only a refusal before anything went out is worth a reconnect and retry.
                Err(Errno::CONNREFUSED | Errno::NOTCONN) if !sent_one => {
                    return Err(Errno::CONNREFUSED)
                }
                Err(e) => return Err(e),
            }
        }
        sent_one = true;
    }
    Ok(())
}
