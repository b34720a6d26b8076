//! Disk reads off the loop: a worker's I/O threads (nginx's `aio threads`).
//!
//! Stage: beside the connection state machine. Input: a file body about to be sent
//! (`conn`), and completions from the threads. Output: how far the body's pages are known
//! to be in the page cache (the body's `cached` offset), which bounds every `sendfile`
//! the loop makes, so that a `sendfile` never waits for the disk.
//!
//! How: before sending past `cached`, [`Disk::ensure`] asks the page cache with
//! `preadv2(RWF_NOWAIT)` (`sys::pread_nowait`) into a [`PROBE`] buffer: a hit moves
//! `cached` by what it returned (the same `sendfile` then follows); a miss hands a window
//! of [`WINDOW`] bytes to the worker's [`THREADS`] I/O threads, which `pread` it (bringing
//! its pages into the page cache) and say so on a completion list and an eventfd in the
//! loop's epoll. The two lists are `Mutex`es over fixed `ArrayVec`s and a `Condvar` wakes
//! the threads: nothing is allocated after the threads start. The connection waits for
//! its read ([`Ready::Reading`]) and resumes on [`Disk::take_done`]. A body that once
//! waited then keeps one window read ahead of the socket. A directory listing has its
//! directory read whole by a thread before its first piece ([`Disk::warm_dir`]).
//!
//! Bounds: one read a connection at a time, so readahead is at most [`WINDOW`] a
//! connection, and at most [`QUEUE`] reads outstanding a worker (beyond, [`Ready::Busy`]:
//! the connection parks, its slot on a waiting list of one entry a slot at most, and the
//! loop drives it again as completions make room, [`Disk::next_waiting`]); each thread
//! owns a [`READ_BUF`] buffer and a [`STACK`] stack. The threads start at the first miss,
//! so after the worker pinned itself (they inherit its CPU), and never for a worker whose
//! files stay cached. A read that fails completes with what it got; the connection then
//! `sendfile`s as before and meets the error there.
//!
//! Limits: `RWF_NOWAIT` unsupported (`EOPNOTSUPP`, before Linux 4.14; `ENOSYS` without
//! `preadv2`, then never asked again) or threads that cannot start: the body is sent as
//! before, waiting on the loop. Pages evicted between the read and the `sendfile` are
//! read again on the loop.
//!
//! It does not decide what to send, and never touches a socket.

use crate::sys::pread_nowait;
use arrayvec::ArrayVec;
use core::mem::MaybeUninit;
use rustix::event::{eventfd, EventfdFlags};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags, RawDir};
use rustix::io::Errno;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// I/O threads a worker starts at its first miss.
pub(crate) const THREADS: usize = 2;
/// Reads a worker has outstanding at most (queued or being read).
pub(crate) const QUEUE: usize = 64;
/// Bytes one hand-off reads: what a connection's reading runs ahead of its socket.
pub(crate) const WINDOW: u64 = 512 << 10;
/// Bytes a thread reads per `pread` (its buffer).
pub(crate) const READ_BUF: usize = 128 << 10;
/// An I/O thread's stack.
pub(crate) const STACK: usize = 64 << 10;
/// Bytes one `RWF_NOWAIT` probe asks for (the loop's buffer).
pub(crate) const PROBE: usize = 128 << 10;

/// What a file body's reading went through, beside the offset up to which its pages are
/// known cached (`cached`, kept in the body itself: `sendfile` goes no further). Four
/// bytes, so that the response in flight, and with it every connection slot, stays the
/// size it was: the sequence number of the read under way (0: none), then two flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pages(u32);

/// [`Pages`]: the body waited for the disk once (it reads ahead from then on).
const WAITED: u32 = 1 << 30;
/// [`Pages`]: `cached` came from the file cache's word, not from probes.
const TRUSTED: u32 = 1 << 31;
/// [`Pages`]: the bits of the sequence number.
const SEQ: u32 = WAITED - 1;

impl Pages {
    /// Notes that the body was trusted to be cached whole (a cache entry found wholly
    /// cached lately, `FileCache::resident`).
    pub(crate) fn trust(&mut self) {
        self.0 |= TRUSTED;
    }

