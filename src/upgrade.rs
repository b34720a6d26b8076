//! Binary upgrade (SIGUSR2) in place: the master proves the binary now at its path able
//! to take over, then re-executes it in its own process, so its PID, its parent and its
//! children stay what they were.
//!
//! Input: the [`Launch`] recorded at start (path, arguments, affinity), the listeners in
//! group and index order, the metrics listener, and the workers serving now. Output:
//! [`proof::Proof`] in two stages, each in a child (the new binary's `check` with the
//! same arguments, which must answer the protocol handshake; then a trial `serve` with
//! the listeners passed, which must say it would take them over and exit;
//! `handshake.rs`), then [`reexec`], which returns only when `execve` failed.
//!
//! Why in place (`docs/design.md`): a supervisor waits only for its own children (systemd
//! before 254 cannot follow a `MAINPID` that is not its child, a container runtime
//! follows its PID 1), so an upgrade that starts a second master loses the supervisor.
//! haproxy's master-worker mode re-executes its master the same way. Why the proof runs
//! `serve` in a child first: once `execve` succeeds, this process is whatever the file
//! was, and the workers (parent-death signal) end with it; nothing can be undone then.
//!
//! What goes across `execve` (execve(2): the PID, the children, pending signals,
//! descriptors without `FD_CLOEXEC`, the affinity stay):
//! - the listeners and the metrics listener, at the numbers they have now, with
//!   `FD_CLOEXEC` cleared and named in `STEERD_REEXEC_FDS` (`FD:NAME,…`; see
//!   `inherit.rs`), with `STEERD_REEXEC_PID` naming this process (as `LISTEN_PID` does).
//!   Nothing is moved, so a failed `execve` leaves every descriptor where it was and only
//!   `FD_CLOEXEC` has to be set back;
//! - the workers, in `STEERD_REEXEC_WORKERS` (`SLOT:PID,…`, `-` for a worker already
//!   retiring): the new image keeps each slot's worker serving until its own worker for
//!   that slot serves, then retires it (drain, leave the listener), as a HUP does.
//!
//! What does not: the signal mask and the dispositions are reset first (every signal
//! unblocked, every disposition the default but HUP, USR1, USR2 and WINCH, which cross
//! ignored, `sys::reset_for_exec`), so the new program starts as any program does and TERM
//! stops it whatever it is. A steerd counts signals from its first step when it is a
//! re-exec (`cmd/serve.rs`); a reload, log reopen or upgrade asked in the moment between is
//! dropped rather than ending the master.
//!
//! The old workers' counters stay in a mapping the new image does not hold: `/metrics`
//! counts from zero after an upgrade, as it does after a restart.

pub(crate) mod handshake;
pub(crate) mod proof;

use crate::inherit;
use crate::sys;
use rustix::io::FdFlags;
use rustix::process::Pid;
use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

pub(crate) use crate::inherit::{FDS_VAR, PID_VAR};
/// The variable listing the workers the new image takes over (`SLOT:PID,…`).
pub(crate) const WORKERS_VAR: &str = "STEERD_REEXEC_WORKERS";
/// At most this many workers are taken over (a bound on a variable a parent controls).
const MAX_WORKERS: usize = 1 << 16;

/// How this process was started, recorded before anything could change it.
#[derive(Clone, Debug)]
pub(crate) struct Launch {
    /// The binary's path (`/proc/self/exe` at start: after the file is replaced on disk,
    /// the path names the new binary).
    pub(crate) exe: PathBuf,
    /// The arguments, the program name first.
    pub(crate) argv: Vec<OsString>,
    /// The CPUs it might run on before the master pinned itself: the new image reads
    /// the machine through its own affinity, which `execve` keeps, so it must get these
    /// back, not the one CPU the master is pinned to.
    pub(crate) affinity: sys::AffinityMask,
}

impl Launch {
    /// The running binary's path and arguments.
    pub(crate) fn record() -> io::Result<Launch> {
        Ok(Launch {
            exe: std::env::current_exe()?,
            argv: std::env::args_os().collect(),
            affinity: sys::affinity()?,
        })
    }
}

/// A worker the new image takes over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TakenOver {
    /// The plan slot it serves, or `None` for one already retiring.
    pub(crate) slot: Option<usize>,
    /// Its process.
    pub(crate) pid: Pid,
}

