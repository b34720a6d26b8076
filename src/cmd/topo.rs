//! `steerd topo [--sysfs DIR] [--procfs DIR] [--json]`: the machine as steerd sees it.
//!
//! Input: the roots. Output on stdout: a CPU table (what `lscpu -e` shows: node, package,
//! die, cluster, core, online, allowed), the groups steerd spreads workers over (cores,
//! clusters, last-level caches), and the nodes with their CPUs and distances (what
//! `numactl -H` shows); or the same as JSON (schema in `docs/placement.md`). Warnings go
//! to stderr, one line each. It reads and never changes anything.

use crate::args::Roots;
use crate::cpuset::{CpuId, CpuSet, MAX_CPUS};
use crate::json::Value;
use crate::topology::{self, Cpu, Topology};
use std::fmt::Write;

/// Runs `steerd topo`; returns the exit status.
pub(crate) fn main(roots: &Roots, json: bool) -> Result<i32, super::Failure> {
    super::prepare::roots_exist(roots)?;
    let (topo, warnings) = topology::read(&roots.sysfs, &roots.procfs);
    for w in &warnings {
        eprintln!("steerd: {w}");
    }
    if json {
        print!("{}", Value::Obj(topology_json(&topo, &warnings)).to_text());
    } else {
        print!("{}", topology_text(&topo));
    }
    Ok(0)
}

/// A cpulist as a JSON array of CPU ids.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn ids(set: &CpuSet) -> Value {
    Value::Arr(set.iter().map(|c| Value::Int(c.get() as i64)).collect())
}

/// A group key of a CPU (`core_group`, ...): the lowest CPU of its group.
type GroupKey = fn(&Cpu) -> Option<CpuId>;

/// The groups of one kind, each with its online CPUs, built in one pass over the CPUs
/// (a scan of every CPU per group or per row was quadratic: 8192 CPUs took minutes).
/// A group is found by its key through a table indexed by CPU id, not a hash map: the
/// keys are CPU ids, and a hash map's code is the larger.
struct Groups {
    /// Each group's CPUs, in order of first appearance.
    members: Vec<CpuSet>,
    /// Each group's cpulist, formatted once (every row of the group prints it).
    lists: Vec<String>,
    /// By key (a CPU id): the group's index in `members`, plus one (0: no group).
    slot: Vec<u16>,
}

impl Groups {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn of(topo: &Topology, key: GroupKey) -> Groups {
        let mut members: Vec<CpuSet> = Vec::new();
        let mut slot = vec![0u16; MAX_CPUS];
        for c in &topo.cpus {
            if let Some(g) = key(c) {
                if slot[g.get()] == 0 {
                    members.push(CpuSet::new());
                    // At most MAX_CPUS groups, so the count fits a u16.
                    slot[g.get()] = members.len() as u16;
                }
                members[usize::from(slot[g.get()]) - 1].insert(c.id);
            }
        }
        let lists = members.iter().map(CpuSet::to_string).collect();
        Groups {
            members,
            lists,
            slot,
        }
    }

    /// Every group's CPUs, in order of first appearance.
    fn sets(&self) -> impl Iterator<Item = &CpuSet> {
        self.members.iter()
    }

    /// `c`'s group as a cpulist, if `c` has one of this kind.
    fn list_of(&self, key: GroupKey, c: &Cpu) -> Option<String> {
        let index = usize::from(self.slot[key(c)?.get()]);
        index.checked_sub(1).map(|i| self.lists[i].clone())
    }
}

const CORE: GroupKey = |c| Some(c.core_group);
const CLUSTER: GroupKey = |c| c.cluster_group;
const LLC: GroupKey = |c| c.llc_group;
const PACKAGE: GroupKey = |c| Some(c.package_group);

/// The group kinds a CPU row shows, each indexed once per command.
struct RowGroups([(GroupKey, Groups); 4]);

impl RowGroups {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn of(topo: &Topology) -> RowGroups {
        RowGroups([CORE, CLUSTER, LLC, PACKAGE].map(|k| (k, Groups::of(topo, k))))
    }

    /// `c`'s core, cluster, LLC and package groups as cpulists.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn lists(&self, c: &Cpu) -> [Option<String>; 4] {
        self.0.each_ref().map(|(k, g)| g.list_of(*k, c))
    }
}

fn cpu_json(topo: &Topology, rows: &RowGroups, c: &Cpu) -> Value {
    let [core, cluster, llc, package] = rows.lists(c).map(|l| l.map_or(Value::Null, Value::str));
    Value::obj([
        ("cpu", Value::Int(c.id.get() as i64)),
        ("node", Value::Int(i64::from(c.node))),
        ("package", Value::opt_int(c.package)),
        ("die", Value::opt_int(c.die)),
        ("cluster", Value::opt_int(c.cluster)),
        ("core", Value::opt_int(c.core)),
        ("online", Value::Bool(true)),
        ("allowed", Value::Bool(topo.allowed.contains(c.id))),
        ("core_cpus", core),
        ("cluster_cpus", cluster),
        ("llc_cpus", llc),
        ("package_cpus", package),
    ])
}

fn offline_json(topo: &Topology, id: CpuId) -> Value {
    let node = topo
        .nodes
        .iter()
        .find(|n| n.cpus.contains(id))
        .map(|n| n.id);
    Value::obj([
        ("cpu", Value::Int(id.get() as i64)),
        ("node", Value::opt_int(node)),
        ("online", Value::Bool(false)),
        ("allowed", Value::Bool(false)),
    ])
}

