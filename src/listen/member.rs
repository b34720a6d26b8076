//! What, besides the address and `SO_REUSEPORT`, decides which reuseport group a
//! listener joins, read from a passed socket so the members made beside it match.
//!
//! Required reading: `net/ipv4/inet_hashtables.c`, `inet_reuseport_add_sock`. A listener
//! joins an existing member's group only when both have the same family, the same
//! `IPV6_V6ONLY`, the same bound device (`SO_BINDTODEVICE`), the same bind bucket (port,
//! network namespace), `SO_REUSEPORT`, the same owner uid and an equal bound address;
//! otherwise the kernel starts a second group on the same port. Two groups on one port
//! split nothing evenly: an IPv4 connection to `[::]:P` finds only the dual-stack
//! (`IPV6_V6ONLY=0`) group, so a dual-stack socket from systemd (`ListenStream=80` or
//! `[::]:80`) beside members made `IPV6_V6ONLY=1` sends every IPv4 connection to its one
//! worker, whatever the steering program says. Binding to the same bucket (`bind`) and
//! the same address is the caller's part; the uid cannot be copied, so an owner that
//! differs from this process's is refused.
//!
//! It does not make sockets (`listen.rs`) or seat them (`adopt.rs`).

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd};

/// The group-deciding options of one listener, besides its address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Membership {
    /// `IPV6_V6ONLY` (always true for an IPv4 address, where it does not apply).
    pub(crate) v6only: bool,
    /// The interface of `SO_BINDTODEVICE`, empty for none.
    pub(crate) device: Vec<u8>,
    /// The socket's owner (the inode's uid, the creator's fsuid).
    pub(crate) uid: u32,
}

/// Why a passed socket's group cannot get members made beside it.
#[derive(Debug)]
pub enum MemberError {
    /// Reading an option of the passed socket failed.
    Read(&'static str, io::Error),
    /// The passed socket belongs to another uid than this process.
    Owner {
        /// The passed socket's owner.
        uid: u32,
        /// This process's effective uid, which owns the members it makes.
        ours: u32,
    },
    /// Two sockets passed for one address disagree (so they are two groups already).
    Mixed,
}

impl core::fmt::Display for MemberError {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            MemberError::Read(what, e) => write!(f, "reading {what}: {e}"),
            MemberError::Owner { uid, ours } => write!(
                f,
                "the passed socket belongs to uid {uid} and steerd runs as uid {ours}: the \
                 kernel would not let its members join that socket's reuseport group \
                 (start steerd as uid {uid}, or use --user to drop privileges after binding)"
            ),
            MemberError::Mixed => write!(
                f,
                "the sockets passed for it differ in IPV6_V6ONLY, SO_BINDTODEVICE or owner, \
                 so the kernel keeps them in separate reuseport groups"
            ),
        }
    }
}

impl Membership {
    /// What steerd gives the members of a group it makes whole: `IPV6_V6ONLY`, no
    /// device, owned by this process.
    pub(crate) fn made() -> Membership {
        Membership {
            v6only: true,
            device: Vec::new(),
            uid: rustix::process::geteuid().as_raw(),
        }
    }

    /// Reads a listener's membership options.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn of(fd: BorrowedFd<'_>, addr: SocketAddr) -> Result<Membership, MemberError> {
        use rustix::net::sockopt;
        let v6only = match addr {
            SocketAddr::V4(_) => true,
            SocketAddr::V6(_) => {
                sockopt::ipv6_v6only(fd).map_err(|e| MemberError::Read("IPV6_V6ONLY", e.into()))?
            }
        };
        let device = crate::sys::socket::bound_device(fd)
            .map_err(|e| MemberError::Read("SO_BINDTODEVICE", e))?;
        let uid = rustix::fs::fstat(fd)
            .map_err(|e| MemberError::Read("the owner (fstat)", e.into()))?
            .st_uid;
        Ok(Membership {
            v6only,
            device,
            uid,
        })
    }

    /// The membership every member of a group seeded with `passed` must have: theirs,
    /// when they agree and, if `more` members are to be made beside them, are owned by
    /// this process's uid (an upgraded master that dropped privileges holds root's
    /// sockets, and makes none).
    pub(crate) fn of_passed<F: AsFd>(
        passed: &[F],
        addr: SocketAddr,
        more: bool,
    ) -> Result<Membership, MemberError> {
        let mut all = passed.iter().map(|fd| Membership::of(fd.as_fd(), addr));
        let Some(first) = all.next() else {
            return Ok(Membership::made());
        };
        let first = first?;
        for other in all {
            if other? != first {
                return Err(MemberError::Mixed);
            }
        }
        let ours = rustix::process::geteuid().as_raw();
        if more && first.uid != ours {
            return Err(MemberError::Owner {
                uid: first.uid,
                ours,
            });
        }
        Ok(first)
    }

    /// `v6only=0`, `v6only=1` and `device=NAME` as `check` prints them.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn describe(&self, addr: SocketAddr) -> String {
        let mut s = match addr {
            SocketAddr::V4(_) => String::from("ipv4"),
            SocketAddr::V6(_) => format!("v6only={}", u8::from(self.v6only)),
        };
        if !self.device.is_empty() {
            s.push_str(" device=");
            s.push_str(&String::from_utf8_lossy(&self.device));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::net::{sockopt, AddressFamily, SocketType};

    fn v6_listener(v6only: bool) -> Option<std::os::fd::OwnedFd> {
        let fd = rustix::net::socket(AddressFamily::INET6, SocketType::STREAM, None).ok()?;
        sockopt::set_ipv6_v6only(&fd, v6only).ok()?;
        let any: SocketAddr = "[::]:0".parse().unwrap();
        rustix::net::bind(&fd, &any).ok()?;
        Some(fd)
    }

    #[test]
    fn a_passed_dual_stack_socket_is_read_as_such() {
        let (Some(dual), Some(only)) = (v6_listener(false), v6_listener(true)) else {
            crate::test_skip::skip_or_fail(&crate::test_skip::this_test(), "no IPv6");
            return;
        };
        let addr: SocketAddr = "[::]:0".parse().unwrap();
        let m = Membership::of_passed(&[&dual], addr, true).unwrap();
        assert!(!m.v6only && m.device.is_empty());
        assert_eq!(m.describe(addr), "v6only=0");
        assert!(Membership::of_passed(&[&only], addr, true).unwrap().v6only);
        let e = Membership::of_passed(&[&dual, &only], addr, false).unwrap_err();
        assert!(matches!(e, MemberError::Mixed), "{e}");
        let none: [&std::os::fd::OwnedFd; 0] = [];
        let made = Membership::of_passed(&none, addr, true).unwrap();
        assert_eq!(made, Membership::made());
    }
}
