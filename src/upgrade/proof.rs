//! Before an upgrade re-executes the master: the binary now at its path must pass two
//! stages, each in a child of the master and each within [`DEADLINE`] (the protocol is
//! `handshake.rs`):
//!
//! 1. [`Stage::Check`]: `check` with the master's own arguments and the handshake asked
//!    for; it must exit 0 and answer the handshake (an older release, which would not
//!    adopt the listeners, does not);
//! 2. [`Stage::Trial`]: `serve` with the master's own arguments, the listeners named as on
//!    a re-exec (the child's copies of them) and the trial asked for; it must go through
//!    its bring-up, say so and exit 0 (a wrapper whose `serve` exits, crashes or hangs
//!    does not).
//!
//! Input: the [`Launch`] (and for the trial, the descriptors handed over). Output: a
//! [`Proof`] the supervisor polls without waiting; its [`Verdict`] is `Passed`, or
//! `Refused` with one line that says why (the binary is missing or not executable, it
//! crashed, it hung, it refused the arguments, with the first problem it printed, or it
//! did not answer). `check` listens on nothing and the trial opens, attaches and starts
//! nothing, so neither changes what serves.
//!
//! The child is reaped by the supervisor's `waitpid(-1)`, which hands its status over
//! ([`Proof::exited`]); nothing here waits.

use super::handshake::{self, PROBE_VAR, PROTOCOL, TRIAL_VAR};
use super::{c_string as cstr, own_environment, Launch};
use crate::sys::{self, Forked};
use rustix::process::{Pid, Signal, WaitStatus};
use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

/// How long each stage may take.
pub(crate) const DEADLINE: Duration = Duration::from_secs(15);
/// At most this much of the child's standard error is kept for the one line.
const SAID_MAX: usize = 2048;
/// Longer lines than this are not the answer (and are not kept whole for matching).
const LINE_MAX: usize = 256;

/// What the binary is asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// `check`, answering the handshake.
    Check,
    /// `serve` as a trial with the listeners passed.
    Trial,
}

impl Stage {
    /// The word for the line that says why.
    fn name(self) -> &'static str {
        match self {
            Stage::Check => "check",
            Stage::Trial => "serve (trial)",
        }
    }

    /// The line the binary must print in this stage.
    fn answer(self) -> String {
        match self {
            Stage::Check => handshake::handshake_line(),
            Stage::Trial => handshake::trial_line(),
        }
    }
}

/// One stage of the proof, in flight.
#[derive(Debug)]
pub(crate) struct Proof {
    stage: Stage,
    pid: Pid,
    stderr: OwnedFd,
    said: Vec<u8>,
    /// The line being read (up to [`LINE_MAX`] bytes).
    line: Vec<u8>,
    /// The expected answer came.
    answered: bool,
    status: Option<WaitStatus>,
    deadline: Instant,
    exe: String,
}

/// Where a proof stands.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Still running.
    Waiting,
    /// It answered and exited 0.
    Passed,
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

/// Starts `launch.exe check …` with the handshake asked for.
pub(crate) fn start(launch: &Launch) -> io::Result<Proof> {
    let mut env = own_environment()?;
    env.push(cstr(format!("{PROBE_VAR}={PROTOCOL}").into())?);
    let argv = check_argv(&launch.argv);
    spawn(Stage::Check, launch, &argv, &[], move || Ok(env))
}

