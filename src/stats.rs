//! Per-worker counters in a shared mapping made before fork; the master reads them for
//! `--metrics` (Prometheus text) and for the locality figure.
//!
//! Input: the plan's workers and their [`WorkerCounters`] blocks (in [`SharedCounters`]).
//! Output: the Prometheus text exposition format (version 0.0.4); the nonblocking
//! responder the master polls is [`metrics_server`]. It does not count anything itself:
//! workers (the serve loop) and the master (respawns, and resetting a dead worker's
//! open-connections gauge) do.
//!
//! Workers only ever `fetch_add` their own block with `Relaxed` ordering: the counters are
//! statistics, not synchronisation.
//!
//! Metric names and labels are an interface (dashboards and `steerd bench` read them):
//! `steerd_connections_accepted_total{worker="0",cpu="0",node="0"}` and the rest below.

use crate::plan::WorkerPlan;
use crate::sys::{SharedBlocks, SharedZeroed};
use core::fmt::Write as _;
use core::sync::atomic::{AtomicU64, Ordering};

pub(crate) mod latency;
pub(crate) mod metrics_server;
pub(crate) mod process;
pub(crate) mod proxy;

use crate::site::hosts::HOSTS_COUNTED;
use latency::Latency;
use proxy::ProxyResponses;

/// One worker's counters. `#[repr(C)]` and all-atomic so it can live in a `MAP_SHARED`
/// mapping that master and workers see.
#[repr(C)]
#[derive(Debug, Default)]
pub struct WorkerCounters {
    /// Connections accepted.
    pub accepted: AtomicU64,
    /// Accepted connections whose `SO_INCOMING_CPU` equals the worker's CPU.
    pub(crate) local: AtomicU64,
    /// Responses by status class: index 0 = 1xx ... 4 = 5xx.
    pub responses: [AtomicU64; 5],
    /// Response bytes written (head and body).
    pub bytes_sent: AtomicU64,
    /// Connections open now (incremented on accept, decremented on close).
    pub open: AtomicU64,
    /// Epoll events dropped because their token's generation was stale.
    pub(crate) stale_events: AtomicU64,
    /// Times accepting paused: a full table with nothing to reclaim, or `accept4` failing
    /// with anything but EAGAIN, EINTR, ECONNABORTED, EPROTO or EPERM (EMFILE, ENFILE,
    /// ENOBUFS, ENOMEM, ...).
    pub accept_pauses: AtomicU64,
    /// Times the master started a replacement for this worker (written by the master).
    pub(crate) respawns: AtomicU64,
    /// Responses that ended before all of them was written (client gone, timeout, stop,
    /// file shrunk under the transfer).
    pub(crate) cut_short: AtomicU64,
    /// Connections closed for a missing, malformed or truncated PROXY header, or because
    /// their peer may not send one (`--proxy-protocol`).
    pub(crate) proxy_refused: AtomicU64,
    /// Access log lines not written whole (a failed or short write: a full disk).
    pub(crate) log_lines_dropped: AtomicU64,
    /// Connections closed at accept: their address held `--max-conns-per-addr` slots.
    pub(crate) per_addr_refused: AtomicU64,
    /// Connections closed at accept: their address is not let in by `--allow`/`--deny`.
    pub(crate) access_refused: AtomicU64,
    /// Passes of directory listings over their directory (`listing`): each reads every
    /// entry with `getdents64`, so this is the work listings did.
    pub(crate) listing_passes: AtomicU64,
    /// File reads handed to the worker's I/O threads (a page-cache miss, `disk`).
    pub(crate) disk_reads: AtomicU64,
    /// Their waits summed, from the hand-off to the end of the read, in microseconds.
    pub(crate) disk_wait_us: AtomicU64,
    /// Files compressed once into the cache's gzip bytes (`--compress gzip`).
    pub(crate) compressions: AtomicU64,
    /// Response time of the responses finished whole ([`latency`]).
    pub(crate) latency: Latency,
    /// Requests refused by `--basic-auth`, by `auth::Reason` (its `index`).
    pub(crate) auth_failures: [AtomicU64; crate::auth::REASONS],
    /// With hosts, responses by host (its row, kept by name across reloads:
    /// `config::rows`) and status class,
    /// as `responses` (which still counts every response, a 421 included).
    pub(crate) host_responses: HostResponses,
    /// Forwarded requests by upstream and outcome ([`proxy`]).
    pub(crate) proxy_responses: ProxyResponses,
}

