//! Topology on the captured trees in tests/data/sys/ (made by make-fixtures.py), through
//! the library and through `steerd topo`.

use crate::support::fixtures;

use fixtures::fixture;
use std::path::PathBuf;
use steerd::args::Roots;
use steerd::cpuset::{CpuId, CpuSet};
use steerd::topology::{self, NodeId, Topology};

fn read(name: &str) -> (Topology, Vec<String>) {
    topology::read(&fixture(name), &PathBuf::from("/proc"))
}

fn read_with_proc(name: &str, proc_name: &str) -> (Topology, Vec<String>) {
    topology::read(&fixture(name), &fixture(proc_name))
}

fn set(text: &str) -> CpuSet {
    CpuSet::parse_list(text).unwrap()
}

fn cpu(n: usize) -> CpuId {
    CpuId::new(n).unwrap()
}

/// The distinct groups of one kind, as cpulists, in order of their lowest CPU.
fn groups(t: &Topology, key: fn(&topology::Cpu) -> Option<CpuId>) -> Vec<String> {
    let mut firsts: Vec<CpuId> = t.cpus.iter().filter_map(key).collect();
    firsts.sort();
    firsts.dedup();
    firsts
        .iter()
        .map(|g| {
            CpuSet::from_ids(t.cpus.iter().filter(|c| key(c) == Some(*g)).map(|c| c.id)).to_string()
        })
        .collect()
}

#[test]
fn kunpeng_groups_by_masks_not_ids() {
    let (t, w) = read("kunpeng920-2x2");
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(t.online, set("0-31"));
    assert_eq!(t.nodes.len(), 4);
    assert_eq!(t.nodes[1].cpus, set("8-15"));
    assert_eq!(t.nodes[0].distances, vec![10, 12, 20, 22]);
    assert_eq!(t.distance(NodeId(1), NodeId(3)), 24);
    assert_eq!(
        groups(&t, |c| c.cluster_group),
        ["0-3", "4-7", "8-11", "12-15", "16-19", "20-23", "24-27", "28-31"]
    );
    assert_eq!(
        groups(&t, |c| c.llc_group),
        ["0-7", "8-15", "16-23", "24-31"]
    );
    assert_eq!(groups(&t, |c| Some(c.package_group)), ["0-15", "16-31"]);
    // Sparse firmware ids are shown, never used to group.
    assert_eq!(t.cpu(cpu(17)).unwrap().core, Some(65536 + 2 * 256 + 1));
    assert_eq!(t.core_siblings(cpu(17)), set("17"));
}

#[test]
fn arm64_guest_without_die_or_llc() {
    let (t, w) = read("arm64-guest-16");
    assert!(w.is_empty(), "{w:?}");
    let c = t.cpu(cpu(13)).unwrap();
    assert_eq!((c.die, c.llc_group, c.cluster), (None, None, Some(1)));
    // cluster_id restarts per socket: CPUs 4 and 12 both say 1, yet are different clusters.
    assert_eq!(
        t.cpu(cpu(4)).unwrap().cluster,
        t.cpu(cpu(12)).unwrap().cluster
    );
    assert_eq!(
        groups(&t, |c| c.cluster_group),
        ["0-3", "4-7", "8-11", "12-15"]
    );
    assert_eq!(t.node_of(cpu(13)), Some(NodeId(3)));
}

#[test]
fn xeon_siblings_numbered_apart_and_node_lists_with_commas() {
    let (t, w) = read("xeon-2s-smt-112");
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(t.online.len(), 112);
    assert_eq!(t.nodes[0].cpus, set("0-27,56-83"));
    assert_eq!(t.nodes[1].cpus, set("28-55,84-111"));
    assert_eq!(t.core_siblings(cpu(3)), set("3,59"));
    assert_eq!(t.core_siblings(cpu(90)), set("34,90"));
    assert_eq!(t.node_of(cpu(60)), Some(NodeId(0)));
    assert_eq!(groups(&t, |c| Some(c.core_group)).len(), 56);
}

#[test]
fn interleaved_node_lists() {
    let (t, _) = read("interleaved-8");
    assert_eq!(t.nodes[0].cpus, set("0-1,4-5"));
    let nodes: Vec<u32> = t.cpus.iter().map(|c| c.node.0).collect();
    assert_eq!(nodes, [0, 0, 1, 1, 0, 0, 1, 1]);
}

#[test]
fn offline_cpus_holes_and_memory_only_node() {
    let (t, w) = read("holes-offline");
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(t.possible, set("0-15"));
    assert_eq!(t.present, set("0-3,8-15"));
    assert_eq!(t.online, set("0-2,8-11,14-15"));
    assert_eq!(t.allowed, t.online);
    assert!(t.cpu(cpu(3)).is_none());
    assert_eq!(t.nodes.len(), 3);
    assert!(t.nodes[2].cpus.is_empty());
    assert_eq!(t.distance(NodeId(2), NodeId(0)), 30);
}

#[test]
fn container_v2_cpuset_and_quota_from_the_tree() {
    let (t, w) = read("container-4-7");
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(t.online, set("0-15"));
    assert_eq!(t.allowed, set("4-7"));
    assert_eq!(t.quota_cap(), Some(3));
}

#[test]
fn container_v1_through_a_proc_tree() {
    let (t, w) = read_with_proc("container-v1", "container-v1.proc");
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(t.allowed, set("4-7"));
    assert_eq!(t.quota_cap(), Some(3));
}