    /// The sequence number of the read under way, if any.
    fn reading(self) -> Option<u32> {
        Some(self.0 & SEQ).filter(|&s| s != 0)
    }

    /// A read for it is under way.
    pub(crate) fn is_reading(self) -> bool {
        self.reading().is_some()
    }

    /// It waited for the disk once.
    pub(crate) fn waited(self) -> bool {
        self.0 & WAITED != 0
    }

    /// Every byte sent was probed and found cached, none waited for.
    pub(crate) fn all_probed_cached(self) -> bool {
        self.0 == 0
    }
}

/// A file body about to be sent: the file, the next offset, the end.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Span<'a> {
    /// The file.
    pub(crate) file: BorrowedFd<'a>,
    /// The next byte to send.
    pub(crate) at: u64,
    /// The body's end (exclusive).
    pub(crate) end: u64,
}

/// What [`Disk::ensure`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ready {
    /// The pages at the body's offset are cached: send up to [`Pages::resident`].
    Send,
    /// They are being read: wait for the completion.
    Reading,
    /// They are not cached and every read slot is taken: wait for room
    /// ([`Disk::next_waiting`] gives the slot back).
    Busy,
}

/// One window to read, owned by the thread that reads it.
struct Job {
    seq: u32,
    slot: u32,
    file: OwnedFd,
    work: Work,
    queued: Instant,
}

/// What a thread does with a job's file.
#[derive(Clone, Copy, Debug)]
enum Work {
    /// Read `len` bytes from `at` into the page cache.
    Window { at: u64, len: u64 },
    /// Read a directory's entries and `fstatat` each (a listing's first piece then finds
    /// them cached, `crate::listing`).
    Dir,
}

/// A window read: `got` bytes from `at` are in the page cache now.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Done {
    seq: u32,
    /// The connection slot that asked.
    pub(crate) slot: u32,
    at: u64,
    got: u64,
    /// Microseconds from the hand-off to the end of the read.
    pub(crate) waited_us: u64,
}

/// What the loop and its threads share: the reads to do (oldest first), the reads done,
/// and the eventfd that tells the loop. Each list holds at most [`QUEUE`] entries
/// because at most that many reads are outstanding (`Disk::outstanding`).
struct Pool {
    jobs: Mutex<Jobs>,
    more: Condvar,
    done: Mutex<ArrayVec<Done, QUEUE>>,
    wake: Arc<OwnedFd>,
}

/// The reads waiting for a thread; `closed` once the loop is gone (the threads end).
struct Jobs {
    queue: ArrayVec<Job, QUEUE>,
    closed: bool,
}

/// Locks `m`; a poisoned lock (a thread cannot panic here, but if one did) is used as is.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A worker's disk reads: the probe buffer, the eventfd and (once started) the pool.
pub(crate) struct Disk {
    wake: Arc<OwnedFd>,
    pool: Option<Arc<Pool>>,
    /// The threads could not start: bodies are sent as before.
    failed: bool,
    /// The kernel (or an emulator) has no `preadv2`: bodies are sent as before.
    no_preadv2: bool,
    outstanding: usize,
    next_seq: u32,
    probe: Box<[u8]>,
    /// Connection slots that found no room for a read, oldest first (each once; the
    /// capacity, one per slot, is reserved at start).
    waiting: Vec<u32>,
}

impl Disk {
    /// The eventfd the loop polls, the probe buffer and room on the waiting list for
    /// `slots` connections; no thread yet.
    pub(crate) fn new(slots: usize) -> rustix::io::Result<Disk> {
        let wake = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?;
        Ok(Disk {
            wake: Arc::new(wake),
            pool: None,
            failed: false,
            no_preadv2: false,
            outstanding: 0,
            next_seq: 1,
            probe: vec![0; PROBE].into_boxed_slice(),
            waiting: Vec::with_capacity(slots),
        })
    }

