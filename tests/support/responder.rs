//! A `steerd bench responder` child on a free loopback port, killed (by its PID,
//! through `Child`) when the handle drops.

use std::io::Read;
use std::process::{Child, Command, Stdio};

/// A responder process; dropping it kills and reaps it.
pub(crate) struct Responder {
    child: Child,
    /// The port it printed in `responder: listening on 127.0.0.1:PORT`.
    pub port: u16,
}

impl Responder {
    /// The process id, for reading its `/proc` entries.
    #[allow(dead_code)]
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `steerd bench responder --listen 127.0.0.1:0 --cpus 0 EXTRA...`, not started.
pub(crate) fn command(extra: &[&str]) -> Command {
    let mut cmd = Command::new(super::server::binary());
    cmd.args([
        "bench",
        "responder",
        "--listen",
        "127.0.0.1:0",
        "--cpus",
        "0",
    ])
    .args(extra);
    cmd
}

/// Starts [`command`]`(extra)` and waits for its address line.
pub(crate) fn responder(extra: &[&str]) -> Responder {
    let mut child = command(extra)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the responder");
    let mut out = child.stdout.take().expect("piped stdout");
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while out.read(&mut byte).unwrap_or(0) == 1 && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    let line = String::from_utf8_lossy(&line).into_owned();
    let port = line
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    Responder { child, port }
}
