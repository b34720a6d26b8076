//! The planner on the captured trees: worker CPUs, listener order, master CPU, the
//! CPU -> listener map, and the errors for flags the machine cannot satisfy.

use crate::support::fixtures;

use fixtures::{fixture, make_on, serve, topo};
use steerd::args::{MasterCpu, Roots, ServeArgs, SteerPolicy, Workers};
use steerd::cpuset::{CpuId, CpuSet};
use steerd::plan::{self, Plan, PlanError};
use steerd::topology::{self, Topology};

fn make(name: &str, flags: &[&str]) -> Plan {
    make_on(&topo(name), flags)
}

fn cpus(p: &Plan) -> Vec<usize> {
    p.workers.iter().map(|w| w.cpu.get()).collect()
}

fn nodes(p: &Plan) -> Vec<u32> {
    p.workers.iter().map(|w| w.node.0).collect()
}

fn cpu(n: usize) -> CpuId {
    CpuId::new(n).unwrap()
}

/// Invariants every plan keeps, whatever the machine.
fn check_invariants(p: &Plan, t: &Topology) {
    for (i, w) in p.workers.iter().enumerate() {
        assert_eq!(usize::from(w.index), i);
        assert!(t.allowed.contains(w.cpu));
        assert_eq!(t.node_of(w.cpu), Some(w.node));
    }
    let mapped: Vec<CpuId> = p.cpu_map.iter().map(|&(c, _)| c).collect();
    assert_eq!(
        mapped,
        t.online.iter().collect::<Vec<_>>(),
        "every online CPU mapped"
    );
    for w in &p.workers {
        assert_eq!(
            p.index_for(w.cpu),
            u32::from(w.index),
            "a worker's CPU maps to it"
        );
    }
    let ranges = p.node_ranges();
    let mut seen: Vec<u32> = ranges.iter().map(|(n, _)| n.0).collect();
    seen.sort();
    seen.dedup();
    assert_eq!(
        seen.len(),
        ranges.len(),
        "each node's workers are contiguous"
    );
}

#[test]
fn this_machine_one_worker_per_cpu() {
    let p = make("this-machine", &[]);
    assert_eq!(cpus(&p), [0, 1]);
    assert_eq!(
        p.master_cpu,
        Some(cpu(0)),
        "no free CPU: the first worker's"
    );
    assert_eq!(p.cpu_map, vec![(cpu(0), 0), (cpu(1), 1)]);
    assert_eq!(p.steer, SteerPolicy::Cpu);
    check_invariants(&p, &topo("this-machine"));
}

#[test]
fn one_worker_means_hash() {
    let p = make("this-machine", &["--workers", "1"]);
    assert_eq!(p.steer, SteerPolicy::Hash);
    assert_eq!(
        p.master_cpu,
        Some(cpu(1)),
        "the free CPU on the worker's node"
    );
    let p = make("this-machine", &["--steer", "hash"]);
    assert_eq!(p.steer, SteerPolicy::Hash);
}

#[test]
fn kunpeng_spreads_nodes_then_clusters() {
    let t = topo("kunpeng920-2x2");
    let p = make("kunpeng920-2x2", &["--workers", "4"]);
    assert_eq!(cpus(&p), [0, 8, 16, 24]);
    assert_eq!(p.master_cpu, Some(cpu(1)));
    check_invariants(&p, &t);
    let p = make("kunpeng920-2x2", &["--workers", "8"]);
    assert_eq!(cpus(&p), [0, 4, 8, 12, 16, 20, 24, 28], "one per cluster");
    let p = make("kunpeng920-2x2", &["--workers", "12"]);
    assert_eq!(cpus(&p), [0, 1, 4, 8, 9, 12, 16, 17, 20, 24, 25, 28]);
    check_invariants(&p, &t);
    // CPUs without a worker go to the worker of their own cluster.
    let p = make("kunpeng920-2x2", &["--workers", "8"]);
    let map: Vec<u16> = p.cpu_map.iter().map(|&(_, i)| i).collect();
    assert_eq!(
        &map[..16],
        &[0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]
    );
    // Every CPU of node 0 reaches the node-0 worker(s).
    let p = make("kunpeng920-2x2", &["--workers", "4"]);
    for c in 0..8 {
        assert_eq!(p.index_for(cpu(c)), 0);
    }
}