    /// The eventfd that becomes readable when reads complete.
    pub(crate) fn wake_fd(&self) -> BorrowedFd<'_> {
        self.wake.as_fd()
    }

    /// Makes sure the body's pages at `s.at` are cached before it is sent from there
    /// (`cached`: how far they are known to be, moved here), handing a read to the
    /// threads on a miss; a body that already waited once reads its next window ahead
    /// while it sends.
    pub(crate) fn ensure(
        &mut self,
        p: &mut Pages,
        cached: &mut u64,
        s: Span<'_>,
        slot: u32,
    ) -> Ready {
        if s.at >= *cached {
            if p.is_reading() {
                return Ready::Reading;
            }
            if self.no_preadv2 {
                *cached = s.end;
                return Ready::Send;
            }
            let want = (s.end - s.at).min(PROBE as u64) as usize;
            match pread_nowait(s.file, &mut self.probe[..want], s.at) {
                Ok(n) if n > 0 => *cached = s.at + n as u64,
                Err(Errno::AGAIN) => return self.hand_off(p, cached, s, slot),
                Err(Errno::NOSYS) => {
                    self.no_preadv2 = true;
                    *cached = s.end;
                }
                // The end of the file, an error, or no `RWF_NOWAIT`: `sendfile` decides.
                _ => *cached = s.end,
            }
        }
        let ahead = *cached - s.at;
        if p.waited() && !p.is_reading() && *cached < s.end && ahead <= WINDOW / 2 {
            let next = Span { at: *cached, ..s };
            let _ = self.hand_off(p, cached, next, slot);
        }
        Ready::Send
    }

    /// Queues the window at `s.at` for the threads: [`Ready::Reading`], or
    /// [`Ready::Busy`] when the queue is full. Without threads the body is sent as before.
    fn hand_off(&mut self, p: &mut Pages, cached: &mut u64, s: Span<'_>, slot: u32) -> Ready {
        let len = (s.end - s.at).min(WINDOW);
        let work = Work::Window { at: s.at, len };
        self.submit(p, s.file, work, slot).unwrap_or_else(|| {
            *cached = s.end;
            Ready::Send
        })
    }

    /// Before a directory listing's first piece: its entries and their inodes are read
    /// by a thread, so that the listing's `getdents64` and `fstatat`s on the loop find them
    /// cached (once a listing; without threads it is listed as before).
    pub(crate) fn warm_dir(&mut self, p: &mut Pages, dir: BorrowedFd<'_>, slot: u32) -> Ready {
        if p.is_reading() {
            return Ready::Reading;
        }
        self.submit(p, dir, Work::Dir, slot).unwrap_or_else(|| {
            p.0 |= WAITED;
            Ready::Send
        })
    }

    /// Queues `work` on `file` for the threads: [`Ready::Reading`], or [`Ready::Busy`]
    /// when there is no room; `None` when no thread can take it.
    fn submit(
        &mut self,
        p: &mut Pages,
        file: BorrowedFd<'_>,
        work: Work,
        slot: u32,
    ) -> Option<Ready> {
        if self.outstanding >= QUEUE {
            return Some(self.wait_for_room(slot));
        }
        let seq = self.next_seq;
        let dup = rustix::io::fcntl_dupfd_cloexec(file, 0).ok()?;
        let pool = self.pool()?;
        let job = Job {
            seq,
            slot,
            file: dup,
            work,
            queued: Instant::now(),
        };
        if lock(&pool.jobs).queue.try_push(job).is_err() {
            return Some(self.wait_for_room(slot));
        }
        pool.more.notify_one();
        self.next_seq = next_seq(seq);
        self.outstanding += 1;
        p.0 = seq | WAITED | (p.0 & TRUSTED);
        Some(Ready::Reading)
    }

    /// Puts `slot` on the waiting list (once): [`Ready::Busy`].
    fn wait_for_room(&mut self, slot: u32) -> Ready {
        let room = self.waiting.len() < self.waiting.capacity();
        if room && !self.waiting.contains(&slot) {
            self.waiting.push(slot);
        }
        Ready::Busy
    }

    /// A slot that waited for room for a read, oldest first, while there is room: the
    /// loop drives it again (a slot closed since just finds nothing to read).
    pub(crate) fn next_waiting(&mut self) -> Option<u32> {
        if self.outstanding >= QUEUE || self.waiting.is_empty() {
            return None;
        }
        Some(self.waiting.remove(0))
    }

    /// The pool, started at the first call (`None` if it could not start).
    fn pool(&mut self) -> Option<&Arc<Pool>> {
        if self.pool.is_none() && !self.failed {
            self.pool = start(&self.wake);
            self.failed = self.pool.is_none();
        }
        self.pool.as_ref()
    }

    /// The next completed read, if any (the eventfd is reset first, so a completion
    /// after the last one taken here wakes the loop again).
    pub(crate) fn take_done(&mut self) -> Option<Done> {
        let pool = self.pool.as_ref()?;
        let done = lock(&pool.done).pop()?;
        self.outstanding = self.outstanding.saturating_sub(1);
        Some(done)
    }

    /// Resets the eventfd (before draining the completions).
    pub(crate) fn reset_wake(&self) {
        let mut v = [0u8; 8];
        let _ = rustix::io::read(&*self.wake, &mut v);
    }
}

