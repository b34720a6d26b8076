//! What `ab` reads about a server it started: the CPU time of its whole process tree
//! (from `/proc`), the per-worker connection split (from steerd's `--metrics`), and
//! system call counts (from `strace -c -f`, counts only: strace slows what it traces).
//!
//! Input: a root PID, a metrics address, strace's summary text. Output: plain numbers.
//! `/proc/PID/stat` fields (proc(5)): after the `)` that ends the command name come
//! state, ppid, ... utime (14), stime (15), cutime (16), cstime (17), in clock ticks.
//! A process's cutime/cstime hold the time of children it has reaped, so summing
//! utime+stime+cutime+cstime over the live members of the tree counts every process
//! that ever belonged to it exactly once.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// The fields of `/proc/PID/stat` that `ab` uses; times in clock ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    /// Parent process.
    pub(crate) ppid: u32,
    /// Process group.
    pub(crate) pgrp: u32,
    /// utime + stime of the process (all its threads).
    pub(crate) own: u64,
    /// cutime + cstime: children it has reaped.
    pub(crate) reaped: u64,
}

/// Parses the text of `/proc/PID/stat`.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn parse_stat(text: &str) -> Option<Stat> {
    let after = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = after.split_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    Some(Stat {
        ppid: num(1)? as u32,
        pgrp: num(2)? as u32,
        own: num(11)? + num(12)?,
        reaped: num(13)? + num(14)?,
    })
}

/// True while any live process belongs to process group `pgrp`.
pub(crate) fn group_alive(pgrp: u32) -> bool {
    all_processes().iter().any(|(_, s)| s.pgrp == pgrp)
}

/// Every live process with its pid (a list: the lookups are few, and a hash map's code is
/// the larger).
#[cfg_attr(feature = "cold-size", optimize(size))]
fn all_processes() -> Vec<(u32, Stat)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|t| parse_stat(&t))
        {
            out.push((pid, stat));
        }
    }
    out
}

/// `root` and every live descendant of it.
pub(crate) fn tree_pids(root: u32) -> Vec<u32> {
    descendants(root, &all_processes())
}

#[cfg_attr(feature = "cold-size", optimize(size))]
fn descendants(root: u32, procs: &[(u32, Stat)]) -> Vec<u32> {
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(
            procs
                .iter()
                .filter(|(_, s)| s.ppid == parent)
                .map(|&(pid, _)| pid),
        );
        i += 1;
    }
    tree.retain(|p| procs.iter().any(|(pid, _)| pid == p));
    tree
}

/// CPU time (user + system) used so far by `root`'s process tree, reaped members included.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn tree_cpu(root: u32) -> Duration {
    let procs = all_processes();
    let ticks: u64 = descendants(root, &procs)
        .iter()
        .filter_map(|p| procs.iter().find(|(pid, _)| pid == p))
        .map(|(_, s)| s)
        .map(|s| s.own + s.reaped)
        .sum();
    ticks_to_duration(ticks)
}

/// CPU time of this process's reaped children (`cutime + cstime` of `/proc/self/stat`).
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn reaped_children_cpu() -> Duration {
    let ticks = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|t| parse_stat(&t))
        .map_or(0, |s| s.reaped);
    ticks_to_duration(ticks)
}

fn ticks_to_duration(ticks: u64) -> Duration {
    let hz = crate::sys::process::clock_ticks_per_second();
    Duration::from_nanos(ticks.saturating_mul(1_000_000_000) / hz)
}

/// A per-worker counter from a Prometheus text page: every sample whose metric name
/// contains `needle` (such as `accepted`, matching `steerd_connections_accepted_total`)
/// and that has a `worker` label, in worker order.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn parse_per_worker(page: &str, needle: &str) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for line in page.lines().filter(|l| !l.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Some((name, labels)) = series.split_once('{') else {
            continue;
        };
        if !name.contains(needle) {
            continue;
        }
        let worker = labels.split(',').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            (k.trim() == "worker")
                .then(|| v.trim().trim_end_matches('}').trim_matches('"').to_string())
        });
        if let (Some(w), Ok(v)) = (worker, value.trim().parse::<f64>()) {
            out.push((w, v as u64));
        }
    }
    let key = |w: &str| (w.parse::<u64>().unwrap_or(u64::MAX), w.to_string());
    super::sort_few_by(&mut out, |a, b| key(&a.0) < key(&b.0));
    out
}

