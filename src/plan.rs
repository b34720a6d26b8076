//! Stage 3: (ServeArgs, Topology) to a Plan. Pure: no I/O, no syscalls.
//!
//! The types below are the contract later stages (steer, listen, master, worker, check)
//! rely on; the planner that fills them is built in the placement work.

use crate::args::SteerPolicy;
use crate::cpuset::CpuId;

/// A NUMA node id as the kernel numbers it.
pub type NodeId = u32;

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