#[test]
fn no_node_directory_means_one_node() {
    let (t, w) = read("no-node-dir");
    assert_eq!(w, ["topology: no NUMA node directory: one node assumed"]);
    assert_eq!(t.nodes.len(), 1);
    assert_eq!(t.nodes[0].cpus, set("0-3"));
    assert_eq!(t.nodes[0].distances, vec![10]);
}

#[test]
fn missing_sys_degrades_to_one_cpu_one_node() {
    let (t, w) = read("does-not-exist");
    assert_eq!(t.online, set("0"));
    assert_eq!(t.allowed, set("0"));
    assert_eq!(t.nodes.len(), 1);
    assert_eq!(w.len(), 2, "{w:?}");
}

#[test]
fn this_machine_capture() {
    let (t, w) = read("this-machine");
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(t.online, set("0-1"));
    assert_eq!(t.nodes.len(), 1);
}

#[test]
fn live_machine_reads_without_warnings_about_sys() {
    let (t, _) = topology::read("/sys".as_ref(), "/proc".as_ref());
    assert!(!t.allowed.is_empty());
    assert!(t.allowed.iter().all(|c| t.online.contains(c)));
    let affinity = rustix::thread::sched_getaffinity(None).unwrap();
    for c in t.allowed.iter() {
        assert!(
            affinity.is_set(c.get()),
            "cpu {c} allowed but not in affinity"
        );
    }
}

#[test]
fn nic_on_socket_one_with_irqs() {
    let roots = Roots {
        sysfs: fixture("xeon-2s-smt-112"),
        procfs: fixture("xeon-2s-smt-112.proc"),
    };
    let (t, _) = topology::read(&roots.sysfs, &roots.procfs);
    let (nic, w) = topology::nic_for("10.0.0.5".parse().unwrap(), &roots.sysfs, &roots.procfs, &t);
    assert!(w.is_empty(), "{w:?}");
    let nic = nic.expect("eth1 owns 10.0.0.0/24");
    assert_eq!(nic.interface, "eth1");
    assert_eq!(nic.node, Some(NodeId(1)));
    assert_eq!(nic.irq_cpus, set("30,90"));
    assert!(nic.rps_cpus.is_empty());
    assert_eq!(nic.local_cpus, Some(set("28-55,84-111")));
    let (v6, _) = topology::nic_for("fd00::5".parse().unwrap(), &roots.sysfs, &roots.procfs, &t);
    assert_eq!(v6.map(|n| n.interface), Some("eth1".to_string()));
    for local in ["127.0.0.1", "0.0.0.0", "::1", "::"] {
        assert!(
            topology::nic_for(local.parse().unwrap(), &roots.sysfs, &roots.procfs, &t)
                .0
                .is_none()
        );
    }
}

fn steerd(args: &[&str]) -> (String, String, i32) {
    let out = crate::support::server::run_steerd(args, b"");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn topo_command_text_and_json() {
    let dir = fixture("kunpeng920-2x2");
    let (text, err, code) = steerd(&["topo", "--sysfs", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("clusters: 0-3 4-7 8-11 12-15 16-19 20-23 24-27 28-31"),
        "{text}"
    );
    assert!(text.contains("  3:  22  24  12  10"), "{text}");
    let (json, err, code) = steerd(&["topo", "--json", "--sysfs", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    assert_eq!(v["allowed"].as_array().unwrap().len(), 32);
    assert_eq!(
        v["nodes"][3]["cpus"],
        serde_json::json!([24, 25, 26, 27, 28, 29, 30, 31])
    );
    assert_eq!(
        v["nodes"][3]["distances"],
        serde_json::json!([22, 24, 12, 10])
    );
    assert_eq!(v["clusters"][1], serde_json::json!([4, 5, 6, 7]));
    assert_eq!(v["clusters"].as_array().unwrap().len(), 8);
    let c13 = &v["cpus"][13];
    assert_eq!(c13["node"], 1);
    assert_eq!(c13["cluster"], 11);
    assert_eq!(c13["cluster_cpus"], "12-15");
    assert_eq!(c13["die"], 1);
    assert_eq!(v["warnings"], serde_json::json!([]));
}

#[test]
fn topo_command_on_the_live_machine() {
    let (text, err, code) = steerd(&["topo"]);
    assert_eq!(code, 0, "{err}");
    assert!(text.starts_with("CPU NODE PACKAGE"), "{text}");
}

/// Every captured tree reads, alone and with its proc twin: CPUs online, each online CPU
/// described and in one node, the allowed set inside the online one.
#[test]
fn every_fixture_reads_into_a_consistent_topology() {
    for f in fixtures::all() {
        let procs = [Some(PathBuf::from("/proc")), f.procfs.clone()];
        for procfs in procs.iter().flatten() {
            let (t, _) = topology::read(&f.sysfs, procfs);
            let name = &f.name;
            assert!(!t.online.is_empty(), "{name}: no CPU online");
            assert!(!t.nodes.is_empty(), "{name}: no node");
            for c in t.online.iter() {
                assert!(t.cpu(c).is_some(), "{name}: online CPU {c} undescribed");
                let homes = t.nodes.iter().filter(|n| n.cpus.contains(c)).count();
                assert_eq!(homes, 1, "{name}: CPU {c} in {homes} nodes");
            }
            for c in t.allowed.iter() {
                assert!(t.online.contains(c), "{name}: allowed CPU {c} is offline");
            }
        }
    }
}
