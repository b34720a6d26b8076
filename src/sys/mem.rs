//! Memory mappings: the shared blocks made before fork (the per-worker counters) and the
//! zeroed, lazily resident connection arena, whose unused regions can be given back.
//!
//! Input: sizes. Output: owned mappings that unmap on drop. What goes in them is decided
//! by `stats.rs` and the serve loop; nothing here imports from the rest of the crate.
#![allow(unsafe_code)]

use core::ptr::NonNull;
use std::io;

/// Marks a type for which an all-zero byte pattern is a valid value and which is only
/// ever mutated through atomics, so it may live in a mapping shared across `fork`.
///
/// # Safety
///
/// Implement it only for `#[repr(C)]` types made of atomic integers (and padding): zero
/// bytes must be a valid value, and every mutation must go through an atomic, because other
/// processes write the same pages.
pub(crate) unsafe trait SharedZeroed: Sync {}

/// `n` blocks of `T` in one `MAP_SHARED | MAP_ANONYMOUS` mapping, made before fork so the
/// parent and every child see the same pages (the per-worker counters).
///
/// The kernel zero-fills the pages, a valid `T` by [`SharedZeroed`]'s contract.
pub(crate) struct SharedBlocks<T: SharedZeroed> {
    ptr: NonNull<T>,
    len: usize,
}

