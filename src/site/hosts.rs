//! Which host answers a request: the names of `--host` and the configuration file's host
//! blocks, and the `--allowed-host` list, as one table read per request.
//!
//! Stage: a value built once from the validated flags (`plan::serving`), read by the
//! responder for every parsed request. Input: a request's host (the absolute-form
//! authority or the Host field, already checked by the parser). Output: the index of the
//! host that answers, or `None` for a 421 (Misdirected Request, RFC 9110 §15.5.20).
//! Names match without case (RFC 9110 §4.2.3: the host is case-insensitive), without
//! the port and without a trailing dot (`example.com.` is the absolute form of the name
//! `example.com`, RFC 1034 §3.1; the configured names have none, `args::hosts`). With no
//! hosts and no `--allowed-host` the table is empty and every request is host 0 without
//! its host being looked at. Nothing here allocates after [`HostTable::new`].
//!
//! The names are found through an open-addressed index hashed without case: a request's
//! name is hashed once and compared with the one or two names of its probe, not with
//! every configured name (a request of the twentieth host once compared 39 names). The
//! index is at most half full, so every probe ends at an empty slot; a name the client
//! picks can make its probe no longer than the configured names that share its hash.

use std::net::{IpAddr, SocketAddr};

/// Most hosts a configuration may have: each has five response counters in every
/// worker's block of shared counters (`stats`).
pub(crate) const HOSTS_COUNTED: usize = 64;

