//! Stage 2 of the pipeline: `/sys`, the process's affinity and its cgroup to a
//! [`Topology`], the machine as steerd may use it.
//!
//! Input: the sysfs and procfs roots as plain paths (normally `/sys` and `/proc`; tests
//! point them at the captured trees in `tests/data/sys/`). Output: a [`Topology`] and a list of one-line warnings. Reading
//! never fails and never panics: a missing or malformed file degrades to a safe default
//! (one node, each CPU its own core, no quota) and says so in one warning.
//!
//! CPUs are grouped only by the kernel's `*_cpus_list` masks (core, cluster, package,
//! last-level cache), never by arithmetic on `core_id` or `cluster_id`: those ids restart
//! per cluster or per socket on some machines (Documentation/admin-guide/cputopology.rst;
//! `docs/placement.md`, "Topology", on the arm64 guest). A group is named by its lowest CPU.
//!
//! Where the process's own state comes from (the same table is in `docs/placement.md`):
//! - `--sysfs /sys --procfs /proc` (live): `sched_getaffinity`, and the cgroup found via
//!   `/proc/self/cgroup` and `/proc/self/mountinfo`.
//! - any `--procfs DIR` other than `/proc`: `DIR/self/status` (`Cpus_allowed_list`),
//!   `DIR/self/cgroup` and `DIR/self/mountinfo`.
//! - `--sysfs DIR` with the default `/proc`: nothing is read from `/proc` (the live
//!   process has nothing to do with a captured tree); the tree itself is taken as seen
//!   from inside a cgroup namespace: cgroup v2 at `DIR/fs/cgroup`, v1 at
//!   `DIR/fs/cgroup/{cpuset,cpu}`, and the affinity is every online CPU.
//!
//! Cgroup mount points are honoured only under `/sys` (rebased onto the sysfs root), so
//! nothing outside `/sys` and `/proc` is ever read.

mod cgroup;
mod nic;
pub mod parse;

pub use nic::{attach_nic, nic_for, Nic};
pub(crate) use parse::Quota;

use crate::cpuset::{CpuId, CpuSet};
use std::io;
use std::path::{Path, PathBuf};

/// A NUMA node id as the kernel numbers it (`/sys/devices/system/node/nodeN`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

impl core::fmt::Display for NodeId {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.0.fmt(f)
    }
}

impl From<NodeId> for i64 {
    fn from(id: NodeId) -> i64 {
        i64::from(id.0)
    }
}

/// One online CPU and where it sits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cpu {
    /// The CPU's id.
    pub id: CpuId,
    /// Its NUMA node.
    pub node: NodeId,
    /// `physical_package_id` (display only).
    pub(crate) package: Option<u32>,
    /// `die_id` (absent on arm64 and older kernels).
    pub die: Option<u32>,
    /// `cluster_id` (absent on older kernels).
    pub cluster: Option<u32>,
    /// `core_id` (display only: it restarts per cluster or socket on some machines).
    pub core: Option<u32>,
    /// Lowest CPU of `core_cpus_list`: CPUs with equal values are SMT siblings.
    pub core_group: CpuId,
    /// Lowest CPU of `cluster_cpus_list`, if the kernel gives it.
    pub cluster_group: Option<CpuId>,
    /// Lowest CPU of the last-level cache's `shared_cpu_list`, if the kernel gives it.
    pub llc_group: Option<CpuId>,
    /// Lowest CPU of `package_cpus_list` (or `core_siblings_list`).
    pub package_group: CpuId,
}

/// A NUMA node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// The kernel's node number.
    pub id: NodeId,
    /// Its CPUs (`nodeN/cpulist`), online or not; may be empty (memory-only node).
    pub cpus: CpuSet,
    /// Distance to each node of [`Topology::nodes`], in that order (10 = local).
    pub distances: Vec<u32>,
}

/// The machine as this process may use it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// `cpu/possible`.
    pub possible: CpuSet,
    /// `cpu/present`.
    pub present: CpuSet,
    /// `cpu/online`.
    pub online: CpuSet,
    /// Every online CPU, ascending by id.
    pub cpus: Vec<Cpu>,
    /// NUMA nodes, ascending by id; at least one.
    pub nodes: Vec<Node>,
    /// CPUs the process may run on: affinity ∩ cgroup cpuset ∩ online; never empty.
    pub allowed: CpuSet,
    /// The tightest CPU bandwidth limit of the process's cgroups, if any.
    pub quota: Option<Quota>,
    /// The NIC of the listen address, when it is a real interface ([`attach_nic`]).
    pub(crate) nic: Option<Nic>,
}

