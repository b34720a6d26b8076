//! The placement pipeline `check` and `serve` share: topology, NIC, plan, program.
//!
//! Input: validated [`ServeArgs`]. Output: [`Prepared`] (or the failing stage). Both
//! commands call [`prepare`], so what `check` prints is what `serve` runs: they once read
//! the NIC in `check` only and planned differently on multi-node machines. Each command
//! shows the warnings its own way. It does not pin, bind or fork.

use super::Failure;
use crate::args::{Roots, ServeArgs};
use crate::plan::{self, Plan};
use crate::steer::{self, SteerProgram};
use crate::topology::{self, Topology};

/// Everything decided before any socket exists.
pub(crate) struct Prepared {
    /// The machine as read, with the listen address's NIC attached.
    pub(crate) topo: Topology,
    /// Topology and NIC warnings, each already prefixed with its stage.
    pub(crate) warnings: Vec<String>,
    /// The plan made on `topo`.
    pub(crate) plan: Plan,
    /// The steering program; `None` when the plan needs none.
    pub(crate) program: Option<SteerProgram>,
}

/// Leaves out the implied listen addresses this machine cannot bind
/// (`listen::bindable`), each with a warning to `show`.
pub(crate) fn bindable_listen(args: &mut ServeArgs, show: impl Fn(&str)) {
    let (kept, warnings) = crate::listen::bindable::bindable(&args.listen, &args.listen_implied);
    for w in &warnings {
        show(w);
    }
    args.listen = kept;
}

/// Reads the topology (before anything pins the process), attaches the NIC of the listen
/// addresses, makes the plan and the steering program. Each warning goes to `show` as
/// soon as the machine is read, so it is seen even when planning then fails.
pub(crate) fn prepare(args: &ServeArgs, show: impl Fn(&str)) -> Result<Prepared, Failure> {
    roots_exist(&args.roots)?;
    let (mut topo, mut warnings) = topology::read(&args.roots.sysfs, &args.roots.procfs);
    warnings.extend(topology::attach_nic(
        &mut topo,
        &args.listen,
        &args.roots.sysfs,
        &args.roots.procfs,
    ));
    for w in &warnings {
        show(w);
    }
    let plan = plan::make(args, &topo).map_err(|e| Failure::new("plan", e))?;
    let program = steer::program(&plan, &topo).map_err(|e| Failure::new("steer", e))?;
    Ok(Prepared {
        topo,
        warnings,
        plan,
        program,
    })
}

/// Refuses a `--sysfs` or `--procfs` given on the command line that is not a directory:
/// read from there, every file would be missing and the machine would look like one CPU
/// with a warning per file. The defaults, `/sys` and `/proc`, are only warned about when
/// unreadable (a minimal container may lack them; steerd still serves on one CPU).
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn roots_exist(roots: &Roots) -> Result<(), Failure> {
    let given = [
        ("--sysfs", &roots.sysfs, "/sys"),
        ("--procfs", &roots.procfs, "/proc"),
    ];
    for (flag, path, default) in given {
        if path.as_os_str() != default && !path.is_dir() {
            let why = format!("{flag} {}: not a directory", path.display());
            return Err(Failure::new("topology", why));
        }
    }
    Ok(())
}
