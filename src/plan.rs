//! Stage 3: (ServeArgs, Topology) to a Plan. Pure: no I/O, no syscalls.
//!
//! Input: validated [`ServeArgs`] and a [`Topology`]. Output: a [`Plan`] that every later
//! stage (steer, listen, master, worker, check) consumes, or a [`PlanError`] naming the
//! flag the machine cannot satisfy. The rules, with worked examples, are in
//! `docs/placement.md`:
//!
//! - Worker CPUs: one per allowed CPU, capped by the quota; `--workers N` picks N by the
//!   spread order ([`spread_order`]); `--cpus LIST` names them.
//! - Listener index order: the NIC's node first, then nodes by id; within a node, CPUs by
//!   id. Each node's workers are therefore one contiguous index range.
//! - Master CPU `auto`: the first worker's node, on an allowed CPU that runs no worker if
//!   there is one (preferring one whose physical core runs no worker, then the lowest
//!   id), else on the first worker's CPU.
//! - `cpu_map`: every online CPU to the worker on it; else round-robin over the workers of
//!   its node that share its closest group (SMT core, then cluster, then last-level
//!   cache, then just the node); a node without workers goes round-robin over the
//!   workers of the nearest node (by distance) that has some.

use crate::args::{MasterCpu, ServeArgs, Workers};
use crate::config::{Serving, SteerPolicy, Timeouts, VHost};
use crate::cpuset::{CpuId, CpuSet};
use crate::site::hosts::HostTable;
use crate::topology::{NodeId, Topology};
use core::fmt;
use std::collections::{HashMap, HashSet};

mod spread;

/// One worker: its listener index (order of `listen()` in the reuseport group), its CPU
/// and that CPU's node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkerPlan {
    /// Listener index in the reuseport group; equals the position in [`Plan::workers`].
    pub index: u16,
    /// The CPU the worker is pinned to.
    pub cpu: CpuId,
    /// The worker CPU's NUMA node.
    pub node: NodeId,
}

/// Everything the later stages need, decided up front.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Workers in listener index order (each node's workers contiguous).
    pub workers: Vec<WorkerPlan>,
    /// Where the master runs; `None` leaves it unpinned.
    pub master_cpu: Option<CpuId>,
    /// The steering policy in force (may be `Hash` where steering cannot help).
    pub steer: SteerPolicy,
    /// Every online CPU to the listener index its connections should reach, by CPU id.
    pub cpu_map: Vec<(CpuId, u16)>,
}

impl Plan {
    /// The listener index for connections processed on `cpu`. CPUs outside the map
    /// (offline at planning time) get `workers.len()`: an index the group does not have,
    /// which makes the kernel fall back to its 4-tuple hash (`reuseport_select_sock`).
    pub fn index_for(&self, cpu: CpuId) -> u32 {
        match self.cpu_map.binary_search_by_key(&cpu, |&(c, _)| c) {
            Ok(i) => u32::from(self.cpu_map[i].1),
            Err(_) => self.workers.len() as u32,
        }
    }

    /// The contiguous listener index range of each node that has workers, in index order.
    pub fn node_ranges(&self) -> Vec<(NodeId, core::ops::Range<u16>)> {
        let mut out: Vec<(NodeId, core::ops::Range<u16>)> = Vec::new();
        for w in &self.workers {
            match out.last_mut() {
                Some((node, range)) if *node == w.node => range.end = w.index + 1,
                _ => out.push((w.node, w.index..w.index + 1)),
            }
        }
        out
    }
}

/// Why no plan can be made for these flags on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanError {
    /// `--cpus` names CPUs the process may not use.
    CpusNotAllowed {
        /// The offending CPUs, as a cpulist.
        cpus: String,
        /// What is allowed, as a cpulist.
        allowed: String,
    },
    /// `--workers N` asks for more workers than CPUs are available.
    TooManyWorkers {
        /// N.
        asked: usize,
        /// The CPUs it must fit on (allowed, or the `--cpus` list).
        available: usize,
    },
    /// `--master-cpu N` names a CPU the process may not use.
    MasterNotAllowed {
        /// N.
        cpu: CpuId,
        /// What is allowed, as a cpulist.
        allowed: String,
    },
}

impl fmt::Display for PlanError {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::CpusNotAllowed { cpus, allowed } => write!(
                f,
                "--cpus: CPUs {cpus} are not allowed (allowed: {allowed})"
            ),
            PlanError::TooManyWorkers { asked, available } => write!(
                f,
                "--workers {asked}: only {available} CPUs are available (one worker per CPU)"
            ),
            PlanError::MasterNotAllowed { cpu, allowed } => write!(
                f,
                "--master-cpu {cpu}: not an allowed CPU (allowed: {allowed})"
            ),
        }
    }
}