/// The topology's JSON members (shared with `steerd check --json`).
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn topology_json(topo: &Topology, warnings: &[String]) -> Vec<(String, Value)> {
    let every = topo.possible.union(&topo.online);
    let rows = RowGroups::of(topo);
    let cpus = every
        .iter()
        .map(|id| match topo.cpu(id) {
            Some(c) => cpu_json(topo, &rows, c),
            None => offline_json(topo, id),
        })
        .collect();
    let nodes = topo
        .nodes
        .iter()
        .map(|n| {
            Value::obj([
                ("node", Value::Int(i64::from(n.id))),
                ("cpus", ids(&n.cpus)),
                (
                    "distances",
                    Value::Arr(
                        n.distances
                            .iter()
                            .map(|&d| Value::Int(i64::from(d)))
                            .collect(),
                    ),
                ),
            ])
        })
        .collect();
    let group_list = |i: usize| Value::Arr(rows.0[i].1.sets().map(ids).collect());
    let quota = topo.quota.map_or(Value::Null, |q| {
        Value::obj([
            ("quota_us", Value::Int(q.quota_us as i64)),
            ("period_us", Value::Int(q.period_us as i64)),
            ("worker_cap", Value::Int(q.worker_cap() as i64)),
        ])
    });
    let pairs = [
        ("online", ids(&topo.online)),
        ("possible", ids(&topo.possible)),
        ("present", ids(&topo.present)),
        ("allowed", ids(&topo.allowed)),
        ("quota", quota),
        ("nodes", Value::Arr(nodes)),
        ("cores", group_list(0)),
        ("clusters", group_list(1)),
        ("llc_groups", group_list(2)),
        ("packages", group_list(3)),
        ("cpus", Value::Arr(cpus)),
        ("nic", nic_json(topo)),
        (
            "warnings",
            Value::Arr(warnings.iter().map(Value::str).collect()),
        ),
    ];
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn nic_json(topo: &Topology) -> Value {
    let Some(nic) = &topo.nic else {
        return Value::Null;
    };
    Value::obj([
        ("interface", Value::str(nic.interface.clone())),
        ("node", Value::opt_int(nic.node)),
        (
            "local_cpus",
            nic.local_cpus.as_ref().map_or(Value::Null, ids),
        ),
        ("rps_cpus", ids(&nic.rps_cpus)),
        ("irq_cpus", ids(&nic.irq_cpus)),
    ])
}

#[cfg_attr(feature = "cold-size", optimize(size))]
fn opt(v: Option<u32>) -> String {
    v.map_or_else(|| "-".to_string(), |n| n.to_string())
}

/// The human-readable report.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn topology_text(topo: &Topology) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "CPU NODE PACKAGE DIE CLUSTER CORE ONLINE ALLOWED  CORE-CPUS CLUSTER-CPUS LLC-CPUS"
    );
    let rows = RowGroups::of(topo);
    for id in topo.possible.union(&topo.online).iter() {
        let Some(c) = topo.cpu(id) else {
            let _ = writeln!(
                out,
                "{:>3} {:>4} {:>7} {:>3} {:>7} {:>4} {:>6} {:>7}",
                id.get(),
                "-",
                "-",
                "-",
                "-",
                "-",
                "no",
                "no"
            );
            continue;
        };
        let [core, cluster, llc, _] = rows.lists(c).map(|l| l.unwrap_or_else(|| "-".into()));
        let _ = writeln!(
            out,
            "{:>3} {:>4} {:>7} {:>3} {:>7} {:>4} {:>6} {:>7}  {:<9} {:<12} {}",
            id.get(),
            c.node.0,
            opt(c.package),
            opt(c.die),
            opt(c.cluster),
            opt(c.core),
            "yes",
            if topo.allowed.contains(id) {
                "yes"
            } else {
                "no"
            },
            core,
            cluster,
            llc,
        );
    }
    let _ = writeln!(
        out,
        "\nonline: {}  possible: {}  present: {}",
        topo.online, topo.possible, topo.present
    );
    let _ = writeln!(
        out,
        "allowed: {} ({} CPUs)",
        topo.allowed,
        topo.allowed.len()
    );
    match topo.quota {
        Some(q) => {
            let _ = writeln!(
                out,
                "quota: {} us per {} us: at most {} workers",
                q.quota_us,
                q.period_us,
                q.worker_cap()
            );
        }
        None => out.push_str("quota: none\n"),
    }
    let join = |groups: &Groups| {
        if groups.members.is_empty() {
            return "none (the kernel gives no list)".to_string();
        }
        groups
            .sets()
            .map(CpuSet::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let _ = writeln!(out, "cores: {}", rows.0[0].1.members.len());
    let _ = writeln!(out, "clusters: {}", join(&rows.0[1].1));
    let _ = writeln!(out, "llc groups: {}", join(&rows.0[2].1));
    out.push_str(&nodes_text(topo));
    if let Some(nic) = &topo.nic {
        let _ = writeln!(
            out,
            "nic: {} node {} irq cpus {} rps cpus {}",
            nic.interface,
            opt(nic.node.map(|n| n.0)),
            nic.irq_cpus,
            nic.rps_cpus
        );
    }
    out
}

fn nodes_text(topo: &Topology) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "available: {} nodes", topo.nodes.len());
    for n in &topo.nodes {
        let _ = writeln!(out, "node {} cpus: {}", n.id.0, n.cpus);
    }
    out.push_str("node distances:\nnode");
    for n in &topo.nodes {
        let _ = write!(out, " {:>3}", n.id);
    }
    out.push('\n');
    for n in &topo.nodes {
        let _ = write!(out, "{:>3}:", n.id);
        for d in &n.distances {
            let _ = write!(out, " {d:>3}");
        }
        out.push('\n');
    }
    out
}
