//! Shared by the placement tests: the captured trees under tests/data/sys/ and plans
//! made on them from command-line flags.
//!
//! The trees are enumerated from the directory ([`all`], [`names`]): a new fixture is one
//! new folder (`NAME`, and `NAME.proc` beside it when it has a proc twin), and every test
//! that runs "on every fixture" runs on it.
#![allow(dead_code)]

use std::path::PathBuf;
use steerd::args::{self, ServeArgs};
use steerd::plan::{self, Plan};
use steerd::topology::{self, Topology};

/// The fixture tree `name` (a sysfs root, or a `NAME.proc` proc root).
pub(crate) fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/sys")
        .join(name)
}

/// One captured tree of `tests/data/sys/`.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Fixture {
    /// The folder's name.
    pub name: String,
    /// The sysfs root, `tests/data/sys/NAME`.
    pub sysfs: PathBuf,
    /// Its proc twin, `tests/data/sys/NAME.proc`, when there is one.
    pub procfs: Option<PathBuf>,
}

/// Every captured tree in `tests/data/sys/`, by name.
pub(crate) fn all() -> Vec<Fixture> {
    let dir = fixture("");
    let mut out: Vec<Fixture> = std::fs::read_dir(&dir)
        .expect("tests/data/sys")
        .map(|e| e.expect("fixture").path())
        .filter(|p| p.is_dir() && p.extension().is_none_or(|e| e != "proc"))
        .map(|sysfs| {
            let name = sysfs.file_name().unwrap().to_string_lossy().into_owned();
            let procfs = dir.join(format!("{name}.proc"));
            let procfs = procfs.is_dir().then_some(procfs);
            Fixture {
                name,
                sysfs,
                procfs,
            }
        })
        .collect();
    out.sort();
    assert!(out.len() >= 10, "fixtures went missing: {out:?}");
    out
}

/// The name of every captured tree, sorted.
pub(crate) fn names() -> Vec<String> {
    all().into_iter().map(|f| f.name).collect()
}

/// The topology of fixture `name` read alone (no proc root).
pub(crate) fn topo(name: &str) -> Topology {
    topology::read(&fixture(name), &PathBuf::from("/proc")).0
}

/// Serve options from flags, as the command line gives them.
pub(crate) fn serve(flags: &[&str]) -> ServeArgs {
    let v: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
    args::parse_serve(&v).unwrap()
}

/// The plan for `flags` on `t`.
pub(crate) fn make_on(t: &Topology, flags: &[&str]) -> Plan {
    plan::make(&serve(flags), t).unwrap()
}
