//! `steerd check [serve options] [--json]`: topology, plan and steering program.
//!
//! Input: the serve options. Output on stdout: a topology summary, the workers (listener
//! index, CPU, node), the master CPU, the CPU -> listener index map, and the steering
//! program as bpf_asm text and as bytecode in bpf_asm's default format; or all of it as
//! JSON (schema in `docs/placement.md`). It listens on nothing, so it can never join a
//! live reuseport group (kubernetes/kubernetes#48358 is what happens otherwise); each
//! address `serve` would bind is only probed, by a bind to its port 0 closed at once, and
//! one that is not this machine's is a problem (exit status 1).
//! Under socket activation (`LISTEN_FDS`) the listen addresses are those `serve` would
//! use, and one `passed:` line per passed socket says which group it would start, with
//! how many members `serve` would make beside it and with which `IPV6_V6ONLY`.

use super::topo::{ids, topology_json};
use super::Failure;
use crate::args::ServeArgs;
use crate::json::Value;
use crate::plan::Plan;
use crate::steer::SteerProgram;
use crate::topology::Topology;
use std::fmt::Write;
use std::net::SocketAddr;

/// Runs `steerd check`; returns the exit status or the failure.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn main(mut args: ServeArgs, json: bool) -> Result<i32, Failure> {
    // Asked by a master about to upgrade to this binary (`upgrade/handshake.rs`).
    if let Some(line) = crate::upgrade::handshake::answer_probe() {
        eprintln!("{line}");
    }
    super::prepare::bindable_listen(&mut args, |w| eprintln!("steerd: warning: {w}"));
    let args = &args;
    let problems = super::preflight::problems(args);
    for p in &problems {
        eprintln!("{p}");
    }
    for w in super::preflight::warnings(args) {
        eprintln!("steerd: warning: {w}");
    }
    let super::prepare::Prepared {
        topo,
        warnings,
        plan,
        program,
    } = super::prepare::prepare(args, |w| eprintln!("steerd: {w}"))?;
    let passed = passed_sockets(args, plan.workers.len());
    for p in &passed.problems {
        eprintln!("steerd: warning: listen: {p}");
    }
    let unbindable = unbindable_addresses(&passed.listen, args.metrics);
    for p in &unbindable {
        eprintln!("{p}");
    }
    if json {
        let mut members = check_members(args, &topo, &warnings, &plan, program.as_ref());
        for (k, v) in members.iter_mut() {
            if k == "listen" {
                *v = Value::Arr(
                    passed
                        .listen
                        .iter()
                        .map(|a| Value::str(a.to_string()))
                        .collect(),
                );
            }
        }
        let lines = passed.lines.iter().map(|l| Value::str(l.clone())).collect();
        members.push(("passed".to_string(), Value::Arr(lines)));
        members.push(("sources".to_string(), sources(args)));
        print!("{}", Value::Obj(members).to_text());
    } else {
        print!(
            "{}",
            check_text(args, &passed, &topo, &plan, program.as_ref())
        );
    }
    Ok(i32::from(!problems.is_empty() || !unbindable.is_empty()))
}

/// Every address `serve` would bind (the listen addresses, `--metrics`) that this machine
/// cannot, as `listen: ADDR: why` or `metrics: ADDR: why`: an address of another host,
/// or one implied by a name whose addresses are all elsewhere (`listen::bindable` keeps
/// those, so that `serve` fails on them). Each is probed by a bind to its port 0 that is
/// closed at once; nothing listens.
fn unbindable_addresses(listen: &[SocketAddr], metrics: Option<SocketAddr>) -> Vec<Failure> {
    use crate::listen::bindable::unbindable;
    let listen = listen.iter().map(|&a| ("listen", a));
    listen
        .chain(metrics.map(|a| ("metrics", a)))
        .filter_map(|(stage, addr)| {
            unbindable(addr).map(|why| Failure::new(stage, format!("{addr}: {why}")))
        })
        .collect()
}