/// The names and what answers them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HostTable {
    /// Lowercase names (no port) and the host each names.
    names: Vec<(Box<[u8]>, u16)>,
    /// `names` by [`fold_hash`]: a place in `names` per slot ([`EMPTY`]: none), linear
    /// probing; a power of two at least twice `names` (empty when `names` is).
    index: Box<[u16]>,
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
            index: Box::new([]),
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
        t.index = index(&t.names);
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

    /// [`HostTable::pick`] for a connection's next request: `seen` is the place of the
    /// name its previous request matched ([`NO_NAME`]: none), updated here. A keep-alive
    /// client sends the same Host again, byte for byte: that is one compare with the
    /// name `seen` (configured lowercase), before any case folding or hashing; only a
    /// different spelling (case, trailing dot) or another name takes the lookup.
    #[inline(always)]
    pub(crate) fn pick_again(&self, host: Option<&[u8]>, seen: &mut u16) -> Option<u16> {
        if self.names.is_empty() {
            return self.any;
        }
        if let (Some((n, i)), Some(h)) = (self.names.get(usize::from(*seen)), host) {
            // The name and nothing, or the name and a port: what `without_port` keeps
            // (a configured name has no `:` outside brackets).
            if h.starts_with(n) && h.get(n.len()).is_none_or(|&b| b == b':') {
                return Some(*i);
            }
        }
        self.pick_seen(host, seen)
    }

    #[inline(never)]
    fn pick_named(&self, host: Option<&[u8]>) -> Option<u16> {
        let mut seen = NO_NAME;
        self.pick_seen(host, &mut seen)
    }

    /// The lookup: `seen` becomes the place of the name found ([`NO_NAME`]: none).
    #[inline(never)]
    fn pick_seen(&self, host: Option<&[u8]>, seen: &mut u16) -> Option<u16> {
        *seen = NO_NAME;
        let Some(name) = host
            .map(without_port)
            .map(|n| n.strip_suffix(b".").unwrap_or(n))
        else {
            return self.any;
        };
        if let Some(i) = self.find(name) {
            *seen = i as u16;
            return Some(self.names[i].1);
        }
        match self.is_listener_literal(name) {
            true => Some(0),
            false => self.any,
        }
    }

    /// The place in `names` of the first name equal to `name` without case.
    #[inline]
    fn find(&self, name: &[u8]) -> Option<usize> {
        let mask = self.index.len().wrapping_sub(1);
        let mut at = fold_hash(name) as usize & mask;
        // Bounded by the slots; an empty one (there always is one) ends it first.
        for _ in 0..self.index.len() {
            let i = usize::from(self.index[at]);
            let (n, _) = self.names.get(i)?;
            // Clients mostly send the name in lowercase, as configured: one memcmp.
            if **n == *name || n.eq_ignore_ascii_case(name) {
                return Some(i);
            }
            at = (at + 1) & mask;
        }
        None
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

/// A slot of the index that holds no name.
const EMPTY: u16 = u16::MAX;

/// No name matched (the `seen` of [`HostTable::pick_again`]).
pub(crate) const NO_NAME: u16 = u16::MAX;

/// FNV-1a (32 bits) over the bytes with bit 5 set: names equal without case hash alike
/// (an ASCII letter's two cases differ in that bit alone; any other byte is the same in
/// both names).
fn fold_hash(name: &[u8]) -> u32 {
    name.iter().fold(0x811c_9dc5, |h, &b| {
        (h ^ u32::from(b | 0x20)).wrapping_mul(0x0100_0193)
    })
}

/// The index of `names` (see [`HostTable::index`]): each name at the first free slot
/// from its hash, unless an equal name is there already (the first one answers).
#[cfg_attr(feature = "cold-size", optimize(size))]
fn index(names: &[(Box<[u8]>, u16)]) -> Box<[u16]> {
    if names.is_empty() {
        return Box::new([]);
    }
    // Places past EMPTY cannot be named: so many names are refused long before.
    let names = &names[..names.len().min(usize::from(EMPTY))];
    let mut slots = vec![EMPTY; (2 * names.len()).next_power_of_two()];
    let mask = slots.len() - 1;
    for (i, (name, _)) in names.iter().enumerate() {
        let mut at = fold_hash(name) as usize & mask;
        loop {
            match slots[at] {
                EMPTY => break slots[at] = i as u16,
                j if names[usize::from(j)].0.eq_ignore_ascii_case(name) => break,
                _ => at = (at + 1) & mask,
            }
        }
    }
    slots.into_boxed_slice()
}

/// The host without its port: `[v6]` whole, otherwise up to the first `:`. A plain
/// loop, not `memchr`: a name is a few bytes, shorter than that call's set-up.
fn without_port(host: &[u8]) -> &[u8] {
    let end = match host.first() {
        Some(b'[') => host
            .iter()
            .position(|&b| b == b']')
            .map_or(host.len(), |i| i + 1),
        _ => host.iter().position(|&b| b == b':').unwrap_or(host.len()),
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

    /// The index finds what a pass over every name finds (the first equal one), for
    /// tables of 1 to 200 names with colliding probes, duplicates and any case.
    #[test]
    fn the_index_agrees_with_a_pass_over_the_names() {
        let naive = |t: &HostTable, name: &[u8]| {
            t.names
                .iter()
                .position(|(n, _)| n.eq_ignore_ascii_case(name))
        };
        for count in [1, 2, 3, 7, 20, 64, 200] {
            let list: Vec<Vec<String>> = (0..count)
                .map(|i| vec![format!("h{i}.test"), format!("www.h{}.test", i % 5)])
                .collect();
            let t = HostTable::new(&list, &[], &[]);
            assert!(t.index.len() >= 2 * t.names.len());
            let mut asked: Vec<String> = (0..count + 10)
                .flat_map(|i| {
                    [
                        format!("H{i}.Test"),
                        format!("www.h{i}.TEST"),
                        format!("h{i}"),
                    ]
                })
                .collect();
            asked.extend(["", "-", "[::1]", "h0.test.", "xn--bcher-kva.test"].map(String::from));
            for name in &asked {
                let name = name.as_bytes();
                assert_eq!(t.find(name), naive(&t, name), "{count} names: {name:?}");
            }
        }
    }

    /// A connection's next request gets what a fresh lookup gets, whatever name its
    /// previous request matched: every ordered pair of spellings, known and not.
    #[test]
    fn pick_again_agrees_with_pick_after_any_name() {
        let t = HostTable::new(
            &names(&[&["a.test", "www.a.test"], &["b.test", "[::1]"], &["a.test"]]),
            &[],
            &[],
        );
        let asked: [&[u8]; 16] = [
            b"a.test",
            b"A.TEST",
            b"a.test:80",
            b"a.test.",
            b"a.test.:8",
            b"a.test..",
            b"a.testx",
            b"a.tes",
            b"a.test.evil",
            b"www.a.test",
            b"b.test",
            b"B.test:1",
            b"[::1]",
            b"[::1]:80",
            b"[::1]x",
            b"c.test",
        ];
        for prev in asked {
            for next in asked {
                let mut seen = NO_NAME;
                assert_eq!(t.pick_again(Some(prev), &mut seen), t.pick(Some(prev)));
                let got = t.pick_again(Some(next), &mut seen);
                assert_eq!(got, t.pick(Some(next)), "{prev:?} then {next:?}");
                assert_eq!(t.pick_again(None, &mut seen), None, "{next:?} then none");
            }
        }
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