#[test]
fn arm64_guest_spreads_over_clusters_named_alike() {
    let p = make("arm64-guest-16", &["--workers", "4"]);
    assert_eq!(cpus(&p), [0, 4, 8, 12], "cluster ids repeat, masks do not");
    check_invariants(&p, &topo("arm64-guest-16"));
}

#[test]
fn xeon_distinct_cores_before_smt_siblings() {
    let t = topo("xeon-2s-smt-112");
    let p = make("xeon-2s-smt-112", &["--workers", "56"]);
    let want: Vec<usize> = (0..56).collect();
    assert_eq!(cpus(&p), want, "every physical core once, no sibling");
    for sibling in 56..112 {
        assert_eq!(
            p.index_for(cpu(sibling)),
            p.index_for(cpu(sibling - 56)),
            "SMT sibling"
        );
    }
    let p = make("xeon-2s-smt-112", &["--workers", "4"]);
    assert_eq!(cpus(&p), [0, 1, 28, 29]);
    let on_node0: Vec<u32> = (2..10).map(|c| p.index_for(cpu(c))).collect();
    assert_eq!(
        on_node0,
        [0, 1, 0, 1, 0, 1, 0, 1],
        "round-robin inside the node"
    );
    assert_eq!(p.index_for(cpu(84)), 2, "sibling of 28");
    let p = make("xeon-2s-smt-112", &["--workers", "54"]);
    assert_eq!(
        p.master_cpu,
        Some(cpu(27)),
        "a free core beats CPU 56, a worker's sibling"
    );
    let p = make("xeon-2s-smt-112", &["--workers", "56"]);
    assert_eq!(
        p.master_cpu,
        Some(cpu(56)),
        "every core busy: the lowest free CPU"
    );
    let p = make("xeon-2s-smt-112", &["--workers", "58"]);
    assert!(cpus(&p).contains(&56) && cpus(&p).contains(&84));
    check_invariants(&p, &t);
    let p = make("xeon-2s-smt-112", &[]);
    assert_eq!(p.workers.len(), 112);
    assert_eq!(&nodes(&p)[..56], &[0; 56][..]);
    assert_eq!(
        p.workers[56].cpu,
        cpu(28),
        "node 1 starts at its lowest CPU"
    );
    assert_eq!(p.workers[28].cpu, cpu(56), "node 0 lists 0-27 then 56-83");
    check_invariants(&p, &t);
}

#[test]
fn nic_node_first() {
    let roots = Roots {
        sysfs: fixture("xeon-2s-smt-112"),
        procfs: fixture("xeon-2s-smt-112.proc"),
    };
    let (mut t, _) = topology::read(&roots.sysfs, &roots.procfs);
    let args = serve(&["--listen", "10.0.0.5:80", "--workers", "2"]);
    topology::attach_nic(&mut t, &args.listen, &roots.sysfs, &roots.procfs);
    let p = plan::make(&args, &t).unwrap();
    assert_eq!(cpus(&p), [28, 0], "the NIC's node takes index 0");
    assert_eq!(p.master_cpu, Some(cpu(29)));
    let p = plan::make(&serve(&["--listen", "10.0.0.5:80", "--workers", "1"]), &t).unwrap();
    assert_eq!(cpus(&p), [28]);
}

#[test]
fn interleaved_nodes_keep_contiguous_ranges() {
    let t = topo("interleaved-8");
    let p = make("interleaved-8", &[]);
    assert_eq!(cpus(&p), [0, 1, 4, 5, 2, 3, 6, 7]);
    assert_eq!(p.index_for(cpu(2)), 4);
    check_invariants(&p, &t);
}

#[test]
fn container_quota_caps_auto_workers() {
    let t = topo("container-4-7");
    let p = make("container-4-7", &[]);
    assert_eq!(cpus(&p), [4, 5, 6]);
    assert_eq!(
        p.master_cpu,
        Some(cpu(7)),
        "the allowed CPU without a worker"
    );
    check_invariants(&p, &t);
    // Online CPUs outside the cpuset still map (interrupts land anywhere): round-robin.
    assert_eq!(p.index_for(cpu(0)), 0);
    assert_eq!(p.index_for(cpu(1)), 1);
    assert_eq!(p.index_for(cpu(2)), 2);
    assert_eq!(p.index_for(cpu(3)), 0);
    // Explicit --workers is not capped by the quota.
    assert_eq!(make("container-4-7", &["--workers", "4"]).workers.len(), 4);
}

