//! The topology reader on small hostile or broken trees built per test: cgroup paths
//! that try to leave the sysfs root, mount roots that are string prefixes but not path
//! prefixes, missing proc files, bad distance rows, CPUs listed twice, and a core list
//! that forgets its own CPU. Each must warn once and never read outside the roots. And a
//! virtio NIC, whose `numa_node` and `local_cpulist` sit one directory up.

use std::path::{Path, PathBuf};
use steerd::cpuset::{CpuId, CpuSet};
use steerd::topology::{self, NodeId, Topology};

/// A fresh directory under the system temp dir, removed on drop.
struct Tree(PathBuf);

impl Tree {
    fn new(tag: &str) -> Tree {
        use std::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("steerd-topoguard-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Tree(dir)
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.0.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// A 4-CPU, one-node sysfs under `sys/` and a proc root under `proc/` whose status
    /// allows every CPU, with a cgroup2 mount at /sys/fs/cgroup whose root is `root`.
    fn machine(tag: &str, cgroup_line: &str, root: &str) -> Tree {
        let t = Tree::new(tag);
        t.write("sys/devices/system/cpu/online", "0-3\n");
        t.write("sys/devices/system/node/node0/cpulist", "0-3\n");
        t.write("sys/devices/system/node/node0/distance", "10\n");
        t.write("sys/fs/cgroup/cgroup.controllers", "cpuset cpu\n");
        t.write("proc/self/status", "Cpus_allowed_list:\t0-3\n");
        t.write("proc/self/cgroup", &format!("{cgroup_line}\n"));
        t.write(
            "proc/self/mountinfo",
            &format!("30 25 0:26 {root} /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"),
        );
        t
    }

    fn read(&self) -> (Topology, Vec<String>) {
        topology::read(&self.0.join("sys"), &self.0.join("proc"))
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn set(text: &str) -> CpuSet {
    CpuSet::parse_list(text).unwrap()
}

fn matching<'a>(w: &'a [String], needle: &str) -> Vec<&'a String> {
    w.iter().filter(|l| l.contains(needle)).collect()
}

/// The fixture's own cgroup limit applies: the reader really follows the cgroup files
/// (so the refusals below are refusals, not a reader that never looks).
#[test]
fn a_plain_cgroup_path_is_followed() {
    let t = Tree::machine("plain", "0::/app", "/");
    t.write("sys/fs/cgroup/app/cpuset.cpus.effective", "2\n");
    let (topo, w) = t.read();
    assert_eq!(topo.allowed, set("2"), "{w:?}");
    assert!(w.is_empty(), "{w:?}");
}

#[test]
fn a_cgroup_path_with_dot_dot_is_refused_with_one_warning() {
    // sys/fs/cgroup/../../../outside = the tree's own `outside`, beyond the sysfs root.
    let t = Tree::machine("dotdot", "0::/../../../outside", "/");
    t.write("outside/cpuset.cpus.effective", "1\n");
    t.write("outside/cpu.max", "50000 100000\n");
    let (topo, w) = t.read();
    assert_eq!(topo.allowed, set("0-3"), "read outside /sys: {w:?}");
    assert_eq!(topo.quota, None, "read outside /sys: {w:?}");
    assert_eq!(matching(&w, "'..'").len(), 1, "{w:?}");
}

#[test]
fn the_mount_root_matches_whole_path_components() {
    // Mount root /a; the process's cgroup /ab/c is not below it, so the path is taken
    // whole (fs/cgroup/ab/c), never as the string remainder "b/c".
    let t = Tree::machine("prefix", "0::/ab/c", "/a");
    t.write("sys/fs/cgroup/ab/c/cpuset.cpus.effective", "2\n");
    t.write("sys/fs/cgroup/b/c/cpuset.cpus.effective", "3\n");
    let (topo, w) = t.read();
    assert_eq!(topo.allowed, set("2"), "{w:?}");
    // A real prefix is still stripped: root /a, cgroup /a/x is fs/cgroup/x.
    let t = Tree::machine("prefix2", "0::/a/x", "/a");
    t.write("sys/fs/cgroup/x/cpuset.cpus.effective", "1\n");
    let (topo, w) = t.read();
    assert_eq!(topo.allowed, set("1"), "{w:?}");
}

#[test]
fn a_missing_mountinfo_or_cgroup_file_warns_once() {
    for gone in ["proc/self/mountinfo", "proc/self/cgroup"] {
        let t = Tree::machine("missing", "0::/app", "/");
        t.write("sys/fs/cgroup/app/cpuset.cpus.effective", "2\n");
        std::fs::remove_file(t.0.join(gone)).unwrap();
        let (topo, w) = t.read();
        assert_eq!(topo.allowed, set("0-3"));
        let name = Path::new(gone).file_name().unwrap().to_str().unwrap();
        assert_eq!(matching(&w, name).len(), 1, "{gone}: {w:?}");
        assert!(matching(&w, name)[0].contains("not applied"), "{w:?}");
    }
}

#[test]
fn an_unreadable_mountinfo_warns_once() {
    let t = Tree::machine("unreadable", "0::/app", "/");
    // A directory where the file should be: read fails with EISDIR.
    std::fs::remove_file(t.0.join("proc/self/mountinfo")).unwrap();
    std::fs::create_dir(t.0.join("proc/self/mountinfo")).unwrap();
    let (_, w) = t.read();
    assert_eq!(matching(&w, "mountinfo").len(), 1, "{w:?}");
}

/// Two nodes on a 4-CPU machine with the given distance rows.
fn two_nodes(tag: &str, row0: &str, row1: &str) -> Tree {
    let t = Tree::machine(tag, "0::/", "/");
    t.write("sys/devices/system/node/node0/cpulist", "0-1\n");
    t.write("sys/devices/system/node/node1/cpulist", "2-3\n");
    t.write("sys/devices/system/node/node0/distance", row0);
    t.write("sys/devices/system/node/node1/distance", row1);
    t
}

#[test]
fn distance_rows_with_zero_or_a_wrong_diagonal_warn_and_fall_back() {
    let (topo, w) = two_nodes("dist-ok", "10 21\n", "21 10\n").read();
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(topo.nodes[1].distances, vec![21, 10]);
    for (row0, why) in [("0 21\n", "10 to 255"), ("20 21\n", "local distance")] {
        let (topo, w) = two_nodes("dist-bad", row0, "21 10\n").read();
        assert_eq!(topo.nodes[0].distances, vec![10, 20], "{row0}");
        assert_eq!(matching(&w, "node0/distance").len(), 1, "{w:?}");
        assert!(w[0].contains(why), "{w:?}");
    }
    let (topo, w) = two_nodes("dist-remote", "10 10\n", "21 10\n").read();
    assert_eq!(topo.nodes[0].distances, vec![10, 20], "{w:?}");
}

#[test]
fn a_cpu_listed_by_two_nodes_stays_in_the_first_with_a_warning() {
    let t = two_nodes("twice", "10 21\n", "21 10\n");
    t.write("sys/devices/system/node/node1/cpulist", "1-3\n");
    let (topo, w) = t.read();
    assert_eq!(topo.nodes[0].cpus, set("0-1"));
    assert_eq!(topo.nodes[1].cpus, set("2-3"));
    let c1 = topo.cpu(CpuId::new(1).unwrap()).unwrap();
    assert_eq!(c1.node.0, 0);
    assert_eq!(matching(&w, "CPUs 1 of node 1").len(), 1, "{w:?}");
}

#[test]
fn a_core_list_without_its_own_cpu_is_not_trusted() {
    let t = Tree::machine("core", "0::/", "/");
    for cpu in 0..4 {
        let list = if cpu == 3 { "0-1" } else { "0-3" };
        t.write(
            &format!("sys/devices/system/cpu/cpu{cpu}/topology/core_cpus_list"),
            &format!("{list}\n"),
        );
    }
    let (topo, w) = t.read();
    let c3 = topo.cpu(CpuId::new(3).unwrap()).unwrap();
    assert_eq!(c3.core_group, CpuId::new(3).unwrap(), "{w:?}");
    let c2 = topo.cpu(CpuId::new(2).unwrap()).unwrap();
    assert_eq!(c2.core_group, CpuId::new(0).unwrap());
    assert_eq!(matching(&w, "does not list CPU 3").len(), 1, "{w:?}");
}

/// virtio-net as the kernel lays it out: `class/net/eth0/device` is the virtio device,
/// which has no `numa_node`, `local_cpulist` or `msi_irqs`; its parent, the PCI function,
/// has them (the layout the VM tests' NIC shows, tests/vm/nic.rs). The queue interrupts
/// are found by the device's name in /proc/interrupts, the config vector left out.
#[test]
fn a_virtio_nic_is_read_through_its_pci_function() {
    let t = two_nodes("virtio", "10 21\n", "21 10\n");
    let pci = "sys/devices/pci0000:20/0000:21:01.0";
    t.write(&format!("{pci}/numa_node"), "1\n");
    t.write(&format!("{pci}/local_cpulist"), "2-3\n");
    t.write(&format!("{pci}/virtio0/features"), "0\n");
    t.write("sys/class/net/eth0/queues/rx-0/rps_cpus", "0\n");
    std::os::unix::fs::symlink(
        "../../../devices/pci0000:20/0000:21:01.0/virtio0",
        t.0.join("sys/class/net/eth0/device"),
    )
    .unwrap();
    t.write(
        "proc/net/route",
        "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n\
         eth0\t00004D0A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n",
    );
    t.write(
        "proc/interrupts",
        "            CPU0       CPU1       CPU2       CPU3\n \
          24:          0          0          0          0   PCI-MSI 1-edge      virtio0-config\n \
          25:          0          0          0          5   PCI-MSI 2-edge      virtio0-input.0\n \
          26:          0          0          3          0   PCI-MSI 3-edge      virtio0-output.0\n",
    );
    t.write("proc/irq/24/effective_affinity_list", "0\n");
    t.write("proc/irq/25/effective_affinity_list", "3\n");
    t.write("proc/irq/26/effective_affinity_list", "2\n");
    let (sys, proc) = (t.0.join("sys"), t.0.join("proc"));
    let (topo, _) = topology::read(&sys, &proc);
    let (nic, w) = topology::nic_for("10.77.0.2".parse().unwrap(), &sys, &proc, &topo);
    assert!(w.is_empty(), "{w:?}");
    let nic = nic.expect("eth0 owns 10.77.0.0/24");
    assert_eq!(nic.node, Some(NodeId(1)));
    assert_eq!(nic.local_cpus, Some(set("2-3")));
    assert_eq!(nic.irq_cpus, set("2-3"));
}
