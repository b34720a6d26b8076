//! A tunnel's bytes through a pipe (`splice(2)`), one direction at a time: from a socket
//! into the direction's pipe, from the pipe into the other socket, never through user
//! memory.
//!
//! Input: the two sockets of a direction and their readiness hints. Output: how many
//! bytes reached the receiving socket, and whether the sender ended. A direction's pipe
//! is made on its first use (`pipe2(O_NONBLOCK|O_CLOEXEC)`: two descriptors, up to the
//! default 64 KiB of pipe pages while it holds bytes) and closed with the exchange.
//! Bytes left in the pipe when the receiver would block stay there and go first on the
//! next turn; the sender is read only while its pipe is empty, so an end of input is
//! seen only once everything before it was delivered.
//!
//! It does not copy: when no pipe can be made (`EMFILE`) or the kernel refuses a socket
//! (`EINVAL`: no `splice_read`) before a byte went through, the tunnel is switched back
//! to the copying path for good (`tunnel.rs`). Required reading: splice(2), pipe(7).

use rustix::fd::{BorrowedFd, OwnedFd};
use rustix::io::Errno;
use rustix::pipe::{pipe_with, splice, PipeFlags, SpliceFlags};

/// Bytes asked of one `splice` into a pipe (the default pipe capacity).
const CHUNK: usize = 1 << 16;

/// One direction's pipe and the bytes it holds.
struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    held: usize,
}

/// What one turn of a direction did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Flow {
    /// These bytes reached the receiver (more may follow).
    Moved(usize),
    /// The receiver would block with bytes in the pipe.
    Blocked,
    /// The sender has nothing now (its hint is cleared).
    Idle,
    /// The sender ended (its pipe is empty).
    Ended,
    /// A socket failed.
    Failed,
    /// Splice is not usable: copy instead.
    Copy,
}

/// A tunnel's pipes: toward the upstream and toward the client.
#[derive(Default)]
pub(super) struct Pipes {
    up: Option<Pipe>,
    down: Option<Pipe>,
    /// Splice was refused once: the tunnel copies.
    off: bool,
    /// Bytes spliced to the client in the last step, for the client's count.
    pub(super) spliced: usize,
    /// The client would block with bytes in the pipe toward it.
    pub(super) blocked: bool,
    /// A side ended: the pipes are drained, nothing more is read.
    pub(super) ending: bool,
}

impl Pipes {
    /// Whether a pipe holds bytes its receiver has not taken.
    pub(super) fn holding(&self) -> bool {
        self.held_down() || self.up.as_ref().is_some_and(|p| p.held > 0)
    }

    /// Whether the pipe toward the client holds bytes.
    pub(super) fn held_down(&self) -> bool {
        self.down.as_ref().is_some_and(|p| p.held > 0)
    }

    /// Whether the tunnel splices (else it copies).
    pub(super) fn on(&self) -> bool {
        !self.off
    }

    /// One turn toward the upstream: the client's bytes from `from` to `to`.
    pub(super) fn upward(&mut self, from: Ends<'_, '_>) -> Flow {
        let flow = turn(&mut self.up, from);
        self.note(flow)
    }

    /// One turn toward the client: the upstream's bytes from `from` to `to`.
    pub(super) fn downward(&mut self, from: Ends<'_, '_>) -> Flow {
        let flow = turn(&mut self.down, from);
        self.note(flow)
    }

    /// A refusal switches the tunnel to copying and closes its pipes, when they are
    /// empty; with bytes held the other way it ends the tunnel (never seen in practice:
    /// a kernel refuses a socket on its first splice).
    fn note(&mut self, flow: Flow) -> Flow {
        if flow != Flow::Copy {
            return flow;
        }
        if self.holding() {
            return Flow::Failed;
        }
        (self.off, self.up, self.down) = (true, None, None);
        Flow::Copy
    }
}

/// A direction's sockets: the sender with its readable hint, and the receiver.
pub(super) struct Ends<'a, 'h> {
    pub(super) from: BorrowedFd<'a>,
    pub(super) readable: &'h mut bool,
    pub(super) to: BorrowedFd<'a>,
}

/// Drains the pipe into the receiver, then (once it is empty) fills it from the sender:
/// one fill and one drain at most, so both directions take turns.
fn turn(slot: &mut Option<Pipe>, ends: Ends<'_, '_>) -> Flow {
    if slot.is_none() {
        if !*ends.readable {
            return Flow::Idle;
        }
        match make() {
            Some(p) => *slot = Some(p),
            None => return Flow::Copy,
        }
    }
    let Some(pipe) = slot else {
        return Flow::Copy;
    };
    if pipe.held == 0 {
        if !*ends.readable {
            return Flow::Idle;
        }
        match splice(ends.from, None, &pipe.write, None, CHUNK, flags()) {
            Ok(0) => return Flow::Ended,
            Ok(n) => pipe.held = n,
            Err(Errno::INTR) => return Flow::Moved(0),
            Err(Errno::AGAIN) => {
                *ends.readable = false;
                return Flow::Idle;
            }
            Err(Errno::INVAL) => return Flow::Copy,
            Err(_) => return Flow::Failed,
        }
    }
    drain(pipe, ends.to)
}

/// Moves what the pipe holds into `to`.
fn drain(pipe: &mut Pipe, to: BorrowedFd<'_>) -> Flow {
    match splice(&pipe.read, None, to, None, pipe.held, flags()) {
        Ok(n) => {
            pipe.held -= n;
            Flow::Moved(n)
        }
        Err(Errno::INTR) => Flow::Moved(0),
        Err(Errno::AGAIN) => Flow::Blocked,
        Err(_) => Flow::Failed,
    }
}

/// Nonblocking on the pipe's side (the sockets are nonblocking themselves); pages moved
/// rather than copied where the kernel can.
fn flags() -> SpliceFlags {
    SpliceFlags::NONBLOCK | SpliceFlags::MOVE
}

/// A direction's pipe, or `None` when none can be made (the descriptor limit).
fn make() -> Option<Pipe> {
    let (read, write) = pipe_with(PipeFlags::NONBLOCK | PipeFlags::CLOEXEC).ok()?;
    Some(Pipe {
        read,
        write,
        held: 0,
    })
}
