//! The host a request is served for: its root, its rules and its file cache, put in
//! place in the worker's [`Ctx`] before the connection's work.
//!
//! Input: the loop's hosts ([`LoopHosts`]: the name table and, past the first, each
//! host's root and rules) and a host index (picked by `respond.rs` from the request's
//! host, kept in the connection for the rest of its response). Output: `ctx.root`,
//! `ctx.site` and `ctx.cache` are that host's. Each host has a cache of its own, so one
//! host never answers with another's file; the caches not in use are parked here and
//! swapped in by moving the value (no allocation, nothing copied but the cache's
//! handle). Without hosts there is one host, and entering it is one comparison.

use super::Ctx;
use crate::files::cache::FileCache;
use crate::site::access::AccessList;
use crate::site::hosts::HostTable;
use crate::site::SiteRules;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// The host of a connection whose request has named none yet, or none that answers (a
/// 421): entering it changes nothing.
pub(crate) const NONE: u16 = u16::MAX;

/// What the loop serves besides its first root and rules.
#[derive(Debug, Default)]
pub struct LoopHosts {
    /// Which host answers a name.
    pub(crate) table: HostTable,
    /// Each host's name for the log (empty without hosts).
    pub(crate) names: Vec<Box<str>>,
    /// Each host's row of the per-host response counters (empty without hosts:
    /// nothing counted by host).
    pub(crate) rows: Vec<u16>,
    /// Hosts 1.., each with its root (opened once) and rules.
    pub(crate) others: Vec<(OwnedFd, SiteRules)>,
    /// With hosts, the address lists a connection is held to at accept, before its
    /// request names a host: the defaults' (host 0's own lines are its alone).
    pub(crate) at_accept: Option<AccessList>,
}

impl LoopHosts {
    /// Hosts named `names` (one list a host, host 0 first: the loop's own root and
    /// rules), the rest served from `others`.
    pub fn named(names: &[Vec<String>], others: Vec<(OwnedFd, SiteRules)>) -> LoopHosts {
        LoopHosts {
            table: HostTable::new(names, &[], &[]),
            names: names
                .iter()
                .map(|n| n.first().map_or("", |n| n).into())
                .collect(),
            rows: (0..names.len()).map(|i| i as u16).collect(),
            others,
            at_accept: None,
        }
    }

    /// The address lists every peer is held to at accept: [`LoopHosts::at_accept`], or
    /// without hosts the one site's (`first`, host 0).
    pub(crate) fn accept_list<'a>(&'a self, first: &'a SiteRules) -> &'a AccessList {
        self.at_accept.as_ref().unwrap_or(&first.access)
    }
}

/// The hosts as the connections see them.
pub(crate) struct Hosts<'a> {
    /// Which host answers a name.
    pub(crate) table: &'a HostTable,
    /// Each host's name (empty without hosts).
    pub(crate) names: &'a [Box<str>],
    /// Each host's row of the per-host response counters.
    pub(crate) rows: &'a [u16],
    /// Every host's root and rules, host 0 first, and whether its address lists are the
    /// ones a direct peer was held to at accept (see [`Hosts::peer_checked`]).
    sites: Vec<(BorrowedFd<'a>, &'a SiteRules, bool)>,
    /// The caches of the hosts not in place (`None` at the one that is).
    parked: Vec<Option<FileCache>>,
    /// The host in place.
    pub(super) current: u16,
    /// The host in place holds a client to the lists accept held its peer to, and the
    /// peer is the client unless a PROXY header or a trusted proxy names another: then a
    /// request from a direct peer needs no second pass over the lists (`admit.rs`).
    pub(crate) peer_checked: bool,
    /// A parked cache may have hashing or compression under way (it had when parked):
    /// only then does a loop turn visit the parked caches.
    parked_busy: bool,
}

