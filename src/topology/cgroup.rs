//! What the process may use: its affinity, its cgroup's cpuset and its CPU quota.
//!
//! Input: a [`Reader`] (roots and mode). Output: the affinity set and the cgroup
//! [`Limits`]. Only cgroup mount points under `/sys` are followed (rebased onto the sysfs
//! root). Sources: Documentation/admin-guide/cgroup-v2.rst (`cpuset.cpus.effective`,
//! `cpu.max`), cgroup-v1/cpusets.rst (`cpuset.effective_cpus`), sched-bwc.rst
//! (`cpu.cfs_quota_us`), proc(5) (`/proc/PID/cgroup`, `/proc/PID/mountinfo`).

use super::parse::{self, CgroupLine, Mount, Quota};
use super::{Mode, Reader};
use crate::cpuset::{CpuId, CpuSet};
use std::path::{Component, Path, PathBuf};

/// The cgroup's restrictions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Limits {
    /// The effective cpuset, if a cpuset controller is found.
    pub(crate) cpuset: Option<CpuSet>,
    /// The tightest quota on the way from the cgroup up to its hierarchy's root.
    pub(crate) quota: Option<Quota>,
}

/// The affinity mask: the kernel's (live), the status file's (proc tree) or none.
pub(crate) fn affinity(r: &mut Reader) -> Option<CpuSet> {
    match r.mode {
        Mode::Live => live_affinity(r),
        Mode::ProcTree => {
            let text = r.proc("self/status")?;
            match parse::parse_status_allowed(&text) {
                Ok(set) => Some(set),
                Err(e) => {
                    r.warn(format!("topology: self/status: {e}"));
                    None
                }
            }
        }
        Mode::SysTreeOnly => None,
    }
}

fn live_affinity(r: &mut Reader) -> Option<CpuSet> {
    match rustix::thread::sched_getaffinity(None) {
        Ok(mask) => {
            let ids = (0..crate::sys::AffinityMask::MAX_CPU)
                .filter(|&i| mask.is_set(i))
                .filter_map(CpuId::new);
            Some(CpuSet::from_ids(ids))
        }
        Err(e) => {
            r.warn(format!("topology: sched_getaffinity: {e}"));
            None
        }
    }
}

/// The cpuset and quota of the process's cgroups (v2 and any v1 hierarchies).
pub(crate) fn limits(r: &mut Reader) -> Limits {
    let dirs = match r.mode {
        Mode::SysTreeOnly => namespace_root_dirs(r),
        Mode::Live | Mode::ProcTree => membership_dirs(r),
    };
    let mut limits = Limits::default();
    for dir in dirs {
        if let Some(set) = cpuset_of(r, &dir) {
            limits.cpuset = Some(match limits.cpuset {
                Some(prev) => prev.intersection(&set),
                None => set,
            });
        }
        for q in quotas_up_to(r, &dir) {
            if limits.quota.is_none_or(|prev| q.tighter_than(prev)) {
                limits.quota = Some(q);
            }
        }
    }
    limits
}

/// A cgroup directory and the mount point above which its limits do not apply.
struct CgroupDir {
    path: PathBuf,
    top: PathBuf,
}

impl CgroupDir {
    /// The cgroup and its ancestors up to the mount point (only the cgroup itself if it
    /// is somehow not below the mount point), so nothing above the hierarchy is read.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn chain(&self) -> Vec<PathBuf> {
        if !self.path.starts_with(&self.top) {
            return vec![self.path.clone()];
        }
        let mut out = Vec::new();
        for a in self.path.ancestors() {
            out.push(a.to_path_buf());
            if a == self.top {
                break;
            }
        }
        out
    }
}

/// Inside a cgroup namespace the process's cgroup is the mount's root.
fn namespace_root_dirs(r: &Reader) -> Vec<CgroupDir> {
    let base = r.sysfs.join("fs/cgroup");
    let mut out = Vec::new();
    for sub in ["", "cpuset", "cpu", "cpu,cpuacct", "cpuacct,cpu"] {
        let path = if sub.is_empty() {
            base.clone()
        } else {
            base.join(sub)
        };
        if path.is_dir() {
            out.push(CgroupDir {
                top: path.clone(),
                path,
            });
        }
    }
    out
}

/// The process's cgroup in every hierarchy that `/proc/self/mountinfo` shows under `/sys`.
/// A missing `self/cgroup` or `self/mountinfo` warns once: the cpuset and quota are then
/// not applied, which the user must know (the plan may use CPUs the cgroup forbids).
fn membership_dirs(r: &mut Reader) -> Vec<CgroupDir> {
    let (Some(cg), Some(mi)) = (
        required_proc(r, "self/cgroup"),
        required_proc(r, "self/mountinfo"),
    ) else {
        return Vec::new();
    };
    let lines = parse::parse_proc_cgroup(&cg);
    let mounts = parse::parse_cgroup_mounts(&mi);
    let mut out = Vec::new();
    for line in &lines {
        let Some(mount) = mounts.iter().find(|m| serves(m, line)) else {
            continue;
        };
        if let Some(dir) = cgroup_dir(r, mount, line) {
            out.push(dir);
        }
    }
    out
}

