//! Topology from `/sys`, the plan, the steering program on every fixture, and the kernel running it.

mod big_machine;
mod end_to_end;
mod kernel;
mod plan;
mod program;
mod topology;
mod topology_guard;
