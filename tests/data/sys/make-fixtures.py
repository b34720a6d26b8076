#!/usr/bin/env python3
"""Writes the captured-sysfs fixtures steerd's topology, plan and steer tests read.

Each fixture NAME is a sysfs root (`steerd topo --sysfs tests/data/sys/NAME`); a few
also have a proc root NAME.proc (`--procfs tests/data/sys/NAME.proc`). Only the files
steerd reads are written. Run from anywhere:

    tests/data/sys/make-fixtures.py            regenerate the constructed machines
    tests/data/sys/make-fixtures.py --capture  also re-capture this machine as this-machine

Every layout states its facts in the machine's own terms (sockets, nodes, clusters, SMT)
and derives the kernel's files from them, as the kernel does.
"""

import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def cpulist(ids):
    """The kernel's cpulist text for a set of ids (`0-3,8`)."""
    ids = sorted(set(ids))
    out, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(out)


def cpumask(ids):
    """The kernel's hex bitmap text (32-bit groups, most significant first)."""
    value = 0
    for i in ids:
        value |= 1 << i
    groups = max(1, (max(ids, default=0)) // 32 + 1)
    words = [(value >> (32 * g)) & 0xFFFFFFFF for g in reversed(range(groups))]
    return ",".join(f"{w:08x}" for w in words)


class Tree:
    def __init__(self, name):
        self.root = os.path.join(HERE, name)
        shutil.rmtree(self.root, ignore_errors=True)

    def put(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text if text.endswith("\n") else text + "\n")


def machine(name, cpus, online=None, possible=None, present=None, nodes=None,
            distances=None, die=True, llc=True, cluster_ids=True):
    """cpus: {id: dict(package, die, cluster, core, core_cpus, cluster_cpus,
    package_cpus, llc_cpus)}; nodes: {node_id: [cpu ids]} or None (no node directory)."""
    t = Tree(name)
    all_ids = sorted(cpus)
    online = all_ids if online is None else online
    t.put("devices/system/cpu/online", cpulist(online))
    t.put("devices/system/cpu/possible", cpulist(possible if possible is not None else all_ids))
    t.put("devices/system/cpu/present", cpulist(present if present is not None else all_ids))
    for c in online:
        info = cpus[c]
        base = f"devices/system/cpu/cpu{c}/topology"
        t.put(f"{base}/physical_package_id", str(info["package"]))
        if die:
            t.put(f"{base}/die_id", str(info.get("die", 0)))
        if cluster_ids:
            t.put(f"{base}/cluster_id", str(info["cluster"]))
            t.put(f"{base}/cluster_cpus_list", cpulist(info["cluster_cpus"]))
        t.put(f"{base}/core_id", str(info["core"]))
        t.put(f"{base}/core_cpus_list", cpulist(info["core_cpus"]))
        t.put(f"{base}/thread_siblings_list", cpulist(info["core_cpus"]))
        t.put(f"{base}/package_cpus_list", cpulist(info["package_cpus"]))
        t.put(f"{base}/core_siblings_list", cpulist(info["package_cpus"]))
        cache = f"devices/system/cpu/cpu{c}/cache"
        levels = [(1, "Data", [c]), (1, "Instruction", [c])]
        if llc:
            levels += [(2, "Unified", info["core_cpus"]), (3, "Unified", info["llc_cpus"])]
        for i, (level, kind, shared) in enumerate(levels):
            t.put(f"{cache}/index{i}/level", str(level))
            t.put(f"{cache}/index{i}/type", kind)
            t.put(f"{cache}/index{i}/shared_cpu_list", cpulist(shared))
    if nodes is not None:
        ids = sorted(nodes)
        for n in ids:
            t.put(f"devices/system/node/node{n}/cpulist", cpulist(nodes[n]))
            t.put(f"devices/system/node/node{n}/distance",
                  " ".join(str(d) for d in distances[n]))
        t.put("devices/system/node/online", cpulist(ids))
    return t


def layout(sockets, nodes_per_socket, clusters_per_node, cores_per_cluster, threads,
           sibling_stride=None, cluster_id=None, core_id=None):
    """Numbers CPUs like the firmware does: all first threads, then (if sibling_stride)
    the second threads `sibling_stride` apart; otherwise siblings adjacent."""
    cpus, nodes = {}, {}
    cores = sockets * nodes_per_socket * clusters_per_node * cores_per_cluster
    core_no = 0
    groups = []  # (socket, node, cluster index, core index within cluster, [threads])
    for s in range(sockets):
        for nn in range(nodes_per_socket):
            node = s * nodes_per_socket + nn
            for cl in range(clusters_per_node):
                for co in range(cores_per_cluster):
                    if sibling_stride:
                        ts = [core_no + t * cores for t in range(threads)]
                    else:
                        ts = [core_no * threads + t for t in range(threads)]
                    groups.append((s, node, cl, co, ts))
                    core_no += 1
    for s, node, cl, co, ts in groups:
        same_cluster = [t for g in groups if (g[0], g[1], g[2]) == (s, node, cl) for t in g[4]]
        package = [t for g in groups if g[0] == s for t in g[4]]
        node_cpus = [t for g in groups if g[1] == node for t in g[4]]
        for t in ts:
            cpus[t] = dict(package=s, die=node % nodes_per_socket,
                           cluster=cluster_id(s, node, cl) if cluster_id else cl,
                           core=core_id(s, node, cl, co) if core_id else co,
                           core_cpus=ts, cluster_cpus=same_cluster,
                           package_cpus=package, llc_cpus=node_cpus)
            nodes.setdefault(node, []).append(t)
    return cpus, nodes


KUNPENG_SLIT = {0: [10, 12, 20, 22], 1: [12, 10, 22, 24],
                2: [20, 22, 10, 12], 3: [22, 24, 12, 10]}


def kunpeng920():
    # 2 chips x 2 nodes (one per die), 2 clusters of 4 cores per node, no SMT. Like ACPI
    # PPTT firmware, cluster and core ids are global and sparse, so only masks group.
    cpus, nodes = layout(2, 2, 2, 4, 1,
                         cluster_id=lambda s, n, cl: 8 * n + 2 * cl + 1,
                         core_id=lambda s, n, cl, co: 65536 * s + 256 * n + 16 * cl + co)
    machine("kunpeng920-2x2", cpus, nodes=nodes, distances=KUNPENG_SLIT)


def arm64_guest():
    # The QEMU virt guest of numa-vm.md: 2 sockets x 2 nodes x one 4-core cluster;
    # cluster_id restarts per socket, core_id per cluster; no die_id, only L1 caches.
    cpus, nodes = layout(2, 2, 1, 4, 1,
                         cluster_id=lambda s, n, cl: n % 2,
                         core_id=lambda s, n, cl, co: co)
    machine("arm64-guest-16", cpus, nodes=nodes, distances=KUNPENG_SLIT, die=False, llc=False)


def xeon():
    # 2 sockets x 28 cores x 2 threads, siblings 56 apart; one node per socket, whose
    # cpulist therefore has a comma (0-27,56-83). x86 clusters are the L2 (= the core).
    cpus, nodes = layout(2, 1, 28, 1, 2, sibling_stride=True,
                         cluster_id=lambda s, n, cl: 28 * s + cl,
                         core_id=lambda s, n, cl, co: cl)
    t = machine("xeon-2s-smt-112", cpus, nodes=nodes, distances={0: [10, 21], 1: [21, 10]})
    # A NIC on socket 1 with two MSI vectors, RPS off.
    dev = "class/net/eth1/device"
    t.put(f"{dev}/numa_node", "1")
    t.put(f"{dev}/local_cpulist", cpulist(nodes[1]))
    t.put(f"{dev}/msi_irqs/120", "msix")
    t.put(f"{dev}/msi_irqs/121", "msix")
    t.put("class/net/eth1/queues/rx-0/rps_cpus", cpumask([]))
    t.put("class/net/eth1/queues/rx-1/rps_cpus", cpumask([]))
    p = Tree("xeon-2s-smt-112.proc")
    p.put("self/status", "Name:\tsteerd\nCpus_allowed_list:\t0-111\n")
    p.put("self/cgroup", "0::/\n")
    p.put("self/mountinfo", "30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n")
    p.put("net/route",
          "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
          "eth1\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
          "eth1\t0000000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n")
    p.put("net/if_inet6", "fd000000000000000000000000000005 03 40 00 80     eth1\n")
    p.put("irq/120/effective_affinity_list", "30")
    p.put("irq/121/effective_affinity_list", "90")


def epyc():
    # 2 sockets x 4 nodes (NPS4) x 2 CCXs of 4 cores x 2 threads, siblings 64 apart: 128
    # CPUs on 8 nodes. Each CCX shares one L3, reported as a cluster here.
    cpus, nodes = layout(2, 4, 2, 4, 2, sibling_stride=True,
                         cluster_id=lambda s, n, cl: 2 * n + cl,
                         core_id=lambda s, n, cl, co: 8 * (n % 4) + 4 * cl + co)
    for c in cpus.values():
        c["llc_cpus"] = c["cluster_cpus"]
    slit = {n: [10 if m == n else 12 if m // 4 == n // 4 else 32 for m in range(8)]
            for n in range(8)}
    machine("epyc-2s-8n-128", cpus, nodes=nodes, distances=slit)
    p = Tree("epyc-2s-8n-128.proc")
    p.put("self/status", "Name:\tsteerd\nCpus_allowed_list:\t0-127\n")
    p.put("self/cgroup", "0::/\n")
    p.put("self/mountinfo", "30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n")


def flat(n, smt=1):
    """One socket, one node's worth of cores, siblings adjacent."""
    cpus, _ = layout(1, 1, n // smt, 1, smt)
    return cpus


def interleaved():
    # Node cpulists with commas: pairs of CPUs alternate between the two nodes.
    cpus = flat(8)
    nodes = {0: [0, 1, 4, 5], 1: [2, 3, 6, 7]}
    for c in cpus:
        cpus[c]["llc_cpus"] = nodes[0] if c in nodes[0] else nodes[1]
    machine("interleaved-8", cpus, nodes=nodes, distances={0: [10, 20], 1: [20, 10]})


def holes():
    # possible 0-15, present 0-3,8-15 (a hole), online 0-2,8-11,14-15 (cpu3, 12, 13 off);
    # node 2 has memory but no CPUs.
    cpus = flat(16)
    online = [0, 1, 2, 8, 9, 10, 11, 14, 15]
    t = machine("holes-offline", cpus, online=online, possible=list(range(16)),
                present=[0, 1, 2, 3] + list(range(8, 16)),
                nodes={0: [0, 1, 2], 1: [8, 9, 10, 11, 14, 15], 2: []},
                distances={0: [10, 20, 30], 1: [20, 10, 30], 2: [30, 30, 10]})
    t.put("devices/system/cpu/cpu3/online", "0")


def container():
    # 16 CPUs on 2 nodes; a cgroup v2 namespace given CPUs 4-7 and 2.5 CPUs of quota.
    cpus = flat(16)
    nodes = {0: list(range(8)), 1: list(range(8, 16))}
    t = machine("container-4-7", cpus, nodes=nodes, distances={0: [10, 20], 1: [20, 10]})
    t.put("fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids")
    t.put("fs/cgroup/cpuset.cpus.effective", "4-7")
    t.put("fs/cgroup/cpu.max", "250000 100000")
    # The same container seen through a cgroup v1 proc tree (docker without cgroupns).
    v1 = Tree("container-v1")
    for rel in ["devices"]:
        shutil.copytree(os.path.join(t.root, rel), os.path.join(v1.root, rel))
    v1.put("fs/cgroup/cpuset/docker/c0ffee/cpuset.effective_cpus", "4-7")
    v1.put("fs/cgroup/cpu,cpuacct/docker/c0ffee/cpu.cfs_quota_us", "250000")
    v1.put("fs/cgroup/cpu,cpuacct/docker/c0ffee/cpu.cfs_period_us", "100000")
    v1.put("fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1")
    v1.put("fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000")
    p = Tree("container-v1.proc")
    p.put("self/status", "Name:\tsteerd\nCpus_allowed:\tffff\nCpus_allowed_list:\t0-15\n")
    p.put("self/cgroup", "12:cpuset:/docker/c0ffee\n4:cpu,cpuacct:/docker/c0ffee\n"
                         "1:name=systemd:/docker/c0ffee\n0::/system.slice/docker.service\n")
    p.put("self/mountinfo",
          "25 24 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
          "30 25 0:26 / /sys/fs/cgroup/cpuset rw,nosuid - cgroup cgroup rw,cpuset\n"
          "31 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n")


def no_nodes():
    machine("no-node-dir", flat(4), nodes=None)


LIVE_FILES = ["devices/system/cpu/online", "devices/system/cpu/possible",
              "devices/system/cpu/present"]


def capture(name="this-machine"):
    """Copies the files steerd reads from the live /sys (not the process's cgroup)."""
    t = Tree(name)
    src = "/sys"
    files = list(LIVE_FILES)
    online = open(os.path.join(src, LIVE_FILES[0])).read().strip()
    ids = []
    for piece in online.split(","):
        lo, _, hi = piece.partition("-")
        ids += range(int(lo), int(hi or lo) + 1)
    for c in ids:
        base = f"devices/system/cpu/cpu{c}"
        for f in ["physical_package_id", "die_id", "cluster_id", "core_id",
                  "core_cpus_list", "thread_siblings_list", "package_cpus_list",
                  "core_siblings_list", "cluster_cpus_list"]:
            files.append(f"{base}/topology/{f}")
        for i in range(16):
            if not os.path.isdir(os.path.join(src, base, f"cache/index{i}")):
                break
            files += [f"{base}/cache/index{i}/{f}" for f in ["level", "type", "shared_cpu_list"]]
    node_dir = os.path.join(src, "devices/system/node")
    for n in sorted(os.listdir(node_dir)) if os.path.isdir(node_dir) else []:
        if n.startswith("node") and n[4:].isdigit():
            files += [f"devices/system/node/{n}/cpulist", f"devices/system/node/{n}/distance"]
    for rel in files:
        path = os.path.join(src, rel)
        if os.path.exists(path):
            t.put(rel, open(path).read())


def main():
    kunpeng920()
    arm64_guest()
    xeon()
    epyc()
    interleaved()
    holes()
    container()
    no_nodes()
    if "--capture" in sys.argv[1:]:
        capture()


if __name__ == "__main__":
    main()