/// Makes the plan. Pure: the same inputs give the same plan.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub fn make(args: &ServeArgs, topo: &Topology) -> Result<Plan, PlanError> {
    let cpus = worker_cpus(args, topo)?;
    let workers = index_order(&cpus, topo);
    let master_cpu = master_cpu(args.master_cpu, &workers, topo)?;
    let cpu_map = cpu_map(&workers, topo);
    let steer = if workers.len() == 1 {
        SteerPolicy::Hash
    } else {
        args.steer
    };
    Ok(Plan {
        workers,
        master_cpu,
        steer,
        cpu_map,
    })
}

fn worker_cpus(args: &ServeArgs, topo: &Topology) -> Result<Vec<CpuId>, PlanError> {
    let pool = match &args.cpus {
        Some(list) => {
            let outside = CpuSet::from_ids(list.iter().filter(|c| !topo.allowed.contains(*c)));
            if !outside.is_empty() {
                return Err(PlanError::CpusNotAllowed {
                    cpus: outside.to_string(),
                    allowed: topo.allowed.to_string(),
                });
            }
            list.clone()
        }
        None => topo.allowed.clone(),
    };
    let count = match (args.workers, &args.cpus) {
        (Workers::Count(n), _) => usize::from(n),
        (Workers::Auto, Some(list)) => list.len(),
        (Workers::Auto, None) => pool.len().min(topo.quota_cap().unwrap_or(usize::MAX)),
    };
    if count > pool.len() {
        return Err(PlanError::TooManyWorkers {
            asked: count,
            available: pool.len(),
        });
    }
    if count == pool.len() {
        return Ok(pool.iter().collect());
    }
    let mut chosen: Vec<CpuId> = spread_order(&pool, topo).into_iter().take(count).collect();
    chosen.sort_unstable();
    Ok(chosen)
}

/// The order in which `--workers N` takes CPUs from `pool`: N first entries.
///
/// Greedy: each step takes the CPU whose node has the fewest chosen CPUs (the NIC's node
/// winning ties), then whose last-level-cache group has the fewest, then whose cluster
/// has the fewest, then whose physical core has the fewest (so distinct cores come before
/// SMT siblings), then the lowest id. Groups are the kernel's `*_cpus_list` masks.
pub(crate) fn spread_order(pool: &CpuSet, topo: &Topology) -> Vec<CpuId> {
    spread::order(pool, topo)
}

/// (node, LLC group, cluster group, core group, id) of a CPU; missing groups fall back
/// to the enclosing level so they do not split anything.
fn group_keys(cpu: CpuId, topo: &Topology) -> [u32; 5] {
    let id = cpu.get() as u32;
    let Some(c) = topo.cpu(cpu) else {
        return [0, id, id, id, id];
    };
    let core = c.core_group.get() as u32;
    let package = c.package_group.get() as u32;
    let llc = c.llc_group.map_or(package, |g| g.get() as u32);
    let cluster = c.cluster_group.map_or(llc, |g| g.get() as u32);
    [c.node.0, llc, cluster, core, id]
}

/// Workers in listener order: the NIC's node first, then by node id, then by CPU id.
///
/// The CPUs are sorted by id, then taken node by node, the least key (not the NIC's
/// node, node id) first: the order a sort of (not NIC, node, CPU) gives, without a sort
/// of its own for that tuple (about 9 KB of code in the static binaries; nodes are few).
fn index_order(cpus: &[CpuId], topo: &Topology) -> Vec<WorkerPlan> {
    let nic_node = topo.nic.as_ref().and_then(|n| n.node);
    let mut by_id = cpus.to_vec();
    by_id.sort_unstable();
    let mut left: Vec<((bool, NodeId), CpuId)> = by_id
        .into_iter()
        .map(|c| {
            let node = topo.node_of(c).unwrap_or_default();
            ((Some(node) != nic_node, node), c)
        })
        .collect();
    let mut placed = Vec::with_capacity(left.len());
    while let Some(least) = left.iter().map(|&(key, _)| key).min() {
        placed.extend(
            left.iter()
                .filter(|(key, _)| *key == least)
                .map(|&(_, c)| (least.1, c)),
        );
        left.retain(|(key, _)| *key != least);
    }
    placed
        .into_iter()
        .enumerate()
        .map(|(i, (node, cpu))| WorkerPlan {
            index: i as u16,
            cpu,
            node,
        })
        .collect()
}

fn master_cpu(
    spec: MasterCpu,
    workers: &[WorkerPlan],
    topo: &Topology,
) -> Result<Option<CpuId>, PlanError> {
    match spec {
        MasterCpu::None => Ok(None),
        MasterCpu::Cpu(c) if topo.allowed.contains(c) => Ok(Some(c)),
        MasterCpu::Cpu(cpu) => Err(PlanError::MasterNotAllowed {
            cpu,
            allowed: topo.allowed.to_string(),
        }),
        MasterCpu::Auto => {
            let Some(first) = workers.first() else {
                return Ok(None);
            };
            // A free CPU whose physical core runs no worker beats an SMT sibling of one.
            let busy: HashSet<Option<CpuId>> = workers
                .iter()
                .map(|w| topo.cpu(w.cpu).map(|x| x.core_group))
                .collect();
            let busy_core = |c: CpuId| busy.contains(&topo.cpu(c).map(|x| x.core_group));
            let worker_cpus = CpuSet::from_ids(workers.iter().map(|w| w.cpu));
            let free = topo
                .allowed
                .iter()
                .filter(|&c| topo.node_of(c) == Some(first.node))
                .filter(|&c| !worker_cpus.contains(c))
                .min_by_key(|&c| (busy_core(c), c));
            Ok(Some(free.unwrap_or(first.cpu)))
        }
    }
}