impl Topology {
    /// The CPU's record, if it is online.
    pub fn cpu(&self, id: CpuId) -> Option<&Cpu> {
        self.cpus
            .binary_search_by_key(&id, |c| c.id)
            .ok()
            .map(|i| &self.cpus[i])
    }

    /// The node of an online CPU.
    pub fn node_of(&self, id: CpuId) -> Option<NodeId> {
        self.cpu(id).map(|c| c.node)
    }

    /// Position of node `id` in [`Topology::nodes`] (and in each distance row).
    pub(crate) fn node_index(&self, id: NodeId) -> Option<usize> {
        self.nodes.iter().position(|n| n.id == id)
    }

    /// Distance between two nodes (10 when the table does not say).
    pub fn distance(&self, from: NodeId, to: NodeId) -> u32 {
        let row = self.node_index(from).map(|i| &self.nodes[i].distances);
        let col = self.node_index(to);
        match (row, col) {
            (Some(r), Some(c)) => r.get(c).copied().unwrap_or(10),
            _ => 10,
        }
    }

    /// Online CPUs that share `id`'s physical core (including `id`).
    pub fn core_siblings(&self, id: CpuId) -> CpuSet {
        let group = self.cpu(id).map(|c| c.core_group);
        CpuSet::from_ids(
            self.cpus
                .iter()
                .filter(|c| Some(c.core_group) == group)
                .map(|c| c.id),
        )
    }

    /// The worker cap from the quota, if there is one.
    pub fn quota_cap(&self) -> Option<usize> {
        self.quota.map(Quota::worker_cap)
    }
}

/// Reads the topology under `sysfs` and `procfs` (normally `/sys` and `/proc`). Never fails: problems become warnings.
///
/// The live affinity is the calling thread's: call this before pinning the master, or
/// the process seems to own one CPU.
pub fn read(sysfs: &Path, procfs: &Path) -> (Topology, Vec<String>) {
    let mut r = Reader::new(sysfs, procfs);
    let topo = r.topology();
    (topo, r.warnings)
}

/// Which view of the process's own state applies (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Real `/sys` and `/proc`: ask the kernel.
    Live,
    /// A given proc root: read `self/status`, `self/cgroup`, `self/mountinfo` there.
    ProcTree,
    /// A captured sysfs tree alone: the cgroup namespace view of that tree.
    SysTreeOnly,
}

/// File access under the two roots, collecting warnings.
pub(crate) struct Reader {
    pub(crate) sysfs: PathBuf,
    pub(crate) procfs: PathBuf,
    pub(crate) mode: Mode,
    pub(crate) warnings: Vec<String>,
}

impl Reader {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn new(sysfs: &Path, procfs: &Path) -> Reader {
        let live_sys = sysfs == Path::new("/sys");
        let live_proc = procfs == Path::new("/proc");
        let mode = match (live_sys, live_proc) {
            (true, true) => Mode::Live,
            (_, false) => Mode::ProcTree,
            (false, true) => Mode::SysTreeOnly,
        };
        Reader {
            sysfs: sysfs.to_path_buf(),
            procfs: procfs.to_path_buf(),
            mode,
            warnings: Vec::new(),
        }
    }

    pub(crate) fn warn(&mut self, msg: String) {
        if !self.warnings.contains(&msg) {
            self.warnings.push(msg);
        }
    }