/// Responses by host and status class.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct HostResponses(pub(crate) [[AtomicU64; 5]; HOSTS_COUNTED]);

impl Default for HostResponses {
    fn default() -> Self {
        HostResponses(core::array::from_fn(|_| Default::default()))
    }
}

/// The sum of two blocks (a worker slot's two generations), for rendering; a missing
/// block counts as zeros.
pub(crate) fn merged(a: Option<&WorkerCounters>, b: Option<&WorkerCounters>) -> WorkerCounters {
    let sum = |f: fn(&WorkerCounters) -> &AtomicU64| {
        AtomicU64::new(a.map_or(0, |c| load(f(c))) + b.map_or(0, |c| load(f(c))))
    };
    WorkerCounters {
        accepted: sum(|c| &c.accepted),
        local: sum(|c| &c.local),
        responses: [0, 1, 2, 3, 4].map(|k| {
            AtomicU64::new(
                a.map_or(0, |c| load(&c.responses[k])) + b.map_or(0, |c| load(&c.responses[k])),
            )
        }),
        bytes_sent: sum(|c| &c.bytes_sent),
        open: sum(|c| &c.open),
        stale_events: sum(|c| &c.stale_events),
        accept_pauses: sum(|c| &c.accept_pauses),
        respawns: sum(|c| &c.respawns),
        cut_short: sum(|c| &c.cut_short),
        proxy_refused: sum(|c| &c.proxy_refused),
        log_lines_dropped: sum(|c| &c.log_lines_dropped),
        per_addr_refused: sum(|c| &c.per_addr_refused),
        access_refused: sum(|c| &c.access_refused),
        listing_passes: sum(|c| &c.listing_passes),
        disk_reads: sum(|c| &c.disk_reads),
        disk_wait_us: sum(|c| &c.disk_wait_us),
        compressions: sum(|c| &c.compressions),
        latency: Latency::merged(a.map(|c| &c.latency), b.map(|c| &c.latency)),
        auth_failures: core::array::from_fn(|k| {
            AtomicU64::new(
                a.map_or(0, |c| load(&c.auth_failures[k]))
                    + b.map_or(0, |c| load(&c.auth_failures[k])),
            )
        }),
        host_responses: HostResponses(core::array::from_fn(|h| {
            let one = |c: Option<&WorkerCounters>, k: usize| {
                c.map_or(0, |c| load(&c.host_responses.0[h][k]))
            };
            core::array::from_fn(|k| AtomicU64::new(one(a, k) + one(b, k)))
        })),
        proxy_responses: ProxyResponses::merged(
            a.map(|c| &c.proxy_responses),
            b.map(|c| &c.proxy_responses),
        ),
    }
}

/// One worker's counters alone on a 4 KiB-aligned block of the shared mapping. Workers
/// bump their counters on every request: blocks that shared a cache line would bounce it
/// between CPUs, and a block on its own page is first touched (so placed) by its worker,
/// on the worker's node (on 4 KiB-page machines; larger pages group several blocks).
#[repr(C, align(4096))]
#[derive(Debug, Default)]
pub(crate) struct PageCounters {
    /// The counters.
    pub(crate) counters: WorkerCounters,
}

/// Number of `u64` atomics in [`WorkerCounters`]. The mapping relies on zero bytes being a
/// valid block, true only while every field is an atomic integer with no padding: this
/// size check fails to compile if a field of another kind is added.
const COUNTER_WORDS: usize = 21
    + crate::auth::REASONS
    + latency::BUCKETS
    + 1
    + 5 * HOSTS_COUNTED
    + proxy::OUTCOMES.len() * crate::site::upstream::UPSTREAMS_COUNTED;
