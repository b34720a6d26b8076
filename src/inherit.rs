//! Listening sockets handed over at start: systemd socket activation, and a binary
//! upgrade (the master re-executing itself in place, `upgrade.rs`).
//!
//! Input: `LISTEN_PID`, `LISTEN_FDS` and `LISTEN_FDNAMES` (sd_listen_fds(3)): when
//! `LISTEN_PID` is this process, descriptors 3 … 3+`LISTEN_FDS`−1 are passed, named by
//! the colon-separated `LISTEN_FDNAMES`. Output: [`Inherited`] values, each an owned
//! descriptor with its name, and for a socket its bound address and whether it has
//! `SO_REUSEPORT` (a member of a reuseport group must have it: steerd adds its other
//! members beside it). A re-executed master finds its own descriptors at the numbers they
//! had, named in `STEERD_REEXEC_FDS` (`FD:NAME,…`) for the process `STEERD_REEXEC_PID`
//! (it cannot move them to 3… first: a failed `execve` would leave them clobbered).
//! It does not decide which group a socket joins (`listen.rs`) and
//! does not check what a socket lacks against the flags (`serve` refuses, `check` says).
//!
//! The variables are removed once read, so nothing started later (a worker, an upgraded
//! binary with its own set) mistakes them for its own.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{OwnedFd, RawFd};

/// The first passed descriptor (`SD_LISTEN_FDS_START`).
pub(crate) const FIRST_FD: RawFd = 3;
/// The name an older steerd's upgrade (which started a second master) gives its readiness
/// pipe in `LISTEN_FDNAMES`.
pub(crate) const UPGRADE_PIPE: &str = "steerd-upgrade";
/// The name a binary upgrade gives the `--metrics` listener (not a reuseport member).
pub(crate) const METRICS: &str = "steerd-metrics";
/// The variable naming the process a re-exec's descriptors are for (`upgrade.rs`).
pub(crate) const PID_VAR: &str = "STEERD_REEXEC_PID";
/// The variable listing a re-exec's descriptors (`FD:NAME,…`).
pub(crate) const FDS_VAR: &str = "STEERD_REEXEC_FDS";
/// At most this many descriptors are taken (a bound on a variable a parent controls).
const MAX_FDS: usize = 4096;

/// Passed descriptors that cannot be taken, each named with its variable or number.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum InheritError {
    /// `STEERD_REEXEC_FDS` lists more than [`MAX_FDS`] descriptors (for this pid).
    TooManyReexec(u32),
    /// An entry of `STEERD_REEXEC_FDS` is no `FD:NAME` with FD at least [`FIRST_FD`].
    ReexecEntry(String),
    /// `LISTEN_PID` is no process id.
    ListenPid(String),
    /// `LISTEN_FDS` is no count up to [`MAX_FDS`].
    ListenFds(String),
    /// A passed descriptor (number, name) is not open: the kernel's word.
    Closed(RawFd, String, String),
    /// A passed descriptor (number, name) is no listening TCP socket.
    NotListening(RawFd, String),
    /// A passed socket cannot be seated in a `--listen` group.
    Seat(crate::listen::adopt::SeatError),
}

impl core::fmt::Display for InheritError {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            InheritError::TooManyReexec(pid) => write!(
                f,
                "{FDS_VAR}: more than {MAX_FDS} descriptors ({PID_VAR}={pid})"
            ),
            InheritError::ReexecEntry(e) => write!(
                f,
                "{FDS_VAR}: {e:?} is not FD:NAME with FD at least {FIRST_FD}"
            ),
            InheritError::ListenPid(v) => write!(f, "LISTEN_PID={v:?}: not a process id"),
            InheritError::ListenFds(v) => {
                write!(f, "LISTEN_FDS={v:?}: expected a count up to {MAX_FDS}")
            }
            InheritError::Closed(fd, name, e) => write!(f, "passed descriptor {fd} ({name}): {e}"),
            InheritError::NotListening(fd, name) => write!(
                f,
                "inherited descriptor {fd} ({name}) is not a listening TCP socket"
            ),
            InheritError::Seat(e) => write!(f, "{e}"),
        }
    }
}

/// A passed descriptor, before it is inspected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Passed {
    /// Its number in this process.
    pub(crate) fd: RawFd,
    /// Its name from `LISTEN_FDNAMES` (`unknown` when the names do not match the count,
    /// as systemd does).
    pub(crate) name: String,
}