    /// The file's text, `None` if it does not exist; other read errors warn.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn text(&mut self, path: &Path) -> Option<String> {
        match std::fs::read(path) {
            Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => None,
            Err(e) => {
                self.warn(format!("topology: {}: {e}", path.display()));
                None
            }
        }
    }

    pub(crate) fn sys(&mut self, rel: &str) -> Option<String> {
        let path = self.sysfs.join(rel);
        self.text(&path)
    }

    pub(crate) fn proc(&mut self, rel: &str) -> Option<String> {
        let path = self.procfs.join(rel);
        self.text(&path)
    }

    /// A cpulist file, `None` if missing; malformed text warns.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn cpulist(&mut self, rel: &str) -> Option<CpuSet> {
        let text = self.sys(rel)?;
        match CpuSet::parse_list(&text) {
            Ok(set) => Some(set),
            Err(e) => {
                self.warn(format!("topology: {rel}: {e}"));
                None
            }
        }
    }

    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn id(&mut self, rel: &str) -> Option<u32> {
        let text = self.sys(rel)?;
        match parse::parse_id(&text) {
            Ok(v) => v,
            Err(e) => {
                self.warn(format!("topology: {rel}: {e}"));
                None
            }
        }
    }

    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn topology(&mut self) -> Topology {
        let affinity = cgroup::affinity(self);
        let online = self.online_cpus(affinity.as_ref());
        let possible = self
            .cpulist(CPU_DIR_POSSIBLE)
            .unwrap_or_else(|| online.clone());
        let present = self
            .cpulist(CPU_DIR_PRESENT)
            .unwrap_or_else(|| online.clone());
        let nodes = self.nodes(&online);
        let cpus = online
            .iter()
            .map(|id| self.cpu_record(id, &nodes))
            .collect();
        let limits = cgroup::limits(self);
        let allowed = self.allowed(&online, affinity, limits.cpuset);
        Topology {
            possible,
            present,
            online,
            cpus,
            nodes,
            allowed,
            quota: limits.quota,
            nic: None,
        }
    }

    fn online_cpus(&mut self, affinity: Option<&CpuSet>) -> CpuSet {
        if let Some(set) = self.cpulist("devices/system/cpu/online") {
            if !set.is_empty() {
                return set;
            }
        }
        let fallback = match affinity {
            Some(a) if !a.is_empty() => a.clone(),
            _ => CpuSet::from_ids(CpuId::new(0)),
        };
        self.warn(format!(
            "topology: devices/system/cpu/online unreadable: using CPUs {fallback}"
        ));
        fallback
    }

    fn allowed(
        &mut self,
        online: &CpuSet,
        affinity: Option<CpuSet>,
        cpuset: Option<CpuSet>,
    ) -> CpuSet {
        let mut allowed = online.clone();
        if let Some(a) = affinity {
            allowed = allowed.intersection(&a);
        }
        if let Some(c) = cpuset {
            allowed = allowed.intersection(&c);
        }
        if allowed.is_empty() {
            self.warn(format!(
                "topology: affinity and cpuset leave no online CPU: using online CPUs {online}"
            ));
            return online.clone();
        }
        allowed
    }

    fn nodes(&mut self, online: &CpuSet) -> Vec<Node> {
        let ids = self.node_ids();
        if ids.is_empty() {
            self.warn("topology: no NUMA node directory: one node assumed".to_string());
            return vec![Node {
                id: NodeId(0),
                cpus: online.clone(),
                distances: vec![10],
            }];
        }
        let count = ids.len();
        let mut nodes: Vec<Node> = ids
            .iter()
            .enumerate()
            .map(|(i, &id)| Node {
                id,
                cpus: self
                    .cpulist(&format!("devices/system/node/node{}/cpulist", id.0))
                    .unwrap_or_default(),
                distances: self.distance_row(id, i, count),
            })
            .collect();
        self.drop_duplicates(&mut nodes);
        self.adopt_orphans(&mut nodes, online);
        nodes
    }

    /// The node ids under `devices/system/node`, ascending.
    fn node_ids(&mut self) -> Vec<NodeId> {
        let dir = self.sysfs.join("devices/system/node");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        let mut ids: Vec<u32> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.strip_prefix("node")?.parse::<u32>().ok()
            })
            .collect();
        // Sorted as plain ids: the same sort code as the other `u32` lists.
        ids.sort_unstable();
        ids.into_iter().map(NodeId).collect()
    }

    fn distance_row(&mut self, id: NodeId, index: usize, count: usize) -> Vec<u32> {
        let rel = format!("devices/system/node/node{}/distance", id.0);
        let parsed = self.sys(&rel).map(|t| parse::parse_distance_row(&t));
        match parsed {
            Some(Ok(row)) if row.len() == count && slit_shaped(&row, index) => return row,
            Some(Ok(row)) if row.len() == count => self.warn(format!(
                "topology: {rel}: local distance must be 10 and remote ones above 10: \
                 using 10 local, 20 remote"
            )),
            Some(Ok(row)) => self.warn(format!(
                "topology: {rel}: {} distances for {count} nodes: using 10 local, 20 remote",
                row.len()
            )),
            Some(Err(e)) => self.warn(format!("topology: {rel}: {e}: using 10 local, 20 remote")),
            None => self.warn(format!(
                "topology: {rel} missing: using 10 local, 20 remote"
            )),
        }
        (0..count)
            .map(|j| if j == index { 10 } else { 20 })
            .collect()
    }

    /// A CPU listed by two nodes stays in the first (lowest id), with a warning, so node
    /// CPU sets are disjoint as every later stage assumes.
    fn drop_duplicates(&mut self, nodes: &mut [Node]) {
        let mut listed = CpuSet::new();
        for n in nodes.iter_mut() {
            let twice = n.cpus.intersection(&listed);
            if !twice.is_empty() {
                self.warn(format!(
                    "topology: CPUs {twice} of node {} are listed by an earlier node too: \
                     counted there",
                    n.id
                ));
                n.cpus = n.cpus.difference(&twice);
            }
            listed = listed.union(&n.cpus);
        }
    }

    /// Online CPUs no node lists go to the first node with CPUs, with a warning.
    fn adopt_orphans(&mut self, nodes: &mut [Node], online: &CpuSet) {
        let mut listed = CpuSet::new();
        for n in nodes.iter() {
            listed = listed.union(&n.cpus);
        }
        let orphans: Vec<CpuId> = online.iter().filter(|c| !listed.contains(*c)).collect();
        if orphans.is_empty() {
            return;
        }
        let target = nodes.iter().position(|n| !n.cpus.is_empty()).unwrap_or(0);
        let set = CpuSet::from_ids(orphans.iter().copied());
        self.warn(format!(
            "topology: CPUs {set} are in no node's cpulist: counted in node {}",
            nodes[target].id
        ));
        for c in orphans {
            nodes[target].cpus.insert(c);
        }
    }

    fn cpu_record(&mut self, id: CpuId, nodes: &[Node]) -> Cpu {
        let base = format!("devices/system/cpu/cpu{id}");
        let topo = format!("{base}/topology");
        // The first file present names the group; one that omits the CPU itself is wrong,
        // so the CPU is taken as alone in that group (with a warning).
        let group = |r: &mut Reader, names: &[&str]| -> Option<CpuId> {
            let (name, set) = names
                .iter()
                .find_map(|n| Some((n, r.cpulist(&format!("{topo}/{n}"))?)))?;
            if !set.is_empty() && !set.contains(id) {
                r.warn(format!(
                    "topology: {topo}/{name} does not list CPU {id}: CPU {id} taken alone"
                ));
                return None;
            }
            set.first()
        };
        let core_group = group(self, &["core_cpus_list", "thread_siblings_list"]).unwrap_or(id);
        let package_group =
            group(self, &["package_cpus_list", "core_siblings_list"]).unwrap_or(core_group);
        Cpu {
            id,
            node: nodes
                .iter()
                .find(|n| n.cpus.contains(id))
                .map_or(nodes[0].id, |n| n.id),
            package: self.id(&format!("{topo}/physical_package_id")),
            die: self.id(&format!("{topo}/die_id")),
            cluster: self.id(&format!("{topo}/cluster_id")),
            core: self.id(&format!("{topo}/core_id")),
            core_group,
            cluster_group: group(self, &["cluster_cpus_list"]),
            llc_group: self.llc_group(&base),
            package_group,
        }
    }

    /// The lowest CPU sharing the highest-level data or unified cache with this CPU.
    fn llc_group(&mut self, base: &str) -> Option<CpuId> {
        let mut best: Option<(u32, CpuId)> = None;
        for index in 0..16 {
            let dir = format!("{base}/cache/index{index}");
            let Some(level) = self.sys(&format!("{dir}/level")) else {
                break;
            };
            let Ok(Some(level)) = parse::parse_id(&level) else {
                continue;
            };
            let kind = self.sys(&format!("{dir}/type")).unwrap_or_default();
            if kind.trim() == "Instruction" || best.is_some_and(|(l, _)| l >= level) {
                continue;
            }
            if let Some(first) = self
                .cpulist(&format!("{dir}/shared_cpu_list"))
                .and_then(|s| s.first())
            {
                best = Some((level, first));
            }
        }
        best.filter(|(level, _)| *level >= 2)
            .map(|(_, first)| first)
    }
}

/// Whether a distance row has the shape ACPI SLIT requires and the kernel checks
/// (`slit_valid` in `drivers/acpi/numa/srat.c`): 10 to itself, more than 10 elsewhere.
fn slit_shaped(row: &[u32], index: usize) -> bool {
    row.iter()
        .enumerate()
        .all(|(j, &d)| if j == index { d == 10 } else { d > 10 })
}

const CPU_DIR_POSSIBLE: &str = "devices/system/cpu/possible";
const CPU_DIR_PRESENT: &str = "devices/system/cpu/present";