const _: () = assert!(core::mem::size_of::<WorkerCounters>() == COUNTER_WORDS * 8);
const _: () = assert!(core::mem::size_of::<PageCounters>() == 4096);

// SAFETY: `PageCounters` is `#[repr(C)]` and holds only `AtomicU64`s plus alignment
// padding (the two size checks above fail to compile otherwise), so zero bytes are a valid
// block and every write goes through an atomic.
#[allow(unsafe_code)]
unsafe impl SharedZeroed for PageCounters {}

/// Per-worker counters in one `MAP_SHARED | MAP_ANONYMOUS` mapping, made before fork so
/// the master and every worker see the same pages; one [`PageCounters`] block per worker.
pub(crate) struct SharedCounters(SharedBlocks<PageCounters>);

impl SharedCounters {
    /// `n` zeroed blocks shared across `fork` (`sys::SharedBlocks::new`).
    pub(crate) fn new(n: usize) -> std::io::Result<SharedCounters> {
        SharedBlocks::new(n).map(SharedCounters)
    }

    /// Worker `index`'s counters; `None` past the last worker.
    pub(crate) fn get(&self, index: usize) -> Option<&WorkerCounters> {
        self.0.blocks().get(index).map(|p| &p.counters)
    }

    /// Number of blocks.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.blocks().len()
    }
}

/// The status class label for each `responses` slot.
const CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// One metric family: name, type, help, and how to read it from a block.
struct Family {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    read: fn(&WorkerCounters) -> u64,
}

