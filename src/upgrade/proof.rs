//! Before an upgrade re-executes the master: the binary now at its path, run as
//! `check` with the master's own arguments in a child, must exit 0 within
//! [`DEADLINE`].
//!
//! Input: the [`Launch`]. Output: a [`Proof`] the supervisor polls without waiting;
//! its [`Verdict`] is `Runnable`, or `Refused` with one line that says why (the binary is
//! missing or not executable, it crashed, it hung, or its `check` refused the
//! arguments, with the first problem it printed). `check` listens on nothing and reads what
//! `serve` reads, so what it accepts the new image's bring-up accepts too, short of a
//! resource that vanishes in between.
//!
//! The child is reaped by the supervisor's `waitpid(-1)`, which hands its status over
//! ([`Proof::exited`]); nothing here waits.

use super::{c_string as cstr, own_environment, Launch};
use crate::sys::{self, Forked};
use rustix::process::{Pid, Signal, WaitStatus};
use std::ffi::{CString, OsString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

/// How long the new binary's `check` may take.
pub const DEADLINE: Duration = Duration::from_secs(15);
/// At most this much of the child's standard error is kept for the one line.
const SAID_MAX: usize = 2048;

/// The new binary's `check`, in flight.
#[derive(Debug)]
pub struct Proof {
    pid: Pid,
    stderr: OwnedFd,
    said: Vec<u8>,
    status: Option<WaitStatus>,
    deadline: Instant,
    exe: String,
}

/// Where a proof stands.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Still running.
    Waiting,
    /// It exited 0.
    Runnable,
    /// It did not (why, one line).
    Refused(String),
}

/// `argv` with the subcommand made `check`: `steerd serve ROOT …` and `steerd ROOT …`
/// both become `steerd check ROOT …`.
pub(crate) fn check_argv(argv: &[OsString]) -> Vec<OsString> {
    let mut out = Vec::with_capacity(argv.len() + 1);
    out.extend(argv.first().cloned());
    out.push("check".into());
    let rest = argv.get(1..).unwrap_or_default();
    let rest = match rest.first() {
        Some(s) if s == "serve" => &rest[1..],
        _ => rest,
    };
    out.extend(rest.iter().cloned());
    out
}

/// Starts `launch.exe check …` with the start-up affinity, standard output discarded and
/// standard error captured.
pub fn start(launch: &Launch) -> std::io::Result<Proof> {
    use rustix::pipe::{pipe_with, PipeFlags};
    let exe = cstr(launch.exe.clone().into_os_string())?;
    let argv = check_argv(&launch.argv)
        .into_iter()
        .map(cstr)
        .collect::<std::io::Result<Vec<_>>>()?;
    let env = own_environment()?;
    let devnull = rustix::fs::open(
        "/dev/null",
        rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    let (rd, wr) = pipe_with(PipeFlags::CLOEXEC)?;
    rustix::io::ioctl_fionbio(&rd, true)?;
    match sys::fork()? {
        Forked::Child => child(&exe, &argv, &env, launch, devnull.as_fd(), wr.as_fd()),
        Forked::Parent(pid) => Ok(Proof {
            pid,
            stderr: rd,
            said: Vec::new(),
            status: None,
            deadline: Instant::now() + DEADLINE,
            exe: launch.exe.display().to_string(),
        }),
    }
}

/// In the child: clean mask, the start-up CPUs, stdout to /dev/null, stderr to the
/// pipe, exec. A failed exec is said on the pipe, exit 127 (as a shell does).
fn child(
    exe: &CString,
    argv: &[CString],
    env: &[CString],
    launch: &Launch,
    devnull: BorrowedFd<'_>,
    stderr: BorrowedFd<'_>,
) -> ! {
    let _ = sys::unblock_all_signals();
    let _ = sys::pin_to_set(&launch.affinity);
    let placed = sys::handover::place_fds(&[devnull.as_raw_fd(), stderr.as_raw_fd()], 1);
    let err = match placed {
        Ok(()) => sys::handover::exec(exe, argv, env),
        Err(e) => e,
    };
    let why = format!(
        "cannot run {}: {}",
        exe.to_string_lossy(),
        crate::say::plain(&err)
    );
    let _ = rustix::io::write(stderr, why.as_bytes());
    sys::exit_now(127)
}

impl Proof {
    /// The captured standard error, for the master's `poll`.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.stderr.as_fd()
    }

    /// When the child's time is up.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The supervisor reaped `pid`: true (and the status kept) when it is this child.
    pub fn exited(&mut self, pid: Pid, status: WaitStatus) -> bool {
        let ours = pid == self.pid;
        if ours {
            self.status = Some(status);
        }
        ours
    }

    /// Reads what the child said so far and judges it.
    pub fn poll(&mut self, now: Instant) -> Verdict {
        self.drain();
        match self.status {
            None if now < self.deadline => Verdict::Waiting,
            None => Verdict::Refused(format!(
                "{} check did not finish within {} s",
                self.exe,
                DEADLINE.as_secs()
            )),
            Some(s) if s.exit_status() == Some(0) => Verdict::Runnable,
            Some(s) => Verdict::Refused(self.refusal(s)),
        }
    }

    fn drain(&mut self) {
        let mut buf = [0u8; 512];
        while let Ok(n @ 1..) = rustix::io::read(&self.stderr, &mut buf) {
            let room = SAID_MAX.saturating_sub(self.said.len());
            self.said.extend_from_slice(&buf[..n.min(room)]);
        }
    }

    /// `EXE check exited with status 1: root: …` from the first line that is not a
    /// warning (a failed exec says `cannot run EXE: why` and nothing else).
    fn refusal(&self, status: WaitStatus) -> String {
        let text = String::from_utf8_lossy(&self.said);
        let lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let said = lines
            .clone()
            .find(|l| !l.contains("warning:"))
            .or_else(|| lines.clone().next());
        if let Some(l) = said.filter(|l| l.starts_with("cannot run ")) {
            return l.to_string();
        }
        let how = crate::say::ended(status);
        match said {
            Some(l) => format!(
                "{} check {how}: {}",
                self.exe,
                l.trim_start_matches("steerd: ")
            ),
            None => format!("{} check {how}", self.exe),
        }
    }

    /// Stops the child (a stop signal arrived, or its time is up) and reaps it.
    pub(crate) fn abandon(self) {
        if self.status.is_some() {
            return;
        }
        let _ = rustix::process::kill_process(self.pid, Signal::KILL);
        let _ = rustix::process::waitpid(Some(self.pid), rustix::process::WaitOptions::empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_subcommand_becomes_check() {
        assert_eq!(
            check_argv(&os(&["steerd", "serve", "/srv", "--workers", "2"])),
            os(&["steerd", "check", "/srv", "--workers", "2"])
        );
        assert_eq!(
            check_argv(&os(&["/bin/steerd", "/srv"])),
            os(&["/bin/steerd", "check", "/srv"])
        );
        assert_eq!(check_argv(&os(&["steerd"])), os(&["steerd", "check"]));
    }
}
