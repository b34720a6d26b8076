//! Where access log lines go: a file (appended, reopened on request), the inherited
//! standard output, or the local syslog daemon's datagram socket.
//!
//! Input: a [`LogTarget`] (what `--access-log` names; no syscall made yet). Output: an
//! open [`Dest`] that writes whole buffers of lines. A failed or refused write drops the
//! lines it carried: logging never stalls serving on an error (a file or standard output
//! is written with plain `write`: a file, or standard output that is one, by the log's
//! own thread, `super::writer`; a full pipe on standard output does make the worker
//! wait, as nginx's workers do).
//!
//! - A file is opened `O_APPEND | O_CREAT` (mode 0644), so lines from several workers
//!   never interleave within a line (each flush is one `write` of whole lines). It must
//!   be a regular file: a FIFO, a device or a socket is refused ([`Kind`]), by `check`
//!   from its `stat` alone (opening a FIFO would wait for a reader, and closing it again
//!   would hand that reader an end of file) and by the worker after a non-blocking open.
//! - A short write (a full disk) leaves a line cut at the end of the file. The next write
//!   of any worker first ends it with a newline of its own, so at most one line is cut
//!   and none is glued to another: the file's last byte is read back (`pread`) before
//!   each write, which is why the file is opened for reading too when it may be (write
//!   only otherwise, and then only the worker that cut the line knows to end it).
//!   Lines not written are counted ([`Dest::write`] returns how many).
//! - Standard output is the descriptor the process inherited, never reopened by path,
//!   so it works under `--user` whatever the container runtime handed over.
//! - Syslog is a `SOCK_DGRAM` Unix socket connected to `/dev/log` (or the path
//!   `--syslog-socket` gives), one datagram per line, sent without blocking; a daemon that
//!   restarted is reconnected once per flush. Framing: [`crate::log_line::syslog`].

use crate::config::LogTarget;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{Access, FileType, Mode, OFlags};
use rustix::io::Errno;
use rustix::net::{AddressFamily, SendFlags, SocketAddrUnix, SocketFlags, SocketType};
use std::io;
use std::path::{Path, PathBuf};

/// An open destination.
#[derive(Debug)]
pub(crate) enum Dest {
    /// Lines are dropped.
    Off,
    /// An appended file.
    File(LogFile),
    /// Standard output.
    Stdout,
    /// A connected datagram socket and the path it reconnects to.
    Syslog(PathBuf, OwnedFd),
}

/// An appended log file.
#[derive(Debug)]
pub(crate) struct LogFile {
    /// The path it is reopened from.
    path: PathBuf,
    fd: OwnedFd,
    /// This worker's last write stopped inside a line.
    torn: bool,
}

/// What a log path names when it is not a regular file: refused, since a FIFO blocks
/// the opener until a reader comes (and a check's open and close ends that reader's
/// input), and no other kind keeps whole lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A named pipe.
    Fifo,
    /// A character or block device.
    Device,
    /// A socket, a directory or anything else.
    Other,
}

impl Kind {
    fn of(ty: FileType) -> Option<Kind> {
        match ty {
            FileType::RegularFile => None,
            FileType::Fifo => Some(Kind::Fifo),
            FileType::CharacterDevice | FileType::BlockDevice => Some(Kind::Device),
            _ => Some(Kind::Other),
        }
    }
}

impl core::fmt::Display for Kind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let what = match self {
            Kind::Fifo => "is a FIFO",
            Kind::Device => "is a device",
            Kind::Other => "is not a regular file",
        };
        write!(
            f,
            "{what}; the access log must be a regular file \
             (`--access-log -` writes to standard output, `syslog` to the system log)"
        )
    }
}

impl std::error::Error for Kind {}

/// The [`Kind`] `path` names if it exists and is not a regular file (`stat` only,
/// nothing opened).
pub(crate) fn not_regular(path: &Path) -> Option<Kind> {
    let st = rustix::fs::stat(path).ok()?;
    Kind::of(FileType::from_raw_mode(st.st_mode))
}

fn refuse(kind: Kind) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, kind)
}