fn load(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

const FAMILIES: [Family; 14] = [
    Family {
        name: "steerd_connections_accepted_total",
        kind: "counter",
        help: "Connections accepted by the worker.",
        read: |c| load(&c.accepted),
    },
    Family {
        name: "steerd_connections_local_total",
        kind: "counter",
        help: "Accepted connections whose SO_INCOMING_CPU was the worker's CPU.",
        read: |c| load(&c.local),
    },
    Family {
        name: "steerd_bytes_sent_total",
        kind: "counter",
        help: "Response bytes written, head and body.",
        read: |c| load(&c.bytes_sent),
    },
    Family {
        name: "steerd_connections_open",
        kind: "gauge",
        help: "Connections open now.",
        read: |c| load(&c.open),
    },
    Family {
        name: "steerd_stale_events_total",
        kind: "counter",
        help: "Epoll events dropped because their token was stale.",
        read: |c| load(&c.stale_events),
    },
    Family {
        name: "steerd_accept_pauses_total",
        kind: "counter",
        help: "Times accepting paused: connection table full, or accept failed (EMFILE, ENFILE, ENOBUFS, ENOMEM or an unexpected error).",
        read: |c| load(&c.accept_pauses),
    },
    Family {
        name: "steerd_worker_respawns_total",
        kind: "counter",
        help: "Times the master restarted the worker after it died.",
        read: |c| load(&c.respawns),
    },
    Family {
        name: "steerd_responses_cut_short_total",
        kind: "counter",
        help: "Responses that ended before all of them was written.",
        read: |c| load(&c.cut_short),
    },
    Family {
        name: "steerd_proxy_headers_refused_total",
        kind: "counter",
        help: "Connections closed for a bad, missing or untrusted PROXY header.",
        read: |c| load(&c.proxy_refused),
    },
    Family {
        name: "steerd_access_log_lines_dropped_total",
        kind: "counter",
        help: "Access log lines not written whole (a failed or short write).",
        read: |c| load(&c.log_lines_dropped),
    },
    Family {
        name: "steerd_connections_refused_per_addr_total",
        kind: "counter",
        help: "Connections closed at accept: their address held --max-conns-per-addr slots.",
        read: |c| load(&c.per_addr_refused),
    },
    Family {
        name: "steerd_connections_refused_access_total",
        kind: "counter",
        help: "Connections closed at accept: their address is not let in by --allow and --deny.",
        read: |c| load(&c.access_refused),
    },
    Family {
        name: "steerd_compressions_total",
        kind: "counter",
        help: "Files compressed into gzip bytes, once per file version (memory or --compress-cache).",
        read: |c| load(&c.compressions),
    },
    Family {
        name: "steerd_listing_passes_total",
        kind: "counter",
        help: "Passes of directory listings over their directory, each reading every entry.",
        read: |c| load(&c.listing_passes),
    },
];

/// Writes `worker="0",cpu="0",node="0"`.
fn labels(out: &mut String, w: &WorkerPlan) {
    let _ = write!(
        out,
        "worker=\"{}\",cpu=\"{}\",node=\"{}\"",
        w.index, w.cpu, w.node.0
    );
}

/// Renders every worker's counters in the Prometheus text format, families in a fixed
/// order, workers in plan order. `workers` and `counters` pair up by position; `hosts`
/// and `upstreams` name the places of the counters by host and by upstream.
pub(crate) fn render<'a>(
    workers: &'a [WorkerPlan],
    counters: impl Iterator<Item = &'a WorkerCounters> + Clone,
    hosts: &[Box<str>],
    upstreams: &[Box<str>],
) -> String {
    let mut out = String::with_capacity(256 + workers.len() * 1024);
    let pairs = || workers.iter().zip(counters.clone());
    for f in &FAMILIES[..2] {
        family(&mut out, f, pairs());
    }
    let _ = write!(
        out,
        "# HELP steerd_responses_total Responses sent, by status class.\n\
         # TYPE steerd_responses_total counter\n"
    );
    for (w, c) in pairs() {
        responses(&mut out, w, c, hosts);
    }
    for f in &FAMILIES[2..] {
        family(&mut out, f, pairs());
    }
    latency::render(&mut out, pairs().map(|(w, c)| (w, &c.latency)));
    disk_waits(&mut out, pairs());
    let _ = write!(
        out,
        "# HELP steerd_auth_failures_total Requests refused by --basic-auth, by reason.\n\
         # TYPE steerd_auth_failures_total counter\n"
    );
    for (w, c) in pairs() {
        for (reason, n) in crate::auth::Reason::ALL.iter().zip(&c.auth_failures) {
            out.push_str("steerd_auth_failures_total{");
            labels(&mut out, w);
            let _ = writeln!(out, ",reason=\"{}\"}} {}", reason.label(), load(n));
        }
    }
    proxy::render(
        &mut out,
        pairs().map(|(w, c)| (w, &c.proxy_responses)),
        upstreams,
    );
    master_families(&mut out);
    out
}

/// One worker's `steerd_responses_total` series: by class, and with hosts by host as
/// well (`host=""`: the responses no host answered, the 421s). `hosts`: the name of
/// each row of the per-host counters (`config::rows`).
fn responses(out: &mut String, w: &WorkerPlan, c: &WorkerCounters, hosts: &[Box<str>]) {
    let hosts = &hosts[..hosts.len().min(HOSTS_COUNTED)];
    for k in 0..CLASSES.len() {
        if hosts.is_empty() {
            response_series(out, w, k, None, load(&c.responses[k]));
            continue;
        }
        let mut answered = 0;
        for (host, counts) in hosts.iter().zip(&c.host_responses.0) {
            answered += load(&counts[k]);
            response_series(out, w, k, Some(host), load(&counts[k]));
        }
        let rest = load(&c.responses[k]).saturating_sub(answered);
        response_series(out, w, k, Some(""), rest);
    }
}

