//! Who may connect: the `--allow` and `--deny` lists of a site.
//!
//! Input: validated entries (a network, or the names `private` and `loopback`, which
//! stand for several), each with where it was given. Output: whether an address is
//! admitted ([`AccessList::admits`]: no allocation, one pass over each list, nothing at
//! all when both are empty) and, for `check --explain-addr`, which entry decided
//! ([`AccessList::verdict`]). It closes and answers nothing: the serve loop closes a
//! connection refused at accept, the responder answers 403 to a proxied client.
//!
//! The rule: an address in any `--deny` network is refused; else, with any `--allow`,
//! only an address in one of them passes; with none, every address does. Addresses
//! are compared in the IPv6 space (`site::net`), so an IPv4-mapped peer of a dual-stack
//! socket matches the IPv4 networks.

use super::net::{Cidr, CidrError};
use std::net::IpAddr;

/// `private`: RFC 1918, RFC 4193 (unique local), link-local (RFC 3927, RFC 4291
/// §2.5.6) and loopback, IPv4 and IPv6.
const PRIVATE: &[(&str, u8)] = &[
    ("10.0.0.0", 8),
    ("172.16.0.0", 12),
    ("192.168.0.0", 16),
    ("169.254.0.0", 16),
    ("127.0.0.0", 8),
    ("fc00::", 7),
    ("fe80::", 10),
    ("::1", 128),
];

/// `loopback`: 127.0.0.0/8 and ::1.
const LOOPBACK: &[(&str, u8)] = &[("127.0.0.0", 8), ("::1", 128)];

/// One network of a list, and the entry that put it there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) net: Cidr,
    /// The entry as given (`private`, `10.0.0.0/8`) and where: the flag or `FILE:LINE`.
    pub(crate) given: Box<str>,
}

/// The `--allow` and `--deny` networks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct AccessList {
    pub(crate) allow: Vec<Entry>,
    pub(crate) deny: Vec<Entry>,
}

/// What a list says about one address, with the entry that decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict<'a> {
    /// In an `--allow` network (`Some`), or no `--allow` is given (`None`).
    Admitted(Option<&'a Entry>),
    /// In a `--deny` network.
    Denied(&'a Entry),
    /// Some `--allow` is given and none holds the address.
    NotAllowed,
}

impl AccessList {
    /// Adds `--allow VALUE` (a network, `private` or `loopback`); `given` names it.
    pub(crate) fn allow(&mut self, value: &str, given: &str) -> Result<(), CidrError> {
        let named = match value {
            "private" => PRIVATE,
            "loopback" => LOOPBACK,
            _ => &[],
        };
        for (ip, len) in named {
            let net = ip.parse().ok().and_then(|ip| Cidr::new(ip, *len).ok());
            self.allow.extend(net.map(|net| Entry {
                net,
                given: given.into(),
            }));
        }
        if named.is_empty() {
            let net = Cidr::parse(value)?;
            self.allow.push(Entry {
                net,
                given: given.into(),
            });
        }
        Ok(())
    }

    /// Adds `--deny CIDR`; `given` names it.
    pub(crate) fn deny(&mut self, value: &str, given: &str) -> Result<(), CidrError> {
        let net = Cidr::parse(value)?;
        self.deny.push(Entry {
            net,
            given: given.into(),
        });
        Ok(())
    }

    /// True when neither list has an entry: every address passes, nothing is checked.
    pub(crate) fn is_open(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }

    /// Whether `ip` may connect.
    pub(crate) fn admits(&self, ip: IpAddr) -> bool {
        if self.is_open() {
            return true;
        }
        let bits = super::net::bits(ip);
        let within = |l: &[Entry]| l.iter().any(|e| e.net.holds(bits));
        !within(&self.deny) && (self.allow.is_empty() || within(&self.allow))
    }

    /// What the lists say about `ip`, and which entry said it.
    pub(crate) fn verdict(&self, ip: IpAddr) -> Verdict<'_> {
        let bits = super::net::bits(ip);
        if let Some(e) = first(&self.deny, bits) {
            return Verdict::Denied(e);
        }
        match (self.allow.is_empty(), first(&self.allow, bits)) {
            (true, _) => Verdict::Admitted(None),
            (false, Some(e)) => Verdict::Admitted(Some(e)),
            (false, None) => Verdict::NotAllowed,
        }
    }
}

/// The first entry of `list` holding the address whose IPv6 form is `bits`.
fn first(list: &[Entry], bits: u128) -> Option<&Entry> {
    list.iter().find(|e| e.net.holds(bits))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(allow: &[&str], deny: &[&str]) -> AccessList {
        let mut l = AccessList::default();
        for a in allow {
            l.allow(a, &format!("--allow {a}")).unwrap();
        }
        for d in deny {
            l.deny(d, &format!("--deny {d}")).unwrap();
        }
        l
    }

    fn admits(l: &AccessList, ip: &str) -> bool {
        let ip: IpAddr = ip.parse().unwrap();
        let by_verdict = matches!(l.verdict(ip), Verdict::Admitted(_));
        assert_eq!(l.admits(ip), by_verdict, "{ip}: the two answers agree");
        by_verdict
    }

    #[test]
    fn private_is_every_local_range_in_both_families() {
        let l = list(&["private"], &[]);
        for ip in [
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.9.9",
            "127.0.0.1",
            "::ffff:192.168.1.1",
            "fd12:3456::1",
            "fc00::1",
            "fe80::1",
            "::1",
        ] {
            assert!(admits(&l, ip), "{ip}");
        }
        for ip in [
            "172.32.0.1",
            "8.8.8.8",
            "2001:db8::1",
            "::ffff:8.8.8.8",
            "fec0::1",
        ] {
            assert!(!admits(&l, ip), "{ip}");
        }
    }

    #[test]
    fn deny_removes_and_allow_restricts() {
        let open = AccessList::default();
        assert!(open.is_open() && admits(&open, "203.0.113.1"));
        let l = list(&["loopback"], &["127.0.0.3"]);
        assert!(admits(&l, "127.0.0.2") && admits(&l, "::1"));
        assert!(!admits(&l, "127.0.0.3") && !admits(&l, "10.0.0.1"));
        let Verdict::Denied(e) = l.verdict("127.0.0.3".parse().unwrap()) else {
            panic!("denied")
        };
        assert_eq!(&*e.given, "--deny 127.0.0.3");
        let only_deny = list(&[], &["10.0.0.0/8"]);
        assert!(admits(&only_deny, "11.0.0.1") && !admits(&only_deny, "10.9.9.9"));
        assert_eq!(
            only_deny.verdict("11.0.0.1".parse().unwrap()),
            Verdict::Admitted(None)
        );
    }

    #[test]
    fn bad_entries_are_refused() {
        let mut l = AccessList::default();
        for bad in ["", "nope", "10.0.0.1/8", "10.0.0.0/33", "private/8"] {
            assert!(l.allow(bad, "x").is_err(), "{bad}");
        }
        assert!(l.deny("private", "x").is_err(), "--deny takes a network");
    }
}
