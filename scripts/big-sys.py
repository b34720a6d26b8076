#!/usr/bin/env python3
"""Writes a synthetic sysfs tree of N CPUs (N even, at most 8192) to DIR/sys.

Layout (the one tests/steering/big_machine.rs generates for 2048 CPUs): two NUMA nodes, N/2
physical cores with two threads each (Linux numbering: CPU c and c + N/2 are siblings),
one package per node, one L3 shared by 16 cores. Used to measure `steerd topo` and
`steerd check` on large machines; see docs/placement.md.

Usage: scripts/big-sys.py N DIR
"""
import os
import sys


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text + "\n")


def main():
    n, out = int(sys.argv[1]), os.path.join(sys.argv[2], "sys")
    cores = n // 2
    per_node = cores // 2

    def span(first, count):
        return f"{first}-{first + count - 1},{first + cores}-{first + cores + count - 1}"

    write(out, "devices/system/cpu/online", f"0-{n - 1}")
    write(out, "devices/system/cpu/possible", f"0-{n - 1}")
    for node in range(2):
        d = f"devices/system/node/node{node}"
        write(out, f"{d}/cpulist", span(node * per_node, per_node))
        write(out, f"{d}/distance", "10 21" if node == 0 else "21 10")
    for cpu in range(n):
        core = cpu % cores
        node = core // per_node
        t = f"devices/system/cpu/cpu{cpu}/topology"
        write(out, f"{t}/core_cpus_list", f"{core},{core + cores}")
        write(out, f"{t}/package_cpus_list", span(node * per_node, per_node))
        write(out, f"{t}/physical_package_id", str(node))
        write(out, f"{t}/core_id", str(core))
        c = f"devices/system/cpu/cpu{cpu}/cache/index0"
        write(out, f"{c}/level", "3")
        write(out, f"{c}/type", "Unified")
        write(out, f"{c}/shared_cpu_list", span(core // 16 * 16, 16))


if __name__ == "__main__":
    main()