/// One `steerd_responses_total` line: worker `w`, class `k`, the host if any, `n`.
#[inline(never)]
#[cfg_attr(feature = "cold-size", optimize(size))]
fn response_series(out: &mut String, w: &WorkerPlan, k: usize, host: Option<&str>, n: u64) {
    out.push_str("steerd_responses_total{");
    labels(out, w);
    out.push_str(",class=\"");
    out.push_str(CLASSES[k]);
    if let Some(h) = host {
        out.push_str("\",host=\"");
        out.push_str(h);
    }
    let _ = writeln!(out, "\"}} {n}");
}

/// `steerd_disk_read_wait_seconds`: a summary (sum and count) of the reads handed off.
fn disk_waits<'a>(
    out: &mut String,
    pairs: impl Iterator<Item = (&'a WorkerPlan, &'a WorkerCounters)>,
) {
    const NAME: &str = "steerd_disk_read_wait_seconds";
    let _ = write!(
        out,
        "# HELP {NAME} File reads handed to I/O threads on a page-cache miss, and their \
         wait from hand-off to the end of the read.\n# TYPE {NAME} summary\n"
    );
    for (w, c) in pairs {
        let us = load(&c.disk_wait_us);
        let _ = write!(out, "{NAME}_sum{{");
        labels(out, w);
        let _ = writeln!(out, "}} {}.{:06}", us / 1_000_000, us % 1_000_000);
        let _ = write!(out, "{NAME}_count{{");
        labels(out, w);
        let _ = writeln!(out, "}} {}", load(&c.disk_reads));
    }
}

/// The master's own series (the process that renders): stderr lines it dropped.
fn master_families(out: &mut String) {
    let _ = write!(
        out,
        "# HELP steerd_log_lines_dropped_total Stderr lines the master dropped because \
         stderr could not take them without waiting.\n\
         # TYPE steerd_log_lines_dropped_total counter\n\
         steerd_log_lines_dropped_total{{process=\"master\"}} {}\n",
        crate::say::dropped()
    );
}

/// Appends the master's count of retiring workers (older generations draining after a
/// reload or an upgrade; the supervisor bounds it per slot).
pub(crate) fn render_retiring(out: &mut String, retiring: usize) {
    let _ = write!(
        out,
        "# HELP steerd_retiring_workers Workers of older generations still draining.\n\
         # TYPE steerd_retiring_workers gauge\n\
         steerd_retiring_workers{{process=\"master\"}} {retiring}\n"
    );
}

