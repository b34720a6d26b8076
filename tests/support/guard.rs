//! A test buffer that ends right before an unreadable page, so any read past the end of
//! the input faults (the parser tests feed every prefix of a request through it).
//!
//! Test support only; the serving path never maps guard pages.
#![allow(unsafe_code)]

/// A copy of some bytes placed so that they end exactly where a `PROT_NONE` page begins:
/// any read one byte past the end faults. Used by the parser tests: a scan that
/// reads past its input crashes the test instead of passing by luck.
pub(crate) struct GuardedBuf {
    map: *mut core::ffi::c_void,
    map_len: usize,
    start: usize,
    len: usize,
}

impl GuardedBuf {
    /// `mmap` readable pages plus one more, copy `bytes` to the end of the readable part,
    /// then `mprotect(PROT_NONE)` the last page (mmap(2), mprotect(2)).
    pub(crate) fn new(bytes: &[u8]) -> rustix::io::Result<Self> {
        use rustix::mm::{mmap_anonymous, mprotect, MapFlags, MprotectFlags, ProtFlags};
        let page = rustix::param::page_size();
        let readable = bytes.len().div_ceil(page).max(1) * page;
        let map_len = readable + page;
        // SAFETY: a fresh anonymous private mapping at an address the kernel picks
        // (null hint) cannot alias any Rust object.
        let map = unsafe {
            mmap_anonymous(
                core::ptr::null_mut(),
                map_len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE,
            )?
        };
        let guarded = Self {
            map,
            map_len,
            start: readable - bytes.len(),
            len: bytes.len(),
        };
        // SAFETY: `map` is `map_len` bytes of our own mapping, readable and writable;
        // `start + len == readable <= map_len`, so the range written lies inside it.
        let dest = unsafe {
            core::slice::from_raw_parts_mut(map.cast::<u8>().add(guarded.start), bytes.len())
        };
        dest.copy_from_slice(bytes);
        // SAFETY: `map + readable` is page-aligned and the page after it belongs to our
        // mapping; no Rust reference points into that page.
        unsafe {
            mprotect(
                map.cast::<u8>().add(readable).cast(),
                page,
                MprotectFlags::empty(),
            )?
        };
        Ok(guarded)
    }

    /// The bytes, ending right before the guard page.
    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: `start..start + len` lies in the readable part of our live mapping,
        // initialised by `new`, and nothing writes to it while `self` is borrowed.
        unsafe { core::slice::from_raw_parts(self.map.cast::<u8>().add(self.start), self.len) }
    }
}

impl Drop for GuardedBuf {
    fn drop(&mut self) {
        // SAFETY: `map`/`map_len` are exactly the mapping made in `new`, and no slice
        // from `as_slice` outlives `self`.
        let _ = unsafe { rustix::mm::munmap(self.map, self.map_len) };
    }
}
