//! The service-manager notification protocol (`sd_notify(3)`), without a library: one
//! datagram of `KEY=VALUE` lines to the `AF_UNIX` socket named by `$NOTIFY_SOCKET`.
//!
//! Input: the environment's `NOTIFY_SOCKET` (a path, or `@name` for an abstract socket)
//! and the states the master reaches. Output: datagrams such as `READY=1`,
//! `RELOADING=1\nMONOTONIC_USEC=…`, `STOPPING=1`, `STATUS=…`. Without
//! `NOTIFY_SOCKET` every call does nothing. It does not decide when a state is reached
//! (the master does) and never fails the server: a notification that cannot be sent is
//! lost, as with `sd_notify`, whose return value daemons ignore.
//!
//! Required reading: sd_notify(3) (the variables, and that `RELOADING=1` must carry
//! `MONOTONIC_USEC` of `CLOCK_MONOTONIC` for `Type=notify-reload`), systemd.service(5)
//! (`NotifyAccess=`: by default only the main process is heard, so the master sends
//! everything; an upgrade re-executes the master in place, so the main PID never changes
//! and `MAINPID=` is never needed).

use rustix::fd::OwnedFd;
use rustix::net::{AddressFamily, SendFlags, SocketAddrUnix, SocketFlags, SocketType};
use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;

/// The environment variable naming the socket.
pub(crate) const NOTIFY_SOCKET: &str = "NOTIFY_SOCKET";

/// Where notifications go; [`Notifier::none`] when there is no service manager.
#[derive(Debug)]
pub(crate) struct Notifier {
    target: Option<(OwnedFd, SocketAddrUnix)>,
}

impl Notifier {
    /// A notifier that sends nothing.
    pub(crate) fn none() -> Notifier {
        Notifier { target: None }
    }

    /// From `$NOTIFY_SOCKET`: none when it is unset or empty; an error names a value
    /// that is not a usable address (the caller says so once and runs without it).
    pub(crate) fn from_env() -> io::Result<Notifier> {
        match std::env::var_os(NOTIFY_SOCKET) {
            Some(v) if !v.is_empty() => Notifier::to(&v),
            _ => Ok(Notifier::none()),
        }
    }

    /// To the socket named `value`: `/path` or `@abstract-name`.
    pub(crate) fn to(value: &OsStr) -> io::Result<Notifier> {
        let addr = parse_address(value)?;
        let flags = SocketFlags::CLOEXEC | SocketFlags::NONBLOCK;
        let fd = rustix::net::socket_with(AddressFamily::UNIX, SocketType::DGRAM, flags, None)?;
        Ok(Notifier {
            target: Some((fd, addr)),
        })
    }

    /// True when notifications go somewhere.
    #[cfg(test)]
    pub(crate) fn active(&self) -> bool {
        self.target.is_some()
    }

    /// `sendto(NOTIFY_SOCKET, state)`: one datagram. Nonblocking: a manager that does not
    /// read cannot stall the master (the datagram is dropped instead).
    pub(crate) fn send(&self, state: &str) -> io::Result<()> {
        let Some((fd, addr)) = &self.target else {
            return Ok(());
        };
        rustix::net::sendto(fd, state.as_bytes(), SendFlags::NOSIGNAL, addr)?;
        Ok(())
    }

    /// `READY=1` with a status line: every planned worker serves.
    pub(crate) fn ready(&self, status: &str) {
        let _ = self.send(&format!("READY=1\nSTATUS={status}"));
    }

    /// `RELOADING=1` with the monotonic time the reload began (a HUP or an upgrade).
    pub(crate) fn reloading(&self, status: &str) {
        let _ = self.send(&format!(
            "RELOADING=1\nMONOTONIC_USEC={}\nSTATUS={status}",
            monotonic_usec()
        ));
    }

    /// `STOPPING=1`: a stop has begun.
    pub(crate) fn stopping(&self, status: &str) {
        let _ = self.send(&format!("STOPPING=1\nSTATUS={status}"));
    }

    /// `STATUS=…` alone.
    pub(crate) fn status(&self, status: &str) {
        let _ = self.send(&format!("STATUS={status}"));
    }
}

/// `CLOCK_MONOTONIC` in microseconds, the clock sd_notify's `MONOTONIC_USEC` is read on.
pub(crate) fn monotonic_usec() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let micros = u64::try_from(t.tv_nsec).unwrap_or(0) / 1000;
    secs.saturating_mul(1_000_000).saturating_add(micros)
}

/// `/path` is a filesystem socket, `@name` an abstract one (the `@` stands for the
/// leading NUL byte, unix(7)); anything else (such as systemd's `vsock:`) is refused.
fn parse_address(value: &OsStr) -> io::Result<SocketAddrUnix> {
    let bytes = value.as_bytes();
    let addr = match bytes.first() {
        Some(b'/') => SocketAddrUnix::new(value),
        Some(b'@') if bytes.len() > 1 => SocketAddrUnix::new_abstract_name(&bytes[1..]),
        _ => {
            return Err(io::Error::other(format!(
                "{NOTIFY_SOCKET}={value:?}: expected /path or @abstract-name"
            )))
        }
    };
    addr.map_err(|e| io::Error::other(format!("{NOTIFY_SOCKET}={value:?}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixDatagram;

    fn received(sock: &UnixDatagram) -> String {
        sock.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let mut buf = [0u8; 512];
        let n = sock.recv(&mut buf).expect("a datagram");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    #[test]
    fn a_path_socket_gets_one_datagram_per_state() {
        let dir = std::env::temp_dir().join(format!("steerd-notify-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify");
        let sock = UnixDatagram::bind(&path).unwrap();
        let n = Notifier::to(path.as_os_str()).unwrap();
        assert!(n.active());
        n.ready("serving");
        assert_eq!(received(&sock), "READY=1\nSTATUS=serving");
        let before = monotonic_usec();
        n.reloading("reloading");
        let got = received(&sock);
        let usec: u64 = got
            .lines()
            .find_map(|l| l.strip_prefix("MONOTONIC_USEC="))
            .expect("MONOTONIC_USEC")
            .parse()
            .unwrap();
        assert!(got.starts_with("RELOADING=1\n"), "{got}");
        assert!(usec >= before && usec <= monotonic_usec(), "{got}");
        n.stopping("stopping");
        assert_eq!(received(&sock), "STOPPING=1\nSTATUS=stopping");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_abstract_socket_is_named_with_an_at_sign() {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("steerd-notify-test-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let sock = UnixDatagram::bind_addr(&addr).unwrap();
        let n = Notifier::to(OsStr::new(&format!("@{name}"))).unwrap();
        n.status("hello");
        assert_eq!(received(&sock), "STATUS=hello");
    }

    #[test]
    fn bad_values_are_refused_and_none_sends_nothing() {
        for bad in ["", "@", "relative/path", "vsock:2:1234"] {
            assert!(Notifier::to(OsStr::new(bad)).is_err(), "{bad:?}");
        }
        let n = Notifier::none();
        assert!(!n.active());
        assert!(n.send("READY=1").is_ok());
    }

    #[test]
    fn no_listener_is_an_error_not_a_panic() {
        let n = Notifier::to(OsStr::new("/nonexistent/steerd/notify")).unwrap();
        assert!(n.send("READY=1").is_err());
        n.ready("ignored");
    }
}
