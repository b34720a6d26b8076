//! Shared by the placement tests: the captured trees under tests/data/sys/ and plans
//! made on them from command-line flags.
#![allow(dead_code)]

use std::path::PathBuf;
use steerd::args::{self, ServeArgs};
use steerd::plan::{self, Plan};
use steerd::topology::{self, Topology};

/// The fixture tree `name` (a sysfs root, or a `NAME.proc` proc root).
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/sys")
        .join(name)
}

/// The topology of fixture `name` read alone (no proc root).
pub fn topo(name: &str) -> Topology {
    topology::read(&fixture(name), &PathBuf::from("/proc")).0
}

/// Serve options from flags, as the command line gives them.
pub fn serve(flags: &[&str]) -> ServeArgs {
    let v: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
    args::parse_serve(&v).unwrap()
}

/// The plan for `flags` on `t`.
pub fn make_on(t: &Topology, flags: &[&str]) -> Plan {
    plan::make(&serve(flags), t).unwrap()
}
