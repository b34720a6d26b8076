//! `steerd [serve]`: the whole pipeline, flags to a running server.
//!
//! Input: validated [`ServeArgs`]. Output: an exit status once the server has stopped.
//! Order is the point: the topology (and with it the allowed CPU set) is read before
//! anything pins the process, then the NIC, the plan and the steering program (all in
//! [`super::prepare`], shared with `check`), then the master
//! takes over (`master.rs`), with what `check --json` prints as the fixed part of the
//! dashboard's `/status.json` when `--metrics` is given. Topology warnings and the hash
//! fallback are one line each on stderr.

use super::Failure;
use crate::args::{ServeArgs, SteerPolicy};
use crate::dashboard::status::StatusDocument;
use crate::master;

/// Runs `steerd serve` and returns the exit status.
pub(crate) fn main(mut args: ServeArgs) -> Result<i32, Failure> {
    // A master re-executed by an upgrade starts with every signal at its default
    // (`upgrade.rs`): counted from here, a HUP sent meanwhile does not end it.
    if crate::inherit::reexec_is_ours() {
        crate::signals::install().map_err(|e| Failure::new("master", e))?;
    }
    super::prepare::bindable_listen(&mut args, |w| crate::say!("warning: {w}"));
    // Whatever `check` refuses is refused here before anything is bound.
    let problems = super::preflight::problems(&args);
    if !problems.is_empty() {
        for p in &problems {
            eprintln!("{p}");
        }
        return Ok(1);
    }
    // Each warning already names its stage (`topology: ...`).
    let super::prepare::Prepared {
        topo,
        warnings,
        plan,
        program,
    } = super::prepare::prepare(&args, |w| crate::say!("warning: {w}"))?;
    if args.steer != SteerPolicy::Hash && plan.steer == SteerPolicy::Hash {
        crate::say!(
            "warning: steer: only one worker CPU, so --steer {} has nothing to choose \
             between; falling back to hash",
            args.steer.name()
        );
    }
    // What `check --json` prints is the fixed part of the dashboard's status.json.
    let status = args.metrics.map(|_| {
        let members = super::check::check_members(&args, &topo, &warnings, &plan, program.as_ref());
        StatusDocument::new(members)
    });
    let mut serving = crate::plan::serving(args);
    // Read again for serving: the file `check` read above may have changed since.
    serving.site.types = crate::preflight::media_types(&serving.site)
        .map_err(|p| Failure::new(p.stage, p.message))?;
    let insns = program.as_ref().map(|p| p.insns.as_slice());
    master::run(&serving, &plan, insns, status).map_err(|e| Failure::new(e.stage(), e))?;
    Ok(0)
}
