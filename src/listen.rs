//! Stage 5: one SO_REUSEPORT listener per worker, in plan order; the program attached once.
//!
//! Input: the plan's workers (index order), the `--listen` addresses, the CPU set the
//! master returns to. Output: [`Listeners`], one reuseport group per address holding one
//! fd per worker. The master keeps every fd for its whole life, so a worker's death never
//! reshuffles a group (on close the kernel moves the *last* member into the freed slot,
//! `net/core/sock_reuseport.c`).
//!
//! Required reading: `kernel-steering.md` §2.2–2.3. For TCP the group index is the order of
//! `listen()`; so every worker's sockets are made in plan index order, each while the
//! master is pinned to that worker's CPU, so the socket's memory is allocated on the
//! worker's node. The steering program is attached after the last `listen()`, once per
//! group: `0.0.0.0:P` and `[::]:P` (V6ONLY) are two groups. A group seeded with passed
//! sockets gets members with their `IPV6_V6ONLY` and `SO_BINDTODEVICE` (`member.rs`), so
//! the kernel keeps them in one group; a dual-stack `[::]:P` then takes IPv4 as well.
//!
//! It does not fork, accept or decide the policy.

pub(crate) mod adopt;
pub(crate) mod bindable;
pub(crate) mod member;

use crate::plan::WorkerPlan;
use crate::sys;
use core::fmt;
use member::{MemberError, Membership};
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

/// Backlog asked of `listen()`. The kernel silently caps it at `net.core.somaxconn`
/// (4096 by default since 5.4), so this asks for "as many as allowed". See listen(2).
pub(crate) const BACKLOG: i32 = 65_535;

/// One `--listen` address: its bound address (the real port when `:0` was asked) and one
/// listener per worker, position = group index = worker index.
#[derive(Debug)]
pub(crate) struct Group {
    /// The address every member is bound to.
    pub(crate) addr: SocketAddr,
    /// Listeners in `listen()` order.
    pub(crate) fds: Vec<OwnedFd>,
    /// What every member has besides the address (the passed sockets' options).
    pub(crate) membership: Membership,
}

/// Every reuseport group, in `--listen` order.
#[derive(Debug)]
pub(crate) struct Listeners {
    /// Groups in `--listen` order.
    pub(crate) groups: Vec<Group>,
}

/// A bring-up step that failed, with what it was working on.
#[derive(Debug)]
pub enum ListenError {
    /// Pinning the master to a worker's CPU (or back) failed.
    Pin(String, io::Error),
    /// `socket`, a socket option, `bind` or `listen` failed for an address.
    Socket(SocketAddr, &'static str, io::Error),
    /// Another socket (such as a running steerd) already listens on the exact address.
    InUse(SocketAddr),
    /// Members cannot be made beside the sockets passed for an address.
    Passed(SocketAddr, MemberError),
}

impl fmt::Display for ListenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenError::Pin(what, e) => write!(f, "pinning to {what}: {e}"),
            ListenError::Socket(addr, step, e) => write!(f, "{addr}: {step}: {e}"),
            ListenError::InUse(addr) => write!(f, "{addr} is already in use"),
            ListenError::Passed(addr, e) => write!(f, "passed socket on {addr}: {e}"),
        }
    }
}

/// How each listener is set up, besides the address.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SocketOptions {
    /// `TCP_DEFER_ACCEPT` seconds; 0 leaves it off.
    pub(crate) defer_accept_secs: u32,
    /// `SO_SNDBUF` bytes, which an accepted connection inherits from its listener (the
    /// kernel copies the listener's `sk_sndbuf` and its lock into the child socket, so the
    /// connection is not autotuned); `None` leaves autotuning on.
    pub(crate) send_buffer: Option<u32>,
}

/// Makes every listener: first [`probe`] each address, then for each worker in index
/// order, pin to its CPU, then make its socket for each address; then pin back to `home`.
/// An address with port 0 gets its port from the first worker's socket, and every later
/// member binds that port.
pub(crate) fn open(
    workers: &[WorkerPlan],
    addrs: &[SocketAddr],
    home: &sys::AffinityMask,
    opts: SocketOptions,
) -> Result<Listeners, ListenError> {
    let seeded = addrs.iter().map(|&a| (a, Vec::new())).collect();
    open_seeded(workers, seeded, home, opts)
}

