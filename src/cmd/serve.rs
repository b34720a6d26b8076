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

/// Runs `steerd serve` and returns the exit status; `argv` is the command line it was
/// parsed from, parsed again (with the file) by a HUP when `--config` is given.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn main(mut args: ServeArgs, argv: &[String]) -> Result<i32, Failure> {
    let first = Fixed::of(&args);
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
    let args_config = args.config.is_some();
    let mut serving = crate::plan::serving(args);
    // Read again for serving: the file `check` read above may have changed since.
    for (_, site) in serving.sites_mut() {
        site.types =
            crate::preflight::media_types(site).map_err(|p| Failure::new(p.stage, p.message))?;
    }
    let insns = program.as_ref().map(|p| p.insns.as_slice());
    let again = || reread(argv, &first);
    let reread: Option<crate::config::Reread<'_>> = args_config.then_some(&again);
    master::run(&serving, &plan, insns, status, reread).map_err(|e| Failure::new(e.stage(), e))?;
    Ok(0)
}

/// The settings a HUP cannot change: only new listeners or a new master could apply
/// them.
struct Fixed {
    listen: Vec<std::net::SocketAddr>,
    workers: crate::args::Workers,
    cpus: Option<crate::cpuset::CpuSet>,
    steer: SteerPolicy,
    master_cpu: crate::args::MasterCpu,
    user: Option<crate::args::UserSpec>,
    metrics: Option<std::net::SocketAddr>,
    send_buffer: Option<u32>,
    max_conns: u32,
}

impl Fixed {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn of(a: &ServeArgs) -> Fixed {
        Fixed {
            listen: a.listen.clone(),
            workers: a.workers,
            cpus: a.cpus.clone(),
            steer: a.steer,
            master_cpu: a.master_cpu,
            user: a.user.clone(),
            metrics: a.metrics,
            send_buffer: a.send_buffer,
            max_conns: a.max_conns,
        }
    }

    /// The names of the settings that differ in `now`.
    fn changed(&self, now: &Fixed) -> Vec<&'static str> {
        let differs = [
            ("listen", self.listen != now.listen),
            ("workers", self.workers != now.workers),
            ("cpus", self.cpus != now.cpus),
            ("steer", self.steer != now.steer),
            ("master-cpu", self.master_cpu != now.master_cpu),
            ("user", self.user != now.user),
            ("metrics", self.metrics != now.metrics),
            ("send-buffer", self.send_buffer != now.send_buffer),
            ("max-conns", self.max_conns != now.max_conns),
        ];
        differs
            .iter()
            .filter(|(_, d)| *d)
            .map(|(n, _)| *n)
            .collect()
    }
}

/// The configuration a HUP serves next: the command line parsed again with the
/// variables and the file as they are now. A setting only new listeners or a new
/// master could apply ([`Fixed`]) is refused by name when it changed: stop and start
/// the server (or upgrade it with USR2) for those.
#[inline(never)]
#[cfg_attr(feature = "cold-size", optimize(size))]
fn reread(argv: &[String], first: &Fixed) -> Result<crate::config::Serving, String> {
    let args = match super::parse(argv) {
        Ok(crate::args::Command::Serve(args)) => args,
        Ok(_) => return Err("the command line no longer means serve".into()),
        Err(e) => return Err(e.message),
    };
    let changed = first.changed(&Fixed::of(&args));
    if !changed.is_empty() {
        let them = if changed.len() == 1 { "it" } else { "them" };
        return Err(format!(
            "{} changed: a HUP cannot apply {them} (restart, or upgrade with USR2)",
            changed.join(", ")
        ));
    }
    if let Some(p) = super::preflight::problems(&args).first() {
        return Err(format!("{}: {}", p.stage, p.message));
    }
    Ok(crate::plan::serving(args))
}
