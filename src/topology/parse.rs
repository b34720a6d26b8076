//! Text parsers for the kernel files the topology stage reads.
//!
//! Input: the text of one file (already read). Output: a typed value or a
//! [`ShapeError`] that says what was wrong. No I/O happens here, so the captured trees in
//! `tests/data/sys/` and the fuzz target exercise exactly the code the binary runs. No
//! parser panics on any input.
//!
//! Formats: Documentation/ABI/stable/sysfs-devices-node (`distance`), proc(5)
//! (`/proc/self/status`, `/proc/self/cgroup`, `/proc/self/mountinfo`, `/proc/net/route`,
//! `/proc/net/if_inet6`, `/proc/interrupts`), Documentation/admin-guide/cgroup-v2.rst
//! (`cpu.max`), Documentation/scheduler/sched-bwc.rst (v1 `cpu.cfs_quota_us`).

use crate::cpuset::CpuSet;
use core::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// A file's text did not have the expected shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeError(pub String);

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn bad<T>(what: &str, text: &str) -> Result<T, ShapeError> {
    let shown: String = text.trim().chars().take(40).collect();
    Err(ShapeError(format!("{what}: {shown:?}")))
}

/// A small non-negative id (`core_id`, `physical_package_id`, `die_id`, `cluster_id`).
/// The kernel prints -1 for "unknown" in some of them; that is `Ok(None)`.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub fn parse_id(text: &str) -> Result<Option<u32>, ShapeError> {
    let t = text.trim();
    if t == "-1" {
        return Ok(None);
    }
    match t.parse::<u32>() {
        Ok(v) => Ok(Some(v)),
        Err(_) => bad("expected a number", text),
    }
}

/// One row of the node distance table (`nodeN/distance`): numbers separated by spaces.
pub fn parse_distance_row(text: &str) -> Result<Vec<u32>, ShapeError> {
    let mut row = Vec::new();
    for word in text.split_ascii_whitespace() {
        match word.parse::<u32>() {
            Ok(v) if (10..=255).contains(&v) => row.push(v),
            _ => return bad("expected distances from 10 to 255", text),
        }
    }
    if row.is_empty() {
        return bad("empty distance row", text);
    }
    Ok(row)
}

/// A CPU bandwidth limit: `quota` microseconds of CPU time per `period`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quota {
    /// Allowed run time per period, in microseconds.
    pub(crate) quota_us: u64,
    /// Period length, in microseconds.
    pub(crate) period_us: u64,
}

impl Quota {
    /// The worker cap the quota implies: ceil(quota / period), at least 1 (as
    /// docker-nginx's `30-tune-worker-processes.sh` computes it).
    pub fn worker_cap(self) -> usize {
        let cap = self.quota_us.div_ceil(self.period_us.max(1)).max(1);
        usize::try_from(cap).unwrap_or(usize::MAX)
    }

    /// Whether `self` allows less CPU than `other` (compares quota/period exactly).
    pub(crate) fn tighter_than(self, other: Quota) -> bool {
        u128::from(self.quota_us) * u128::from(other.period_us)
            < u128::from(other.quota_us) * u128::from(self.period_us)
    }
}

/// cgroup v2 `cpu.max`: `$MAX $PERIOD`, where `max` means no limit (`Ok(None)`).
pub fn parse_cpu_max(text: &str) -> Result<Option<Quota>, ShapeError> {
    let mut words = text.split_ascii_whitespace();
    let (max, period) = match (words.next(), words.next(), words.next()) {
        (Some(m), Some(p), None) => (m, p),
        (Some(m), None, None) => (m, "100000"),
        _ => return bad("cpu.max: expected \"MAX PERIOD\"", text),
    };
    let period_us = match period.parse::<u64>() {
        Ok(p) if p > 0 => p,
        _ => return bad("cpu.max: bad period", text),
    };
    if max == "max" {
        return Ok(None);
    }
    match max.parse::<u64>() {
        Ok(q) if q > 0 => Ok(Some(Quota {
            quota_us: q,
            period_us,
        })),
        _ => bad("cpu.max: bad quota", text),
    }
}

/// cgroup v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us`; a quota of -1 means no limit.
pub fn parse_cfs(quota: &str, period: &str) -> Result<Option<Quota>, ShapeError> {
    let q = quota.trim();
    if q == "-1" {
        return Ok(None);
    }
    let quota_us = match q.parse::<u64>() {
        Ok(v) if v > 0 => v,
        _ => return bad("cpu.cfs_quota_us: expected -1 or a positive number", quota),
    };
    match period.trim().parse::<u64>() {
        Ok(p) if p > 0 => Ok(Some(Quota {
            quota_us,
            period_us: p,
        })),
        _ => bad("cpu.cfs_period_us: expected a positive number", period),
    }
}

