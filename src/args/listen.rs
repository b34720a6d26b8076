//! Stage 1, the forms of a `--listen` (or `-p`) value people bring from other servers.
//!
//! Input: one value, and a way to read `/etc/hosts` (called only when the value names a
//! host). Output: the addresses it stands for. The forms:
//!
//! - `ADDR:PORT`, `[V6]:PORT`: that address;
//! - `PORT`, `:PORT`, `*:PORT`: every interface, IPv4 and IPv6 (`0.0.0.0:PORT` and
//!   `[::]:PORT`, as Go's `:8080`);
//! - `localhost:PORT`: `127.0.0.1:PORT` and `[::1]:PORT`;
//! - `NAME:PORT`: every address `/etc/hosts` gives NAME (hosts(5)). No DNS query is made
//!   at start: a name not in the file is refused, and the message says so.
//!
//! The addresses of the port and name forms are *implied*: where the machine cannot bind
//! one of them (no IPv6 in a container: `EAFNOSUPPORT`, `EADDRNOTAVAIL`), `serve` skips
//! it with a warning (`listen::bindable`), as long as one address remains. An address
//! given as such is never skipped.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// What one `--listen` value stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ListenValue {
    /// Its addresses, in order, without repeats.
    pub(crate) addrs: Vec<SocketAddr>,
    /// The addresses came from a port or a name (and may be skipped where their family
    /// cannot be bound), not from an address.
    pub(crate) implied: bool,
}

/// Parses `value`; `hosts` returns the text of `/etc/hosts` (`None` when unreadable).
pub(crate) fn parse(
    value: &str,
    hosts: &dyn Fn() -> Option<String>,
) -> Result<ListenValue, BadListen> {
    if let Ok(addr) = value.parse::<SocketAddr>() {
        return Ok(ListenValue {
            addrs: vec![addr],
            implied: false,
        });
    }
    let (host, port) = match value.rsplit_once(':') {
        Some((host, port)) => (host, port),
        None => ("", value),
    };
    let Ok(port) = port.parse::<u16>() else {
        return Err(BadListen::Form(value.to_string()));
    };
    let ips: Vec<IpAddr> = match host {
        "" | "*" => vec![Ipv4Addr::UNSPECIFIED.into(), Ipv6Addr::UNSPECIFIED.into()],
        h if h.eq_ignore_ascii_case("localhost") => {
            vec![Ipv4Addr::LOCALHOST.into(), Ipv6Addr::LOCALHOST.into()]
        }
        h if is_host_name(h) => lookup(h, hosts).map_err(|why| BadListen::Name {
            value: value.to_string(),
            name: h.to_string(),
            why,
        })?,
        _ => {
            return Err(BadListen::Host {
                value: value.to_string(),
                host: host.to_string(),
                port,
            })
        }
    };
    Ok(ListenValue {
        addrs: ips
            .into_iter()
            .map(|ip| SocketAddr::new(ip, port))
            .collect(),
        implied: true,
    })
}

/// A host name as hosts(5) and RFC 1123 §2.1 spell one: labels of letters, digits and
/// `-`, separated by dots.
fn is_host_name(h: &str) -> bool {
    !h.is_empty()
        && h.len() <= 253
        && h.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// Every address `/etc/hosts` gives `name` (case-insensitive), in file order, once each.
fn lookup(name: &str, hosts: &dyn Fn() -> Option<String>) -> Result<Vec<IpAddr>, NoName> {
    let text = hosts().ok_or(NoName::Unreadable)?;
    let found = addresses_of(name, &text);
    if found.is_empty() {
        return Err(NoName::NotInHosts);
    }
    Ok(found)
}

/// Why a `--listen` value stands for no address (printed after the flag).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BadListen {
    /// None of the forms.
    Form(String),
    /// `HOST:PORT` whose host is neither an address nor a name.
    Host {
        /// The value.
        value: String,
        /// Its host part.
        host: String,
        /// Its port.
        port: u16,
    },
    /// A name `/etc/hosts` does not give.
    Name {
        /// The value.
        value: String,
        /// The name.
        name: String,
        /// Why it has no address.
        why: NoName,
    },
}

/// Why a name has no address (no DNS query is made at start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NoName {
    /// `/etc/hosts` cannot be read.
    Unreadable,
    /// `/etc/hosts` does not list it.
    NotInHosts,
}

