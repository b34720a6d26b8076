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
//!   checks, request rates);
//! - [`rate`]: the `--rate-limit` buckets.

pub(crate) mod forwarded;
pub mod proxy_header;
pub(crate) mod rate;

pub(crate) use forwarded::{forwarded_for, Walk};
pub(crate) use proxy_header::parse_proxy_header;

#[cfg(test)]
use std::net::Ipv6Addr;
use std::net::{IpAddr, Ipv4Addr};

/// The unit a per-address limit counts: an IPv4 address, or an IPv6 /64 prefix (a host
/// is given a whole /64, so counting single IPv6 addresses would count nothing). An
/// IPv4-mapped IPv6 address counts as its IPv4 address. The family is part of the key:
/// the 32 bits of an IPv4 address never equal the 64 of a prefix (`0:0:7f00:2::/64` is
/// not `127.0.0.2`). Twelve bytes, aligned to 4, so the tables that hold one in a record
/// beside `u32`s do not grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AddrKey {
    /// The IPv4 address in `[1]` (`[0]` is 0), or the prefix's upper and lower halves.
    bits: [u32; 2],
    family: Family,
}

/// The address family of an [`AddrKey`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    V4,
    V6,
}

impl AddrKey {
    /// The key of 0.0.0.0: what an empty table record holds.
    pub(crate) const UNSPECIFIED: AddrKey = AddrKey {
        bits: [0, 0],
        family: Family::V4,
    };

    /// The key of `ip`.
    pub(crate) fn of(ip: IpAddr) -> AddrKey {
        let v4 = |v4: Ipv4Addr| AddrKey {
            bits: [0, u32::from(v4)],
            family: Family::V4,
        };
        match ip {
            IpAddr::V4(a) => v4(a),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(a) => v4(a),
                None => {
                    let prefix = (u128::from(v6) >> 64) as u64;
                    AddrKey {
                        bits: [(prefix >> 32) as u32, prefix as u32],
                        family: Family::V6,
                    }
                }
            },
        }
    }

    /// The key folded into one word for hashing into a table. Distinct keys may share a
    /// word (so a table compares whole keys); the family is mixed in so that an IPv4
    /// address and the prefix of the same number do not share a home.
    pub(crate) fn hash_word(self) -> u64 {
        let bits = (u64::from(self.bits[0]) << 32) | u64::from(self.bits[1]);
        match self.family {
            Family::V4 => bits,
            Family::V6 => bits ^ 0x9E37_79B9_7F4A_7C15,
        }
    }

    /// The key of the IPv6 prefix `n` (table tests).
    #[cfg(test)]
    pub(crate) fn from_raw(n: u64) -> AddrKey {
        AddrKey::of(IpAddr::V6(Ipv6Addr::from(u128::from(n) << 64)))
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

    /// Pairs of an IPv4 address and an IPv6 address whose /64 prefix is the same number:
    /// different clients, different keys.
    const SAME_NUMBER: [(&str, &str); 4] = [
        ("127.0.0.2", "0:0:7f00:2::1"),
        ("127.0.0.1", "0:0:7f00:1:ffff:ffff:ffff:ffff"),
        ("0.0.0.0", "::2"),
        ("255.255.255.255", "0:0:ffff:ffff::"),
    ];

    #[test]
    fn an_ipv4_address_is_never_the_key_of_an_ipv6_prefix() {
        for (v4, v6) in SAME_NUMBER {
            let (v4, v6): (IpAddr, IpAddr) = (v4.parse().unwrap(), v6.parse().unwrap());
            assert_ne!(AddrKey::of(v4), AddrKey::of(v6), "{v4} {v6}");
            assert_ne!(AddrKey::of(v4).hash_word(), AddrKey::of(v6).hash_word());
        }
        assert_eq!(
            AddrKey::of(IpAddr::from([0, 0, 0, 0])),
            AddrKey::UNSPECIFIED
        );
        assert_eq!(core::mem::size_of::<AddrKey>(), 12);
        assert_eq!(core::mem::align_of::<AddrKey>(), 4);
    }
}
