//! The figures every Prometheus client library exports about its process, for the master
//! and each worker, and `steerd_build_info`.
//!
//! Input: the master's pid and each worker slot's current pid; `/proc/PID/stat` (start
//! time in clock ticks since boot), `/proc/PID/statm` (resident pages; the same count as
//! `stat`'s `rss`, which user-mode QEMU answers with 0 for a process's own `stat`, and
//! which stays the fallback), `/proc/PID/limits` (`Max open files`),
//! the entries of `/proc/PID/fd`, and `btime` in `/proc/stat`. Output: the families
//! `process_start_time_seconds`, `process_open_fds`, `process_max_fds`,
//! `process_resident_memory_bytes` (names, units and help as the client libraries have
//! them), labelled as the other series: `process="master"` for the master, `worker`,
//! `cpu`, `node` for a worker. The master reads them when it renders `/metrics`; the
//! workers do nothing for them, so the serving path is unchanged.
//!
//! A figure that cannot be read is left out rather than shown as 0: a worker that exited
//! since the master last reaped, or `/proc/PID/fd` of a worker after `--user` (a process
//! that changed its user is not dumpable, and then only root may list its descriptors;
//! the master's own stay readable to it). proc(5).
//!
//! The parsers take text, so they are tested with captured files.

use super::labels;
use crate::plan::WorkerPlan;
use core::fmt::Write as _;
use rustix::process::Pid;

/// One process's figures; `None` where the file could not be read or parsed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Figures {
    /// Seconds since the epoch, to the clock tick.
    pub(crate) start_time: Option<f64>,
    /// Open descriptors.
    pub(crate) open_fds: Option<u64>,
    /// The soft `RLIMIT_NOFILE`.
    pub(crate) max_fds: Option<u64>,
    /// Resident set size in bytes.
    pub(crate) resident_bytes: Option<u64>,
}

/// Reads the figures of `pid` (`boot`: the boot time, `btime` of `/proc/stat`).
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn read(pid: Pid, boot: Option<u64>) -> Figures {
    let dir = format!("/proc/{}", pid.as_raw_nonzero());
    let text = |name: &str| std::fs::read_to_string(format!("{dir}/{name}")).ok();
    let stat = text("stat").as_deref().and_then(parse_stat);
    let hz = crate::sys::process::clock_ticks_per_second() as f64;
    let page = crate::sys::mem::page_size() as u64;
    let fds = std::fs::read_dir(format!("{dir}/fd")).ok();
    Figures {
        start_time: stat
            .zip(boot)
            .map(|(s, b)| b as f64 + s.start_ticks as f64 / hz),
        open_fds: fds.map(|d| d.count() as u64),
        max_fds: text("limits").as_deref().and_then(parse_max_open_files),
        resident_bytes: text("statm")
            .as_deref()
            .and_then(parse_statm_resident)
            .or(stat.map(|s| s.rss_pages))
            .map(|pages| pages.saturating_mul(page)),
    }
}

/// The boot time in seconds since the epoch (`btime` of `/proc/stat`).
pub(crate) fn boot_time() -> Option<u64> {
    parse_btime(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// What `/proc/PID/stat` says that is shown here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stat {
    /// Field 22, `starttime`: clock ticks after boot.
    start_ticks: u64,
    /// Field 24, `rss`: resident pages.
    rss_pages: u64,
}

/// Fields 22 and 24 of a `/proc/PID/stat` line. The command (field 2) is in parentheses
/// and may hold spaces and parentheses itself, so fields are counted after the last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let (_, rest) = text.rsplit_once(')')?;
    // `rest` starts with field 3; field N is at index N - 3.
    let mut fields = rest.split_ascii_whitespace();
    let start_ticks = fields.nth(22 - 3)?.parse().ok()?;
    let rss_pages = fields.nth(24 - 22 - 1)?.parse().ok()?;
    Some(Stat {
        start_ticks,
        rss_pages,
    })
}