/// Applies a completion to the body it was for (`cached` as in [`Disk::ensure`]): `true`
/// if it was (a stale one, for a connection since closed or a response since finished,
/// is ignored).
pub(crate) fn landed(p: &mut Pages, cached: &mut u64, d: &Done) -> bool {
    if p.reading() != Some(d.seq) {
        return false;
    }
    p.0 &= !SEQ;
    if d.got == 0 {
        // Nothing read (an error, the file shrank): `sendfile` meets it.
        *cached = u64::MAX;
    } else if d.at <= *cached {
        *cached = (*cached).max(d.at + d.got);
    }
    true
}

/// The sequence number after `seq`: they run through 1..=SEQ (0 is "none").
fn next_seq(seq: u32) -> u32 {
    seq % SEQ + 1
}

impl Drop for Disk {
    /// Tells the threads to end once their current read is done.
    fn drop(&mut self) {
        if let Some(pool) = &self.pool {
            lock(&pool.jobs).closed = true;
            pool.more.notify_all();
        }
    }
}

/// Starts the threads (each with a bounded stack); `None` if none could start.
fn start(wake: &Arc<OwnedFd>) -> Option<Arc<Pool>> {
    let pool = Arc::new(Pool {
        jobs: Mutex::new(Jobs {
            queue: ArrayVec::new(),
            closed: false,
        }),
        more: Condvar::new(),
        done: Mutex::new(ArrayVec::new()),
        wake: Arc::clone(wake),
    });
    let mut started = 0;
    for _ in 0..THREADS {
        let shared = Arc::clone(&pool);
        let spawned =
            crate::small_thread::start("steerd-io", STACK, Box::new(move || serve(&shared)));
        started += usize::from(spawned);
    }
    (started > 0).then_some(pool)
}

/// An I/O thread: read each window it is given, report it, wake the loop; ends when the
/// loop's side is dropped.
fn serve(pool: &Pool) {
    let mut buf = vec![MaybeUninit::<u8>::uninit(); READ_BUF];
    while let Some(job) = next_job(pool) {
        let (at, got) = match job.work {
            Work::Window { at, len } => (at, read_window(job.file.as_fd(), &mut buf, at, len)),
            Work::Dir => (0, read_dir(job.file.as_fd(), &mut buf)),
        };
        let report = Done {
            seq: job.seq,
            slot: job.slot,
            at,
            got,
            waited_us: job.queued.elapsed().as_micros() as u64,
        };
        drop(job);
        // Room is certain: no more than `QUEUE` reads are outstanding.
        let _ = lock(&pool.done).try_push(report);
        let _ = rustix::io::write(&*pool.wake, &1u64.to_ne_bytes());
    }
}

/// The oldest read waiting, once there is one; `None` when the loop is gone.
fn next_job(pool: &Pool) -> Option<Job> {
    let mut jobs = lock(&pool.jobs);
    loop {
        if jobs.closed {
            return None;
        }
        if !jobs.queue.is_empty() {
            return Some(jobs.queue.remove(0));
        }
        jobs = pool.more.wait(jobs).unwrap_or_else(|e| e.into_inner());
    }
}

/// Reads `len` bytes from `at` (to bring them into the page cache); the bytes read.
fn read_window(file: BorrowedFd<'_>, buf: &mut [MaybeUninit<u8>], at: u64, len: u64) -> u64 {
    let mut got = 0;
    while got < len {
        let want = (len - got).min(buf.len() as u64) as usize;
        match rustix::io::pread(file, &mut buf[..want], at + got) {
            Ok(([], _)) => break,
            Ok((read, _)) => got += read.len() as u64,
            Err(Errno::INTR) => {}
            Err(_) => break,
        }
    }
    got
}