/// Every online CPU to a listener index (see the module doc for the rule).
fn cpu_map(workers: &[WorkerPlan], topo: &Topology) -> Vec<(CpuId, u16)> {
    let on_cpu: HashMap<CpuId, u16> = workers.iter().map(|w| (w.cpu, w.index)).collect();
    let sharing = workers_by_group(workers, topo);
    let worker_nodes: Vec<NodeId> = {
        // Sorted as plain ids: the same sort code as the other `u32` lists.
        let mut n: Vec<u32> = workers.iter().map(|w| w.node.0).collect();
        n.sort_unstable();
        n.dedup();
        n.into_iter().map(NodeId).collect()
    };
    let mut next: HashMap<(usize, u32, NodeId), usize> = HashMap::new();
    let mut map = Vec::with_capacity(topo.cpus.len());
    for cpu in &topo.cpus {
        if let Some(&index) = on_cpu.get(&cpu.id) {
            map.push((cpu.id, index));
            continue;
        }
        let Some(target) = nearest_node_with_workers(cpu.node, &worker_nodes, topo) else {
            continue;
        };
        let keys = group_keys(cpu.id, topo);
        let group = |level: usize| {
            (
                level,
                if level == 0 { target.0 } else { keys[level] },
                target,
            )
        };
        // The closest group with workers: core (SMT sibling), cluster, LLC, else the node.
        let level = [3, 2, 1]
            .into_iter()
            .find(|&l| target == cpu.node && sharing.contains_key(&group(l)))
            .unwrap_or(0);
        let Some(candidates) = sharing.get(&group(level)) else {
            continue;
        };
        let k = next.entry(group(level)).or_insert(0);
        map.push((cpu.id, candidates[*k % candidates.len()]));
        *k += 1;
    }
    map
}

/// Worker indices (in worker order) by (level, group key, node): level 0 is the whole
/// node (key = node id), levels 1-3 the LLC, cluster and core groups of `group_keys`.
/// Built once, so mapping each CPU is a lookup rather than a scan of every worker.
fn workers_by_group(
    workers: &[WorkerPlan],
    topo: &Topology,
) -> HashMap<(usize, u32, NodeId), Vec<u16>> {
    let mut out: HashMap<(usize, u32, NodeId), Vec<u16>> = HashMap::new();
    for w in workers {
        let keys = group_keys(w.cpu, topo);
        for (level, &key) in keys.iter().enumerate().take(4) {
            let key = if level == 0 { w.node.0 } else { key };
            out.entry((level, key, w.node)).or_default().push(w.index);
        }
    }
    out
}

/// `node` itself if it has workers, else the closest node that has (lowest id on ties).
fn nearest_node_with_workers(
    node: NodeId,
    worker_nodes: &[NodeId],
    topo: &Topology,
) -> Option<NodeId> {
    worker_nodes
        .iter()
        .copied()
        .min_by_key(|&n| (n != node, topo.distance(node, n), n))
}

/// The serving configuration the master and workers run with: the serve flags that are
/// not placement, gathered once so nothing after planning reads the flags.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn serving(args: ServeArgs) -> Serving {
    let names: Vec<Vec<String>> = args.hosts.iter().map(|h| h.names.clone()).collect();
    let host_table = HostTable::new(&names, &args.allowed_hosts, &args.listen);
    let mut hosts: Vec<VHost> = (args.hosts.iter())
        .map(|h| VHost {
            name: h.names[0].as_str().into(),
            root: h.root.clone(),
            site: h.site.rules(),
            row: crate::config::rows::UNCOUNTED,
        })
        .collect();
    // The rows of a first configuration: in order (the master keeps them by name).
    crate::config::rows::Rows::of_hosts().assign(&mut hosts);
    let mut serving = Serving {
        root: args.root,
        listen: args.listen,
        max_conns: args.max_conns,
        max_conns_per_addr: args.max_conns_per_addr,
        send_buffer: args.send_buffer,
        timeouts: Timeouts {
            header: args.header_timeout,
            keepalive: args.keepalive_timeout,
            send: args.send_timeout,
            shutdown: args.shutdown_timeout,
        },
        logging: args.logging,
        metrics: args.metrics,
        proxy: args.proxy,
        user: args.user,
        site: args.site.rules(),
        hosts,
        host_table,
    };
    serving.number_upstreams(&mut crate::config::rows::Rows::of_upstreams());
    serving
}
