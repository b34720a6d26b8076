//! The NIC behind a listen address, and where its packets are processed.
//!
//! Input: a listen address and the roots. Output: a [`Nic`] (its NUMA node, local CPUs,
//! RPS CPUs and the CPUs its interrupts are affine to), or `None` for loopback, the
//! unspecified address, or an address no interface owns. The interface is found by exact
//! address in `/proc/net/if_inet6` (IPv6) or by the longest matching route in
//! `/proc/net/route` (IPv4). Sources: Documentation/networking/scaling.rst (`rps_cpus`),
//! core-api/irq/irq-affinity.rst and kernel/irq/proc.c (`effective_affinity_list`),
//! Documentation/ABI/testing/sysfs-bus-pci (`numa_node`, `local_cpulist`, `msi_irqs`).

use super::{parse, Mode, NodeId, Reader, Topology};
use crate::cpuset::CpuSet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;

/// A network interface and its locality.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nic {
    /// Interface name, such as `eth0`.
    pub interface: String,
    /// `device/numa_node`, else the node of `device/local_cpulist`, else the node all its
    /// interrupts are affine to; `None` if unknown.
    pub node: Option<NodeId>,
    /// `device/local_cpulist`, if the device has one.
    pub local_cpus: Option<CpuSet>,
    /// Union of `queues/rx-*/rps_cpus` (empty: RPS off).
    pub rps_cpus: CpuSet,
    /// Union of the effective affinity of the device's interrupts.
    pub irq_cpus: CpuSet,
}

/// Finds the NIC of the first listen address on a real interface and stores it in the
/// topology; returns the warnings.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub fn attach_nic(
    topo: &mut Topology,
    listen: &[SocketAddr],
    sysfs: &Path,
    procfs: &Path,
) -> Vec<String> {
    let mut warnings = Vec::new();
    for addr in listen {
        let (nic, w) = nic_for(addr.ip(), sysfs, procfs, topo);
        warnings.extend(w);
        if nic.is_some() {
            topo.nic = nic;
            break;
        }
    }
    warnings
}

/// The NIC that owns `ip`, with its locality; `None` for loopback and unspecified.
pub fn nic_for(
    ip: IpAddr,
    sysfs: &Path,
    procfs: &Path,
    topo: &Topology,
) -> (Option<Nic>, Vec<String>) {
    let mut r = Reader::new(sysfs, procfs);
    if ip.is_loopback() || ip.is_unspecified() || r.mode == Mode::SysTreeOnly {
        return (None, r.warnings);
    }
    let nic = interface_of(&mut r, ip)
        .filter(|name| name != "lo" && !name.contains('/') && !name.starts_with('.'))
        .map(|name| read_nic(&mut r, name, topo));
    (nic, r.warnings)
}

fn interface_of(r: &mut Reader, ip: IpAddr) -> Option<String> {
    match ip {
        IpAddr::V6(v6) => {
            let text = r.proc("net/if_inet6")?;
            parse::parse_if_inet6(&text)
                .into_iter()
                .find(|(a, _)| *a == v6)
                .map(|(_, name)| name)
        }
        IpAddr::V4(v4) => {
            let text = r.proc("net/route")?;
            let owns = |rt: &parse::Route| masked(v4, rt.mask) == rt.destination;
            parse::parse_routes(&text)
                .into_iter()
                .filter(owns)
                .max_by_key(|rt| u32::from(rt.mask).count_ones())
                .map(|rt| rt.interface)
        }
    }
}

fn masked(a: Ipv4Addr, m: Ipv4Addr) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(a) & u32::from(m))
}

fn read_nic(r: &mut Reader, name: String, topo: &Topology) -> Nic {
    // `numa_node` and `local_cpulist` are on `device`, or on its parent when `device` is
    // a bus device of its own without them (virtio-net: `device` is `virtioN`, a child of
    // the PCI function; its interrupts are then found by name in /proc/interrupts).
    let mut dev = format!("class/net/{name}/device");
    if r.sys(&format!("{dev}/numa_node")).is_none()
        && r.sys(&format!("{dev}/../numa_node")).is_some()
    {
        dev.push_str("/..");
    }
    let local_cpus = r.cpulist(&format!("{dev}/local_cpulist"));
    let declared = r
        .sys(&format!("{dev}/numa_node"))
        .and_then(|t| parse::parse_id(&t).ok().flatten())
        .map(NodeId);
    let from_cpus = local_cpus
        .as_ref()
        .filter(|s| s.len() < topo.online.len())
        .and_then(|s| s.first())
        .and_then(|c| topo.node_of(c));
    let irq_cpus = irq_cpus(r, &name);
    Nic {
        node: declared
            .or(from_cpus)
            .or_else(|| single_node(&irq_cpus, topo)),
        local_cpus,
        rps_cpus: rps_cpus(r, &name),
        irq_cpus,
        interface: name,
    }
}

/// The node of every CPU in `cpus`, if they are all on one.
fn single_node(cpus: &CpuSet, topo: &Topology) -> Option<NodeId> {
    let mut nodes = cpus.iter().map(|c| topo.node_of(c));
    let first = nodes.next()??;
    nodes.all(|n| n == Some(first)).then_some(first)
}

fn rps_cpus(r: &mut Reader, name: &str) -> CpuSet {
    let mut set = CpuSet::new();
    for q in 0..4096 {
        let Some(text) = r.sys(&format!("class/net/{name}/queues/rx-{q}/rps_cpus")) else {
            break;
        };
        match CpuSet::parse_mask(&text) {
            Ok(s) => set = set.union(&s),
            Err(e) => r.warn(format!("topology: {name} rx-{q}/rps_cpus: {e}")),
        }
    }
    set
}

/// The device's MSI vectors (`device/msi_irqs/`), else the `/proc/interrupts` lines
/// naming the interface or its device, then each one's effective affinity.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn irq_cpus(r: &mut Reader, name: &str) -> CpuSet {
    let dev_path = r.sysfs.join(format!("class/net/{name}/device"));
    let mut irqs: Vec<u32> = std::fs::read_dir(dev_path.join("msi_irqs"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    if irqs.is_empty() {
        let device = std::fs::read_link(&dev_path)
            .ok()
            .and_then(|p| p.file_name()?.to_str().map(str::to_string))
            .unwrap_or_default();
        if let Some(text) = r.proc("interrupts") {
            irqs = parse::parse_interrupts_for(&text, &[name, &device]);
        }
    }
    irqs.sort_unstable();
    let mut set = CpuSet::new();
    for irq in irqs {
        let text = r
            .proc(&format!("irq/{irq}/effective_affinity_list"))
            .or_else(|| r.proc(&format!("irq/{irq}/smp_affinity_list")));
        if let Some(Ok(s)) = text.map(|t| CpuSet::parse_list(&t)) {
            set = set.union(&s);
        }
    }
    set
}