/// [`open`] for groups that already hold passed sockets (`adopt::seat` decided which):
/// those are the first members, in the order given, and only the members for the
/// remaining workers are made. A group with passed sockets is not probed: its address is
/// held by them.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn open_seeded(
    workers: &[WorkerPlan],
    seeded: Vec<(SocketAddr, Vec<OwnedFd>)>,
    home: &sys::AffinityMask,
    opts: SocketOptions,
) -> Result<Listeners, ListenError> {
    let mut groups: Vec<Group> = Vec::with_capacity(seeded.len());
    for (addr, mut fds) in seeded {
        if fds.is_empty() {
            probe(addr)?;
        }
        for fd in &fds {
            prepare_passed(addr, fd, opts)?;
        }
        let more = workers.len() > fds.len();
        let membership =
            Membership::of_passed(&fds, addr, more).map_err(|e| ListenError::Passed(addr, e))?;
        fds.reserve(workers.len().saturating_sub(fds.len()));
        groups.push(Group {
            addr,
            fds,
            membership,
        });
    }
    let made = make_all(workers, &mut groups, opts);
    // Return home even when a step failed, so the error path runs where the master lives.
    let back = sys::pin_to_set(home).map_err(|e| ListenError::Pin("the master's CPUs".into(), e));
    made?;
    back?;
    Ok(Listeners { groups })
}

fn make_all(
    workers: &[WorkerPlan],
    groups: &mut [Group],
    opts: SocketOptions,
) -> Result<(), ListenError> {
    for w in workers {
        if groups.iter().all(|g| g.fds.len() > usize::from(w.index)) {
            continue;
        }
        sys::pin_to_cpu(w.cpu.get()).map_err(|e| ListenError::Pin(format!("CPU {}", w.cpu), e))?;
        for group in groups.iter_mut() {
            if group.fds.len() > usize::from(w.index) {
                continue;
            }
            let fd = make_listener(group.addr, &group.membership, opts)?;
            if group.fds.is_empty() {
                group.addr = local_addr(&fd)
                    .map_err(|e| ListenError::Socket(group.addr, "getsockname", e))?;
            }
            group.fds.push(fd);
        }
    }
    Ok(())
}

/// Refuses an address another socket already holds. Without this, a second steerd of
/// the same uid would join the live reuseport group (the kernel lets any same-uid socket
/// with `SO_REUSEPORT` in, `net/ipv4/inet_connection_sock.c`), replace its program and
/// break steering for both servers.
///
/// The probe binds a socket *without* `SO_REUSEPORT` (but with `SO_REUSEADDR`, so
/// `TIME_WAIT` leftovers do not count) and closes it: `EADDRINUSE` means a live
/// listener. Port 0 is skipped, since the kernel picks a free port. There is a race
/// window: a server that binds the address between this probe and our own `bind`
/// is not seen; the probe closes the common mistake (starting steerd twice), not that.
fn probe(addr: SocketAddr) -> Result<(), ListenError> {
    use rustix::net::{sockopt, AddressFamily, SocketFlags, SocketType};
    if addr.port() == 0 {
        return Ok(());
    }
    let fail = |step| move |e: rustix::io::Errno| ListenError::Socket(addr, step, e.into());
    let family = match addr {
        SocketAddr::V4(_) => AddressFamily::INET,
        SocketAddr::V6(_) => AddressFamily::INET6,
    };
    let fd = rustix::net::socket_with(family, SocketType::STREAM, SocketFlags::CLOEXEC, None)
        .map_err(fail("socket"))?;
    sockopt::set_socket_reuseaddr(&fd, true).map_err(fail("SO_REUSEADDR"))?;
    if addr.is_ipv6() {
        sockopt::set_ipv6_v6only(&fd, true).map_err(fail("IPV6_V6ONLY"))?;
    }
    match rustix::net::bind(&fd, &addr) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::ADDRINUSE) => Err(ListenError::InUse(addr)),
        Err(e) => Err(fail("bind")(e)),
    }
}

