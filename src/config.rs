//! The serving configuration: what the serve flags mean once validated and planned, as
//! plain values.
//!
//! Input: none (value types only). Output: [`Serving`], which the planning stage makes
//! from the serve flags (`plan::serving`) and which is all the master, its workers and
//! their loops see of the command line; and the two flag values the plan also carries
//! ([`SteerPolicy`], [`UserSpec`]). It parses nothing (`args.rs` does) and decides no
//! placement (`plan.rs` does). Its one import is the site rules, themselves plain values
//! (`site`).

use crate::site::hosts::HostTable;
use crate::site::SiteRules;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The listen address when none is given.
pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

mod logging;
pub(crate) mod rows;

pub(crate) use logging::DEV_LOG;
pub use logging::{Cidr, LogFormat, LogTarget, Logging};

/// Which program steers new connections to listeners.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SteerPolicy {
    /// `ld #cpu` and a decision tree to the worker on (or nearest to) that CPU.
    Cpu,
    /// The CPU's NUMA node, then a spread over that node's listeners by `#rxhash`.
    Numa,
    /// No program: the kernel's 4-tuple hash.
    Hash,
}

impl SteerPolicy {
    /// The flag's spelling.
    pub(crate) fn name(self) -> &'static str {
        match self {
            SteerPolicy::Cpu => "cpu",
            SteerPolicy::Numa => "numa",
            SteerPolicy::Hash => "hash",
        }
    }
}

/// `--user NAME|UID[:GID]`, unresolved (looked up before binding, applied after).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserSpec {
    /// A user name, and optionally a group name or id.
    Name(String, Option<String>),
    /// A numeric uid, and optionally a group name or id.
    Id(u32, Option<String>),
}

/// The `--max-conns-per-addr` a `--max-conns` implies: a quarter of the slots, so no
/// one address can hold more than a quarter of a worker's table, and at least 16, so a
/// small table still lets a browser (6 connections an origin) and a few clients behind
/// one NAT in.
pub(crate) fn default_conns_per_addr(max_conns: u32) -> u32 {
    (max_conns / 4).max(16)
}

/// What bounds a proxied request: `--max-body`, `--proxy-timeout`, `--proxy-max-conns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProxyLimits {
    /// The largest request body forwarded (past it 413).
    pub max_body: u64,
    /// How long an upstream may take to send its response head (then 504).
    pub timeout: Duration,
    /// Connections in flight to one upstream per worker (past it 503).
    pub max_conns: u32,
}

impl Default for ProxyLimits {
    fn default() -> Self {
        ProxyLimits {
            max_body: 1 << 20,
            timeout: Duration::from_secs(60),
            max_conns: 256,
        }
    }
}

/// Every connection deadline, as one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// Deadline for a complete request head (then 408 and close).
    pub header: Duration,
    /// Idle time allowed between keep-alive requests.
    pub keepalive: Duration,
    /// Time a send may stall before the connection is cut.
    pub send: Duration,
    /// How long a graceful stop (SIGQUIT) waits for responses in flight.
    pub shutdown: Duration,
}

/// What the master, its workers and their loops serve, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Serving {
    /// Directory to serve.
    pub(crate) root: PathBuf,
    /// Addresses to listen on (one reuseport group each).
    pub(crate) listen: Vec<SocketAddr>,
    /// Connection slots per worker and listener.
    pub(crate) max_conns: u32,
    /// Of those, the slots one client address (IPv4 address, IPv6 /64) may hold.
    pub(crate) max_conns_per_addr: u32,
    /// The connection deadlines.
    pub(crate) timeouts: Timeouts,
    /// `SO_SNDBUF` of every listener, which accepted connections inherit (`None`: the
    /// kernel's autotuning, up to `net.ipv4.tcp_wmem`'s maximum per connection).
    pub(crate) send_buffer: Option<u32>,
    /// The access log and the client address it names.
    pub(crate) logging: Logging,
    /// Prometheus metrics endpoint.
    pub(crate) metrics: Option<SocketAddr>,
    /// What bounds a proxied request.
    pub(crate) proxy: ProxyLimits,
    /// User to become after binding.
    pub(crate) user: Option<UserSpec>,
    /// Headers, cache rules, error pages, fallback, media types, sidecars.
    pub(crate) site: SiteRules,
    /// The virtual hosts (`--host`, host blocks); none: `root` and `site` serve.
    pub(crate) hosts: Vec<VHost>,
    /// Which host answers a name (and `--allowed-host`).
    pub(crate) host_table: HostTable,
}

/// One virtual host: its first name (for the log and the metrics), root and rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct VHost {
    /// Its first name (`*` for the catch-all).
    pub(crate) name: Box<str>,
    /// Its directory.
    pub(crate) root: PathBuf,
    /// Its rules.
    pub(crate) site: SiteRules,
    /// Its row of the per-host response counters, kept by name across reloads
    /// (`config::rows`).
    pub(crate) row: u16,
}

impl Serving {
    /// Every site's rules, host 0 first: the hosts', or the one site's without hosts.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn sites(&self) -> Vec<&SiteRules> {
        match self.hosts.is_empty() {
            true => vec![&self.site],
            false => self.hosts.iter().map(|h| &h.site).collect(),
        }
    }

    /// Every (root, rules) pair served: the hosts', or the one site's without hosts.
    pub(crate) fn sites_mut(&mut self) -> Vec<(&PathBuf, &mut SiteRules)> {
        match self.hosts.is_empty() {
            true => vec![(&self.root, &mut self.site)],
            false => self
                .hosts
                .iter_mut()
                .map(|h| (&h.root, &mut h.site))
                .collect(),
        }
    }

    /// Gives each `--proxy` rule of every site its upstream's row of the counters by
    /// upstream (`counted`), kept by name in `rows` (`config::rows`): none once every row
    /// has another upstream.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn number_upstreams(&mut self, rows: &mut rows::Rows) {
        for (_, site) in self.sites_mut() {
            for rule in site.rules.iter_mut().filter(|r| r.upstream.is_some()) {
                rule.counted = rows.row_of(&rule.upstream_name).map(|i| i as u8);
            }
        }
    }
}

/// Reads the configuration again (`--config`, for a HUP): the next generation's
/// [`Serving`], or one line naming `FILE:LINE` (or the setting) and what is wrong. Made
/// by `cmd/serve.rs`, which alone may parse flags; the master only calls it.
pub(crate) type Reread<'a> = &'a dyn Fn() -> Result<Serving, String>;