fn family<'a>(
    out: &mut String,
    f: &Family,
    pairs: impl Iterator<Item = (&'a WorkerPlan, &'a WorkerCounters)>,
) {
    let _ = write!(
        out,
        "# HELP {} {}\n# TYPE {} {}\n",
        f.name, f.help, f.name, f.kind
    );
    for (w, c) in pairs {
        out.push_str(f.name);
        out.push('{');
        labels(out, w);
        let _ = writeln!(out, "}} {}", (f.read)(c));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_counters_survive_fork() {
        use crate::sys::{exit_now, fork, Forked};
        let shared = SharedCounters::new(3).expect("mmap");
        assert_eq!(shared.len(), 3);
        let a = shared.get(0).expect("block 0") as *const WorkerCounters as usize;
        let b = shared.get(1).expect("block 1") as *const WorkerCounters as usize;
        assert_eq!(b - a, 4096, "one page per worker");
        assert!(shared.get(3).is_none());
        match fork().expect("fork") {
            Forked::Child => {
                let block = shared.get(2).expect("block");
                block.accepted.fetch_add(7, Ordering::Relaxed);
                exit_now(0);
            }
            Forked::Parent(pid) => {
                let status =
                    rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty())
                        .expect("waitpid")
                        .expect("a status")
                        .1;
                assert_eq!(status.exit_status(), Some(0));
            }
        }
        assert_eq!(load(&shared.get(2).expect("block").accepted), 7);
        assert_eq!(load(&shared.get(0).expect("block").accepted), 0);
    }

    /// A plan entry for the rendering tests here and in the submodules.
    pub(crate) fn worker(index: u16, cpu: usize, node: u32) -> WorkerPlan {
        WorkerPlan {
            index,
            cpu: crate::cpuset::CpuId::new(cpu).expect("cpu id"),
            node: crate::topology::NodeId(node),
        }
    }

    #[test]
    fn renders_names_and_labels_tools_depend_on() {
        let workers = [worker(0, 2, 0), worker(1, 5, 1)];
        let counters = [WorkerCounters::default(), WorkerCounters::default()];
        counters[1].accepted.store(12, Ordering::Relaxed);
        counters[1].local.store(11, Ordering::Relaxed);
        counters[0].responses[1].store(3, Ordering::Relaxed);
        counters[1].responses[3].store(4, Ordering::Relaxed);
        counters[1].auth_failures[3].store(2, Ordering::Relaxed);
        let text = render(&workers, counters.iter(), &[], &[]);
        let lines: Vec<&str> = text.lines().collect();
        for want in [
            "steerd_connections_accepted_total{worker=\"0\",cpu=\"2\",node=\"0\"} 0",
            "steerd_connections_accepted_total{worker=\"1\",cpu=\"5\",node=\"1\"} 12",
            "steerd_connections_local_total{worker=\"1\",cpu=\"5\",node=\"1\"} 11",
            "steerd_responses_total{worker=\"0\",cpu=\"2\",node=\"0\",class=\"2xx\"} 3",
            "steerd_responses_total{worker=\"1\",cpu=\"5\",node=\"1\",class=\"4xx\"} 4",
            "steerd_connections_open{worker=\"1\",cpu=\"5\",node=\"1\"} 0",
            "steerd_auth_failures_total{worker=\"1\",cpu=\"5\",node=\"1\",reason=\"rate_limited\"} 2",
            "steerd_auth_failures_total{worker=\"0\",cpu=\"2\",node=\"0\",reason=\"missing\"} 0",
            "# TYPE steerd_connections_open gauge",
            "# TYPE steerd_bytes_sent_total counter",
        ] {
            assert!(lines.contains(&want), "missing {want:?} in\n{text}");
        }
    }

    #[test]
    fn with_hosts_responses_carry_a_host_label() {
        let workers = [worker(0, 2, 0)];
        let c = WorkerCounters::default();
        c.responses[1].store(5, Ordering::Relaxed);
        c.responses[3].store(2, Ordering::Relaxed);
        c.host_responses.0[0][1].store(3, Ordering::Relaxed);
        c.host_responses.0[1][1].store(2, Ordering::Relaxed);
        c.host_responses.0[1][3].store(1, Ordering::Relaxed);
        let text = render(&workers, [c].iter(), &["a.test".into(), "*".into()], &[]);
        let lines: Vec<&str> = text.lines().collect();
        let l = "worker=\"0\",cpu=\"2\",node=\"0\"";
        for want in [
            format!("steerd_responses_total{{{l},class=\"2xx\",host=\"a.test\"}} 3"),
            format!("steerd_responses_total{{{l},class=\"2xx\",host=\"*\"}} 2"),
            format!("steerd_responses_total{{{l},class=\"2xx\",host=\"\"}} 0"),
            format!("steerd_responses_total{{{l},class=\"4xx\",host=\"*\"}} 1"),
            format!("steerd_responses_total{{{l},class=\"4xx\",host=\"\"}} 1"),
        ] {
            assert!(lines.contains(&&*want), "missing {want:?} in\n{text}");
        }
        let unlabelled = format!("steerd_responses_total{{{l},class=\"2xx\"}}");
        assert!(!text.contains(&unlabelled), "{text}");
    }

    #[test]
    fn every_sample_line_is_name_labels_value() {
        let workers = [worker(0, 0, 0)];
        let text = render(&workers, [WorkerCounters::default()].iter(), &[], &[]);
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (series, value) = line.rsplit_once(' ').expect("a value");
            assert!(value.parse::<f64>().is_ok(), "{line}");
            assert!(
                series.starts_with("steerd_") && series.ends_with('}'),
                "{line}"
            );
        }
    }
}
