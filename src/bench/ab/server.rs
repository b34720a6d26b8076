//! A server `ab` started: its command line run in its own process group, ready once its
//! port accepts, stopped with SIGTERM to its first process and, if anything of its group
//! is alive 5 s later, SIGKILL to the whole group.
//!
//! Input: a command line and the address it should accept on. Output: a [`Server`]
//! handle with the root PID (for `procs.rs` and `trace.rs`). Its stdout and stderr go to
//! a log file, quoted when it fails to start and removed when it stops. It does not
//! measure anything.

use crate::bench::procs;
use crate::bench::BenchError;
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server this harness started, in its own process group.
pub(super) struct Server {
    child: Child,
    /// The first process, whose PID is also the group's id.
    pub(crate) pid: u32,
    log: std::path::PathBuf,
}

impl Server {
    /// Starts `argv` and waits (10 s at most) until `addr` accepts a connection.
    pub(super) fn start(argv: &[String], addr: SocketAddr) -> Result<Server, BenchError> {
        use std::os::unix::process::CommandExt;
        let log = std::env::temp_dir().join(format!("steerd-ab-{}-server.log", std::process::id()));
        let unwritable = |e| BenchError::File(log.clone(), e);
        let out = std::fs::File::create(&log).map_err(unwritable)?;
        let err = out.try_clone().map_err(unwritable)?;
        let child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(|e| BenchError::Start(argv[0].clone(), e))?;
        let pid = child.id();
        let mut s = Server { child, pid, log };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = s.child.try_wait() {
                return Err(BenchError::Exited {
                    program: argv[0].clone(),
                    status,
                    addr,
                    tail: s.log_tail(),
                });
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(s);
            }
            if Instant::now() > deadline {
                s.stop();
                return Err(BenchError::Silent(argv[0].clone(), addr));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The last lines the server wrote.
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(8)..].join("\n")
    }

    /// SIGTERM to the server's first process (a master stops its own workers, as nginx
    /// and steerd do); SIGKILL to the whole group if anything in it is alive 5 s later.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(super) fn stop(&mut self) {
        use rustix::process::{kill_process, kill_process_group, Pid, Signal};
        let Some(pgid) = Pid::from_raw(self.pid as i32) else {
            return;
        };
        let _ = kill_process(pgid, Signal::TERM);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            let root_gone = matches!(self.child.try_wait(), Ok(Some(_)));
            if root_gone && !procs::group_alive(self.pid) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = kill_process_group(pgid, Signal::KILL);
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.log);
        if !matches!(self.child.try_wait(), Ok(Some(_))) || procs::group_alive(self.pid) {
            self.stop();
        }
    }
}