/// Field 2 of `/proc/PID/statm`, `resident`: resident pages.
fn parse_statm_resident(text: &str) -> Option<u64> {
    text.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// The soft limit of the `Max open files` line of `/proc/PID/limits` (`unlimited`: none).
fn parse_max_open_files(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    let soft = line["Max open files".len()..]
        .split_ascii_whitespace()
        .next()?;
    soft.parse().ok()
}

/// `btime N` of `/proc/stat`.
fn parse_btime(text: &str) -> Option<u64> {
    let line = text.lines().find_map(|l| l.strip_prefix("btime "))?;
    line.trim().parse().ok()
}

/// Whose figures: the master, or the worker of a plan entry.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Whose<'a> {
    /// The master (`process="master"`).
    Master,
    /// A worker (`worker`, `cpu`, `node`).
    Worker(&'a WorkerPlan),
}

/// A family: name, help, and which figure it shows.
struct Family {
    name: &'static str,
    help: &'static str,
    read: fn(&Figures) -> Option<String>,
}

const FAMILIES: [Family; 4] = [
    Family {
        name: "process_start_time_seconds",
        help: "Start time of the process since unix epoch in seconds.",
        read: |f| f.start_time.map(|t| format!("{t:.2}")),
    },
    Family {
        name: "process_open_fds",
        help: "Number of open file descriptors.",
        read: |f| f.open_fds.map(|n| n.to_string()),
    },
    Family {
        name: "process_max_fds",
        help: "Maximum number of open file descriptors.",
        read: |f| f.max_fds.map(|n| n.to_string()),
    },
    Family {
        name: "process_resident_memory_bytes",
        help: "Resident memory size in bytes.",
        read: |f| f.resident_bytes.map(|n| n.to_string()),
    },
];

/// Appends `steerd_build_info` and the four process families for this process (the
/// master) and the workers of `workers` whose pid is given (`pids`, in plan order; `None`
/// for a slot waiting to be restarted).
pub(crate) fn render(
    out: &mut String,
    workers: &[WorkerPlan],
    pids: impl Iterator<Item = Option<Pid>>,
) {
    let boot = boot_time();
    let mut procs = vec![(Whose::Master, read(rustix::process::getpid(), boot))];
    for (w, pid) in workers.iter().zip(pids) {
        if let Some(pid) = pid {
            procs.push((Whose::Worker(w), read(pid, boot)));
        }
    }
    render_figures(out, &procs);
}

/// [`render`] of figures already read: one series per process whose figure was read.
fn render_figures(out: &mut String, procs: &[(Whose<'_>, Figures)]) {
    let _ = write!(
        out,
        "# HELP steerd_build_info The running steerd's version; the value is always 1.\n\
         # TYPE steerd_build_info gauge\n\
         steerd_build_info{{version=\"{}\"}} 1\n",
        env!("CARGO_PKG_VERSION")
    );
    for f in &FAMILIES {
        let _ = write!(
            out,
            "# HELP {} {}\n# TYPE {} gauge\n",
            f.name, f.help, f.name
        );
        for (whose, figures) in procs {
            let Some(value) = (f.read)(figures) else {
                continue;
            };
            out.push_str(f.name);
            out.push('{');
            match whose {
                Whose::Master => out.push_str("process=\"master\""),
                Whose::Worker(w) => labels(out, w),
            }
            let _ = writeln!(out, "}} {value}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_last_parenthesis() {
        let line = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 120 0 0 0 3 1 0 0 20 0 1 0 \
                    987654 12345678 321 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0";
        let want = Stat {
            start_ticks: 987654,
            rss_pages: 321,
        };
        assert_eq!(parse_stat(line), Some(want));
        assert_eq!(parse_stat("4242 (x) S 1 2"), None);
        assert_eq!(parse_stat("no parenthesis"), None);
    }

    #[test]
    fn limits_give_the_soft_open_files_limit() {
        let text = "Limit                     Soft Limit           Hard Limit           Units     \n\
                    Max processes             62967                62967                processes \n\
                    Max open files            10560                1048576              files     \n";
        assert_eq!(parse_max_open_files(text), Some(10560));
        let unlimited =
            "Max open files            unlimited            unlimited            files\n";
        assert_eq!(parse_max_open_files(unlimited), None);
        assert_eq!(parse_max_open_files("Max processes 5 5 processes\n"), None);
    }

    #[test]
    fn btime_is_read_from_proc_stat() {
        let text = "cpu  1 2 3 4\nintr 5\nctxt 6\nbtime 1700000000\nprocesses 7\n";
        assert_eq!(parse_btime(text), Some(1_700_000_000));
        assert_eq!(parse_btime("cpu 1\n"), None);
    }

    /// This test process is the oracle: its own limit, its own descriptors, a start time
    /// between boot and now.
    #[test]
    fn figures_of_this_process_agree_with_what_it_knows() {
        let me = rustix::process::getpid();
        let boot = boot_time();
        assert!(boot.is_some(), "no btime in /proc/stat");
        let f = read(me, boot);
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        assert_eq!(f.max_fds, limit);
        let open = f.open_fds.expect("open fds");
        assert!(open >= 3, "{open} descriptors");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after the epoch")
            .as_secs_f64();
        let start = f.start_time.expect("start time");
        assert!(
            start <= now + 1.0 && start >= boot.unwrap_or(0) as f64,
            "{start}"
        );
        assert!(f.resident_bytes.expect("rss") > 0);
    }

    #[test]
    fn statm_gives_the_resident_pages() {
        assert_eq!(
            parse_statm_resident("5423 1234 567 89 0 1011 0\n"),
            Some(1234)
        );
        assert_eq!(parse_statm_resident("5423"), None);
        assert_eq!(parse_statm_resident(""), None);
    }

    #[test]
    fn families_label_the_master_and_workers_and_leave_out_unread_figures() {
        let w = crate::stats::tests::worker(1, 3, 0);
        let master = Figures {
            start_time: Some(1_700_000_000.25),
            open_fds: Some(9),
            max_fds: Some(1024),
            resident_bytes: Some(4096),
        };
        let worker = Figures {
            open_fds: None,
            ..master
        };
        let mut out = String::new();
        render_figures(
            &mut out,
            &[(Whose::Master, master), (Whose::Worker(&w), worker)],
        );
        let lines: Vec<&str> = out.lines().collect();
        for want in [
            concat!(
                "steerd_build_info{version=\"",
                env!("CARGO_PKG_VERSION"),
                "\"} 1"
            ),
            "# TYPE process_open_fds gauge",
            "process_start_time_seconds{process=\"master\"} 1700000000.25",
            "process_open_fds{process=\"master\"} 9",
            "process_max_fds{worker=\"1\",cpu=\"3\",node=\"0\"} 1024",
            "process_resident_memory_bytes{worker=\"1\",cpu=\"3\",node=\"0\"} 4096",
        ] {
            assert!(lines.contains(&want), "missing {want:?} in\n{out}");
        }
        assert!(!out.contains("process_open_fds{worker"), "{out}");
    }
}
