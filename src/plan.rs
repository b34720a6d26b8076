//! Stage 3: (ServeArgs, Topology) to a Plan. Pure, no I/O.
