//! A file log's writer off the loop: one thread per worker that writes the buffers the
//! loop hands it, so a disk that stalls (a hung NFS server, a dying SD card, a FUSE
//! mount) stalls only this thread, never the connections.
//!
//! Input: full buffers of whole lines and reopen requests, in the order the loop made
//! them. Output: the same lines at the [`Dest`], in that order; lines the bound left no
//! room for, and lines a write failed on, counted ([`Writer::take_dropped`]).
//!
//! Bounds: the loop fills one buffer while [`QUEUED`] more are with the writer (queued
//! or being written), all allocated at start, swapped, never copied: a buffer handed
//! over comes back on the free list once written. With none free the loop's buffer is
//! dropped whole (its lines counted) and refilled: the newest lines go, so the order of
//! those kept holds. The free list is a stack, so a writer that keeps up cycles through
//! the loop's buffer and one of its own.
//!
//! Why a thread of its own and not the disk's I/O threads: a stalled write would hold
//! one of those two threads (two stalled flushes, both), and the file reads of every
//! connection would wait behind the log; lines must also go out in order, which one
//! thread gives for free.
//!
//! At exit ([`Writer::finish`]) the thread writes what is queued and ends; the loop
//! waits for it at most [`CLOSE_WAIT`] (less than the master's slack past
//! `--shutdown-timeout`), then counts what is still queued as dropped and exits.

use super::dest::{count_lines, Dest};
use arrayvec::ArrayVec;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Buffers with the writer at most (queued or being written), besides the loop's own.
pub(crate) const QUEUED: usize = 3;
/// The writer thread's stack.
pub(crate) const STACK: usize = 64 << 10;
/// How long a worker's exit waits for its queued lines to be written.
pub(crate) const CLOSE_WAIT: Duration = Duration::from_millis(500);

/// What the loop asks of the writer, in order.
enum Job {
    /// Write the first `len` bytes of the buffer, then give it back.
    Lines(Box<[u8]>, usize),
    /// Open the destination again (a rotation moved the file).
    Reopen,
}

/// The queue, the free buffers and the writer's state, under one lock.
struct State {
    /// `QUEUED` buffers and a reopen after each at most (two reopens in a row are one).
    jobs: ArrayVec<Job, { 2 * QUEUED + 1 }>,
    free: ArrayVec<Box<[u8]>, QUEUED>,
    /// The destination until the thread takes it (and if it never started).
    dest: Option<Dest>,
    /// The thread is writing a job it took off the queue.
    busy: bool,
    /// The loop is gone: write what is queued, then end.
    closed: bool,
}

struct Shared {
    state: Mutex<State>,
    /// The writer waits here for jobs.
    more: Condvar,
    /// Lines the writer could not write whole.
    dropped: AtomicU64,
}

/// Locks `m`; a poisoned lock (the writer cannot panic here, but if it did) is used as is.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The loop's side of the writer.
pub(crate) struct Writer {
    shared: Arc<Shared>,
    /// [`Writer::finish`] has run.
    finished: bool,
}

impl Writer {
    /// Starts the thread with `dest` and [`QUEUED`] buffers of `size` bytes; gives `dest`
    /// back if the thread cannot start (the loop then writes it itself).
    pub(crate) fn start(dest: Dest, size: usize) -> Result<Writer, Dest> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                jobs: ArrayVec::new(),
                free: (0..QUEUED)
                    .map(|_| vec![0; size].into_boxed_slice())
                    .collect(),
                dest: Some(dest),
                busy: false,
                closed: false,
            }),
            more: Condvar::new(),
            dropped: AtomicU64::new(0),
        });
        let theirs = Arc::clone(&shared);
        match crate::small_thread::start("steerd-log", STACK, Box::new(move || serve(&theirs))) {
            true => Ok(Writer {
                shared,
                finished: false,
            }),
            false => Err(lock(&shared.state).dest.take().unwrap_or(Dest::Off)),
        }
    }

    /// Hands the first `len` bytes of `buf` to the writer, putting a free buffer in its
    /// place; with none free the lines are dropped instead: returns how many.
    pub(crate) fn hand(&self, buf: &mut Box<[u8]>, len: usize) -> u64 {
        let mut state = lock(&self.shared.state);
        let Some(empty) = state.free.pop() else {
            return count_lines(&buf[..len]);
        };
        let full = core::mem::replace(buf, empty);
        // Room is certain: a buffer is free, so fewer than `QUEUED` are queued.
        let _ = state.jobs.try_push(Job::Lines(full, len));
        drop(state);
        self.shared.more.notify_one();
        0
    }

    /// Asks the writer to open the destination again once the lines before are written.
    pub(crate) fn reopen(&self) {
        let mut state = lock(&self.shared.state);
        if !matches!(state.jobs.last(), Some(Job::Reopen)) {
            let _ = state.jobs.try_push(Job::Reopen);
        }
        drop(state);
        self.shared.more.notify_one();
    }

    /// Lines the writer dropped since the last call.
    pub(crate) fn take_dropped(&self) -> u64 {
        self.shared.dropped.swap(0, Relaxed)
    }

    /// Waits (at most `within`, looking every millisecond: only at exit and in tests)
    /// until everything handed over is written.
    pub(crate) fn settle(&self, within: Duration) -> bool {
        let end = Instant::now() + within;
        loop {
            let state = lock(&self.shared.state);
            if state.jobs.is_empty() && !state.busy {
                return true;
            }
            drop(state);
            if Instant::now() >= end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Ends the writer once what is queued is written, waiting [`CLOSE_WAIT`] at most;
    /// lines still queued then are counted as dropped ([`Writer::take_dropped`]). The
    /// thread ends by itself once the queue is empty.
    pub(crate) fn finish(&mut self) {
        if core::mem::replace(&mut self.finished, true) {
            return;
        }
        lock(&self.shared.state).closed = true;
        self.shared.more.notify_one();
        if self.settle(CLOSE_WAIT) {
            return;
        }
        let mut state = lock(&self.shared.state);
        for job in state.jobs.drain(..) {
            if let Job::Lines(buf, len) = job {
                let lost = count_lines(&buf[..len]);
                self.shared.dropped.fetch_add(lost, Relaxed);
            }
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The writer thread: each job in turn, until the loop is gone and the queue empty.
fn serve(shared: &Shared) {
    let Some(mut dest) = lock(&shared.state).dest.take() else {
        return;
    };
    while let Some(job) = next_job(shared) {
        match job {
            Job::Lines(buf, len) => {
                let lost = dest.write(&buf[..len]);
                shared.dropped.fetch_add(lost, Relaxed);
                let mut state = lock(&shared.state);
                // Room is certain: this buffer came from the free list.
                let _ = state.free.try_push(buf);
                state.busy = false;
            }
            Job::Reopen => {
                // A failed open keeps the old file, as on the loop.
                let _ = dest.reopen();
                lock(&shared.state).busy = false;
            }
        }
    }
}

/// The oldest job (the writer busy with it from now on); `None` once the loop is gone
/// and nothing is queued.
fn next_job(shared: &Shared) -> Option<Job> {
    let mut state = lock(&shared.state);
    loop {
        if !state.jobs.is_empty() {
            state.busy = true;
            return Some(state.jobs.remove(0));
        }
        if state.closed {
            return None;
        }
        state = shared.more.wait(state).unwrap_or_else(|e| e.into_inner());
    }
}
