//! Which host answers a request: the names of `--host` and the configuration file's host
//! blocks, and the `--allowed-host` list, as one table read per request.
//!
//! Stage: a value built once from the validated flags (`plan::serving`), read by the
//! responder for every parsed request. Input: a request's host (the absolute-form
//! authority or the Host field, already checked by the parser). Output: the index of the
//! host that answers, or `None` for a 421 (Misdirected Request, RFC 9110 §15.5.20).
//! Names match without case (RFC 9110 §4.2.3: the host is case-insensitive), without
//! the port and without a trailing dot (`example.com.` is the absolute form of the name
//! `example.com`, RFC 1034 §3.1; the configured names have none, `args::hosts`). With no hosts and no `--allowed-host` the table is empty and every request
//! is host 0 without its host being looked at. Nothing here allocates after [`HostTable::new`].

use std::net::{IpAddr, SocketAddr};

/// Most hosts a configuration may have: each has five response counters in every
/// worker's block of shared counters (`stats`).
pub(crate) const HOSTS_COUNTED: usize = 64;

/// The names and what answers them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HostTable {
    /// Lowercase names (no port) and the host each names.
    names: Vec<(Box<[u8]>, u16)>,
    /// What answers a name the list lacks: `host *`, or host 0 when nothing is listed.
    any: Option<u16>,
    /// With `--allowed-host`: the listeners' addresses, whose IP literals host 0 answers
    /// (an unspecified address stands for every address of its family).
    literals: Vec<IpAddr>,
}

impl Default for HostTable {
    fn default() -> Self {
        HostTable {
            names: Vec::new(),
            any: Some(0),
            literals: Vec::new(),
        }
    }
}

impl HostTable {
    /// The table of `hosts` (each host's names, in host order; `*` is the catch-all), or,
    /// with no hosts, of the `allowed` names and the `listen` addresses' literals.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn new(hosts: &[Vec<String>], allowed: &[String], listen: &[SocketAddr]) -> Self {
        // The names come checked and lowercase (`args::hosts`).
        let lower = |n: &str| Box::<[u8]>::from(n.as_bytes());
        let mut t = HostTable::default();
        if !hosts.is_empty() {
            t.any = None;
            for (i, names) in hosts.iter().enumerate() {
                let i = u16::try_from(i).unwrap_or(u16::MAX);
                for n in names {
                    match n.as_str() {
                        "*" => t.any = Some(i),
                        n => t.names.push((lower(n), i)),
                    }
                }
            }
        } else if !allowed.is_empty() {
            t.any = None;
            t.names = allowed.iter().map(|n| (lower(n), 0)).collect();
            t.literals = listen.iter().map(SocketAddr::ip).collect();
        }
        t
    }

    /// The host that answers `host` (the request's, port and all), `None`: 421. Without
    /// hosts and `--allowed-host`, one compare where the request is answered.
    #[inline(always)]
    pub(crate) fn pick(&self, host: Option<&[u8]>) -> Option<u16> {
        match self.names.is_empty() {
            true => self.any,
            false => self.pick_named(host),
        }
    }

    #[inline(never)]
    fn pick_named(&self, host: Option<&[u8]>) -> Option<u16> {
        let Some(name) = host
            .map(without_port)
            .map(|n| n.strip_suffix(b".").unwrap_or(n))
        else {
            return self.any;
        };
        if let Some((_, i)) = self
            .names
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            return Some(*i);
        }
        match self.is_listener_literal(name) {
            true => Some(0),
            false => self.any,
        }
    }

    /// `name` is an IPv4 address or a bracketed IPv6 address a listener has.
    fn is_listener_literal(&self, name: &[u8]) -> bool {
        if self.literals.is_empty() {
            return false;
        }
        let inner = match name.strip_prefix(b"[") {
            Some(rest) => rest.strip_suffix(b"]").unwrap_or(b""),
            None => name,
        };
        let Ok(ip) = core::str::from_utf8(inner).map(str::parse::<IpAddr>) else {
            return false;
        };
        let Ok(ip) = ip else { return false };
        // `[v6]` for IPv6 only, a bare literal for IPv4 only.
        if ip.is_ipv6() != name.starts_with(b"[") {
            return false;
        }
        self.literals
            .iter()
            .any(|l| *l == ip || (l.is_unspecified() && l.is_ipv6() == ip.is_ipv6()))
    }
}