impl core::fmt::Display for BadListen {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            BadListen::Form(value) => write!(
                f,
                "{value:?}: expected PORT, :PORT, ADDR:PORT, [V6]:PORT, localhost:PORT or \
                 NAME:PORT (such as 8080, :8080, 127.0.0.1:8080, [::1]:8080)"
            ),
            BadListen::Host { value, host, port } => write!(
                f,
                "{value:?}: {host:?} is neither an address nor a host name (an IPv6 \
                 address goes in brackets: [::1]:{port})"
            ),
            BadListen::Name {
                value,
                name,
                why: NoName::Unreadable,
            } => write!(
                f,
                "{value:?}: {name:?} cannot be looked up: /etc/hosts cannot be read, and \
                 steerd makes no DNS query at start; give an address"
            ),
            BadListen::Name {
                value,
                name,
                why: NoName::NotInHosts,
            } => write!(
                f,
                "{value:?}: {name:?} is not in /etc/hosts, and steerd makes no DNS query at \
                 start; give an address (such as 192.0.2.1:8080) or add the name to /etc/hosts"
            ),
        }
    }
}

/// The addresses of `name` in hosts(5) text: `ADDRESS NAME [ALIAS...]` lines, `#`
/// comments. Scoped IPv6 addresses (`fe80::1%eth0`) are left out: a `SocketAddr` here
/// carries no scope.
fn addresses_of(name: &str, text: &str) -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut words = line.split_whitespace();
        let Some(Ok(ip)) = words.next().map(str::parse::<IpAddr>) else {
            continue;
        };
        if words.any(|w| w.eq_ignore_ascii_case(name)) && !out.contains(&ip) {
            out.push(ip);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTS: &str = "\
127.0.0.1\tlocalhost
::1     localhost ip6-localhost ip6-loopback
# 10.9.9.9 commented
192.0.2.10  web.example web   # the web tier
2001:db8::10 web.example web
fe80::1%eth0 linklocal
192.0.2.10 WEB
";

    fn with_hosts(v: &str) -> Result<ListenValue, BadListen> {
        parse(v, &|| Some(HOSTS.to_string()))
    }

    fn addrs(v: &str) -> Vec<String> {
        let l = with_hosts(v).unwrap();
        l.addrs.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn every_form_gives_its_addresses() {
        assert_eq!(addrs("127.0.0.1:8080"), ["127.0.0.1:8080"]);
        assert_eq!(addrs("[::1]:0"), ["[::1]:0"]);
        assert!(!with_hosts("127.0.0.1:8080").unwrap().implied);
        for all in ["8080", ":8080", "*:8080"] {
            assert_eq!(addrs(all), ["0.0.0.0:8080", "[::]:8080"], "{all}");
            assert!(with_hosts(all).unwrap().implied);
        }
        assert_eq!(addrs("localhost:80"), ["127.0.0.1:80", "[::1]:80"]);
        assert_eq!(addrs("LocalHost:80"), ["127.0.0.1:80", "[::1]:80"]);
        assert_eq!(addrs("web:81"), ["192.0.2.10:81", "[2001:db8::10]:81"]);
        assert_eq!(
            addrs("web.example:81"),
            ["192.0.2.10:81", "[2001:db8::10]:81"]
        );
        assert_eq!(addrs("ip6-localhost:1"), ["[::1]:1"]);
    }

    #[test]
    fn names_not_in_the_file_say_there_is_no_dns() {
        for bad in ["db:80", "linklocal:80", "commented:80"] {
            let e = with_hosts(bad).unwrap_err().to_string();
            assert!(
                e.contains("not in /etc/hosts") && e.contains("no DNS"),
                "{e}"
            );
        }
        let e = parse("web:80", &|| None).unwrap_err().to_string();
        assert!(e.contains("/etc/hosts cannot be read"), "{e}");
    }

    #[test]
    fn malformed_values_are_refused_without_reading_hosts() {
        let never = || -> Option<String> { panic!("hosts read for a malformed value") };
        for bad in [
            "",
            "localhost",
            "65536",
            ":x",
            "::1:80x",
            "a b:80",
            "-x:80",
            "web:",
            "1.2.3:80x",
        ] {
            assert!(parse(bad, &never).is_err(), "{bad:?}");
        }
        let e = parse("::1:80", &never).unwrap_err().to_string();
        assert!(e.contains("in brackets"), "{e}");
    }
}