/// Reads a re-executed master's variables as given: `STEERD_REEXEC_PID` and
/// `STEERD_REEXEC_FDS` (`FD:NAME,…`, each number at least [`FIRST_FD`]).
pub(crate) fn parse_reexec(
    for_pid: Option<&str>,
    fds: &str,
    pid: u32,
) -> Result<Vec<Passed>, InheritError> {
    if for_pid.and_then(|p| p.parse::<u32>().ok()) != Some(pid) {
        return Ok(Vec::new());
    }
    if fds.is_empty() {
        return Ok(Vec::new());
    }
    let entries: Vec<&str> = fds.split(',').collect();
    if entries.len() > MAX_FDS {
        return Err(InheritError::TooManyReexec(pid));
    }
    entries
        .into_iter()
        .map(|e| {
            let bad = || InheritError::ReexecEntry(e.to_string());
            let (fd, name) = e.split_once(':').ok_or_else(bad)?;
            let fd: RawFd = fd.parse().ok().filter(|&n| n >= FIRST_FD).ok_or_else(bad)?;
            Ok(Passed {
                fd,
                name: name.to_string(),
            })
        })
        .collect()
}

/// True when the re-exec variables are meant for this process (`STEERD_REEXEC_PID`).
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn reexec_is_ours() -> bool {
    std::env::var(PID_VAR)
        .ok()
        .and_then(|p| p.parse::<u32>().ok())
        == Some(std::process::id())
}

/// Reads the three variables as given (`None` for an unset one) for process `pid`.
/// `Ok(empty)`: nothing was passed to this process (no variables, or `LISTEN_PID` names
/// another process, which then inherited them by mistake).
pub(crate) fn parse(
    listen_pid: Option<&str>,
    listen_fds: Option<&str>,
    names: Option<&str>,
    pid: u32,
) -> Result<Vec<Passed>, InheritError> {
    let (Some(for_pid), Some(count)) = (listen_pid, listen_fds) else {
        return Ok(Vec::new());
    };
    let for_pid: u32 = for_pid
        .parse()
        .map_err(|_| InheritError::ListenPid(for_pid.to_string()))?;
    if for_pid != pid {
        return Ok(Vec::new());
    }
    let n: usize = count
        .parse()
        .ok()
        .filter(|&n| n <= MAX_FDS)
        .ok_or_else(|| InheritError::ListenFds(count.to_string()))?;
    let names: Vec<&str> = names.map(|v| v.split(':').collect()).unwrap_or_default();
    let named = names.len() == n;
    Ok((0..n)
        .map(|i| Passed {
            fd: FIRST_FD + i as RawFd,
            name: if named { names[i] } else { "unknown" }.to_string(),
        })
        .collect())
}

/// A passed descriptor, owned, with what it is.
#[derive(Debug)]
pub(crate) struct Inherited {
    /// The descriptor (close-on-exec from now on).
    pub(crate) fd: OwnedFd,
    /// Its name from `LISTEN_FDNAMES`.
    pub(crate) name: String,
    /// For a listening TCP socket: its address and whether it has `SO_REUSEPORT`.
    pub(crate) listener: Option<(SocketAddr, bool)>,
}

/// The descriptors passed to this process, taken from the environment once (the
/// variables are then removed). Fails when a named descriptor is not open.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn take_from_env() -> Result<Vec<Inherited>, InheritError> {
    let var = |k: &str| std::env::var(k).ok();
    let passed = match var(FDS_VAR) {
        Some(fds) => parse_reexec(var(PID_VAR).as_deref(), &fds, std::process::id())?,
        None => parse(
            var("LISTEN_PID").as_deref(),
            var("LISTEN_FDS").as_deref(),
            var("LISTEN_FDNAMES").as_deref(),
            std::process::id(),
        )?,
    };
    for k in [
        "LISTEN_PID",
        "LISTEN_FDS",
        "LISTEN_FDNAMES",
        FDS_VAR,
        PID_VAR,
    ] {
        std::env::remove_var(k);
    }
    passed
        .into_iter()
        .map(|p| {
            let fd = crate::sys::handover::adopt_fd(p.fd)
                .map_err(|e| InheritError::Closed(p.fd, p.name.clone(), e.to_string()))?;
            let listener = inspect(&fd).ok();
            Ok(Inherited {
                fd,
                name: p.name,
                listener,
            })
        })
        .collect()
}

/// A listening TCP socket's bound address and its `SO_REUSEPORT`; an error for anything
/// else (a datagram socket, a socket not listening, a pipe).
pub(crate) fn inspect(fd: &OwnedFd) -> io::Result<(SocketAddr, bool)> {
    use rustix::net::{sockopt, SocketType};
    let not = |what: &str| io::Error::other(format!("not {what}"));
    if sockopt::socket_type(fd)? != SocketType::STREAM {
        return Err(not("a stream socket"));
    }
    if !sockopt::socket_acceptconn(fd)? {
        return Err(not("listening"));
    }
    let addr =
        SocketAddr::try_from(rustix::net::getsockname(fd)?).map_err(|_| not("an IP socket"))?;
    Ok((addr, sockopt::socket_reuseport(fd)?))
}

