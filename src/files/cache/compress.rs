//! Compressed once: the gzip representation of a cached file (`--compress gzip`), made
//! by our own encoder (`crate::deflate`) in bounded slices per loop turn and kept beside
//! the file's bytes until the entry changes: in memory for a file held in the arena, as
//! a `.gz` file in `--compress-cache DIR` for a larger one ([`gz_file`]).
//!
//! Input: a request's wish for the gzip bytes of entry `i` ([`FileCache::gzip`]), and the
//! loop's turns ([`FileCache::compress_turn`]). Output: the compressed bytes of a ready
//! entry ([`FileCache::gzip_body`]); until they are ready the caller sends the identity
//! bytes. It does not choose who gets gzip (`conn::file` does, from `Accept-Encoding`
//! and `--compress-types`). A descriptor entry (a file over `file_max`) is compressed
//! only with `--compress-cache DIR` and `--etag content`, once its content hash is known
//! (it names the `.gz`); its input is read with `preadv2(RWF_NOWAIT)` into the entry's
//! unused arena room, a slice not in the page cache asked for (`WILLNEED`) and read
//! again [`RETRY_MS`] later.
//!
//! Memory: a second arena of `entries × file_max` bytes (16 MiB a worker by default),
//! zero pages resident only as entries fill, allocated once when compression is enabled;
//! one encoder (256 KiB) at a time, made per compression; and one output buffer of
//! `file_max` + 64 KiB made when compression is enabled. So a worker holds at most
//! `entries × file_max` bytes of compressed text. One file is compressed at a time, at
//! most [`SLICE`] input bytes a turn; the others wait in their entries (`Gz::Queued`).
//!
//! Rules: a file under [`MIN_SIZE`] bytes, or whose gzip is not at most 90% of it, stays
//! identity (`Gz::Identity`), and is never tried again until it changes. The output is
//! a pure function of the bytes (the encoder's promise), so its ETag is the identity's
//! with `-gzip` (`ETag::coded`) and is the same on every replica.

use super::gz_file;
use super::FileCache;
use crate::deflate::GzipEncoder;
use crate::site::validators::EtagMode;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::io::Errno;

/// Input bytes compressed in one loop turn (about a millisecond).
pub(crate) const SLICE: usize = 16 * 1024;

/// Smaller files are sent as they are: the gzip header and trailer alone are 18 bytes,
/// and a response head is several hundred.
pub(crate) const MIN_SIZE: u64 = 1024;

/// How long a slice that was not cached is left to the readahead.
const RETRY_MS: u64 = 5;

/// Room the output may use beyond a file's size before it is given up as not shrinking
/// (the encoder emits a block at a time).
const OUT_SLACK: usize = 64 * 1024;

/// An entry's compressed representation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Gz {
    /// Nobody asked yet.
    #[default]
    Untried,
    /// Asked for; waits for [`FileCache::compress_turn`].
    Queued,
    /// `len` bytes at the entry's room in the compressed arena.
    Ready(usize),
    /// Too small or did not shrink: always identity.
    Identity,
}

/// The one compression in progress.
pub(crate) struct Job {
    index: u32,
    /// The entry's load count when the job began (a reloaded entry cancels it).
    loaded: u64,
    enc: GzipEncoder,
    /// Input bytes compressed so far, of `size`.
    fed: u64,
    size: u64,
    /// A large file's anonymous `.gz` in the cache directory, and the bytes written to it.
    sink: Option<(OwnedFd, u64)>,
    /// Not before this time (ms): the input slice was not in the page cache.
    retry_at: u64,
}

/// The compressed arena, the cache directory and the work in progress.
#[derive(Default)]
pub(crate) struct Compressor {
    arena: Vec<u8>,
    out: Vec<u8>,
    /// `--compress-cache DIR`, open.
    dir: Option<OwnedFd>,
    job: Option<Job>,
    queued: u32,
}

/// What one turn's input came to.
enum Input {
    /// `n` bytes are in the entry's room (large) or the arena (small) at `fed`.
    Read(usize),
    /// Not in the page cache: try again later.
    Wait,
    /// The file shrank or failed.
    Failed,
}

impl FileCache {
    /// Enables compression: allocates the compressed arena (untouched pages) and the
    /// output buffer, once; `dir` is `--compress-cache DIR`, open.
    pub(crate) fn with_compression(mut self, dir: Option<OwnedFd>) -> FileCache {
        let n = self.entries.len();
        self.gz.arena = vec![0u8; n * self.file_max];
        self.gz.out = Vec::with_capacity(self.file_max.max(SLICE) + OUT_SLACK);
        self.gz.dir = dir;
        self
    }