/// Opens `path` for appending without waiting (a FIFO without a reader fails at once
/// instead of blocking the worker), readable too if this process may read it.
fn open_file(path: &Path) -> io::Result<OwnedFd> {
    // Looked at before it is opened: opening a FIFO read-write succeeds at once and its
    // close would hand a waiting reader an EOF. The fstat below covers a swap in between.
    if let Some(kind) = not_regular(path) {
        return Err(refuse(kind));
    }
    let flags = OFlags::APPEND | OFlags::CREATE | OFlags::CLOEXEC | OFlags::NOCTTY;
    let flags = flags | OFlags::NONBLOCK;
    let mode = Mode::from_raw_mode(0o644);
    let fd = match rustix::fs::open(path, flags | OFlags::RDWR, mode) {
        Ok(fd) => fd,
        Err(Errno::ACCESS | Errno::PERM | Errno::ISDIR) => {
            rustix::fs::open(path, flags | OFlags::WRONLY, mode)?
        }
        Err(Errno::NXIO) => return Err(refuse(Kind::Fifo)),
        Err(e) => return Err(e.into()),
    };
    let st = rustix::fs::fstat(&fd)?;
    match Kind::of(FileType::from_raw_mode(st.st_mode)) {
        Some(kind) => Err(refuse(kind)),
        None => Ok(fd),
    }
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
pub(crate) fn check(target: &LogTarget) -> io::Result<()> {
    match target {
        LogTarget::Off | LogTarget::Stdout => Ok(()),
        LogTarget::File(p) => appendable(p),
        LogTarget::Syslog(p) => connect_syslog(p).map(drop),
    }
}

/// Whether `log` can be opened for appending, without creating it. A path that is not
/// a regular file is refused from its `stat`, before any open.
fn appendable(log: &Path) -> io::Result<()> {
    if let Some(kind) = not_regular(log) {
        return Err(refuse(kind));
    }
    let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::CLOEXEC | OFlags::NOCTTY;
    // Non-blocking: should a FIFO have taken the file's place since the `stat`.
    let flags = flags | OFlags::NONBLOCK;
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
    pub(crate) fn open(target: &LogTarget) -> io::Result<Dest> {
        Ok(match target {
            LogTarget::Off => Dest::Off,
            LogTarget::File(p) => Dest::File(LogFile {
                path: p.clone(),
                fd: open_file(p)?,
                torn: false,
            }),
            LogTarget::Stdout => Dest::Stdout,
            LogTarget::Syslog(p) => Dest::Syslog(p.clone(), connect_syslog(p)?),
        })
    }

    /// Opens the file again (after a rotation moved it) or reconnects the socket; the
    /// old descriptor stays in use if that fails. (Out of line, as [`Dest::write`].)
    #[inline(never)]
    pub(crate) fn reopen(&mut self) -> io::Result<()> {
        match self {
            Dest::File(f) => {
                f.fd = open_file(&f.path)?;
                f.torn = false;
            }
            Dest::Syslog(p, fd) => *fd = connect_syslog(p)?,
            Dest::Off | Dest::Stdout => {}
        }
        Ok(())
    }

    /// Whether lines are datagrams with a syslog frame head.
    pub(crate) fn is_syslog(&self) -> bool {
        matches!(self, Dest::Syslog(..))
    }

    /// Whether lines go anywhere.
    pub(crate) fn is_off(&self) -> bool {
        matches!(self, Dest::Off)
    }

    /// Whether a write may wait for a disk: a file, or standard output when it is one
    /// (a pipe, a terminal or a socket never does; a syslog datagram is sent without
    /// waiting).
    pub(crate) fn waits_for_disk(&self) -> bool {
        match self {
            Dest::File(_) => true,
            Dest::Stdout => rustix::fs::fstat(std::io::stdout().as_fd())
                .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile),
            Dest::Off | Dest::Syslog(..) => false,
        }
    }

    /// Writes `lines` (whole lines, each ending in `\n`); returns how many were not
    /// written whole (dropped, or cut by a short write). Out of line: the loop and the
    /// log's thread both call it, and one copy of it is enough in the binary.
    #[inline(never)]
    pub(crate) fn write(&mut self, lines: &[u8]) -> u64 {
        match self {
            Dest::Off => 0,
            Dest::File(f) => f.append(lines),
            Dest::Stdout => count_lines(write_all(std::io::stdout().as_fd(), lines)),
            Dest::Syslog(path, fd) => {
                let mut left = send_datagrams(fd.as_fd(), lines);
                if left.1 == Some(Errno::CONNREFUSED) {
                    // The daemon restarted (its socket is new): reconnect once, retry.
                    if let Ok(new) = connect_syslog(path) {
                        *fd = new;
                        left = send_datagrams(fd.as_fd(), lines);
                    }
                }
                count_lines(left.0)
            }
        }
    }
}