/// `Cpus_allowed_list:` from `/proc/PID/status`.
pub fn parse_status_allowed(text: &str) -> Result<CpuSet, ShapeError> {
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Cpus_allowed_list:") {
            return CpuSet::parse_list(rest).map_err(|e| ShapeError(format!("status: {e}")));
        }
    }
    bad("status: no Cpus_allowed_list line", "")
}

/// One line of `/proc/self/cgroup`: `hierarchy-ID:controller-list:cgroup-path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupLine {
    /// 0 for the unified (v2) hierarchy.
    pub(crate) hierarchy: u32,
    /// Controllers bound to a v1 hierarchy (`cpu,cpuacct`); empty for v2.
    pub(crate) controllers: Vec<String>,
    /// The cgroup's path relative to its hierarchy's root.
    pub path: String,
}

/// Parses `/proc/self/cgroup`, skipping lines that are not `N:list:/path`.
pub fn parse_proc_cgroup(text: &str) -> Vec<CgroupLine> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(list), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let Ok(hierarchy) = id.parse::<u32>() else {
            continue;
        };
        if !path.starts_with('/') {
            continue;
        }
        let controllers = list
            .split(',')
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect();
        out.push(CgroupLine {
            hierarchy,
            controllers,
            path: path.to_string(),
        });
    }
    out
}

/// The fields of a `/proc/self/mountinfo` line that locate a cgroup hierarchy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    /// The directory of the mounted filesystem that is the mount's root (field 4).
    pub(crate) root: String,
    /// Where it is mounted (field 5), octal escapes decoded.
    pub(crate) mount_point: String,
    /// Filesystem type (`cgroup`, `cgroup2`).
    pub(crate) fstype: String,
    /// Superblock options (for v1: the controllers, such as `rw,cpu,cpuacct`).
    pub(crate) super_options: Vec<String>,
}

/// Parses the cgroup mounts (`cgroup` and `cgroup2`) out of `/proc/self/mountinfo`.
pub fn parse_cgroup_mounts(text: &str) -> Vec<Mount> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let fields: Vec<&str> = left.split(' ').collect();
        let mut tail = right.split(' ');
        let (Some(fstype), Some(_source), Some(opts)) = (tail.next(), tail.next(), tail.next())
        else {
            continue;
        };
        if fields.len() < 5 || (fstype != "cgroup" && fstype != "cgroup2") {
            continue;
        }
        out.push(Mount {
            root: unescape_octal(fields[3]),
            mount_point: unescape_octal(fields[4]),
            fstype: fstype.to_string(),
            super_options: opts.split(',').map(str::to_string).collect(),
        });
    }
    out
}

/// Decodes mountinfo's `\040`-style escapes (space, tab, newline, backslash).
#[cfg_attr(feature = "cold-size", optimize(size))]
fn unescape_octal(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let digits = bytes.get(i + 1..i + 4);
        let code = digits
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)))
            .map(|d| d.iter().fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0')))
            .and_then(|v| u8::try_from(v).ok());
        match (bytes[i], code) {
            (b'\\', Some(c)) => {
                out.push(c);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One IPv4 route from `/proc/net/route`: interface, destination and mask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// Interface name.
    pub(crate) interface: String,
    /// Destination network.
    pub(crate) destination: Ipv4Addr,
    /// Network mask.
    pub(crate) mask: Ipv4Addr,
}

/// Parses `/proc/net/route` (hex fields in host byte order of a little-endian dump; the
/// kernel prints the raw `__be32` with `%08X`, so the bytes read back little-endian).
pub fn parse_routes(text: &str) -> Vec<Route> {
    let mut out = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        if f.len() < 8 {
            continue;
        }
        let (Ok(dest), Ok(mask)) = (u32::from_str_radix(f[1], 16), u32::from_str_radix(f[7], 16))
        else {
            continue;
        };
        out.push(Route {
            interface: f[0].to_string(),
            destination: Ipv4Addr::from(dest.to_le_bytes()),
            mask: Ipv4Addr::from(mask.to_le_bytes()),
        });
    }
    out
}

/// Parses `/proc/net/if_inet6`: (address, interface) pairs.
pub fn parse_if_inet6(text: &str) -> Vec<(Ipv6Addr, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        if f.len() < 6 || f[0].len() != 32 {
            continue;
        }
        let Ok(v) = u128::from_str_radix(f[0], 16) else {
            continue;
        };
        out.push((Ipv6Addr::from(v), f[5].to_string()));
    }
    out
}