/// Fetches `http://addr/metrics` with a plain blocking request (2 s limit).
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn fetch_metrics(addr: SocketAddr) -> Option<String> {
    let limit = Some(Duration::from_secs(2));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(limit).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: steerd\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut page = String::new();
    s.read_to_string(&mut page).ok()?;
    let body = page.split_once("\r\n\r\n")?.1;
    Some(body.to_string())
}

/// The address after `--metrics` in a command line (steerd's flag), if any.
pub(crate) fn metrics_flag(argv: &[String]) -> Option<SocketAddr> {
    argv.iter()
        .position(|a| a == "--metrics")
        .and_then(|i| argv.get(i + 1))
        .and_then(|v| v.parse().ok())
}

/// Calls per syscall and the total, from the table `strace -c` prints.
pub(crate) fn parse_strace(summary: &str) -> Option<(u64, Vec<(String, u64)>)> {
    let mut rows = Vec::new();
    let mut total = None;
    for line in summary.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // "% time  seconds  usecs/call  calls  [errors]  syscall"
        if f.len() < 5 || f[0].parse::<f64>().is_err() {
            continue;
        }
        let Ok(calls) = f[3].parse::<u64>() else {
            continue;
        };
        let name = f[f.len() - 1].to_string();
        if name == "total" {
            total = Some(calls);
        } else {
            rows.push((name, calls));
        }
    }
    Some((total?, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields() {
        let t = "1234 (a (b) c) S 77 1234 1234 0 -1 4194560 100 0 0 0 25 7 3 2 20 0 1 0";
        let want = Stat {
            ppid: 77,
            pgrp: 1234,
            own: 32,
            reaped: 5,
        };
        assert_eq!(parse_stat(t), Some(want));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn own_tree_is_found_and_has_cpu() {
        let me = std::process::id();
        assert!(tree_pids(me).contains(&me));
        let spin = std::time::Instant::now();
        while spin.elapsed() < Duration::from_millis(30) {
            std::hint::black_box(0u64);
        }
        let cpu = tree_cpu(me);
        if cpu == Duration::ZERO && clock_cpu() > Duration::ZERO {
            // User-mode QEMU's /proc/self/stat reports zero CPU time; the host's
            // clock_gettime (passed through) does count the spin.
            crate::test_skip::skip_or_fail(
                &crate::test_skip::this_test(),
                "/proc/PID/stat reports zero CPU time after a 30 ms spin that \
                 CLOCK_PROCESS_CPUTIME_ID counts (user-mode QEMU's /proc)",
            );
            return;
        }
        assert!(cpu > Duration::ZERO);
    }

    /// This process's CPU time as `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)` reports it.
    fn clock_cpu() -> Duration {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
        Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    }

    #[test]
    fn accepted_per_worker() {
        let page = "# HELP x\nsteerd_accepted_total{worker=\"1\",cpu=\"1\"} 7\n\
                    steerd_accepted_total{worker=\"0\",cpu=\"0\"} 5\nsteerd_open{worker=\"0\"} 3\n";
        assert_eq!(
            parse_per_worker(page, "accepted"),
            vec![("0".into(), 5), ("1".into(), 7)]
        );
        assert_eq!(parse_per_worker(page, "open"), vec![("0".into(), 3)]);
    }

    #[test]
    fn strace_summary() {
        let s = "% time     seconds  usecs/call     calls    errors syscall\n\
                 ------ ----------- ----------- --------- --------- ----------------\n\
                  60.00    0.600000           2    300000           writev\n\
                  40.00    0.400000           1    200000      1000 read\n\
                 ------ ----------- ----------- --------- --------- ----------------\n\
                 100.00    1.000000           2    500000      1000 total\n";
        let (total, rows) = parse_strace(s).unwrap();
        assert_eq!(total, 500000);
        assert_eq!(
            rows,
            vec![("writev".into(), 300000), ("read".into(), 200000)]
        );
    }
}