/// Starts `launch.exe` with its own arguments as a trial, `fds` (descriptor and name)
/// passed as a re-exec passes them, no workers, and no service-manager socket.
pub(crate) fn trial(launch: &Launch, fds: &[(BorrowedFd<'_>, &str)]) -> io::Result<Proof> {
    let env = || {
        let mut env = super::environment(fds, &[])?;
        env.retain(|kv| !kv.to_bytes().starts_with(b"NOTIFY_SOCKET="));
        env.push(cstr(format!("{TRIAL_VAR}={PROTOCOL}").into())?);
        Ok(env)
    };
    let keep: Vec<BorrowedFd<'_>> = fds.iter().map(|(fd, _)| *fd).collect();
    spawn(Stage::Trial, launch, &launch.argv, &keep, env)
}

/// Forks the child of `stage`: `launch.exe argv` with the environment `env` makes (in the
/// child, so `getpid` names it), `keep` passed across the exec, standard output
/// discarded and standard error captured.
fn spawn(
    stage: Stage,
    launch: &Launch,
    argv: &[OsString],
    keep: &[BorrowedFd<'_>],
    env: impl FnOnce() -> io::Result<Vec<CString>>,
) -> io::Result<Proof> {
    use rustix::pipe::{pipe_with, PipeFlags};
    let exe = cstr(launch.exe.clone().into_os_string())?;
    let argv = argv
        .iter()
        .cloned()
        .map(cstr)
        .collect::<io::Result<Vec<_>>>()?;
    let devnull = rustix::fs::open(
        "/dev/null",
        rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    let (rd, wr) = pipe_with(PipeFlags::CLOEXEC)?;
    rustix::io::ioctl_fionbio(&rd, true)?;
    let start = Start {
        exe: &exe,
        argv: &argv,
        launch,
        devnull: devnull.as_fd(),
        stderr: wr.as_fd(),
        keep,
    };
    match sys::fork()? {
        Forked::Child => child(start, env),
        Forked::Parent(pid) => Ok(Proof {
            stage,
            pid,
            stderr: rd,
            said: Vec::new(),
            line: Vec::new(),
            answered: false,
            status: None,
            deadline: Instant::now() + DEADLINE,
            exe: launch.exe.display().to_string(),
        }),
    }
}

/// What the child needs besides its environment.
struct Start<'a> {
    exe: &'a CString,
    argv: &'a [CString],
    launch: &'a Launch,
    devnull: BorrowedFd<'a>,
    stderr: BorrowedFd<'a>,
    keep: &'a [BorrowedFd<'a>],
}

/// In the child: default signal state, the start-up CPUs, `keep` open across the exec,
/// stdout to /dev/null, stderr to the pipe, exec. A failed exec is said on the pipe,
/// exit 127 (as a shell does).
fn child(start: Start<'_>, env: impl FnOnce() -> io::Result<Vec<CString>>) -> ! {
    let _ = sys::reset_for_exec(&[]);
    let _ = sys::pin_to_set(&start.launch.affinity);
    let prepared = (|| {
        for fd in start.keep {
            // This process's own descriptor table: the master's copies stay close-on-exec.
            rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())?;
        }
        let env = env()?;
        let std = [start.devnull.as_raw_fd(), start.stderr.as_raw_fd()];
        sys::handover::place_fds(&std, 1)?;
        Ok::<_, io::Error>(env)
    })();
    let err = match prepared {
        Ok(env) => sys::handover::exec(start.exe, start.argv, &env),
        Err(e) => e,
    };
    let why = format!(
        "cannot run {}: {}",
        start.exe.to_string_lossy(),
        crate::say::plain(&err)
    );
    let _ = rustix::io::write(start.stderr, why.as_bytes());
    sys::exit_now(127)
}

impl Proof {
    /// The stage this child is in.
    pub(crate) fn stage(&self) -> Stage {
        self.stage
    }

    /// The captured standard error, for the master's `poll`.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.stderr.as_fd()
    }

    /// When the child's time is up.
    pub(crate) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The supervisor reaped `pid`: true (and the status kept) when it is this child.
    pub(crate) fn exited(&mut self, pid: Pid, status: WaitStatus) -> bool {
        let ours = pid == self.pid;
        if ours {
            self.status = Some(status);
        }
        ours
    }

    /// Reads what the child said so far and judges it.
    pub(crate) fn poll(&mut self, now: Instant) -> Verdict {
        self.drain();
        match self.status {
            None if now < self.deadline => Verdict::Waiting,
            None => Verdict::Refused(format!(
                "{} {} did not finish within {} s",
                self.exe,
                self.stage.name(),
                DEADLINE.as_secs()
            )),
            Some(s) if s.exit_status() == Some(0) && self.answered => Verdict::Passed,
            Some(s) if s.exit_status() == Some(0) => Verdict::Refused(self.unanswered()),
            Some(s) => Verdict::Refused(self.refusal(s)),
        }
    }

    fn drain(&mut self) {
        let mut buf = [0u8; 512];
        while let Ok(n @ 1..) = rustix::io::read(&self.stderr, &mut buf) {
            let room = SAID_MAX.saturating_sub(self.said.len());
            self.said.extend_from_slice(&buf[..n.min(room)]);
            for &b in &buf[..n] {
                self.scan(b);
            }
        }
    }

    /// Feeds one byte of standard error to the line matcher.
    fn scan(&mut self, b: u8) {
        if b != b'\n' {
            if self.line.len() < LINE_MAX {
                self.line.push(b);
            }
            return;
        }
        let line = String::from_utf8_lossy(&self.line);
        // The line may come framed (`steerd: …`) or bare.
        if line.trim().trim_start_matches("steerd: ") == self.stage.answer() {
            self.answered = true;
        }
        self.line.clear();
    }

    /// Exit 0 without the answer: `check` of a release without the protocol, or a
    /// `serve` that stopped without taking anything over.
    fn unanswered(&self) -> String {
        match self.stage {
            Stage::Check => format!(
                "{} check does not answer the upgrade handshake (protocol {PROTOCOL}): a release that cannot adopt the running listeners and workers",
                self.exe
            ),
            Stage::Trial => format!(
                "{} serve (trial) exited with status 0 before taking over the passed listeners",
                self.exe
            ),
        }
    }

    /// `EXE check exited with status 1: root: …` from the first line that is not a
    /// warning or an answer (a failed exec says `cannot run EXE: why` and nothing else).
    fn refusal(&self, status: WaitStatus) -> String {
        let text = String::from_utf8_lossy(&self.said);
        let answers = [handshake::handshake_line(), handshake::trial_line()];
        let lines = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !answers.iter().any(|a| l.ends_with(a.as_str())));
        let said = lines
            .clone()
            .find(|l| !l.contains("warning:"))
            .or_else(|| lines.clone().next());
        if let Some(l) = said.filter(|l| l.starts_with("cannot run ")) {
            return l.to_string();
        }
        let how = crate::say::ended(status);
        let stage = self.stage.name();
        match said {
            Some(l) => format!(
                "{} {stage} {how}: {}",
                self.exe,
                l.trim_start_matches("steerd: ")
            ),
            None => format!("{} {stage} {how}", self.exe),
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
