//! `steerd topo [--sysfs DIR] [--procfs DIR] [--json]`: the machine as steerd sees it.
//!
//! Input: the roots. Output on stdout: a CPU table (what `lscpu -e` shows: node, package,
//! die, cluster, core, online, allowed), the groups steerd spreads workers over (cores,
//! clusters, last-level caches), and the nodes with their CPUs and distances (what
//! `numactl -H` shows); or the same as JSON (schema in `docs/placement.md`). Warnings go
//! to stderr, one line each. It reads and never changes anything.

use crate::args::Roots;
use crate::cpuset::{CpuId, CpuSet};
use crate::json::Value;
use crate::topology::{self, Cpu, Topology};
use std::fmt::Write;

/// Runs `steerd topo`; returns the exit status.
pub fn main(roots: &Roots, json: bool) -> i32 {
    let (topo, warnings) = topology::read(roots);
    for w in &warnings {
        eprintln!("steerd: {w}");
    }
    if json {
        print!("{}", Value::Obj(topology_json(&topo, &warnings)).to_text());
    } else {
        print!("{}", topology_text(&topo));
    }
    0
}

/// A cpulist as a JSON array of CPU ids.
pub fn ids(set: &CpuSet) -> Value {
    Value::Arr(set.iter().map(|c| Value::Int(c.get() as i64)).collect())
}

/// The CPUs sharing a group key (`core_group`, ...) with the given value.
fn members(topo: &Topology, key: impl Fn(&Cpu) -> Option<CpuId>, group: CpuId) -> CpuSet {
    CpuSet::from_ids(
        topo.cpus
            .iter()
            .filter(|c| key(c) == Some(group))
            .map(|c| c.id),
    )
}

/// Distinct groups of one kind, each as the set of its online CPUs.
pub fn groups(topo: &Topology, key: impl Fn(&Cpu) -> Option<CpuId> + Copy) -> Vec<CpuSet> {
    let mut seen = CpuSet::new();
    let mut out = Vec::new();
    for c in &topo.cpus {
        if let Some(g) = key(c) {
            if !seen.contains(g) {
                seen.insert(g);
                out.push(members(topo, key, g));
            }
        }
    }
    out
}

fn cpu_json(topo: &Topology, c: &Cpu) -> Value {
    let list = |key: fn(&Cpu) -> Option<CpuId>| {
        key(c).map_or(Value::Null, |g| {
            Value::str(members(topo, key, g).to_string())
        })
    };
    Value::obj([
        ("cpu", Value::Int(c.id.get() as i64)),
        ("node", Value::Int(i64::from(c.node))),
        ("package", Value::opt_int(c.package)),
        ("die", Value::opt_int(c.die)),
        ("cluster", Value::opt_int(c.cluster)),
        ("core", Value::opt_int(c.core)),
        ("online", Value::Bool(true)),
        ("allowed", Value::Bool(topo.allowed.contains(c.id))),
        ("core_cpus", list(|c| Some(c.core_group))),
        ("cluster_cpus", list(|c| c.cluster_group)),
        ("llc_cpus", list(|c| c.llc_group)),
        ("package_cpus", list(|c| Some(c.package_group))),
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
pub fn topology_json(topo: &Topology, warnings: &[String]) -> Vec<(String, Value)> {
    let every = topo.possible.union(&topo.online);
    let cpus = every
        .iter()
        .map(|id| match topo.cpu(id) {
            Some(c) => cpu_json(topo, c),
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
    let group_list =
        |key: fn(&Cpu) -> Option<CpuId>| Value::Arr(groups(topo, key).iter().map(ids).collect());
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
        ("cores", group_list(|c| Some(c.core_group))),
        ("clusters", group_list(|c| c.cluster_group)),
        ("llc_groups", group_list(|c| c.llc_group)),
        ("packages", group_list(|c| Some(c.package_group))),
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

fn opt(v: Option<u32>) -> String {
    v.map_or_else(|| "-".to_string(), |n| n.to_string())
}

/// The human-readable report.
pub fn topology_text(topo: &Topology) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "CPU NODE PACKAGE DIE CLUSTER CORE ONLINE ALLOWED  CORE-CPUS CLUSTER-CPUS LLC-CPUS"
    );
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
        let group = |key: fn(&Cpu) -> Option<CpuId>| {
            key(c).map_or_else(|| "-".into(), |g| members(topo, key, g).to_string())
        };
        let _ = writeln!(
            out,
            "{:>3} {:>4} {:>7} {:>3} {:>7} {:>4} {:>6} {:>7}  {:<9} {:<12} {}",
            id.get(),
            c.node,
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
            group(|c| Some(c.core_group)),
            group(|c| c.cluster_group),
            group(|c| c.llc_group),
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
    let join = |sets: Vec<CpuSet>| {
        if sets.is_empty() {
            return "none (the kernel gives no list)".to_string();
        }
        sets.iter()
            .map(CpuSet::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let _ = writeln!(out, "cores: {}", groups(topo, |c| Some(c.core_group)).len());
    let _ = writeln!(out, "clusters: {}", join(groups(topo, |c| c.cluster_group)));
    let _ = writeln!(out, "llc groups: {}", join(groups(topo, |c| c.llc_group)));
    out.push_str(&nodes_text(topo));
    if let Some(nic) = &topo.nic {
        let _ = writeln!(
            out,
            "nic: {} node {} irq cpus {} rps cpus {}",
            nic.interface,
            opt(nic.node),
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
        let _ = writeln!(out, "node {} cpus: {}", n.id, n.cpus);
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