    /// The length of entry `index`'s gzip bytes when they are ready; otherwise queues the
    /// entry for compression (once) and returns `None`.
    pub(crate) fn gzip(&mut self, index: u32) -> Option<usize> {
        let content = self.options.validators.etag == EtagMode::Content;
        let e = self.entries.get_mut(index as usize)?;
        let meta = e.meta?;
        if e.gz != Gz::Untried {
            return match e.gz {
                Gz::Ready(len) => Some(len),
                _ => None,
            };
        }
        let large = e.file.is_some();
        e.gz = match (large, self.gz.dir.as_ref(), meta.etag) {
            _ if meta.size < MIN_SIZE || self.gz.arena.is_empty() => Gz::Identity,
            (false, _, _) => Gz::Queued,
            (true, Some(_), None) if content => return None, // asked again once hashed
            (true, Some(dir), Some(tag)) if content => match gz_file::existing(dir.as_fd(), &tag) {
                Some((fd, len)) => {
                    e.gz_fd = Some(fd);
                    Gz::Ready(len as usize)
                }
                None => Gz::Queued,
            },
            _ => Gz::Identity,
        };
        self.gz.queued += u32::from(e.gz == Gz::Queued);
        match e.gz {
            Gz::Ready(len) => Some(len),
            _ => None,
        }
    }

    /// Whether entry `index` will never have gzip bytes (too small, did not shrink, too
    /// large for memory without `--compress-cache`).
    pub(crate) fn gzip_refused(&self, index: u32) -> bool {
        self.entries
            .get(index as usize)
            .is_none_or(|e| e.gz == Gz::Identity || (e.file.is_some() && self.gz.dir.is_none()))
    }

    /// Entry `index`'s gzip bytes in memory (empty unless ready and small).
    pub(crate) fn gzip_body(&self, index: u32) -> &[u8] {
        let len = match self.entries.get(index as usize) {
            Some(e) if e.gz_fd.is_none() => match e.gz {
                Gz::Ready(len) => len,
                _ => return &[],
            },
            _ => return &[],
        };
        let start = index as usize * self.file_max;
        self.gz.arena.get(start..start + len).unwrap_or(&[])
    }

