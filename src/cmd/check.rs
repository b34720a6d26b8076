//! `steerd check [serve options] [--json]`: topology, plan and steering program.
//!
//! Input: the serve options. Output on stdout: a topology summary, the workers (listener
//! index, CPU, node), the master CPU, the CPU -> listener index map, and the steering
//! program as bpf_asm text and as bytecode in bpf_asm's default format; or all of it as
//! JSON (schema in `docs/placement.md`). It binds and listens on nothing, so it can never
//! join a live reuseport group (kubernetes/kubernetes#48358 is what happens otherwise).

use super::topo::{ids, topology_json};
use super::Failure;
use crate::args::ServeArgs;
use crate::json::Value;
use crate::plan::Plan;
use crate::steer::SteerProgram;
use crate::topology::Topology;
use std::fmt::Write;

/// Runs `steerd check`; returns the exit status or the failure.
pub fn main(args: &ServeArgs, json: bool) -> Result<i32, Failure> {
    let problems = super::preflight::problems(args);
    for p in &problems {
        eprintln!("{p}");
    }
    let super::prepare::Prepared {
        topo,
        warnings,
        plan,
        program,
    } = super::prepare::prepare(args, |w| eprintln!("steerd: {w}"))?;
    if json {
        let members = check_members(args, &topo, &warnings, &plan, program.as_ref());
        print!("{}", Value::Obj(members).to_text());
    } else {
        print!("{}", check_text(args, &topo, &plan, program.as_ref()));
    }
    Ok(i32::from(!problems.is_empty()))
}

fn int(n: impl TryInto<i64>) -> Value {
    Value::Int(n.try_into().unwrap_or(i64::MAX))
}

/// The members of `check --json` (also the fixed part of the dashboard's status.json).
pub fn check_members(
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
    let listen: Vec<String> = args.listen.iter().map(|a| a.to_string()).collect();
    let _ = writeln!(out, "listen: {}", listen.join(" "));
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
