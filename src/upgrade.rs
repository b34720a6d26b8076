//! Binary upgrade (SIGUSR2): the master starts the binary at its own path, re-read from
//! disk, with the same arguments and every listening socket inherited, and hands over
//! once the new master's workers serve.
//!
//! Input: the [`Launch`] recorded at start (path and arguments), the listeners in group
//! and index order. Output: a [`Pending`] upgrade the old master polls until the new one
//! reports that its workers serve ([`Outcome::Ready`]), fails, or misses the deadline
//! ([`Outcome::Failed`]: the old master stops it and keeps serving).
//!
//! The sockets go over with the socket-activation protocol (sd_listen_fds(3):
//! `LISTEN_FDS`, `LISTEN_PID`, `LISTEN_FDNAMES`), so the new master adopts them through
//! the same code as a systemd socket (`inherit.rs`): same sockets, so the reuseport groups
//! and their members' order stay, and the new master attaches its program to the same
//! groups. One more descriptor, named [`inherit::UPGRADE_PIPE`], is the write end of a
//! pipe: the new master writes one byte there when every worker serves. EOF before that
//! byte means the new master died.
//!
//! It does not retire the old workers or exit (the master does, on `Ready`).

use crate::inherit::{self, FIRST_FD, UPGRADE_PIPE};
use crate::sys::{self, Forked};
use rustix::process::Pid;
use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long the new master has to get every worker serving.
pub const DEADLINE: Duration = Duration::from_secs(20);
/// The byte the new master writes when its workers serve.
const READY: u8 = b'R';
/// What the child writes before the reason it could not start the new binary.
const FAILED: char = 'E';

/// How this process was started, recorded before anything could change it.
#[derive(Clone, Debug)]
pub struct Launch {
    /// The binary's path (`/proc/self/exe` at start: after the file is replaced on disk,
    /// the path names the new binary).
    pub exe: PathBuf,
    /// The arguments, the program name first.
    pub argv: Vec<OsString>,
    /// The CPUs it might run on before the master pinned itself: the new master reads
    /// the machine through its own affinity, which `execve` keeps, so it must get these
    /// back, not the one CPU the old master is pinned to.
    pub affinity: rustix::thread::CpuSet,
}

impl Launch {
    /// The running binary's path and arguments.
    pub fn record() -> io::Result<Launch> {
        Ok(Launch {
            exe: std::env::current_exe()?,
            argv: std::env::args_os().collect(),
            affinity: sys::affinity()?,
        })
    }
}

/// An upgrade in progress, seen from the old master.
#[derive(Debug)]
pub struct Pending {
    /// The new master.
    pub pid: Pid,
    ready: OwnedFd,
    deadline: Instant,
}

/// Where an upgrade stands.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Still starting.
    Waiting,
    /// The new master's workers serve: retire ours and exit.
    Ready,
    /// It failed (why): stop it, keep serving.
    Failed(String),
}

