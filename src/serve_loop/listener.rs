//! The serve loop's listener: what it waits for, and its one transition function.
//!
//! Input: the worker's listener and its poller, and the loop's events: an accept that
//! failed (or found the table full), a pause that ran out, a retirement, a stop. Output:
//! the listener's epoll interest (`epoll_ctl`), and whether the loop accepts, resumes or
//! drains. It does not accept: `Loop::accept_batch` does, while this says
//! [`Awaits::Connections`].
//!
//! Each state holds what it needs (a pause its end), so an impossible combination (a
//! paused listener left for good, a draining loop still accepting) cannot be written.

use crate::event::Poller;
use std::os::fd::BorrowedFd;

/// What the listener waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Awaits {
    /// Connections: each listener event accepts (interest set).
    Connections,
    /// The end of a pause at `at` (turn clock) and room in the table: interest cleared,
    /// the queued connections wait in the kernel's backlog.
    Resume { at: u64 },
    /// A stop (the loop is retiring): interest cleared, the successor accepts from the
    /// same socket; a stop accepts the queue once more and leaves.
    Stop,
    /// Nothing: the loop left the listener for good (removed from epoll) and never
    /// touches it again.
    Nothing,
}

/// What happened to the listener.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Event {
    /// An accept failed or the table is full: pause until `until`.
    Pause { until: u64 },
    /// The pause ran out and there is room.
    Due,
    /// A stop: accept what is queued once more (a last call), whatever the state.
    LastCall,
    /// The queue is accepted: leave the listener for good.
    Leave,
    /// Drain (a retirement, or after a stop): accept no more.
    Retire,
}

/// The worker's listener, what it waits for, and how it accepts.
pub(super) struct Listener<'a> {
    pub(super) fd: BorrowedFd<'a>,
    /// Written only by [`Listener::step`].
    awaits: Awaits,
    /// Most connections accepted per listener event (`Tuning::accept_batch`).
    pub(super) batch: usize,
    /// How long accepting pauses (`Tuning::accept_pause`, in ms).
    pub(super) pause_ms: u64,
}

impl<'a> Listener<'a> {
    /// A listener registered with epoll, awaiting connections.
    pub(super) fn new(fd: BorrowedFd<'a>, batch: usize, pause_ms: u64) -> Listener<'a> {
        Listener {
            fd,
            awaits: Awaits::Connections,
            batch,
            pause_ms,
        }
    }

    pub(super) fn awaits(&self) -> Awaits {
        self.awaits
    }

    /// Whether the connections from here on are drained (every response says
    /// `Connection: close`): mirrored into `conn::Ctx::draining`.
    pub(super) fn draining(&self) -> bool {
        matches!(self.awaits, Awaits::Stop | Awaits::Nothing)
    }

    /// The transition function: the listener's next state on `event`, and its epoll
    /// interest kept in step.
    pub(super) fn step(&mut self, event: Event, poller: &Poller) {
        use Awaits::*;
        self.awaits = match (self.awaits, event) {
            // Nothing is never left: the socket is no longer this loop's.
            (Nothing, _) => Nothing,
            // A pause clears the interest, so a level-triggered listener cannot spin.
            (Connections, Event::Pause { until }) => {
                let _ = poller.listener_interest(self.fd, false);
                Resume { at: until }
            }
            (s, Event::Pause { .. }) => s,
            // Resuming needs the interest back; if epoll refuses, the pause goes on.
            (Resume { at }, Event::Due) => match poller.listener_interest(self.fd, true) {
                Ok(()) => Connections,
                Err(_) => Resume { at },
            },
            (s, Event::Due) => s,
            // A stop accepts the queue whatever the state (the interest is not consulted:
            // the loop calls accept4 until EAGAIN).
            (_, Event::LastCall) => Connections,
            // Leaving removes the listener from epoll; the socket stays open for the
            // master and the successors.
            (_, Event::Leave) => {
                let _ = poller.remove_listener(self.fd);
                Nothing
            }
            // Draining clears the interest if it was set.
            (Connections, Event::Retire) => {
                let _ = poller.listener_interest(self.fd, false);
                Stop
            }
            (Resume { .. } | Stop, Event::Retire) => Stop,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::os::fd::AsFd;

    /// Each state's next state on each event, on a listener registered with epoll (so
    /// every interest change succeeds); then a resume epoll refuses, after leaving.
    #[test]
    fn each_state_answers_each_event() {
        use Awaits::*;
        let sock = TcpListener::bind("127.0.0.1:0").unwrap();
        let poller = Poller::new(4).unwrap();
        poller.add_listener(sock.as_fd()).unwrap();
        let at = |awaits: Awaits| Listener {
            awaits,
            ..Listener::new(sock.as_fd(), 1, 1)
        };
        let step = |from: Awaits, event: Event| {
            let mut l = at(from);
            l.step(event, &poller);
            l.awaits
        };
        let paused = Resume { at: 7 };
        let cases = [
            (Connections, Event::Pause { until: 7 }, paused),
            (Connections, Event::Due, Connections),
            (Connections, Event::LastCall, Connections),
            (Connections, Event::Retire, Stop),
            (paused, Event::Pause { until: 9 }, paused),
            (paused, Event::Due, Connections),
            (paused, Event::LastCall, Connections),
            (paused, Event::Retire, Stop),
            (Stop, Event::Pause { until: 9 }, Stop),
            (Stop, Event::Due, Stop),
            (Stop, Event::LastCall, Connections),
            (Stop, Event::Retire, Stop),
            (Nothing, Event::Pause { until: 9 }, Nothing),
            (Nothing, Event::Due, Nothing),
            (Nothing, Event::LastCall, Nothing),
            (Nothing, Event::Leave, Nothing),
            (Nothing, Event::Retire, Nothing),
        ];
        for (from, event, to) in cases {
            assert_eq!(step(from, event), to, "{from:?} on {event:?}");
        }
        for from in [Connections, paused, Stop] {
            let mut l = at(from);
            l.step(Event::Leave, &poller);
            assert_eq!(l.awaits, Nothing, "{from:?} leaves");
            assert!(l.draining(), "a listener left drains");
            poller.add_listener(sock.as_fd()).unwrap();
        }
        assert!(at(Stop).draining() && !at(paused).draining() && !at(Connections).draining());
        // Not registered: the interest cannot come back, so the pause goes on.
        poller.remove_listener(sock.as_fd()).unwrap();
        assert_eq!(step(paused, Event::Due), paused);
    }
}