#[test]
fn offline_and_holes() {
    let t = topo("holes-offline");
    let p = make("holes-offline", &[]);
    assert_eq!(cpus(&p), [0, 1, 2, 8, 9, 10, 11, 14, 15]);
    assert_eq!(
        p.index_for(cpu(3)),
        9,
        "offline CPU: out of range, the kernel's hash"
    );
    check_invariants(&p, &t);
}

#[test]
fn cpus_outside_the_node_go_to_the_nearest_node() {
    let p = make("kunpeng920-2x2", &["--cpus", "8,16"]);
    assert_eq!(cpus(&p), [8, 16]);
    assert_eq!(
        p.index_for(cpu(0)),
        0,
        "node 0 is closer to node 1 (12) than to 2 (20)"
    );
    assert_eq!(p.index_for(cpu(31)), 1, "node 3 is closer to node 2 (12)");
}

#[test]
fn no_node_dir() {
    let p = make("no-node-dir", &["--workers", "2"]);
    assert_eq!(cpus(&p), [0, 1]);
    assert_eq!(p.master_cpu, Some(cpu(2)));
    assert_eq!(p.index_for(cpu(3)), 1);
}

#[test]
fn errors_name_the_flag() {
    let t = topo("container-4-7");
    let err = |flags: &[&str]| plan::make(&serve(flags), &t).unwrap_err();
    assert_eq!(
        err(&["--cpus", "2-5"]),
        PlanError::CpusNotAllowed {
            cpus: "2-3".into(),
            allowed: "4-7".into()
        }
    );
    assert_eq!(
        err(&["--workers", "5"]),
        PlanError::TooManyWorkers {
            asked: 5,
            available: 4
        }
    );
    assert_eq!(
        err(&["--cpus", "4-5", "--workers", "3"]),
        PlanError::TooManyWorkers {
            asked: 3,
            available: 2
        }
    );
    assert!(err(&["--master-cpu", "0"])
        .to_string()
        .starts_with("--master-cpu 0: not an allowed CPU"));
}

#[test]
fn explicit_master_and_none() {
    let p = make("container-4-7", &["--master-cpu", "5"]);
    assert_eq!(p.master_cpu, Some(cpu(5)));
    let p = make("container-4-7", &["--master-cpu", "none"]);
    assert_eq!(p.master_cpu, None);
    let mut a = ServeArgs {
        workers: Workers::Count(2),
        master_cpu: MasterCpu::Auto,
        ..ServeArgs::default()
    };
    a.cpus = Some(CpuSet::parse_list("6-7").unwrap());
    let p = plan::make(&a, &topo("container-4-7")).unwrap();
    assert_eq!(p.master_cpu, Some(cpu(4)));
}

/// Nodes of `p`'s workers, counted.
fn per_node(p: &Plan, t: &Topology) -> Vec<usize> {
    t.nodes
        .iter()
        .map(|n| p.workers.iter().filter(|w| w.node == n.id).count())
        .collect()
}

#[test]
fn every_worker_count_spreads_evenly_on_every_fixture() {
    for name in fixtures::names() {
        let t = topo(&name);
        let cores: std::collections::HashSet<CpuId> = t
            .cpus
            .iter()
            .filter(|c| t.allowed.contains(c.id))
            .map(|c| c.core_group)
            .collect();
        for n in 1..=t.allowed.len() {
            let p = make_on(&t, &["--workers", &n.to_string()]);
            assert_eq!(p.workers.len(), n);
            check_invariants(&p, &t);
            // Node balance, as long as no node has run out of allowed CPUs.
            let counts = per_node(&p, &t);
            let room: Vec<usize> = t
                .nodes
                .iter()
                .map(|nd| nd.cpus.intersection(&t.allowed).len())
                .collect();
            let open: Vec<usize> = counts
                .iter()
                .zip(&room)
                .filter(|(c, r)| c < r)
                .map(|(c, _)| *c)
                .collect();
            let max = counts.iter().copied().max().unwrap_or(0);
            for c in open {
                assert!(max - c <= 1, "{name} n={n}: node counts {counts:?}");
            }
            // Distinct physical cores until every core has a worker.
            if n <= cores.len() {
                let mut used: Vec<CpuId> = p
                    .workers
                    .iter()
                    .map(|w| t.cpu(w.cpu).unwrap().core_group)
                    .collect();
                used.sort();
                used.dedup();
                assert_eq!(
                    used.len(),
                    n,
                    "{name} n={n}: SMT sibling before a free core"
                );
            }
        }
    }
}
