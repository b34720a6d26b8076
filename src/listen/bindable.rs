//! Before any listener is made: which implied `--listen` addresses this machine can bind.
//!
//! Input: the listen addresses and those a port or a name stood for (`--listen 8080` is
//! `0.0.0.0:8080` and `[::]:8080`, `localhost:8080` is `127.0.0.1:8080` and
//! `[::1]:8080`; `args/listen.rs`). Output: the addresses to listen on, and one warning
//! per implied address left out. An implied address is left out when a socket of its
//! family cannot be made (`EAFNOSUPPORT`: a kernel without IPv6) or the address cannot
//! be bound here (`EADDRNOTAVAIL`: `::1` in a container whose loopback has IPv6
//! disabled); the test binds port 0 and closes at once (bind(2), ipv6(7)). An address
//! given as such is never left out, and when every address would be, none is: the
//! listeners then fail with the kernel's own error, and `check` reports each address
//! that cannot be bound ([`unbindable`], `cmd/check.rs`).

use core::fmt;
use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketFlags, SocketType};
use std::net::{IpAddr, SocketAddr};

/// Why an address cannot be bound on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unbindable {
    /// The kernel makes no IPv6 socket (`EAFNOSUPPORT`).
    NoIpv6,
    /// The address belongs to no interface here (`EADDRNOTAVAIL`).
    NotHere(IpAddr),
}

impl fmt::Display for Unbindable {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unbindable::NoIpv6 => f.write_str("this kernel has no IPv6 (EAFNOSUPPORT)"),
            Unbindable::NotHere(ip) => {
                write!(f, "{ip} is not an address of this machine (EADDRNOTAVAIL)")
            }
        }
    }
}

/// The addresses of `addrs` to listen on, and a warning for each implied one left out.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn bindable(
    addrs: &[SocketAddr],
    implied: &[SocketAddr],
) -> (Vec<SocketAddr>, Vec<String>) {
    let mut kept = Vec::with_capacity(addrs.len());
    let mut warnings = Vec::new();
    for &addr in addrs {
        match unbindable(addr).filter(|_| implied.contains(&addr)) {
            Some(why) => warnings.push(format!(
                "listen: {addr} left out: {why} (it was implied by a port or a name; the \
                 other addresses serve)"
            )),
            None => kept.push(addr),
        }
    }
    if kept.is_empty() {
        return (addrs.to_vec(), Vec::new());
    }
    (kept, warnings)
}

/// Why `addr`'s family or address cannot be bound here, if that is the case: a socket of
/// its family is bound to port 0 of its address, never listened on, and closed on return.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn unbindable(addr: SocketAddr) -> Option<Unbindable> {
    let family = match addr {
        SocketAddr::V4(_) => AddressFamily::INET,
        SocketAddr::V6(_) => AddressFamily::INET6,
    };
    let fd = match rustix::net::socket_with(family, SocketType::STREAM, SocketFlags::CLOEXEC, None)
    {
        Ok(fd) => fd,
        Err(Errno::AFNOSUPPORT) => return Some(Unbindable::NoIpv6),
        Err(_) => return None,
    };
    if addr.is_ipv6() {
        let _ = rustix::net::sockopt::set_ipv6_v6only(&fd, true);
    }
    let any_port = SocketAddr::new(addr.ip(), 0);
    match rustix::net::bind(&fd, &any_port) {
        Err(Errno::ADDRNOTAVAIL) => Some(Unbindable::NotHere(addr.ip())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_implied_addresses_that_cannot_be_bound_are_left_out() {
        let here: SocketAddr = "127.0.0.1:0".parse().unwrap();
        // TEST-NET-1 (RFC 5737) is no address of a test machine.
        let absent: SocketAddr = "192.0.2.1:0".parse().unwrap();
        let (kept, warnings) = bindable(&[here, absent], &[here, absent]);
        assert_eq!(kept, [here]);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("192.0.2.1:0 left out"), "{warnings:?}");
        let (kept, warnings) = bindable(&[here, absent], &[here]);
        assert_eq!(kept, [here, absent], "given as such, never left out");
        assert!(warnings.is_empty());
        let (kept, warnings) = bindable(&[absent], &[absent]);
        assert_eq!(kept, [absent], "never all of them");
        assert!(warnings.is_empty());
    }
}