impl LogFile {
    /// Appends `lines`, first ending a line a short write left cut; returns the lines
    /// not written whole.
    fn append(&mut self, lines: &[u8]) -> u64 {
        // The file itself says whether its last line is cut, whoever cut it; only a
        // descriptor that cannot read falls back on what this worker knows.
        if !ends_clean(self.fd.as_fd()).unwrap_or(!self.torn) {
            // Without the newline written, the lines would be glued to the cut one.
            if !write_all(self.fd.as_fd(), b"\n").is_empty() {
                self.torn = true;
                return count_lines(lines);
            }
        }
        let left = write_all(self.fd.as_fd(), lines);
        let written = &lines[..lines.len() - left.len()];
        self.torn = !left.is_empty() && written.last().is_some_and(|&b| b != b'\n');
        count_lines(left)
    }
}

/// Whether the file is empty or ends in a newline; `None` when it cannot be read (a
/// descriptor opened write-only).
fn ends_clean(fd: BorrowedFd<'_>) -> Option<bool> {
    let st = rustix::fs::fstat(fd).ok()?;
    let Some(last) = u64::try_from(st.st_size)
        .ok()
        .and_then(|n| n.checked_sub(1))
    else {
        return Some(true);
    };
    let mut byte = [0u8; 1];
    match rustix::io::pread(fd, &mut byte, last) {
        Ok(1) => Some(byte[0] == b'\n'),
        _ => None,
    }
}

/// Lines in `rest` (a cut one counts): what a write that stopped there dropped.
pub(super) fn count_lines(rest: &[u8]) -> u64 {
    let whole = memchr::memchr_iter(b'\n', rest).count();
    let cut = usize::from(rest.last().is_some_and(|&b| b != b'\n'));
    (whole + cut) as u64
}

/// `write` until done, retried on a short write and `EINTR`; any other end gives up.
/// Returns what was not written.
fn write_all<'b>(fd: BorrowedFd<'_>, mut bytes: &'b [u8]) -> &'b [u8] {
    while !bytes.is_empty() {
        match rustix::io::write(fd, bytes) {
            Ok(0) => break,
            Ok(n) => bytes = &bytes[n..],
            Err(Errno::INTR) => {}
            Err(_) => break,
        }
    }
    bytes
}

/// One datagram per line, without its newline. Stops at the first refusal (a full
/// daemon queue gives `EAGAIN`: the rest is dropped, never waited for). Returns the
/// lines not sent and why; a refusal before anything went out reads `CONNREFUSED`.
fn send_datagrams<'b>(fd: BorrowedFd<'_>, lines: &'b [u8]) -> (&'b [u8], Option<Errno>) {
    let mut rest = lines;
    while !rest.is_empty() {
        let end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        let line = &rest[..end];
        if !line.is_empty() {
            loop {
                match rustix::net::send(fd, line, SendFlags::DONTWAIT) {
                    Ok(_) => break,
                    Err(Errno::INTR) => {}
                    // Only a refusal before anything went out is worth a reconnect and retry.
                    Err(Errno::CONNREFUSED | Errno::NOTCONN) if rest.len() == lines.len() => {
                        return (rest, Some(Errno::CONNREFUSED))
                    }
                    Err(e) => return (rest, Some(e)),
                }
            }
        }
        rest = rest.get(end + 1..).unwrap_or_default();
    }
    (rest, None)
}
