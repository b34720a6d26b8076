//! Networks in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`, a bare address for one
//! host), and whether an address falls in one.
//!
//! Input: the text of a `--real-ip-from` value; addresses to test. Output: a [`Cidr`] or
//! the [`CidrError`] naming what is wrong. Every network is kept in the IPv6 space, an
//! IPv4 network as its IPv4-mapped form (`::ffff:0:0/96` plus its prefix, RFC 4291
//! §2.5.5.2), and every address is mapped the same way before the test. So an IPv4 peer
//! reported by a dual-stack socket as `::ffff:127.0.0.1` matches `127.0.0.0/8`, and
//! `::ffff:127.0.0.0/104` matches the IPv4 peer `127.0.0.1`. A value with bits set
//! beyond its prefix is refused rather than silently masked: it is most likely a typo.

use core::fmt;
use core::net::{IpAddr, Ipv6Addr};

/// A network: its address bits and prefix length, in the IPv6 space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    net: u128,
    prefix: u8,
}

/// Why a CIDR text is not valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CidrError {
    /// Not an IPv4 or IPv6 address.
    Address,
    /// The prefix is not a number within the family's width.
    Prefix,
    /// Bits are set after the prefix (`10.1.0.0/8`).
    HostBits,
}

impl fmt::Display for CidrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CidrError::Address => "not an IPv4 or IPv6 address",
            CidrError::Prefix => "prefix length must be 0-32 (IPv4) or 0-128 (IPv6)",
            CidrError::HostBits => "address has bits set beyond the prefix length",
        })
    }
}

/// The IPv6 form of an address (IPv4 as IPv4-mapped).
fn bits(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => a.to_ipv6_mapped().to_bits(),
        IpAddr::V6(a) => a.to_bits(),
    }
}

fn mask(prefix: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0)
}

impl Cidr {
    /// Parses `ADDR/LEN` or a bare `ADDR` (one host).
    pub fn parse(s: &str) -> Result<Cidr, CidrError> {
        let (addr, len) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let ip: IpAddr = addr.parse().map_err(|_| CidrError::Address)?;
        let width = if ip.is_ipv4() { 32 } else { 128 };
        let len = match len {
            None => width,
            Some(l) if !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()) => {
                l.parse::<u8>().map_err(|_| CidrError::Prefix)?
            }
            Some(_) => return Err(CidrError::Prefix),
        };
        if len > width {
            return Err(CidrError::Prefix);
        }
        let prefix = len + (128 - width);
        let net = bits(ip);
        if net & !mask(prefix) != 0 {
            return Err(CidrError::HostBits);
        }
        Ok(Cidr { net, prefix })
    }

    /// Whether `ip` is in this network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        bits(ip) & mask(self.prefix) == self.net
    }

    /// Whether any network of `list` holds `ip`.
    pub fn any_contains(list: &[Cidr], ip: IpAddr) -> bool {
        list.iter().any(|c| c.contains(ip))
    }
}

/// IPv4 networks print in IPv4 notation, others in IPv6.
impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v6 = Ipv6Addr::from_bits(self.net);
        match v6.to_ipv4_mapped() {
            Some(v4) if self.prefix >= 96 => write!(f, "{v4}/{}", self.prefix - 96),
            _ => write!(f, "{v6}/{}", self.prefix),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ipv4_networks() {
        let c = Cidr::parse("127.0.0.0/8").unwrap();
        assert!(c.contains(ip("127.0.0.1")) && c.contains(ip("127.255.255.255")));
        assert!(!c.contains(ip("128.0.0.1")) && !c.contains(ip("10.0.0.1")));
        assert!(c.contains(ip("::ffff:127.0.0.1")), "v4-mapped peer");
        assert!(!c.contains(ip("::1")) && !c.contains(ip("::7f00:1")));
        let host = Cidr::parse("192.0.2.7").unwrap();
        assert!(host.contains(ip("192.0.2.7")) && !host.contains(ip("192.0.2.8")));
        let all = Cidr::parse("0.0.0.0/0").unwrap();
        assert!(all.contains(ip("203.0.113.9")) && !all.contains(ip("2001:db8::1")));
    }

    #[test]
    fn ipv6_networks() {
        let c = Cidr::parse("2001:db8::/32").unwrap();
        assert!(c.contains(ip("2001:db8:ffff::1")) && !c.contains(ip("2001:db9::1")));
        assert!(!c.contains(ip("127.0.0.1")));
        let mapped = Cidr::parse("::ffff:10.0.0.0/104").unwrap();
        assert!(
            mapped.contains(ip("10.9.8.7")),
            "v4 peer in a v4-mapped network"
        );
        let all = Cidr::parse("::/0").unwrap();
        assert!(all.contains(ip("::1")) && all.contains(ip("1.2.3.4")));
        assert!(Cidr::parse("::1").unwrap().contains(ip("::1")));
    }

    #[test]
    fn refusals() {
        for (s, e) in [
            ("", CidrError::Address),
            ("localhost", CidrError::Address),
            ("10.0.0.0/", CidrError::Prefix),
            ("10.0.0.0/33", CidrError::Prefix),
            ("10.0.0.0/+8", CidrError::Prefix),
            ("10.0.0.0/8/8", CidrError::Prefix),
            ("::/129", CidrError::Prefix),
            ("10.1.0.0/8", CidrError::HostBits),
            ("2001:db8::1/32", CidrError::HostBits),
            ("010.0.0.0/8", CidrError::Address),
        ] {
            assert_eq!(Cidr::parse(s), Err(e), "{s:?}");
            assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn display_keeps_the_family() {
        for s in ["127.0.0.0/8", "0.0.0.0/0", "2001:db8::/32", "::1/128"] {
            assert_eq!(Cidr::parse(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn any_of_a_list() {
        let list = [
            Cidr::parse("10.0.0.0/8").unwrap(),
            Cidr::parse("::1").unwrap(),
        ];
        assert!(Cidr::any_contains(&list, ip("::1")));
        assert!(Cidr::any_contains(&list, ip("10.2.3.4")));
        assert!(!Cidr::any_contains(&list, ip("127.0.0.1")));
        assert!(!Cidr::any_contains(&[], ip("127.0.0.1")));
    }
}