/// Replaces this program with `launch.exe`, handing over `fds` (descriptor and name) and
/// `workers`. Returns only on failure, with every descriptor close-on-exec again.
///
/// The caller restores the start-up affinity and resets the signal state first
/// (`sys::reset_for_exec`), and undoes both when this returns.
pub(crate) fn reexec(
    launch: &Launch,
    fds: &[(BorrowedFd<'_>, &str)],
    workers: &[TakenOver],
) -> io::Error {
    let prepared = (|| {
        let exe = c_string(launch.exe.clone().into_os_string())?;
        let argv = launch
            .argv
            .iter()
            .cloned()
            .map(c_string)
            .collect::<io::Result<Vec<_>>>()?;
        Ok::<_, io::Error>((exe, argv, environment(fds, workers)?))
    })();
    let (exe, argv, env) = match prepared {
        Ok(p) => p,
        Err(e) => return e,
    };
    for (fd, _) in fds {
        if let Err(e) = rustix::io::fcntl_setfd(fd, FdFlags::empty()) {
            close_on_exec(fds);
            return e.into();
        }
    }
    let err = sys::handover::exec(&exe, &argv, &env);
    close_on_exec(fds);
    err
}

fn close_on_exec(fds: &[(BorrowedFd<'_>, &str)]) {
    for (fd, _) in fds {
        let _ = rustix::io::fcntl_setfd(fd, FdFlags::CLOEXEC);
    }
}

/// This process's environment without any `LISTEN_*`, earlier `STEERD_REEXEC_*` or
/// `STEERD_UPGRADE_*` (what a program this master starts gets, besides its own
/// variables).
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn own_environment() -> io::Result<Vec<CString>> {
    let ours = |k: &str| {
        k.starts_with("LISTEN_")
            || k.starts_with("STEERD_REEXEC_")
            || k.starts_with("STEERD_UPGRADE_")
    };
    std::env::vars_os()
        .filter(|(k, _)| !k.to_str().is_some_and(ours))
        .map(|(k, v)| {
            let mut kv = k.into_vec();
            kv.push(b'=');
            kv.extend(v.into_vec());
            c_string(OsString::from_vec(kv))
        })
        .collect()
}

/// [`own_environment`] plus the three variables that name what goes across, for the
/// calling process (`getpid`).
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn environment(
    fds: &[(BorrowedFd<'_>, &str)],
    workers: &[TakenOver],
) -> io::Result<Vec<CString>> {
    let mut env = own_environment()?;
    let named: Vec<String> = fds
        .iter()
        .map(|(fd, name)| format!("{}:{name}", fd.as_raw_fd()))
        .collect();
    let pid = rustix::process::getpid().as_raw_nonzero();
    env.push(c_string(format!("{PID_VAR}={pid}").into())?);
    env.push(c_string(format!("{FDS_VAR}={}", named.join(",")).into())?);
    env.push(c_string(
        format!("{WORKERS_VAR}={}", format_workers(workers)).into(),
    )?);
    Ok(env)
}

/// `s` as a C string; a NUL byte inside is an error.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn c_string(s: OsString) -> io::Result<CString> {
    CString::new(s.into_vec()).map_err(|_| io::Error::other("a NUL byte in an argument"))
}

/// `SLOT:PID,…`, `-` as the slot of a retiring worker.
fn format_workers(workers: &[TakenOver]) -> String {
    let entry = |w: &TakenOver| {
        let slot = w.slot.map_or_else(|| "-".to_string(), |s| s.to_string());
        format!("{slot}:{}", w.pid.as_raw_nonzero())
    };
    workers.iter().map(entry).collect::<Vec<_>>().join(",")
}

/// A [`WORKERS_VAR`] that cannot be read, named with the entry that is wrong.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum WorkersError {
    /// More than `MAX_WORKERS` entries.
    TooMany,
    /// An entry that is no `SLOT:PID`.
    Entry(String),
}

impl core::fmt::Display for WorkersError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            WorkersError::TooMany => write!(f, "{WORKERS_VAR}: more than {MAX_WORKERS} workers"),
            WorkersError::Entry(e) => write!(f, "{WORKERS_VAR}: {e:?} is not SLOT:PID"),
        }
    }
}

/// Parses [`WORKERS_VAR`]'s value; an error names the entry that is wrong.
pub(crate) fn parse_workers(value: &str) -> Result<Vec<TakenOver>, WorkersError> {
    if value.is_empty() {
        return Ok(Vec::new());
    }
    let entries: Vec<&str> = value.split(',').collect();
    if entries.len() > MAX_WORKERS {
        return Err(WorkersError::TooMany);
    }
    entries
        .into_iter()
        .map(|e| {
            let bad = || WorkersError::Entry(e.to_string());
            let (slot, pid) = e.split_once(':').ok_or_else(bad)?;
            let slot = match slot {
                "-" => None,
                s => Some(s.parse().map_err(|_| bad())?),
            };
            // Positive first: `Pid::from_raw` asserts against negative numbers.
            let pid = pid.parse::<i32>().ok().filter(|&p| p > 0);
            let pid = pid.and_then(Pid::from_raw).ok_or_else(bad)?;
            Ok(TakenOver { slot, pid })
        })
        .collect()
}

/// In a re-executed master: the workers its previous image handed over (none after a
/// plain start), taken from the environment once. The descriptors are taken by
/// [`inherit::take_from_env`], which checks [`PID_VAR`].
pub(crate) fn take_workers() -> Result<Vec<TakenOver>, WorkersError> {
    let value = std::env::var(WORKERS_VAR).ok();
    std::env::remove_var(WORKERS_VAR);
    match value {
        Some(v) if inherit::reexec_is_ours() => parse_workers(&v),
        _ => Ok(Vec::new()),
    }
}

/// In a master started by an older steerd that upgraded by starting a second master:
/// tells that master that every worker serves (one byte on the pipe it passed, named
/// [`inherit::UPGRADE_PIPE`]; then the pipe closes).
pub(crate) fn report_ready(pipe: std::os::fd::OwnedFd) {
    let _ = rustix::io::write(&pipe, b"R");
}

/// The descriptor named `name` among the inherited ones (the metrics listener, an older
/// master's readiness pipe), taken out of the list.
pub(crate) fn take_named(
    inherited: &mut Vec<inherit::Inherited>,
    name: &str,
) -> Option<std::os::fd::OwnedFd> {
    let at = inherited.iter().position(|i| i.name == name)?;
    Some(inherited.remove(at).fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pid(n: i32) -> Pid {
        Pid::from_raw(n).unwrap()
    }

    #[test]
    fn workers_round_trip_through_the_variable() {
        let w = [
            TakenOver {
                slot: Some(0),
                pid: pid(10),
            },
            TakenOver {
                slot: Some(3),
                pid: pid(11),
            },
            TakenOver {
                slot: None,
                pid: pid(12),
            },
        ];
        let text = format_workers(&w);
        assert_eq!(text, "0:10,3:11,-:12");
        assert_eq!(parse_workers(&text).unwrap(), w);
        assert_eq!(parse_workers("").unwrap(), []);
    }

    #[test]
    fn a_bad_worker_entry_is_named() {
        for bad in ["0", "x:1", "0:0", "0:-5", "0:1,", ":1"] {
            let e = parse_workers(bad).unwrap_err();
            assert!(e.to_string().starts_with(WORKERS_VAR), "{bad}: {e}");
        }
    }

    #[test]
    fn the_environment_names_every_descriptor_and_drops_old_ones() {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let fds = [(a.as_fd(), "listen"), (b.as_fd(), inherit::METRICS)];
        let env = environment(
            &fds,
            &[TakenOver {
                slot: Some(1),
                pid: pid(7),
            }],
        )
        .unwrap();
        let text: Vec<String> = env
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect();
        let want = format!(
            "{FDS_VAR}={}:listen,{}:{}",
            a.as_raw_fd(),
            b.as_raw_fd(),
            inherit::METRICS
        );
        assert!(text.contains(&want), "{text:?}");
        assert!(text.contains(&format!("{WORKERS_VAR}=1:7")));
        assert!(text.contains(&format!("{PID_VAR}={}", std::process::id())));
        assert!(!text.iter().any(|t| t.starts_with("LISTEN_")));
    }

    #[test]
    fn a_failed_exec_leaves_the_descriptors_close_on_exec() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let launch = Launch {
            exe: "/nonexistent/steerd".into(),
            argv: vec!["steerd".into()],
            affinity: sys::affinity().unwrap(),
        };
        let err = reexec(&launch, &[(a.as_fd(), "listen")], &[]);
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "{err}");
        let flags = rustix::io::fcntl_getfd(&a).unwrap();
        assert!(flags.contains(FdFlags::CLOEXEC));
    }

    use std::os::fd::AsFd;
}