/// What `serve` would do with the sockets passed by socket activation (`LISTEN_FDS`).
struct Passed {
    /// The addresses `serve` would listen on (the passed sockets' own, from a socket
    /// unit, when `--listen` is the default).
    listen: Vec<SocketAddr>,
    /// One line per group started by passed sockets.
    lines: Vec<String>,
    /// Why `serve` could not adopt them (no `SO_REUSEPORT`, not a listening TCP socket,
    /// no group for one, members that cannot be made beside one).
    problems: Vec<String>,
}

fn passed_sockets(args: &ServeArgs, workers: usize) -> Passed {
    use crate::inherit::{self, METRICS};
    use crate::listen::{adopt, member::Membership};
    let mut out = Passed {
        listen: args.listen.clone(),
        lines: Vec::new(),
        problems: Vec::new(),
    };
    let inherited = match inherit::take_from_env() {
        Ok(v) => v,
        Err(e) => {
            out.problems.push(e.to_string());
            return out;
        }
    };
    out.problems.extend(
        inherited
            .iter()
            .filter_map(inherit::reuseport_problem)
            .map(|p| p.to_string()),
    );
    let listeners: Vec<_> = inherited
        .iter()
        .filter(|i| i.name != METRICS)
        .filter_map(|i| i.listener.map(|(addr, reuseport)| (i, addr, reuseport)))
        .collect();
    if !out.problems.is_empty() || listeners.is_empty() {
        return out;
    }
    let offered: Vec<adopt::Offered> = listeners
        .iter()
        .map(|&(i, addr, reuseport)| adopt::Offered {
            name: i.name.clone(),
            addr,
            reuseport,
        })
        .collect();
    let default_only =
        args.listen.len() == 1 && args.listen[0].to_string() == crate::config::DEFAULT_LISTEN;
    let seating = match adopt::seat(&args.listen, default_only, &offered, workers) {
        Ok(s) => s,
        Err(e) => {
            out.problems.push(e.to_string());
            return out;
        }
    };
    out.listen = seating.iter().map(|(a, _)| *a).collect();
    for (addr, seats) in seating.iter().filter(|(_, s)| !s.is_empty()) {
        let fds: Vec<_> = seats.iter().map(|&i| &listeners[i].0.fd).collect();
        let more = workers.saturating_sub(seats.len());
        match Membership::of_passed(&fds, *addr, more > 0) {
            Ok(m) => {
                let names: Vec<&str> = seats.iter().map(|&i| offered[i].name.as_str()).collect();
                out.lines.push(format!(
                    "{} on {addr} ({}): adopted as member{} 0{} of group {addr}, {more} more \
                     made beside it with {}",
                    names.join(","),
                    m.describe(*addr),
                    if seats.len() > 1 { "s" } else { "" },
                    if seats.len() > 1 {
                        format!("-{}", seats.len() - 1)
                    } else {
                        String::new()
                    },
                    m.describe(*addr),
                ));
            }
            Err(e) => out.problems.push(format!("passed socket on {addr}: {e}")),
        }
    }
    out
}

/// Where each serve flag's value came from: `command line`, `environment STEERD_...`
/// or `default`, keyed by the flag's long name.
fn sources(args: &ServeArgs) -> Value {
    use crate::args::{env::Origin, serve::FLAGS};
    let origin = |name: &str| match args.origins.iter().find(|(n, _)| *n == name) {
        Some((_, Origin::CommandLine)) => "command line".to_string(),
        Some((_, Origin::Environment(var))) => format!("environment {var}"),
        Some((_, Origin::File(at))) => format!("file {at}"),
        None => "default".to_string(),
    };
    Value::Obj(
        FLAGS
            .iter()
            .map(|f| (f.name().to_string(), Value::str(origin(f.name()))))
            .collect(),
    )
}

fn int(n: impl TryInto<i64>) -> Value {
    Value::Int(n.try_into().unwrap_or(i64::MAX))
}

