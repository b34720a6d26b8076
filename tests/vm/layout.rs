//! The guest layouts the VM tests boot (the presets of `scripts/vm/run.sh`) and what a
//! correct reading of each looks like: node cpulists, SLIT rows, packages, SMT siblings
//! and clusters, all derived from a few counts because QEMU numbers CPUs socket, then
//! die or cluster, then core, then thread.
//!
//! Input: the counts below and the `sys_layout` lines the guest printed. Output: the
//! expected sets, and a check that the guest's own `/sys` agrees (so a wrong preset is
//! caught before steerd is blamed for it).

use steerd::cpuset::CpuSet;

/// Guest architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Arch {
    X86_64,
    Arm64,
    /// 32-bit ARM (armv7, hard float).
    Arm,
    /// Big-endian 64-bit IBM Z.
    S390x,
    Riscv64,
}

impl Arch {
    pub(super) fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Arm64 => "arm64",
            Arch::Arm => "arm",
            Arch::S390x => "s390x",
            Arch::Riscv64 => "riscv64",
        }
    }

    pub(super) fn qemu(self) -> &'static str {
        match self {
            Arch::X86_64 => "qemu-system-x86_64",
            Arch::Arm64 => "qemu-system-aarch64",
            Arch::Arm => "qemu-system-arm",
            Arch::S390x => "qemu-system-s390x",
            Arch::Riscv64 => "qemu-system-riscv64",
        }
    }
}

/// One preset of `scripts/vm/run.sh`.
pub(super) struct Layout {
    pub arch: Arch,
    pub preset: &'static str,
    pub cpus: usize,
    pub cpus_per_node: usize,
    pub cpus_per_package: usize,
    pub threads_per_core: usize,
    /// Cluster size on arm64 (x86 guests have no Kunpeng-style clusters).
    pub cpus_per_cluster: Option<usize>,
    /// The SLIT, one row per node.
    pub distances: &'static [&'static [u32]],
    /// QEMU's TCG threading: "single" boots a 16-vCPU arm64 guest about twice as fast
    /// (see scripts/vm/run.sh); vCPUs then take turns, which changes no behaviour checked.
    pub tcg: &'static str,
}

/// Kunpeng 920 2P: 12 between the two dies of a chip, 20-24 across chips.
const KUNPENG_SLIT: &[&[u32]] = &[
    &[10, 12, 20, 22],
    &[12, 10, 22, 24],
    &[20, 22, 10, 12],
    &[22, 24, 12, 10],
];

pub(super) const X86_KUNPENG: Layout = Layout {
    arch: Arch::X86_64,
    preset: "kunpeng920-2x2",
    cpus: 8,
    cpus_per_node: 2,
    cpus_per_package: 4,
    threads_per_core: 1,
    cpus_per_cluster: None,
    distances: KUNPENG_SLIT,
    tcg: "multi",
};

pub(super) const X86_XEON: Layout = Layout {
    arch: Arch::X86_64,
    preset: "xeon-2s-smt",
    cpus: 8,
    cpus_per_node: 4,
    cpus_per_package: 4,
    threads_per_core: 2,
    cpus_per_cluster: None,
    distances: &[&[10, 21], &[21, 10]],
    tcg: "multi",
};

pub(super) const X86_NUMA4_SMT32: Layout = Layout {
    arch: Arch::X86_64,
    preset: "numa4-smt32",
    cpus: 32,
    cpus_per_node: 8,
    cpus_per_package: 16,
    threads_per_core: 2,
    cpus_per_cluster: None,
    distances: KUNPENG_SLIT,
    tcg: "multi",
};

pub(super) const ARM64_KUNPENG: Layout = Layout {
    arch: Arch::Arm64,
    preset: "kunpeng920-2x2",
    cpus: 16,
    cpus_per_node: 4,
    cpus_per_package: 8,
    threads_per_core: 1,
    cpus_per_cluster: Some(4),
    distances: KUNPENG_SLIT,
    tcg: "single",
};

/// Four 32-bit ARM CPUs in one socket. 32-bit ARM kernels have no NUMA: no node
/// directory, and steerd assumes one node of every CPU.
pub(super) const ARM_VIRT_4: Layout = Layout {
    arch: Arch::Arm,
    preset: "virt-4",
    cpus: 4,
    cpus_per_node: 4,
    cpus_per_package: 4,
    threads_per_core: 1,
    // The guest's kernel reports each core as its own cluster.
    cpus_per_cluster: Some(1),
    distances: &[&[10]],
    tcg: "multi",
};

