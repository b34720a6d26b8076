//! Logging: `say!` writes one `steerd: ...` line to stderr.
//!
//! Input: a formatted line. Output: one `write(2)` on stderr. It does not buffer, filter
//! or timestamp; the access log is `access_log.rs`.

/// `say!("worker {i} ...")`: one `steerd: ...` line on stderr through [`log_line`].
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::say::log_line(&format!($($arg)*))
    };
}

/// `write(2, "steerd: " + line + "\n")` in one call, so lines from the master and its
/// workers sharing one stderr pipe never interleave (a pipe write of at most `PIPE_BUF`
/// bytes is atomic, pipe(7)). Errors are ignored: there is nowhere else to report them.
pub fn log_line(line: &str) {
    use std::io::Write;
    let mut buf = Vec::with_capacity(line.len() + 9);
    buf.extend_from_slice(b"steerd: ");
    buf.extend_from_slice(line.as_bytes());
    buf.push(b'\n');
    let _ = std::io::stderr().lock().write_all(&buf);
}

/// An error's text for a one-line message: without the ` (os error N)` that `io::Error`
/// appends (`Permission denied`, not `Permission denied (os error 13)`).
pub fn plain(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// How a child process ended, for a log line: `killed by signal N`, `exited with status
/// N`.
pub fn ended(status: rustix::process::WaitStatus) -> String {
    if let Some(sig) = status.terminating_signal() {
        format!("killed by signal {sig}")
    } else if let Some(code) = status.exit_status() {
        format!("exited with status {code}")
    } else {
        "ended".to_string()
    }
}