/// The line `check` prints for a passed socket that cannot join a reuseport group, or
/// `None` when it can.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn reuseport_problem(inherited: &Inherited) -> Option<InheritError> {
    match inherited.listener {
        Some(_) if inherited.name == METRICS => None,
        Some((_, true)) => None,
        Some((addr, false)) => Some(InheritError::Seat(crate::listen::adopt::no_reuseport(
            &inherited.name,
            addr,
        ))),
        None if inherited.name == UPGRADE_PIPE => None,
        None => Some(not_listening(inherited)),
    }
}

/// `inherited` is no listening TCP socket.
pub(crate) fn not_listening(inherited: &Inherited) -> InheritError {
    let fd = std::os::fd::AsRawFd::as_raw_fd(&inherited.fd);
    InheritError::NotListening(fd, inherited.name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_named_process_takes_the_descriptors() {
        assert_eq!(parse(None, None, None, 7), Ok(vec![]));
        assert_eq!(parse(Some("8"), Some("2"), None, 7), Ok(vec![]));
        assert_eq!(parse(Some("7"), None, None, 7), Ok(vec![]));
        let got = parse(Some("7"), Some("2"), Some("http:admin"), 7).unwrap();
        assert_eq!(
            got,
            vec![
                Passed {
                    fd: 3,
                    name: "http".into()
                },
                Passed {
                    fd: 4,
                    name: "admin".into()
                }
            ]
        );
    }

    #[test]
    fn names_that_do_not_match_the_count_are_unknown() {
        let got = parse(Some("7"), Some("2"), Some("one"), 7).unwrap();
        assert!(got.iter().all(|p| p.name == "unknown"));
        assert_eq!(parse(Some("7"), Some("0"), Some(""), 7), Ok(vec![]));
    }

    #[test]
    fn bad_values_are_named() {
        for (pid, fds, needle) in [
            ("x", "1", "LISTEN_PID"),
            ("7", "-1", "LISTEN_FDS"),
            ("7", "99999", "LISTEN_FDS"),
            ("7", "two", "LISTEN_FDS"),
        ] {
            let e = parse(Some(pid), Some(fds), None, 7).unwrap_err();
            assert!(e.to_string().contains(needle), "{pid} {fds}: {e}");
        }
    }

    #[test]
    fn a_reexec_names_descriptors_where_they_are() {
        assert_eq!(parse_reexec(Some("8"), "5:listen", 7), Ok(vec![]));
        assert_eq!(parse_reexec(None, "5:listen", 7), Ok(vec![]));
        assert_eq!(parse_reexec(Some("7"), "", 7), Ok(vec![]));
        let got = parse_reexec(Some("7"), "9:listen,12:steerd-metrics", 7).unwrap();
        assert_eq!(
            got,
            vec![
                Passed {
                    fd: 9,
                    name: "listen".into()
                },
                Passed {
                    fd: 12,
                    name: "steerd-metrics".into()
                },
            ]
        );
        for bad in ["2:listen", "x:listen", "9", "9:listen,"] {
            let e = parse_reexec(Some("7"), bad, 7).unwrap_err();
            assert!(e.to_string().contains("STEERD_REEXEC_FDS"), "{bad}: {e}");
        }
    }

    #[test]
    fn inspect_sees_the_address_and_reuseport() {
        use rustix::net::{sockopt, AddressFamily, SocketType};
        let make = |reuse: bool| {
            let fd = rustix::net::socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
            sockopt::set_socket_reuseport(&fd, reuse).unwrap();
            let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
            rustix::net::bind(&fd, &any).unwrap();
            fd
        };
        let bound = make(true);
        assert!(inspect(&bound).is_err(), "bound but not listening");
        rustix::net::listen(&bound, 8).unwrap();
        let (addr, reuse) = inspect(&bound).unwrap();
        assert!(reuse && addr.port() != 0 && addr.ip().is_loopback());
        let plain = make(false);
        rustix::net::listen(&plain, 8).unwrap();
        let inherited = Inherited {
            listener: inspect(&plain).ok(),
            fd: plain,
            name: "web".into(),
        };
        let line = reuseport_problem(&inherited)
            .expect("a problem")
            .to_string();
        assert!(
            line.contains("SO_REUSEPORT") && line.contains("web"),
            "{line}"
        );
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert!(inspect(&OwnedFd::from(a)).is_err());
    }
}