    /// Entry `index`'s `.gz` file in the cache directory, when ready.
    pub(crate) fn gzip_file(&self, index: u32) -> Option<BorrowedFd<'_>> {
        let e = self.entries.get(index as usize)?;
        e.gz_fd.as_ref().map(|f| f.as_fd())
    }

    /// When [`FileCache::compress_turn`] has work (ms; 0: at once).
    #[inline]
    pub(crate) fn compress_wake(&self) -> Option<u64> {
        match &self.gz.job {
            Some(job) => Some(job.retry_at),
            None => (self.gz.queued > 0).then_some(0),
        }
    }

    /// Compresses at most [`SLICE`] input bytes of the current job, starting the next
    /// queued entry's when there is none. Called by the loop once a turn; true when a
    /// file's compression ended in gzip bytes this turn (`steerd_compressions_total`).
    pub(crate) fn compress_turn(&mut self, now_ms: u64) -> bool {
        // `queued` first: a turn with nothing queued costs one compare, not a walk of
        // every entry (`start_job`), which was 1,600 instructions a request.
        if self.gz.job.is_none() && (self.gz.queued == 0 || !self.start_job()) {
            return false;
        }
        let Some(mut job) = self.gz.job.take() else {
            return false;
        };
        let e = &self.entries[job.index as usize];
        if e.gz != Gz::Queued || e.loaded != job.loaded || now_ms < job.retry_at {
            self.gz.job = (e.gz == Gz::Queued && e.loaded == job.loaded).then_some(job);
            return false;
        }
        let n = match self.read_input(&mut job, now_ms) {
            Input::Read(n) => n,
            Input::Wait => {
                self.gz.job = Some(job);
                return false;
            }
            Input::Failed => return self.end_job(job.index, Gz::Identity),
        };
        let start = job.index as usize * self.file_max;
        let input = match job.sink {
            None => &self.arena[start + job.fed as usize..][..n],
            Some(_) => &self.arena[start..start + n],
        };
        job.enc.write(input, &mut self.gz.out);
        job.fed += n as u64;
        if !self.flush(job.sink.as_mut(), job.size) {
            return self.end_job(job.index, Gz::Identity);
        }
        if job.fed < job.size {
            self.gz.job = Some(job);
            return false;
        }
        self.finish(job)
    }

    /// The next slice of the job's input: in the arena already (small), or read into
    /// the entry's room without waiting for the disk (large).
    fn read_input(&mut self, job: &mut Job, now_ms: u64) -> Input {
        let want = (job.size - job.fed).min(SLICE.min(self.file_max) as u64) as usize;
        let e = &self.entries[job.index as usize];
        let Some(file) = e.file.as_ref().filter(|_| job.sink.is_some()) else {
            return Input::Read(want);
        };
        let room = &mut self.arena[job.index as usize * self.file_max..][..want];
        let read = match crate::sys::pread_nowait(file.as_fd(), room, job.fed) {
            Err(Errno::OPNOTSUPP | Errno::NOSYS) => rustix::io::pread(file, &mut *room, job.fed),
            other => other,
        };
        match read {
            Ok(0) | Err(_) if !matches!(read, Err(Errno::AGAIN | Errno::INTR)) => Input::Failed,
            Ok(n) => Input::Read(n),
            Err(_) => {
                let _ = crate::sys::will_need(file.as_fd(), job.fed, want as u64);
                job.retry_at = now_ms + RETRY_MS;
                Input::Wait
            }
        }
    }

    /// Writes a large job's output so far to its file; false when it failed or the
    /// output is no longer at most 90% of the input.
    fn flush(&mut self, sink: Option<&mut (OwnedFd, u64)>, size: u64) -> bool {
        let limit = size - size / 10;
        let Some((sink, written)) = sink else {
            return self.gz.out.len() as u64 <= limit;
        };
        let ok = gz_file::append(sink.as_fd(), &self.gz.out, *written);
        *written += self.gz.out.len() as u64;
        self.gz.out.clear();
        ok && *written <= limit
    }

    /// Ends the deflate stream; the bytes go to the compressed arena (small) or get
    /// their name in the cache directory (large).
    fn finish(&mut self, job: Job) -> bool {
        let Job {
            index,
            enc,
            mut sink,
            size,
            ..
        } = job;
        enc.finish(&mut self.gz.out);
        let len = sink.as_ref().map_or(0, |s| s.1) + self.gz.out.len() as u64;
        if !self.flush(sink.as_mut(), size) {
            return self.end_job(index, Gz::Identity);
        }
        let e = &mut self.entries[index as usize];
        match (sink, self.gz.dir.as_ref(), e.meta.and_then(|m| m.etag)) {
            (None, _, _) => {
                let start = index as usize * self.file_max;
                self.gz.arena[start..][..len as usize].copy_from_slice(&self.gz.out);
            }
            (Some((file, _)), Some(dir), Some(tag)) if gz_file::link(dir.as_fd(), &file, &tag) => {
                e.gz_fd = Some(file);
            }
            _ => return self.end_job(index, Gz::Identity),
        }
        self.stats.compressions += 1;
        self.end_job(index, Gz::Ready(len as usize));
        true
    }

    /// Takes the first queued entry as the job; false when none is queued.
    fn start_job(&mut self) -> bool {
        let Some(index) = self.entries.iter().position(|e| e.gz == Gz::Queued) else {
            self.gz.queued = 0;
            return false;
        };
        let e = &self.entries[index];
        let size = e.meta.map_or(0, |m| m.size);
        let sink = match (e.file.is_some(), self.gz.dir.as_ref()) {
            (false, _) => None,
            (true, Some(dir)) => match gz_file::anonymous(dir.as_fd()) {
                Ok(fd) => Some((fd, 0)),
                Err(_) => {
                    self.end_job(index as u32, Gz::Identity);
                    return false;
                }
            },
            (true, None) => {
                self.end_job(index as u32, Gz::Identity);
                return false;
            }
        };
        self.gz.out.clear();
        self.gz.job = Some(Job {
            index: index as u32,
            loaded: self.entries[index].loaded,
            enc: GzipEncoder::new(),
            fed: 0,
            size,
            sink,
            retry_at: 0,
        });
        true
    }

    /// Records how entry `index`'s compression ended; false (no gzip bytes were made
    /// this turn, for [`FileCache::compress_turn`]'s answer).
    fn end_job(&mut self, index: u32, gz: Gz) -> bool {
        self.entries[index as usize].gz = gz;
        self.gz.queued = self.gz.queued.saturating_sub(1);
        self.gz.out.clear();
        false
    }
}
