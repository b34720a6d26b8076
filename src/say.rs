//! Logging: `say!` writes one `steerd: ...` line to stderr, and never waits for it.
//!
//! Input: a formatted line. Output: at most one nonblocking write on stderr. It does not
//! buffer, filter or timestamp; the access log is `access_log.rs`.
//!
//! The master supervises workers from one thread, so a diagnostic must never block it: a
//! stderr reader that stops (a log driver that falls behind, a crashed shipper) once left
//! 64 KiB waiting in the pipe and the master blocked in `write(2)`, with dead workers left
//! as zombies, `/health` silent and TERM ignored. So a line that cannot be written now is
//! dropped and counted ([`dropped`], the master's `steerd_log_lines_dropped_total`), and
//! the next line that gets through is preceded by
//! `steerd: (N lines dropped: stderr was full)`. Each process (master, every worker)
//! counts and reports its own drops.
//!
//! How "now" is decided depends on what stderr is ([`Sink`]):
//! - a pipe or FIFO: the line goes through a second open file description of the same pipe,
//!   opened with `O_NONBLOCK` from `/proc/self/fd/2`. Setting `O_NONBLOCK` on fd 2 itself
//!   would change the description shared with whoever else writes to it (a shell, a
//!   supervisor, a program after us), so the flag is set on our own description only. A
//!   write of at most `PIPE_BUF` bytes to a nonblocking pipe is all or `EAGAIN`
//!   (pipe(7)), so lines stay whole and never interleave with the workers'.
//! - a socket (systemd's journal stream): `send(MSG_DONTWAIT)`, nonblocking per call.
//! - without `/proc`: `poll(POLLOUT, 0)` before a blocking write; a pipe is writable only
//!   with a free page, so a line of at most `PIPE_BUF` bytes fits unless another process
//!   fills the page between the two calls.
//! - a regular file or a terminal: a plain write; they accept it (a terminal stopped with
//!   ^S does block, and that is what a terminal user asked for).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// `say!("worker {i} ...")`: one `steerd: ...` line on stderr through [`log_line`].
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::say::log_line(&format!($($arg)*))
    };
}

/// Largest write: a pipe write of at most this many bytes is atomic (pipe(7)).
const PIPE_BUF: usize = 4096;
/// Room kept for the dropped-lines notice in front of a line.
const NOTICE_MAX: usize = 80;
/// What a capped line ends with.
const CUT: &str = " [cut]";

/// Lines this process dropped since it started.
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Lines dropped since the last line that got through (and said so).
static UNREPORTED: AtomicU64 = AtomicU64::new(0);
/// Where lines go, decided at the first line (and inherited by forked workers).
static SINK: OnceLock<Sink> = OnceLock::new();

/// How this process writes to stderr without waiting.
enum Sink {
    /// Stderr is a pipe or FIFO: our own `O_NONBLOCK` description of it.
    Pipe(OwnedFd),
    /// Stderr is a socket: `send(MSG_DONTWAIT)`.
    Socket,
    /// Stderr is a pipe we could not reopen: poll for room first.
    Polled,
    /// Stderr is a file or a terminal (or closed): write.
    Plain,
}

/// Lines this process dropped because stderr could not take them, since it started.
pub(crate) fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// Writes `"steerd: " + line + "\n"` in one nonblocking write (preceded, in the same write,
/// by the dropped-lines notice when lines were dropped). A line that does not fit now is
/// dropped and counted; a line longer than a pipe write can take whole is cut.
pub(crate) fn log_line(line: &str) {
    let unreported = UNREPORTED.swap(0, Ordering::Relaxed);
    let buf = framed(line, unreported);
    let sink = SINK.get_or_init(|| Sink::for_fd(std::io::stderr().as_fd()));
    if !sink.write(&buf) {
        DROPPED.fetch_add(1, Ordering::Relaxed);
        UNREPORTED.fetch_add(unreported + 1, Ordering::Relaxed);
    }
}

/// The bytes of one write: the notice for `unreported` lines (if any), then the line,
/// cut so the whole stays within `PIPE_BUF`.
fn framed(line: &str, unreported: u64) -> Vec<u8> {
    let mut buf = Vec::with_capacity(line.len().min(PIPE_BUF) + NOTICE_MAX + 16);
    if unreported > 0 {
        let notice = format!("steerd: ({unreported} lines dropped: stderr was full)\n");
        buf.extend_from_slice(notice.as_bytes());
    }
    let room = PIPE_BUF - NOTICE_MAX - "steerd: \n".len() - CUT.len();
    buf.extend_from_slice(b"steerd: ");
    if line.len() <= room {
        buf.extend_from_slice(line.as_bytes());
    } else {
        let mut end = room;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        buf.extend_from_slice(&line.as_bytes()[..end]);
        buf.extend_from_slice(CUT.as_bytes());
    }
    buf.push(b'\n');
    buf
}