/// Whether `c` has hashing or compression under way (work a loop turn moves on).
#[inline]
fn busy(c: &FileCache) -> bool {
    c.hash_wake().is_some() || c.compress_wake().is_some()
}

impl<'a> Hosts<'a> {
    /// Host 0 (`root`, `site`, whose cache the context holds) and `more`, each with the
    /// cache `cache` makes for its rules. `proxy_protocol`: every client is named by a
    /// PROXY header, none is the peer accept saw.
    pub(crate) fn new(
        first: (BorrowedFd<'a>, &'a SiteRules),
        more: &'a LoopHosts,
        proxy_protocol: bool,
        cache: &dyn Fn(&SiteRules) -> FileCache,
    ) -> Self {
        let at_accept = more.accept_list(first.1);
        let checked = |s: &SiteRules| !proxy_protocol && s.access == *at_accept;
        let mut sites = vec![(first.0, first.1, checked(first.1))];
        sites.extend(
            more.others
                .iter()
                .map(|(fd, s)| (fd.as_fd(), s, checked(s))),
        );
        let mut parked = vec![None];
        parked.extend(more.others.iter().map(|(_, s)| Some(cache(s))));
        Hosts {
            table: &more.table,
            names: &more.names,
            rows: &more.rows,
            peer_checked: sites[0].2,
            sites,
            parked,
            current: 0,
            parked_busy: false,
        }
    }
}

impl Ctx<'_> {
    /// Puts host `i`'s root, rules and cache in place ([`NONE`] changes nothing: a new
    /// connection's, which every connection in close mode enters once).
    #[inline]
    pub(crate) fn enter(&mut self, i: u16) {
        if i == self.hosts.current || i == NONE {
            return;
        }
        self.switch(i);
    }

    #[cold]
    #[inline(never)]
    fn switch(&mut self, i: u16) {
        let at = usize::from(i);
        // `sites` and `parked` have one entry a host: an index past them changes nothing.
        let Some(&(root, site, peer_checked)) = self.hosts.sites.get(at) else {
            return;
        };
        let Some(next) = self.hosts.parked.get_mut(at).and_then(Option::take) else {
            return;
        };
        let prev = core::mem::replace(&mut self.cache, next);
        self.hosts.parked_busy |= busy(&prev);
        self.hosts.parked[usize::from(self.hosts.current)] = Some(prev);
        self.root = root;
        self.site = site;
        self.hosts.current = i;
        self.hosts.peer_checked = peer_checked;
    }

    /// Calls `f` on every host's cache (the once-a-second sweep).
    pub(crate) fn each_cache(&mut self, f: &mut dyn FnMut(&mut FileCache)) {
        f(&mut self.cache);
        self.hosts.parked.iter_mut().flatten().for_each(&mut *f);
    }

    /// Calls `f` on the caches that may have work under way (a loop turn's hashing and
    /// compression): the one in place, and the parked ones only while one of them may.
    /// With many hosts a turn then costs what it costs with one.
    /// Generic, not `dyn`: the loop calls it every turn, and the cache in place is then
    /// stepped inline (a request's instructions count, `scripts/serve-instructions.sh`).
    #[inline]
    pub(crate) fn busy_caches(&mut self, mut f: impl FnMut(&mut FileCache)) {
        // Most turns have nothing to hash or compress: two compares, no call.
        if busy(&self.cache) {
            f(&mut self.cache);
        }
        if self.hosts.parked_busy {
            let parked = self.hosts.parked.iter_mut().flatten();
            self.hosts.parked_busy = parked.fold(false, |any, c| {
                f(c);
                any | busy(c)
            });
        }
    }

    /// Calls `f` on the caches [`Ctx::busy_caches`] visits, to read.
    #[inline]
    pub(crate) fn busy_caches_ref(&self, mut f: impl FnMut(&FileCache)) {
        f(&self.cache);
        if self.hosts.parked_busy {
            self.hosts.parked.iter().flatten().for_each(f);
        }
    }
}
