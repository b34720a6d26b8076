//! Named threads with a bounded stack (the disk's I/O threads, the access log's writer),
//! all started through one function that is not generic, so that the binary holds one
//! copy of std's spawning code rather than one per kind of thread.

/// Starts `main` on a thread named `name` with a stack of `stack` bytes; whether it
/// started.
pub(crate) fn start(name: &str, stack: usize, main: Box<dyn FnOnce() + Send>) -> bool {
    std::thread::Builder::new()
        .name(name.into())
        .stack_size(stack)
        .spawn(main)
        .is_ok()
}
