//! The access log and the client address it names, as plain values: where lines go,
//! how they look, which peers are trusted proxies, how far their `X-Forwarded-For` is
//! believed, whether connections begin with a PROXY header. The flags are parsed in
//! `args/logging.rs`; the loop and the master use these values.
//!
//! A [`Cidr`] keeps every network in the IPv6 space, an IPv4 network as its IPv4-mapped
//! form (`::ffff:0:0/96` plus its prefix, RFC 4291 §2.5.5.2), and maps every address
//! the same way before the test. So an IPv4 peer reported by a dual-stack socket as
//! `::ffff:127.0.0.1` matches `127.0.0.0/8`, and `::ffff:127.0.0.0/104` matches the
//! IPv4 peer `127.0.0.1`. A network with bits set beyond its prefix is refused rather
//! than silently masked: it is most likely a typo.

use core::fmt;
use std::net::IpAddr;
use std::path::PathBuf;

/// The local syslog daemon's socket.
pub(crate) const DEV_LOG: &str = "/dev/log";

/// Where access log lines go (`--access-log`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum LogTarget {
    /// No access log.
    #[default]
    Off,
    /// A file, appended to.
    File(PathBuf),
    /// The inherited standard output (`-`).
    Stdout,
    /// Datagrams to the syslog socket at this path (`syslog`).
    Syslog(PathBuf),
}

/// How a line is laid out (`--log-format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// NCSA combined: common plus the quoted `Referer` and `User-Agent`.
    #[default]
    Combined,
    /// NCSA common log format.
    Common,
    /// One JSON object per line, with the worker, CPU, locality, duration and cut-short mark.
    Json,
}

impl LogFormat {
    /// Every format, in the order the help text names them.
    pub(crate) const ALL: [LogFormat; 3] =
        [LogFormat::Combined, LogFormat::Common, LogFormat::Json];

    /// The flag's spelling.
    pub(crate) fn name(self) -> &'static str {
        match self {
            LogFormat::Combined => "combined",
            LogFormat::Common => "common",
            LogFormat::Json => "json",
        }
    }
}

/// A network: its address bits and prefix length, in the IPv6 space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    net: u128,
    prefix: u8,
}

/// Why an address and prefix length do not make a network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CidrError {
    /// The prefix is longer than the family's width.
    Prefix,
    /// Bits are set after the prefix (`10.1.0.0/8`).
    HostBits,
}

impl fmt::Display for CidrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
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
    /// The network of `ip` with a prefix of `len` bits of its own family.
    pub fn new(ip: IpAddr, len: u8) -> Result<Cidr, CidrError> {
        let width = if ip.is_ipv4() { 32 } else { 128 };
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
    pub(crate) fn contains(&self, ip: IpAddr) -> bool {
        bits(ip) & mask(self.prefix) == self.net
    }

    /// Whether any network of `list` holds `ip`.
    pub(crate) fn any_contains(list: &[Cidr], ip: IpAddr) -> bool {
        list.iter().any(|c| c.contains(ip))
    }
}

/// The access log and the client address it names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Logging {
    /// Where lines go.
    pub access_log: LogTarget,
    /// How lines look.
    pub log_format: LogFormat,
    /// Peers whose `X-Forwarded-For` (or PROXY header) names the client.
    pub real_ip_from: Vec<Cidr>,
    /// `--real-ip-recursive`: `X-Forwarded-For` is walked from the right past every
    /// address in `real_ip_from`, not believed for its last address only.
    pub real_ip_recursive: bool,
    /// Every connection begins with a PROXY protocol header (only from `real_ip_from`).
    pub proxy_protocol: bool,
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
    fn any_of_a_list() {
        let list = [net("10.0.0.0", 8), net("::1", 128)];
        assert!(Cidr::any_contains(&list, ip("::1")));
        assert!(Cidr::any_contains(&list, ip("10.2.3.4")));
        assert!(!Cidr::any_contains(&list, ip("127.0.0.1")));
        assert!(!Cidr::any_contains(&[], ip("127.0.0.1")));
    }

    #[test]
    fn format_names() {
        assert_eq!(LogFormat::default(), LogFormat::Combined);
        let names: Vec<_> = LogFormat::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(names, ["combined", "common", "json"]);
    }
}
