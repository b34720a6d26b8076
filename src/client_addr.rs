//! The real client address, for connections that arrive through a proxy.
//!
//! Stage: the worker's loop, between accepting a connection and logging its requests.
//! Input: the first bytes of a connection from a trusted proxy (`--proxy-protocol`) and
//! the `X-Forwarded-For` field lines of its requests (which peers are trusted is
//! `config::Cidr`'s business).
//! Output: the address the log and the metrics name as the client. Nothing here reads a
//! socket, allocates or panics; the loop decides what to do with a refused header.
//!
//! - [`proxy_header`]: PROXY protocol v1 and v2 headers, parsed incrementally;
//! - [`forwarded`]: the client `X-Forwarded-For` names (its last address, or walked
//!   from the right past the trusted proxies);
//! - [`AddrKey`]: the unit per-address limits count (connection slots, credential
//!   checks).

pub mod forwarded;
pub mod proxy_header;

pub(crate) use forwarded::{forwarded_for, Walk};
pub use proxy_header::{parse_proxy_header, ProxyError, ProxyHeader};

use std::net::IpAddr;

/// The unit a per-address limit counts: an IPv4 address, or an IPv6 /64 prefix (a host
/// is given a whole /64, so counting single IPv6 addresses would count nothing). One
/// `u64`: the /64 prefix, or the IPv4 address as a number (which shares its value only
/// with the prefixes `0:0:XXXX:XXXX::/64`, inside the reserved `::/8`). An IPv4-mapped
/// IPv6 address counts as its IPv4 address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddrKey(u64);

impl AddrKey {
    /// The key of `ip`.
    pub fn of(ip: IpAddr) -> AddrKey {
        match ip {
            IpAddr::V4(v4) => AddrKey(u64::from(u32::from(v4))),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => AddrKey(u64::from(u32::from(v4))),
                None => AddrKey((u128::from(v6) >> 64) as u64),
            },
        }
    }

    /// The key as a number (for hashing into a table).
    pub fn get(self) -> u64 {
        self.0
    }

    /// A key from its number (table tests).
    #[cfg(test)]
    pub(crate) fn from_raw(n: u64) -> AddrKey {
        AddrKey(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_counts_by_64_and_mapped_ipv4_as_ipv4() {
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(AddrKey::of(a), AddrKey::of(b));
        assert_ne!(AddrKey::of(a), AddrKey::of(c));
        let v4: IpAddr = "192.0.2.7".parse().unwrap();
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(AddrKey::of(v4), AddrKey::of(mapped));
        assert_ne!(AddrKey::of(v4), AddrKey::of("192.0.2.8".parse().unwrap()));
    }
}