impl Sink {
    /// Looks at what `fd` (stderr) is and picks how to write to it without waiting.
    fn for_fd(fd: BorrowedFd<'_>) -> Sink {
        use rustix::fs::FileType;
        let Ok(st) = rustix::fs::fstat(fd) else {
            return Sink::Plain;
        };
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Fifo => reopen_nonblocking(&st).map_or(Sink::Polled, Sink::Pipe),
            FileType::Socket => Sink::Socket,
            _ => Sink::Plain,
        }
    }

    /// One write of `buf`; false when it was not taken whole (the line is dropped).
    fn write(&self, buf: &[u8]) -> bool {
        use rustix::io::Errno;
        let stderr = std::io::stderr();
        let fd = stderr.as_fd();
        // EINTR is retried a bounded number of times: a signal must not cost a line, and a
        // storm of them must not hold the master here.
        for _ in 0..4 {
            let written = match self {
                Sink::Pipe(own) => rustix::io::write(own, buf),
                Sink::Socket => rustix::net::send(
                    fd,
                    buf,
                    rustix::net::SendFlags::DONTWAIT | rustix::net::SendFlags::NOSIGNAL,
                ),
                Sink::Polled if !has_room(fd) => return false,
                Sink::Polled | Sink::Plain => write_all(fd, buf).map(|()| buf.len()),
            };
            match written {
                Ok(n) => return n == buf.len(),
                Err(Errno::INTR) => {}
                Err(_) => return false,
            }
        }
        false
    }
}

/// `open("/proc/self/fd/2", O_WRONLY | O_NONBLOCK)`: for a pipe this opens a new open file
/// description of the same pipe (proc(5)), whose flags are ours alone. Checked to be the
/// same pipe as stderr (`st`), so a remapped fd 2 cannot send lines elsewhere.
fn reopen_nonblocking(st: &rustix::fs::Stat) -> Option<OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::WRONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd = rustix::fs::open("/proc/self/fd/2", flags, Mode::empty()).ok()?;
    let again = rustix::fs::fstat(&fd).ok()?;
    (again.st_dev == st.st_dev && again.st_ino == st.st_ino).then_some(fd)
}

/// `poll(fd, POLLOUT, 0)`: true when a write of at most `PIPE_BUF` bytes would not wait.
fn has_room(fd: BorrowedFd<'_>) -> bool {
    use rustix::event::{PollFd, PollFlags};
    let mut fds = [PollFd::from_borrowed_fd(fd, PollFlags::OUT)];
    let zero = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    matches!(rustix::event::poll(&mut fds, Some(&zero)), Ok(1))
        && fds[0].revents().contains(PollFlags::OUT)
}

/// Writes all of `buf` to a file or terminal (a short write continues where it stopped).
fn write_all(fd: BorrowedFd<'_>, mut buf: &[u8]) -> rustix::io::Result<()> {
    while !buf.is_empty() {
        match rustix::io::write(fd, buf)? {
            0 => return Err(rustix::io::Errno::IO),
            n => buf = &buf[n..],
        }
    }
    Ok(())
}

/// An error's text for a one-line message: without the ` (os error N)` that `io::Error`
/// appends (`Permission denied`, not `Permission denied (os error 13)`).
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn plain(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// How a child process ended, for a log line: `killed by signal N`, `exited with status
/// N`.
pub(crate) fn ended(status: rustix::process::WaitStatus) -> String {
    if let Some(sig) = status.terminating_signal() {
        format!("killed by signal {sig}")
    } else if let Some(code) = status.exit_status() {
        format!("exited with status {code}")
    } else {
        "ended".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_framed_and_the_notice_goes_first() {
        assert_eq!(framed("worker 0 up", 0), b"steerd: worker 0 up\n");
        assert_eq!(
            framed("x", 3),
            b"steerd: (3 lines dropped: stderr was full)\nsteerd: x\n"
        );
    }

    #[test]
    fn a_long_line_is_cut_on_a_char_boundary_within_pipe_buf() {
        let long = "é".repeat(PIPE_BUF);
        let buf = framed(&long, u64::MAX);
        assert!(buf.len() <= PIPE_BUF, "{}", buf.len());
        let text = std::str::from_utf8(&buf).expect("still UTF-8");
        assert!(text.ends_with(" [cut]\n"));
    }

    #[test]
    fn a_full_pipe_drops_the_line_without_waiting() {
        let (r, w) = rustix::pipe::pipe().expect("pipe");
        let st = rustix::fs::fstat(&w).expect("fstat");
        // Reopen through this process's fd table entry for `w`, as `for_fd` does for fd 2.
        let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&w));
        let flags = rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::NONBLOCK;
        let Ok(own) = rustix::fs::open(path.as_str(), flags, rustix::fs::Mode::empty()) else {
            crate::test_skip::skip_or_fail(&crate::test_skip::this_test(), "no /proc/self/fd");
            return;
        };
        assert_eq!(rustix::fs::fstat(&own).expect("fstat").st_ino, st.st_ino);
        let sink = Sink::Pipe(own);
        let line = framed("fill", 0);
        let mut taken = 0;
        while sink.write(&line) {
            taken += 1;
            assert!(taken < 1 << 20, "the pipe never filled");
        }
        let mut buf = [0u8; 26];
        assert_eq!(rustix::io::read(&r, &mut buf).expect("read"), 26);
        assert_eq!(&buf, b"steerd: fill\nsteerd: fill\n", "whole lines only");
    }
}