/// Reads every entry of the directory `dir` (through a description of its own, so the
/// listing's offset is not moved) and `fstatat`s each, bringing both into the kernel's
/// caches; 1 plus the entries seen, 0 if it could not be opened.
fn read_dir(dir: BorrowedFd<'_>, buf: &mut [MaybeUninit<u8>]) -> u64 {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let Ok(own) = rustix::fs::openat(dir, c".", flags, Mode::empty()) else {
        return 0;
    };
    let mut entries = RawDir::new(own.as_fd(), buf);
    let mut seen = 1;
    while let Some(Ok(entry)) = entries.next() {
        let name = entry.file_name();
        if name != c"." && name != c".." {
            let _ = rustix::fs::statat(own.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW);
            seen += 1;
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(seq: u32, at: u64, got: u64) -> Done {
        Done {
            seq,
            slot: 0,
            at,
            got,
            waited_us: 0,
        }
    }

    #[test]
    fn a_completion_moves_the_cached_offset_only_for_its_own_read() {
        let mut p = Pages(7 | WAITED);
        let mut cached = 100;
        assert!(p.is_reading() && p.waited());
        assert!(
            !landed(&mut p, &mut cached, &done(6, 100, 50)),
            "another read's"
        );
        assert_eq!(cached, 100);
        assert!(landed(&mut p, &mut cached, &done(7, 100, 50)));
        assert_eq!((cached, p.is_reading(), p.waited()), (150, false, true));
        assert!(!landed(&mut p, &mut cached, &done(7, 100, 80)), "only once");
    }

    #[test]
    fn a_read_that_got_nothing_lets_sendfile_meet_the_error() {
        let mut p = Pages(3 | WAITED);
        let mut cached = 0;
        assert!(landed(&mut p, &mut cached, &done(3, 0, 0)));
        assert_eq!(cached, u64::MAX);
    }

    #[test]
    fn sequence_numbers_skip_zero_and_keep_off_the_flags() {
        assert_eq!(next_seq(1), 2);
        assert_eq!(next_seq(SEQ), 1);
        assert_eq!(next_seq(SEQ) & (WAITED | TRUSTED), 0);
        assert!(Pages::default().all_probed_cached());
        let mut p = Pages::default();
        p.trust();
        assert!(!p.all_probed_cached() && !p.is_reading() && !p.waited());
    }

    #[test]
    fn a_directory_is_read_whole_without_moving_the_listing_offset() {
        let dir = std::env::temp_dir().join(format!("steerd-disk-dir-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..300 {
            std::fs::write(dir.join(format!("entry-{i:03}")), b"x").unwrap();
        }
        let fd = std::fs::File::open(&dir).unwrap();
        let mut buf = vec![MaybeUninit::uninit(); 4096];
        assert_eq!(read_dir(fd.as_fd(), &mut buf), 301, "one plus every entry");
        let mut again = RawDir::new(fd.as_fd(), &mut buf);
        let mut names = 0;
        while let Some(Ok(_)) = again.next() {
            names += 1;
        }
        assert_eq!(
            names, 302,
            "the listing's own offset still at the start (with . and ..)"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_cached_file_is_sent_up_to_what_the_probe_returned() {
        let path = std::env::temp_dir().join(format!("steerd-disk-{}", std::process::id()));
        std::fs::write(&path, vec![7u8; PROBE + 4096]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let mut disk = Disk::new(1).unwrap();
        let (mut p, mut cached) = (Pages::default(), 0);
        let span = Span {
            file: file.as_fd(),
            at: 0,
            end: (PROBE + 4096) as u64,
        };
        match disk.ensure(&mut p, &mut cached, span, 0) {
            // Just written: cached, unless the file system has no `RWF_NOWAIT`.
            Ready::Send => assert!(cached == PROBE as u64 || cached == span.end),
            other => panic!("a cached file was {other:?}"),
        }
        assert!(disk.pool.is_none(), "no thread for a cached file");
        let _ = std::fs::remove_file(&path);
    }
}
