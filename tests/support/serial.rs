//! Tests that measure time or load run one at a time.
//!
//! The integration tests share one process and run on as many threads as there are CPUs,
//! so a test that floods the server or holds a latency bound would otherwise run beside
//! another that does the same, from another module, on a machine with two CPUs. Each such
//! test holds [`exclusive`] for its whole body; the others run beside it as before.

use std::sync::{Mutex, MutexGuard};

static MEASURING: Mutex<()> = Mutex::new(());

/// Held for the body of a test that measures time or load; a test that failed while
/// holding it does not stop the others (the poison is ignored).
pub(crate) fn exclusive() -> MutexGuard<'static, ()> {
    MEASURING.lock().unwrap_or_else(|e| e.into_inner())
}