/// `socket`, `SO_REUSEADDR`, `SO_REUSEPORT`, the group's `IPV6_V6ONLY` for IPv6 and
/// `SO_BINDTODEVICE`, `TCP_DEFER_ACCEPT`, `bind`, `listen`: nonblocking and close-on-exec.
fn make_listener(
    addr: SocketAddr,
    member: &Membership,
    opts: SocketOptions,
) -> Result<OwnedFd, ListenError> {
    use rustix::net::{sockopt, AddressFamily, SocketFlags, SocketType};
    let fail = |step| move |e: rustix::io::Errno| ListenError::Socket(addr, step, e.into());
    let family = match addr {
        SocketAddr::V4(_) => AddressFamily::INET,
        SocketAddr::V6(_) => AddressFamily::INET6,
    };
    let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
    let fd = rustix::net::socket_with(family, SocketType::STREAM, flags, None)
        .map_err(fail("socket"))?;
    sockopt::set_socket_reuseaddr(&fd, true).map_err(fail("SO_REUSEADDR"))?;
    sockopt::set_socket_reuseport(&fd, true).map_err(fail("SO_REUSEPORT"))?;
    if addr.is_ipv6() {
        sockopt::set_ipv6_v6only(&fd, member.v6only).map_err(fail("IPV6_V6ONLY"))?;
    }
    if !member.device.is_empty() {
        sys::socket::bind_to_device(fd.as_fd(), &member.device)
            .map_err(|e| ListenError::Socket(addr, "SO_BINDTODEVICE", e))?;
    }
    set_options(addr, &fd, opts)?;
    rustix::net::bind(&fd, &addr).map_err(fail("bind"))?;
    rustix::net::listen(&fd, BACKLOG).map_err(fail("listen"))?;
    Ok(fd)
}

/// What [`make_listener`] sets after `bind`, on a socket made elsewhere: nonblocking (a
/// socket unit's socket is blocking unless `NonBlocking=yes`, and a worker accepts until
/// `EAGAIN`) and the [`SocketOptions`].
fn prepare_passed(addr: SocketAddr, fd: &OwnedFd, opts: SocketOptions) -> Result<(), ListenError> {
    rustix::io::ioctl_fionbio(fd, true)
        .map_err(|e| ListenError::Socket(addr, "O_NONBLOCK", e.into()))?;
    set_options(addr, fd, opts)
}

/// `TCP_DEFER_ACCEPT` and `SO_SNDBUF`, as `opts` asks.
fn set_options(addr: SocketAddr, fd: &OwnedFd, opts: SocketOptions) -> Result<(), ListenError> {
    if opts.defer_accept_secs > 0 {
        sys::set_tcp_defer_accept(fd.as_fd(), opts.defer_accept_secs)
            .map_err(|e| ListenError::Socket(addr, "TCP_DEFER_ACCEPT", e))?;
    }
    if let Some(bytes) = opts.send_buffer {
        rustix::net::sockopt::set_socket_send_buffer_size(fd, bytes as usize)
            .map_err(|e| ListenError::Socket(addr, "SO_SNDBUF", e.into()))?;
    }
    Ok(())
}

fn local_addr(fd: &OwnedFd) -> io::Result<SocketAddr> {
    let any = rustix::net::getsockname(fd)?;
    SocketAddr::try_from(any).map_err(|_| io::Error::other("not an IP socket address"))
}

impl Listeners {
    /// Attaches `prog` to every group, once, on its first member (after every member has
    /// listened: the program then belongs to the whole group). Stops at the first group
    /// the kernel refuses and says which.
    pub(crate) fn attach(&self, prog: &[asm_bpf::Insn]) -> Result<(), (SocketAddr, io::Error)> {
        for group in &self.groups {
            if let Some(first) = group.fds.first() {
                sys::attach_reuseport_cbpf(first.as_fd(), prog).map_err(|e| (group.addr, e))?;
            }
        }
        Ok(())
    }