/// A proc file the cgroup limits depend on; missing or unreadable warns once.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn required_proc(r: &mut Reader, rel: &str) -> Option<String> {
    let before = r.warnings.len();
    let text = r.proc(rel);
    if text.is_none() && r.warnings.len() == before {
        r.warn(format!(
            "topology: {}: missing: cgroup cpuset and CPU quota not applied",
            r.procfs.join(rel).display()
        ));
    }
    text
}

/// The directory of `line`'s cgroup under `mount`, rebased onto the sysfs root. A path
/// with a `..` component could walk out of the tree, so it is refused with a warning.
fn cgroup_dir(r: &mut Reader, mount: &Mount, line: &CgroupLine) -> Option<CgroupDir> {
    let path = Path::new(&line.path);
    if path.components().any(|c| c == Component::ParentDir) {
        r.warn(format!(
            "topology: cgroup path {} has a '..' component: not read",
            line.path
        ));
        return None;
    }
    let Some(top) = rebase(&r.sysfs, &mount.mount_point) else {
        r.warn(format!(
            "topology: cgroup mount {} is outside /sys: not read",
            mount.mount_point
        ));
        return None;
    };
    // `Path::strip_prefix` matches whole components: a root `/a` does not match `/ab/c`.
    let rel = path.strip_prefix(&mount.root).unwrap_or(path);
    let rel = rel.strip_prefix("/").unwrap_or(rel);
    Some(CgroupDir {
        path: top.join(rel),
        top,
    })
}

/// Whether `mount` is the hierarchy `line` names (v2: cgroup2; v1: same controllers).
fn serves(mount: &Mount, line: &CgroupLine) -> bool {
    if line.hierarchy == 0 {
        return mount.fstype == "cgroup2";
    }
    mount.fstype == "cgroup"
        && !line.controllers.is_empty()
        && line
            .controllers
            .iter()
            .all(|c| mount.super_options.iter().any(|o| o == c))
}

/// `/sys/fs/cgroup/x` to `SYSFS/fs/cgroup/x`; `None` for mount points outside `/sys`.
fn rebase(sysfs: &Path, mount_point: &str) -> Option<PathBuf> {
    let path = Path::new(mount_point);
    if path.components().any(|c| c == Component::ParentDir) {
        return None;
    }
    Some(sysfs.join(path.strip_prefix("/sys").ok()?))
}

/// The effective cpuset: v2 `cpuset.cpus.effective` or v1 `cpuset.effective_cpus`
/// (or `cpuset.cpus` on old v1 kernels), at the cgroup or its nearest ancestor having one.
fn cpuset_of(r: &mut Reader, dir: &CgroupDir) -> Option<CpuSet> {
    let names = [
        "cpuset.cpus.effective",
        "cpuset.effective_cpus",
        "cpuset.cpus",
    ];
    for ancestor in dir.chain() {
        for name in names {
            let Some(text) = r.text(&ancestor.join(name)) else {
                continue;
            };
            match CpuSet::parse_list(&text) {
                Ok(set) if !set.is_empty() => return Some(set),
                Ok(_) => {}
                Err(e) => r.warn(format!("topology: {}: {e}", ancestor.join(name).display())),
            }
        }
    }
    None
}

/// Every quota from the cgroup up to its mount point (a parent's limit binds too).
fn quotas_up_to(r: &mut Reader, dir: &CgroupDir) -> Vec<Quota> {
    dir.chain()
        .iter()
        .filter_map(|ancestor| quota_at(r, ancestor))
        .collect()
}

fn quota_at(r: &mut Reader, dir: &Path) -> Option<Quota> {
    if let Some(text) = r.text(&dir.join("cpu.max")) {
        return warn_err(r, dir, parse::parse_cpu_max(&text));
    }
    let quota = r.text(&dir.join("cpu.cfs_quota_us"))?;
    let period = r.text(&dir.join("cpu.cfs_period_us"))?;
    warn_err(r, dir, parse::parse_cfs(&quota, &period))
}

#[cfg_attr(feature = "cold-size", optimize(size))]
fn warn_err(
    r: &mut Reader,
    dir: &Path,
    v: Result<Option<Quota>, parse::ShapeError>,
) -> Option<Quota> {
    match v {
        Ok(q) => q,
        Err(e) => {
            r.warn(format!("topology: {}: {e}", dir.display()));
            None
        }
    }
}