/// The host without its port: `[v6]` whole, otherwise up to the first `:`.
fn without_port(host: &[u8]) -> &[u8] {
    let end = match host.first() {
        Some(b'[') => memchr::memchr(b']', host).map_or(host.len(), |i| i + 1),
        _ => memchr::memchr(b':', host).unwrap_or(host.len()),
    };
    &host[..end]
}

/// A host name as `--host`, `--allowed-host` and a `host` line take it: `*`, or letters,
/// digits, `-` and `.` (a DNS name), or an IP literal (`[v6]` for IPv6); no port.
pub(crate) fn check_name(name: &str) -> Result<(), &'static str> {
    let dns = |n: &str| {
        !n.is_empty()
            && n.len() <= 253
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
    };
    let v6 = |n: &str| {
        let inner = n.strip_prefix('[').and_then(|r| r.strip_suffix(']'));
        inner.is_some_and(|i| i.parse::<std::net::Ipv6Addr>().is_ok())
    };
    match name == "*" || dns(name) || v6(name) {
        true => Ok(()),
        false => Err("expected a host name such as www.example.org (no port), [::1] or *"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&[&str]]) -> Vec<Vec<String>> {
        let one = |h: &&[&str]| h.iter().map(|n| n.to_string()).collect();
        list.iter().map(one).collect()
    }

    #[test]
    fn no_hosts_answers_everything_with_host_zero() {
        let t = HostTable::default();
        for h in [None, Some(&b"anything"[..]), Some(b"[::1]:8")] {
            assert_eq!(t.pick(h), Some(0));
        }
    }

    #[test]
    fn names_match_without_case_and_port() {
        let t = HostTable::new(&names(&[&["a.test", "www.a.test"], &["b.test"]]), &[], &[]);
        assert_eq!(t.pick(Some(b"A.Test:8080")), Some(0));
        assert_eq!(t.pick(Some(b"www.a.test")), Some(0));
        assert_eq!(t.pick(Some(b"b.TEST")), Some(1));
        assert_eq!(t.pick(Some(b"c.test")), None);
        assert_eq!(t.pick(None), None);
        assert_eq!(t.pick(Some(b"a.test.evil")), None);
        assert_eq!(t.pick(Some(b"a.test.:80")), Some(0), "the absolute name");
        assert_eq!(t.pick(Some(b"a.test..")), None);
        let star = HostTable::new(&names(&[&["a.test"], &["*"]]), &[], &[]);
        assert_eq!(star.pick(Some(b"c.test")), Some(1));
        assert_eq!(star.pick(Some(b"a.test")), Some(0));
    }

    #[test]
    fn allowed_hosts_and_listener_literals() {
        let listen: Vec<SocketAddr> =
            vec!["127.0.0.1:80".parse().unwrap(), "[::]:80".parse().unwrap()];
        let t = HostTable::new(&[], &["nas.local".into()], &listen);
        assert_eq!(t.pick(Some(b"nas.local:80")), Some(0));
        assert_eq!(t.pick(Some(b"127.0.0.1:80")), Some(0));
        assert_eq!(
            t.pick(Some(b"[::1]:80")),
            Some(0),
            "[::] stands for every v6 address"
        );
        assert_eq!(t.pick(Some(b"[fe80::1]")), Some(0));
        assert_eq!(t.pick(Some(b"127.0.0.2")), None);
        assert_eq!(t.pick(Some(b"rebind.evil.example")), None);
        assert_eq!(t.pick(Some(b"[127.0.0.1]")), None);
    }

    #[test]
    fn names_are_checked() {
        for ok in ["a.test", "*", "[::1]", "127.0.0.1", "x-y.example"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a.test:80", "a b", "[zz]", "a/b", "é.test"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