    /// Worker `index`'s listeners, one per address.
    pub(crate) fn of_worker(&self, index: usize) -> Vec<BorrowedFd<'_>> {
        self.groups
            .iter()
            .filter_map(|g| g.fds.get(index).map(|fd| fd.as_fd()))
            .collect()
    }

    /// Every other worker's listener fds (for a forked worker to close).
    pub(crate) fn raw_fds_not_of(&self, index: usize) -> Vec<RawFd> {
        self.groups
            .iter()
            .flat_map(|g| g.fds.iter().enumerate())
            .filter(|(i, _)| *i != index)
            .map(|(_, fd)| fd.as_raw_fd())
            .collect()
    }

    /// The bound addresses, in `--listen` order.
    pub(crate) fn addrs(&self) -> Vec<SocketAddr> {
        self.groups.iter().map(|g| g.addr).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuset::CpuId;
    use crate::plan::WorkerPlan;
    use std::io::{Read, Write};

    fn allowed() -> Vec<CpuId> {
        let set = sys::affinity().expect("affinity");
        (0..sys::AffinityMask::MAX_CPU)
            .filter(|&c| set.is_set(c))
            .filter_map(CpuId::new)
            .collect()
    }

    fn workers(cpus: &[CpuId]) -> Vec<WorkerPlan> {
        cpus.iter()
            .enumerate()
            .map(|(i, &cpu)| WorkerPlan {
                index: i as u16,
                cpu,
                node: crate::topology::NodeId(0),
            })
            .collect()
    }

    #[test]
    fn port_zero_gives_one_port_per_group_and_affinity_is_restored() {
        let cpus = allowed();
        let home = sys::affinity().expect("affinity");
        let addrs: Vec<SocketAddr> =
            vec!["127.0.0.1:0".parse().unwrap(), "[::1]:0".parse().unwrap()];
        let ws = workers(&cpus);
        let opts = SocketOptions {
            defer_accept_secs: 0,
            send_buffer: None,
        };
        let l = match open(&ws, &addrs, &home, opts) {
            Ok(l) => l,
            // A machine without IPv6 loopback cannot run the second group.
            Err(ListenError::Socket(a, "bind", _)) if a.is_ipv6() => {
                crate::test_skip::skip_or_fail(&crate::test_skip::this_test(), "no IPv6 loopback");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        assert_eq!(sys::affinity().expect("affinity"), home);
        assert_eq!(l.groups.len(), 2);
        for g in &l.groups {
            assert_ne!(g.addr.port(), 0);
            assert_eq!(g.fds.len(), cpus.len());
            for fd in &g.fds {
                assert_eq!(local_addr(fd).expect("name"), g.addr);
            }
        }
        assert_eq!(l.of_worker(0).len(), 2);
        assert_eq!(l.raw_fds_not_of(0).len(), 2 * (cpus.len() - 1));
    }

    /// A connection to the group's address is accepted by one of the members: the
    /// sockets really share the port.
    #[test]
    fn members_accept_connections() {
        let cpus = allowed();
        let home = sys::affinity().expect("affinity");
        let addrs: Vec<SocketAddr> = vec!["127.0.0.1:0".parse().unwrap()];
        let l = open(
            &workers(&cpus),
            &addrs,
            &home,
            SocketOptions {
                defer_accept_secs: 0,
                send_buffer: None,
            },
        )
        .expect("listeners");
        let mut client = std::net::TcpStream::connect(l.groups[0].addr).expect("connect");
        client.write_all(b"x").expect("write");
        let accepted = (0..200).find_map(|_| {
            let hit = l.groups[0]
                .fds
                .iter()
                .find_map(|fd| rustix::net::accept(fd).ok());
            if hit.is_none() {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            hit
        });
        let conn = accepted.expect("some member accepted the connection");
        let mut server = std::net::TcpStream::from(conn);
        server.set_nonblocking(false).expect("blocking");
        let mut b = [0u8; 1];
        server.read_exact(&mut b).expect("read");
        assert_eq!(&b, b"x");
    }
}