/// Four big-endian s390x CPUs (s390-ccw-virtio). The Debian 12 kernel has no NUMA node
/// directory there, and reports each CPU as its own package (QEMU 7.2 gives the guest no
/// CPU topology to read).
pub(super) const S390X_CCW_4: Layout = Layout {
    arch: Arch::S390x,
    preset: "ccw-4",
    cpus: 4,
    cpus_per_node: 4,
    cpus_per_package: 1,
    threads_per_core: 1,
    cpus_per_cluster: None,
    distances: &[&[10]],
    tcg: "multi",
};

/// Four RISC-V harts (virt), one socket: the Debian 13 kernel shows one NUMA node and
/// the socket as one cluster.
pub(super) const RISCV64_VIRT_4: Layout = Layout {
    arch: Arch::Riscv64,
    preset: "virt-4",
    cpus: 4,
    cpus_per_node: 4,
    cpus_per_package: 4,
    threads_per_core: 1,
    cpus_per_cluster: Some(4),
    distances: &[&[10]],
    tcg: "multi",
};

/// CPUs `[cpu - cpu % size, cpu - cpu % size + size)`: the aligned group of `size`.
fn group(cpu: usize, size: usize) -> Vec<usize> {
    let first = cpu - cpu % size;
    (first..first + size).collect()
}

/// The CPUs of a cpulist as numbers.
pub(super) fn cpus(list: &str) -> Vec<usize> {
    match CpuSet::parse_list(list.trim()) {
        Ok(set) => set.iter().map(|c| c.get()).collect(),
        Err(e) => panic!("bad cpulist {list:?}: {e}"),
    }
}

impl Layout {
    pub(super) fn nodes(&self) -> usize {
        self.cpus / self.cpus_per_node
    }

    pub(super) fn node_of(&self, cpu: usize) -> usize {
        cpu / self.cpus_per_node
    }

    pub(super) fn node_cpus(&self, node: usize) -> Vec<usize> {
        group(node * self.cpus_per_node, self.cpus_per_node)
    }

    pub(super) fn siblings(&self, cpu: usize) -> Vec<usize> {
        group(cpu, self.threads_per_core)
    }

    pub(super) fn package(&self, cpu: usize) -> Vec<usize> {
        group(cpu, self.cpus_per_package)
    }

    pub(super) fn cluster(&self, cpu: usize) -> Option<Vec<usize>> {
        self.cpus_per_cluster.map(|size| group(cpu, size))
    }

    /// Checks the guest's `sys_layout` lines against this layout.
    pub(super) fn check_sys(&self, lines: &[String]) {
        let node_lines: Vec<_> = lines.iter().filter(|l| l.starts_with("node ")).collect();
        assert_eq!(node_lines.len(), self.nodes(), "node count in {lines:#?}");
        for (n, line) in node_lines.iter().enumerate() {
            let f: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(f[1], n.to_string(), "{line}");
            assert_eq!(cpus(f[2]), self.node_cpus(n), "node {n} cpulist: {line}");
            let dist: Vec<u32> = f[3..].iter().map(|d| d.parse().unwrap()).collect();
            assert_eq!(dist, self.distances[n], "node {n} distances: {line}");
        }
        let cpu_lines: Vec<_> = lines.iter().filter(|l| l.starts_with("cpu ")).collect();
        assert_eq!(cpu_lines.len(), self.cpus, "online CPUs in {lines:#?}");
        for line in cpu_lines {
            let f: Vec<&str> = line.split_whitespace().collect();
            let cpu: usize = f[1].parse().unwrap();
            let field = |key: &str| {
                let prefix = format!("{key}=");
                f.iter()
                    .find_map(|w| w.strip_prefix(prefix.as_str()))
                    .unwrap_or_else(|| panic!("no {key} in {line}"))
            };
            assert_eq!(cpus(field("core")), self.siblings(cpu), "SMT: {line}");
            assert_eq!(cpus(field("package")), self.package(cpu), "package: {line}");
            if let Some(cluster) = self.cluster(cpu) {
                assert_eq!(cpus(field("cluster")), cluster, "cluster: {line}");
            }
        }
    }
}

pub(super) const ARM64_KUNPENG_32: Layout = Layout {
    arch: Arch::Arm64,
    preset: "kunpeng920-32",
    cpus: 32,
    cpus_per_node: 8,
    cpus_per_package: 16,
    threads_per_core: 1,
    cpus_per_cluster: Some(4),
    distances: KUNPENG_SLIT,
    tcg: "single",
};
