//! Stage 2: /sys, affinity and cgroup files to a Topology.
