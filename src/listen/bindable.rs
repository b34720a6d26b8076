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
//! listeners then fail with the kernel's own error.

use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketFlags, SocketType};
use std::net::SocketAddr;

/// The addresses of `addrs` to listen on, and a warning for each implied one left out.
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

/// Why `addr`'s family or address cannot be bound here, if that is the case.
fn unbindable(addr: SocketAddr) -> Option<String> {
    let family = match addr {
        SocketAddr::V4(_) => AddressFamily::INET,
        SocketAddr::V6(_) => AddressFamily::INET6,
    };
    let fd = match rustix::net::socket_with(family, SocketType::STREAM, SocketFlags::CLOEXEC, None)
    {
        Ok(fd) => fd,
        Err(Errno::AFNOSUPPORT) => return Some("this kernel has no IPv6 (EAFNOSUPPORT)".into()),
        Err(_) => return None,
    };
    if addr.is_ipv6() {
        let _ = rustix::net::sockopt::set_ipv6_v6only(&fd, true);
    }
    let any_port = SocketAddr::new(addr.ip(), 0);
    match rustix::net::bind(&fd, &any_port) {
        Err(Errno::ADDRNOTAVAIL) => Some(format!(
            "{} is not an address of this machine (EADDRNOTAVAIL)",
            addr.ip()
        )),
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