/// IRQ numbers from `/proc/interrupts` whose action name mentions one of `names`
/// (the interface, or its device such as `virtio2`), leaving out `-config` vectors.
pub fn parse_interrupts_for(text: &str, names: &[&str]) -> Vec<u32> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((irq, rest)) = line.trim_start().split_once(':') else {
            continue;
        };
        let Ok(irq) = irq.parse::<u32>() else {
            continue;
        };
        let Some(action) = rest.split_ascii_whitespace().last() else {
            continue;
        };
        let mentions = names.iter().any(|n| !n.is_empty() && action.contains(n));
        if mentions && !action.ends_with("config") {
            out.push(irq);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_distances() {
        assert_eq!(parse_id("3\n"), Ok(Some(3)));
        assert_eq!(parse_id("-1\n"), Ok(None));
        assert!(parse_id("x").is_err());
        assert_eq!(parse_distance_row("10 21\n"), Ok(vec![10, 21]));
        assert!(parse_distance_row("").is_err());
        assert!(parse_distance_row("10 999").is_err());
    }

    #[test]
    fn quotas() {
        let q = parse_cpu_max("250000 100000\n").unwrap().unwrap();
        assert_eq!(q.worker_cap(), 3);
        assert_eq!(parse_cpu_max("max 100000"), Ok(None));
        assert!(parse_cpu_max("max 0").is_err());
        assert!(parse_cpu_max("1 2 3").is_err());
        assert_eq!(parse_cfs("-1", "100000"), Ok(None));
        assert_eq!(
            parse_cfs("50000", "100000").unwrap().unwrap().worker_cap(),
            1
        );
        let tight = Quota {
            quota_us: 1,
            period_us: 2,
        };
        assert!(tight.tighter_than(Quota {
            quota_us: 2,
            period_us: 2
        }));
    }

    #[test]
    fn proc_files() {
        let st = "Name:\tx\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n";
        assert_eq!(parse_status_allowed(st).unwrap().to_string(), "0-1");
        let cg = parse_proc_cgroup("3:cpuset:/\n1:cpu,cpuacct:/a\n0::/b\nbad\n");
        assert_eq!(cg.len(), 3);
        assert_eq!(cg[1].controllers, vec!["cpu", "cpuacct"]);
        let mi = "34 31 0:31 / /sys/fs/cgroup/cpu\\040x rw - cgroup cgroup rw,cpuset\n\
                  41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n\
                  1 1 0:1 / / rw - ext4 /dev/sda rw\n";
        let m = parse_cgroup_mounts(mi);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].mount_point, "/sys/fs/cgroup/cpu x");
        assert_eq!(m[1].fstype, "cgroup2");
    }

    #[test]
    fn mountinfo_escapes_that_are_not_octal() {
        // Regression: the decoder once did digit arithmetic on the three bytes after every
        // position, not only after a backslash, and underflowed on `/` (found on this
        // machine's real mountinfo). Also: non-octal escapes and values above 255 stay as
        // they are.
        let mi = "1 1 0:1 / /sys/fs/cgroup/a\\x2db\\777\\ rw - cgroup2 cgroup2 rw\n";
        let m = parse_cgroup_mounts(mi);
        assert_eq!(m[0].mount_point, "/sys/fs/cgroup/a\\x2db\\777\\");
    }

    #[test]
    fn net_files() {
        let routes = "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n\
                      eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
        let r = parse_routes(routes);
        assert_eq!(r[0].destination, Ipv4Addr::new(192, 0, 2, 0));
        assert_eq!(r[0].mask, Ipv4Addr::new(255, 255, 255, 0));
        let v6 = parse_if_inet6("fd000000000000000000000000000002 04 40 00 82     eth0\n");
        assert_eq!(v6[0].0, "fd00::2".parse::<Ipv6Addr>().unwrap());
        let irqs = " 37: 0 0 PCI-MSIX 0-edge virtio2-config\n 38: 0 9 PCI-MSIX 1-edge virtio2-input.0\nNMI: 0 0 x\n";
        assert_eq!(parse_interrupts_for(irqs, &["eth0", "virtio2"]), vec![38]);
    }
}