/// Starts the new master: fork, put `listeners` at descriptors 3… (then the metrics
/// listener, if any, then the readiness pipe), exec `launch` with the variables that
/// name them. The master must be single-threaded (it is), since the child allocates
/// before it execs.
pub fn start(
    launch: &Launch,
    listeners: &[BorrowedFd<'_>],
    metrics: Option<BorrowedFd<'_>>,
) -> io::Result<Pending> {
    use rustix::pipe::{pipe_with, PipeFlags};
    let (rd, wr) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
    let mut fds: Vec<RawFd> = listeners.iter().map(|l| l.as_raw_fd()).collect();
    let mut names = vec!["listen"; fds.len()];
    if let Some(m) = metrics {
        fds.push(m.as_raw_fd());
        names.push(inherit::METRICS);
    }
    fds.push(wr.as_raw_fd());
    names.push(UPGRADE_PIPE);
    let exe = c_string(launch.exe.clone().into_os_string())?;
    let argv = launch
        .argv
        .iter()
        .cloned()
        .map(c_string)
        .collect::<io::Result<Vec<_>>>()?;
    let env = environment(&names)?;
    match sys::fork()? {
        Forked::Child => {
            let _ = sys::pin_to_set(&launch.affinity);
            exec_child(&exe, &argv, env, &fds, &wr)
        }
        Forked::Parent(pid) => Ok(Pending {
            pid,
            ready: rd,
            deadline: Instant::now() + DEADLINE,
        }),
    }
}

/// In the child: clean signal mask, descriptors in place, `LISTEN_PID` = ourselves, exec.
/// A failure is written to the readiness pipe (`report`) for the old master's one line.
fn exec_child(
    exe: &CString,
    argv: &[CString],
    mut env: Vec<CString>,
    fds: &[RawFd],
    report: &OwnedFd,
) -> ! {
    let _ = sys::unblock_all_signals();
    let placed = sys::handover::place_fds(fds, FIRST_FD);
    let err = match placed {
        Ok(()) => {
            let pid = format!("LISTEN_PID={}", std::process::id());
            env.extend(CString::new(pid).ok());
            sys::handover::exec(exe, argv, &env)
        }
        Err(e) => e,
    };
    let why = format!(
        "{FAILED}starting {}: {}",
        exe.to_string_lossy(),
        crate::say::plain(&err)
    );
    let _ = rustix::io::write(report, why.as_bytes());
    sys::exit_now(127)
}

/// This process's environment without any earlier `LISTEN_*`, plus `LISTEN_FDS` and
/// `LISTEN_FDNAMES` for descriptors named `names`.
fn environment(names: &[&str]) -> io::Result<Vec<CString>> {
    let mut env = Vec::new();
    for (k, v) in std::env::vars_os() {
        if k.to_str().is_some_and(|k| k.starts_with("LISTEN_")) {
            continue;
        }
        let mut kv = k.into_vec();
        kv.push(b'=');
        kv.extend(v.into_vec());
        env.push(c_string(OsString::from_vec(kv))?);
    }
    env.push(c_string(format!("LISTEN_FDS={}", names.len()).into())?);
    env.push(c_string(
        format!("LISTEN_FDNAMES={}", names.join(":")).into(),
    )?);
    Ok(env)
}

fn c_string(s: OsString) -> io::Result<CString> {
    CString::new(s.into_vec()).map_err(|_| io::Error::other("a NUL byte in an argument"))
}

impl Pending {
    /// The readiness pipe, for the master's `poll`.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.ready.as_fd()
    }

    /// When the new master's time is up.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Reads the pipe without waiting and checks the deadline.
    pub fn poll(&self, now: Instant) -> Outcome {
        let mut b = [0u8; 512];
        match rustix::io::read(&self.ready, &mut b) {
            Ok(1..) if b[0] == READY => Outcome::Ready,
            Ok(n @ 1..) if b[0] == FAILED as u8 => {
                Outcome::Failed(String::from_utf8_lossy(&b[1..n]).into_owned())
            }
            Ok(_) => Outcome::Failed("the new master exited before its workers served".into()),
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) if now < self.deadline => {
                Outcome::Waiting
            }
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => Outcome::Failed(format!(
                "the new master's workers did not serve within {} s",
                DEADLINE.as_secs()
            )),
            Err(e) => Outcome::Failed(format!("reading the readiness pipe: {e}")),
        }
    }
}

/// In the new master: the descriptor named `name` among the inherited ones (the
/// readiness pipe, the metrics listener), taken out of the list.
pub fn take_named(inherited: &mut Vec<inherit::Inherited>, name: &str) -> Option<OwnedFd> {
    let at = inherited.iter().position(|i| i.name == name)?;
    Some(inherited.remove(at).fd)
}

/// In the new master: tells the old one that every worker serves (one byte, then the
/// pipe closes).
pub fn report_ready(pipe: OwnedFd) {
    let _ = rustix::io::write(&pipe, &[READY]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_names_every_descriptor_and_drops_old_ones() {
        let env = environment(&["listen", "listen", UPGRADE_PIPE]).unwrap();
        let text: Vec<String> = env
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect();
        assert!(text.contains(&"LISTEN_FDS=3".to_string()), "{text:?}");
        assert!(text.contains(&format!("LISTEN_FDNAMES=listen:listen:{UPGRADE_PIPE}")));
        assert_eq!(text.iter().filter(|t| t.starts_with("LISTEN_")).count(), 2);
    }

    #[test]
    fn the_pipe_says_ready_failed_or_waiting() {
        use rustix::pipe::{pipe_with, PipeFlags};
        let (rd, wr) = pipe_with(PipeFlags::NONBLOCK).unwrap();
        let p = Pending {
            pid: Pid::from_raw(1).unwrap(),
            ready: rd,
            deadline: Instant::now() + Duration::from_secs(60),
        };
        assert_eq!(p.poll(Instant::now()), Outcome::Waiting);
        assert!(matches!(
            p.poll(Instant::now() + Duration::from_secs(61)),
            Outcome::Failed(_)
        ));
        report_ready(wr);
        assert_eq!(p.poll(Instant::now()), Outcome::Ready);
        assert!(
            matches!(p.poll(Instant::now()), Outcome::Failed(_)),
            "EOF after"
        );
    }
}