/// The members of `check --json` (also the fixed part of the dashboard's status.json).
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn check_members(
    args: &ServeArgs,
    topo: &Topology,
    warnings: &[String],
    plan: &Plan,
    program: Option<&SteerProgram>,
) -> Vec<(String, Value)> {
    let mut pairs = topology_json(topo, warnings);
    let workers = plan
        .workers
        .iter()
        .map(|w| {
            Value::obj([
                ("index", int(w.index)),
                ("cpu", int(w.cpu.get())),
                ("node", int(w.node)),
            ])
        })
        .collect();
    let map = plan
        .cpu_map
        .iter()
        .map(|&(c, i)| Value::obj([("cpu", int(c.get())), ("index", int(i))]))
        .collect();
    let ranges = plan
        .node_ranges()
        .into_iter()
        .map(|(n, r)| {
            Value::obj([
                ("node", int(n)),
                ("first", int(r.start)),
                ("count", int(r.len())),
            ])
        })
        .collect();
    let listen = args
        .listen
        .iter()
        .map(|a| Value::str(a.to_string()))
        .collect();
    let extra = [
        ("listen", Value::Arr(listen)),
        ("requested_policy", Value::str(args.steer.name())),
        ("policy", Value::str(plan.steer.name())),
        (
            "worker_cpus",
            ids(&crate::cpuset::CpuSet::from_ids(
                plan.workers.iter().map(|w| w.cpu),
            )),
        ),
        ("workers", Value::Arr(workers)),
        (
            "master_cpu",
            Value::opt_int(plan.master_cpu.map(|c| c.get() as i64)),
        ),
        ("node_ranges", Value::Arr(ranges)),
        ("cpu_map", Value::Arr(map)),
        ("program", program.map_or(Value::Null, program_json)),
    ];
    pairs.extend(extra.into_iter().map(|(k, v)| (k.to_string(), v)));
    pairs
}

fn program_json(p: &SteerProgram) -> Value {
    Value::obj([
        ("instructions", int(p.insns.len())),
        ("longest_path", int(p.longest_path)),
        ("text", Value::str(p.text.clone())),
        (
            "bytecode",
            Value::str(asm_bpf::fmt::format_default(&p.insns)),
        ),
    ])
}

fn check_text(
    args: &ServeArgs,
    passed: &Passed,
    topo: &Topology,
    plan: &Plan,
    program: Option<&SteerProgram>,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "topology: {} CPUs online ({}), {} allowed ({}), {} nodes",
        topo.online.len(),
        topo.online,
        topo.allowed.len(),
        topo.allowed,
        topo.nodes.len()
    );
    if let Some(q) = topo.quota {
        let _ = writeln!(out, "quota: at most {} workers", q.worker_cap());
    }
    if let Some(nic) = &topo.nic {
        let node = nic
            .node
            .map_or_else(|| "unknown".to_string(), |n| n.0.to_string());
        let _ = writeln!(out, "nic: {} on node {node}", nic.interface);
    }
    let listen: Vec<String> = passed.listen.iter().map(|a| a.to_string()).collect();
    let _ = writeln!(out, "listen: {}", listen.join(" "));
    for line in &passed.lines {
        let _ = writeln!(out, "passed: {line}");
    }
    let _ = writeln!(
        out,
        "policy: {} (requested {})",
        plan.steer.name(),
        args.steer.name()
    );
    let master = plan
        .master_cpu
        .map_or_else(|| "unpinned".to_string(), |c| format!("CPU {c}"));
    let _ = writeln!(out, "master: {master}");
    let _ = writeln!(out, "workers: {}", plan.workers.len());
    out.push_str("INDEX CPU NODE\n");
    for w in &plan.workers {
        let _ = writeln!(out, "{:>5} {:>3} {:>4}", w.index, w.cpu.get(), w.node.0);
    }
    out.push_str("cpu -> index:");
    for (i, (c, idx)) in plan.cpu_map.iter().enumerate() {
        out.push_str(if i % 8 == 0 { "\n " } else { "" });
        let _ = write!(out, " {:>3}->{idx:<3}", c.get());
    }
    out.push('\n');
    match program {
        None => out.push_str("program: none (the kernel's hash)\n"),
        Some(p) => {
            let _ = writeln!(
                out,
                "program: {} instructions, at most {} run per SYN",
                p.insns.len(),
                p.longest_path
            );
            out.push_str(&p.text);
            let _ = write!(out, "bytecode:\n{}", asm_bpf::fmt::format_default(&p.insns));
        }
    }
    out
}
