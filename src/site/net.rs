//! Networks of addresses: a [`Cidr`], as `--real-ip-from`, `--allow` and `--deny` name
//! them, and the test whether an address is in one. Pure values, no I/O, no allocation.
//!
//! A [`Cidr`] keeps every network in the IPv6 space, an IPv4 network as its IPv4-mapped
//! form (`::ffff:0:0/96` plus its prefix, RFC 4291 §2.5.5.2), and maps every address
//! the same way before the test. So an IPv4 peer reported by a dual-stack socket as
//! `::ffff:127.0.0.1` matches `127.0.0.0/8`, and `::ffff:127.0.0.0/104` matches the
//! IPv4 peer `127.0.0.1`. A network with bits set beyond its prefix is refused rather
//! than silently masked: it is most likely a typo.

use core::fmt;
use std::net::IpAddr;

/// A network: its address bits and its prefix as a mask, in the IPv6 space (the mask,
/// not the length, so that a test is an AND and a compare: a request may test 50).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    net: u128,
    mask: u128,
}

/// `10.0.0.0/8`, `fc00::/7`: an IPv4 network (IPv4-mapped, prefix 96 or more) in its
/// own family.
impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v6 = std::net::Ipv6Addr::from(self.net);
        let prefix = self.mask.leading_ones();
        match v6.to_ipv4_mapped().filter(|_| prefix >= 96) {
            Some(v4) => write!(f, "{v4}/{}", prefix - 96),
            None => write!(f, "{v6}/{prefix}"),
        }
    }
}

/// Why an address and prefix length do not make a network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CidrError {
    /// The prefix is longer than the family's width.
    Prefix,
    /// Bits are set after the prefix (`10.1.0.0/8`).
    HostBits,
    /// The address is neither IPv4 nor IPv6.
    Address,
}

impl fmt::Display for CidrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CidrError::Prefix => "prefix length must be 0-32 (IPv4) or 0-128 (IPv6)",
            CidrError::HostBits => "address has bits set beyond the prefix length",
            CidrError::Address => "not an IPv4 or IPv6 address",
        })
    }
}

/// The IPv6 form of an address (IPv4 as IPv4-mapped).
pub(crate) fn bits(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => a.to_ipv6_mapped().to_bits(),
        IpAddr::V6(a) => a.to_bits(),
    }
}

fn mask(prefix: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0)
}

impl Cidr {
    /// The network of `ip` with a prefix of `len` bits of its own family.
    pub fn new(ip: IpAddr, len: u8) -> Result<Cidr, CidrError> {
        let width = if ip.is_ipv4() { 32 } else { 128 };
        if len > width {
            return Err(CidrError::Prefix);
        }
        let prefix = len + (128 - width);
        let (net, mask) = (bits(ip), mask(prefix));
        if net & !mask != 0 {
            return Err(CidrError::HostBits);
        }
        Ok(Cidr { net, mask })
    }

    /// `ADDR/LEN`, or a bare `ADDR` (one host).
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub fn parse(v: &str) -> Result<Cidr, CidrError> {
        let (addr, len) = match v.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (v, None),
        };
        let ip: IpAddr = addr.parse().map_err(|_| CidrError::Address)?;
        let len = match len {
            None => Some(if ip.is_ipv4() { 32 } else { 128 }),
            Some(l) if !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()) => l.parse().ok(),
            Some(_) => None,
        };
        Cidr::new(ip, len.ok_or(CidrError::Prefix)?)
    }

    /// Whether `ip` is in this network.
    pub(crate) fn contains(&self, ip: IpAddr) -> bool {
        self.holds(bits(ip))
    }

    /// Whether the address whose IPv6 form is `bits` ([`bits`]) is in this network.
    pub(crate) fn holds(&self, bits: u128) -> bool {
        bits & self.mask == self.net
    }

    /// Whether any network of `list` holds `ip`.
    pub(crate) fn any_contains(list: &[Cidr], ip: IpAddr) -> bool {
        list.iter().any(|c| c.contains(ip))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn net(s: &str, len: u8) -> Cidr {
        Cidr::new(ip(s), len).unwrap()
    }

    #[test]
    fn ipv4_networks() {
        let c = net("127.0.0.0", 8);
        assert!(c.contains(ip("127.0.0.1")) && c.contains(ip("127.255.255.255")));
        assert!(!c.contains(ip("128.0.0.1")) && !c.contains(ip("10.0.0.1")));
        assert!(c.contains(ip("::ffff:127.0.0.1")), "v4-mapped peer");
        assert!(!c.contains(ip("::1")) && !c.contains(ip("::7f00:1")));
        let host = net("192.0.2.7", 32);
        assert!(host.contains(ip("192.0.2.7")) && !host.contains(ip("192.0.2.8")));
        let all = net("0.0.0.0", 0);
        assert!(all.contains(ip("203.0.113.9")) && !all.contains(ip("2001:db8::1")));
    }

    #[test]
    fn ipv6_networks() {
        let c = net("2001:db8::", 32);
        assert!(c.contains(ip("2001:db8:ffff::1")) && !c.contains(ip("2001:db9::1")));
        assert!(!c.contains(ip("127.0.0.1")));
        let mapped = net("::ffff:10.0.0.0", 104);
        assert!(
            mapped.contains(ip("10.9.8.7")),
            "v4 peer in a v4-mapped network"
        );
        let all = net("::", 0);
        assert!(all.contains(ip("::1")) && all.contains(ip("1.2.3.4")));
        assert!(net("::1", 128).contains(ip("::1")));
    }

    #[test]
    fn refusals() {
        assert_eq!(Cidr::new(ip("10.0.0.0"), 33), Err(CidrError::Prefix));
        assert_eq!(Cidr::new(ip("::"), 129), Err(CidrError::Prefix));
        assert_eq!(Cidr::new(ip("10.1.0.0"), 8), Err(CidrError::HostBits));
        assert_eq!(Cidr::new(ip("2001:db8::1"), 32), Err(CidrError::HostBits));
        assert!(!CidrError::Prefix.to_string().is_empty());
    }

    #[test]
    fn displayed_as_given() {
        for (given, shown) in [
            ("10.0.0.0/8", "10.0.0.0/8"),
            ("0.0.0.0/0", "0.0.0.0/0"),
            ("192.0.2.7", "192.0.2.7/32"),
            ("fc00::/7", "fc00::/7"),
            ("::/0", "::/0"),
            ("::1", "::1/128"),
        ] {
            assert_eq!(Cidr::parse(given).unwrap().to_string(), shown, "{given}");
        }
    }

    #[test]
    fn any_of_a_list() {
        let list = [net("10.0.0.0", 8), net("::1", 128)];
        assert!(Cidr::any_contains(&list, ip("::1")));
        assert!(Cidr::any_contains(&list, ip("10.2.3.4")));
        assert!(!Cidr::any_contains(&list, ip("127.0.0.1")));
        assert!(!Cidr::any_contains(&[], ip("127.0.0.1")));
    }
}
