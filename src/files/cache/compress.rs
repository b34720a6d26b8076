//! Compressed once: the gzip representation of a small cached file (`--compress gzip`),
//! made by our own encoder (`crate::deflate`) in bounded slices per loop turn and kept
//! beside the file's bytes until the entry changes.
//!
//! Input: a request's wish for the gzip bytes of entry `i` ([`FileCache::gzip`]), and the
//! loop's turns ([`FileCache::compress_turn`]). Output: the compressed bytes of a ready
//! entry ([`FileCache::gzip_body`]); until they are ready the caller sends the identity
//! bytes. It does not choose who gets gzip (`conn::file` does, from `Accept-Encoding`
//! and `--compress-types`) and never compresses a descriptor entry (a file over
//! `file_max`).
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

use super::FileCache;
use crate::deflate::GzipEncoder;

/// Input bytes compressed in one loop turn (about a millisecond).
pub(crate) const SLICE: usize = 16 * 1024;

/// Smaller files are sent as they are: the gzip header and trailer alone are 18 bytes,
/// and a response head is several hundred.
pub(crate) const MIN_SIZE: u64 = 1024;

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
    fed: usize,
}

/// The compressed arena and the work in progress.
#[derive(Default)]
pub(crate) struct Compressor {
    arena: Vec<u8>,
    out: Vec<u8>,
    job: Option<Job>,
    queued: u32,
}

impl FileCache {
    /// Enables compression: allocates the compressed arena (untouched pages) and the
    /// output buffer, once.
    pub(crate) fn with_compression(mut self) -> FileCache {
        let n = self.entries.len();
        self.gz.arena = vec![0u8; n * self.file_max];
        self.gz.out = Vec::with_capacity(self.file_max + OUT_SLACK);
        self
    }

    /// The length of entry `index`'s gzip bytes when they are ready; otherwise queues the
    /// entry for compression (once) and returns `None`.
    pub(crate) fn gzip(&mut self, index: u32) -> Option<usize> {
        let e = self.entries.get_mut(index as usize)?;
        let small = e.file.is_none() && e.meta.is_some_and(|m| m.size >= MIN_SIZE);
        match e.gz {
            Gz::Ready(len) => Some(len),
            Gz::Untried if small && !self.gz.arena.is_empty() => {
                e.gz = Gz::Queued;
                self.gz.queued += 1;
                None
            }
            Gz::Untried => {
                e.gz = Gz::Identity;
                None
            }
            Gz::Queued | Gz::Identity => None,
        }
    }

    /// Whether entry `index` will never have gzip bytes (too small, did not shrink, too
    /// large for the arena).
    pub(crate) fn gzip_refused(&self, index: u32) -> bool {
        self.entries
            .get(index as usize)
            .is_none_or(|e| e.gz == Gz::Identity || e.file.is_some())
    }

    /// Entry `index`'s gzip bytes (empty unless ready).
    pub(crate) fn gzip_body(&self, index: u32) -> &[u8] {
        let len = match self.entries.get(index as usize).map(|e| e.gz) {
            Some(Gz::Ready(len)) => len,
            _ => return &[],
        };
        let start = index as usize * self.file_max;
        self.gz.arena.get(start..start + len).unwrap_or(&[])
    }

    /// Whether [`FileCache::compress_turn`] has work.
    pub(crate) fn compress_pending(&self) -> bool {
        self.gz.job.is_some() || self.gz.queued > 0
    }

    /// Compresses at most [`SLICE`] bytes of the current job, starting the next queued
    /// entry's when there is none. Called by the loop once a turn; true when a file's
    /// compression ended in gzip bytes this turn (`steerd_compressions_total`).
    pub(crate) fn compress_turn(&mut self) -> bool {
        if self.gz.job.is_none() && !self.start_job() {
            return false;
        }
        let Some(mut job) = self.gz.job.take() else {
            return false;
        };
        let e = &self.entries[job.index as usize];
        let meta = match e.meta {
            Some(m) if e.gz == Gz::Queued && e.loaded == job.loaded => m,
            _ => return false,
        };
        let size = meta.size as usize;
        let start = job.index as usize * self.file_max;
        let input = &self.arena[start..start + size];
        let end = (job.fed + SLICE).min(size);
        job.enc.write(&input[job.fed..end], &mut self.gz.out);
        job.fed = end;
        let limit = size - size / 10;
        if self.gz.out.len() > limit {
            self.end_job(job.index, Gz::Identity);
            return false;
        }
        if job.fed < size {
            self.gz.job = Some(job);
            return false;
        }
        job.enc.finish(&mut self.gz.out);
        let len = self.gz.out.len();
        if len > limit {
            self.end_job(job.index, Gz::Identity);
            return false;
        }
        self.gz.arena[start..start + len].copy_from_slice(&self.gz.out);
        self.stats.compressions += 1;
        self.end_job(job.index, Gz::Ready(len));
        true
    }

    /// Takes the first queued entry as the job; false when none is queued.
    fn start_job(&mut self) -> bool {
        let Some(index) = self.entries.iter().position(|e| e.gz == Gz::Queued) else {
            self.gz.queued = 0;
            return false;
        };
        self.gz.out.clear();
        self.gz.job = Some(Job {
            index: index as u32,
            loaded: self.entries[index].loaded,
            enc: GzipEncoder::new(),
            fed: 0,
        });
        true
    }

    fn end_job(&mut self, index: u32, gz: Gz) {
        self.entries[index as usize].gz = gz;
        self.gz.queued = self.gz.queued.saturating_sub(1);
        self.gz.out.clear();
    }
}