impl<T: SharedZeroed> SharedBlocks<T> {
    /// `mmap(NULL, n * size_of::<T>(), PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS, -1, 0)` —
    /// `n` zeroed blocks shared across `fork`.
    ///
    /// Pages are first touched by whoever writes them first (a worker, after pinning), so a
    /// page-aligned block lands on its writer's node. See mmap(2).
    pub(crate) fn new(n: usize) -> io::Result<SharedBlocks<T>> {
        let bytes = Self::bytes(n).ok_or_else(|| io::Error::other("counter mapping too large"))?;
        // SAFETY: a fresh anonymous mapping at an address the kernel picks aliases no
        // existing Rust memory.
        let addr = unsafe {
            rustix::mm::mmap_anonymous(
                core::ptr::null_mut(),
                bytes,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::SHARED,
            )
        }?;
        let ptr =
            NonNull::new(addr.cast::<T>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(SharedBlocks { ptr, len: n })
    }

    fn bytes(n: usize) -> Option<usize> {
        n.max(1).checked_mul(core::mem::size_of::<T>())
    }

    /// Every block, in order.
    pub(crate) fn blocks(&self) -> &[T] {
        // SAFETY: `ptr` is page-aligned (mmap); `T`'s alignment is at most a page for every
        // implementor (the counters block is exactly one page); the mapping holds `len`
        // blocks and lives until drop; zero bytes are a valid `T` and `T` is only mutated
        // through atomics (the `SharedZeroed` contract).
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: SharedZeroed> Drop for SharedBlocks<T> {
    fn drop(&mut self) {
        let bytes = Self::bytes(self.len).unwrap_or(0);
        // SAFETY: the mapping was made by `new` with this exact length and no reference
        // from `blocks` outlives `self`.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), bytes) };
    }
}

/// Bytes of a memory page, from `sysconf(_SC_PAGESIZE)`: libc answers from the auxiliary
/// vector the kernel gave the process, so it works in a worker whose privileges were
/// dropped (rustix's `page_size` may read `/proc/self/auxv` there, which a process made
/// non-dumpable by `setuid` cannot read, and then panics). 4096 if it says nothing usable.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf takes a plain integer and reads no memory of ours.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n)
        .ok()
        .filter(|n| n.is_power_of_two())
        .unwrap_or(4096)
}

/// Asks the kernel to back this process's anonymous memory, and its children's, with base
/// pages only: `prctl(PR_SET_THP_DISABLE, 1)`, inherited across fork and execve. Where
/// transparent huge pages are `always`, a connection arena's first write, or the first
/// element of a table, would fault in a whole huge page (2 MiB on x86-64, on
/// riscv64 and on LPAE armv7), and khugepaged could later fold touched pages into more:
/// the memory a connection costs would depend on the host's setting. See prctl(2).
pub(crate) fn base_pages_only() -> io::Result<()> {
    rustix::thread::disable_transparent_huge_pages(true).map_err(io::Error::from)
}

/// A private anonymous mapping of zero bytes: the serve loop's connection arena.
///
/// Unlike `vec![0; n]` its creation can fail with an error instead of aborting the
/// process, and `MAP_NORESERVE` keeps a large `--max-conns` from being refused by the
/// kernel's overcommit heuristic: pages become resident (on the toucher's node) only when
/// a connection first writes them.
pub(crate) struct ZeroedArena {
    ptr: NonNull<u8>,
    len: usize,
}

impl ZeroedArena {
    /// `mmap(NULL, len, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE)` —
    /// `len` zero bytes, nothing resident yet. See mmap(2).
    pub(crate) fn new(len: usize) -> io::Result<ZeroedArena> {
        let len = len.max(1);
        // SAFETY: a fresh anonymous mapping at an address the kernel picks aliases no
        // existing Rust memory.
        let addr = unsafe {
            rustix::mm::mmap_anonymous(
                core::ptr::null_mut(),
                len,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::PRIVATE | rustix::mm::MapFlags::NORESERVE,
            )
        }?;
        let ptr = NonNull::new(addr.cast::<u8>())
            .ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(ZeroedArena { ptr, len })
    }

    /// Gives the pages lying wholly inside `range` back to the kernel
    /// (`madvise(MADV_DONTNEED)`): they read as zero bytes again, as at creation, and are
    /// resident only once written again. Pages `range` only partly covers stay. See
    /// madvise(2).
    pub(crate) fn release(&mut self, range: core::ops::Range<usize>) {
        let page = page_size();
        let start = range.start.next_multiple_of(page);
        let end = range.end.min(self.len) / page * page;
        if start >= end {
            return;
        }
        // SAFETY: `start..end` lies inside our mapping (`end <= len`), and `&mut self`
        // means no slice from `as_mut_slice` is alive; afterwards the private anonymous
        // pages read as zeros, the arena's initial (and a valid) content.
        let _ = unsafe {
            rustix::mm::madvise(
                self.ptr.as_ptr().add(start).cast(),
                end - start,
                rustix::mm::Advice::LinuxDontNeed,
            )
        };
    }

    /// The whole arena.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `ptr..ptr+len` is our live, readable and writable mapping, zero-filled
        // by the kernel (so initialised), and `&mut self` makes this the only reference.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for ZeroedArena {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by `new` with this exact length and no slice from
        // `as_mut_slice` outlives `self`.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// Gives back the pages lying wholly inside `v`'s spare capacity
/// (`madvise(MADV_DONTNEED)`): after a `truncate`, the removed elements' memory stops
/// being resident, while the capacity, the room to grow again without allocating, stays.
/// See madvise(2).
pub(crate) fn release_spare<T>(v: &mut Vec<T>) {
    let spare = v.spare_capacity_mut();
    let start = spare.as_mut_ptr() as usize;
    let end = start + core::mem::size_of_val(spare);
    let page = page_size();
    let (from, to) = (start.next_multiple_of(page), end / page * page);
    if from >= to {
        return;
    }
    // SAFETY: `from..to` lies inside the Vec's allocation past its length: memory the Vec
    // owns and holds no value in, and `&mut v` excludes every other reference to it. The
    // global allocator's memory is private and anonymous, so the pages only read as
    // zeros afterwards, which nothing reads as a value: the Vec writes an element before
    // it is read.
    let _ = unsafe {
        rustix::mm::madvise(
            from as *mut core::ffi::c_void,
            to - from,
            rustix::mm::Advice::LinuxDontNeed,
        )
    };
}

// SAFETY: the arena owns its mapping exclusively (no aliasing pointer exists elsewhere),
// so moving it to another thread moves sole ownership, as with a Vec<u8>.
unsafe impl Send for ZeroedArena {}
