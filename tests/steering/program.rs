//! The steering program on every fixture, through the interpreter: for each online CPU it
//! returns the plan's listener index (cpu), or spreads inside the CPU's node range
//! (numa). Also the decision tree's shape, long programs, and `steerd check --json`.

use crate::support::fixtures;
use asm_bpf::interp::{self, Context};

use fixtures::{fixture, make_on, topo};
use steerd::args::SteerPolicy;
use steerd::cpuset::CpuId;
use steerd::plan::{Plan, WorkerPlan};
use steerd::steer::{self, SteerError};
use steerd::topology::{NodeId, Topology};

fn make(t: &Topology, flags: &[&str]) -> Plan {
    make_on(t, flags)
}

fn run(insns: &[asm_bpf::Insn], cpu: u32, rxhash: u32, rand: u32) -> u32 {
    let ctx = Context {
        cpu,
        rxhash,
        rand,
        ..Context::default()
    };
    interp::run(insns, &ctx)
}

#[test]
fn cpu_policy_returns_the_mapped_index_for_every_cpu_on_every_fixture() {
    for name in &fixtures::names() {
        let t = topo(name);
        for workers in ["auto", "1", "2", "3", "5"] {
            let n: usize = workers.parse().unwrap_or(1);
            if n > t.allowed.len() {
                continue;
            }
            let p = make(&t, &["--workers", workers]);
            let prog = steer::program(&p, &t).unwrap();
            let Some(prog) = prog else {
                assert_eq!(p.steer, SteerPolicy::Hash, "{name} {workers}");
                assert_eq!(p.workers.len(), 1);
                continue;
            };
            for &(c, index) in &p.cpu_map {
                assert_eq!(
                    run(&prog.insns, c.get() as u32, 0, 0),
                    u32::from(index),
                    "{name} {workers} cpu {c}"
                );
            }
            let unmapped = p.workers.len() as u32;
            for c in [9000, u32::MAX] {
                assert_eq!(run(&prog.insns, c, 0, 0), unmapped);
            }
            for c in t.possible.iter().filter(|c| !t.online.contains(*c)) {
                assert_eq!(
                    run(&prog.insns, c.get() as u32, 0, 0),
                    unmapped,
                    "offline cpu {c}"
                );
            }
        }
    }
}

#[test]
fn numa_policy_spreads_inside_the_cpus_node() {
    for name in &fixtures::names() {
        let t = topo(name);
        let p = make(&t, &["--steer", "numa"]);
        let Some(prog) = steer::program(&p, &t).unwrap() else {
            assert_eq!(p.workers.len(), 1, "{name}");
            continue;
        };
        let ranges = p.node_ranges();
        for &(c, index) in &p.cpu_map {
            let node = p.workers[usize::from(index)].node;
            let range = &ranges.iter().find(|(n, _)| *n == node).unwrap().1;
            let mut hit = vec![0u32; p.workers.len()];
            for h in 1..=4 * range.len() as u32 {
                let got = run(&prog.insns, c.get() as u32, h.wrapping_add(0x8000_0000), 0);
                assert!(
                    range.contains(&(got as u16)),
                    "{name} cpu {c} -> {got}, range {range:?}"
                );
                hit[got as usize] += 1;
            }
            for i in range.clone() {
                assert!(
                    hit[usize::from(i)] > 0,
                    "{name}: listener {i} never chosen for cpu {c}"
                );
            }
            // A zero hash (not computed) falls back to #rand, not to the first listener.
            let via_rand = run(&prog.insns, c.get() as u32, 0, 1);
            assert_eq!(via_rand, u32::from(range.start) + 1 % range.len() as u32);
        }
    }
}

#[test]
fn contiguous_workers_make_tiny_programs() {
    let t = topo("xeon-2s-smt-112");
    let p = make(&t, &[]);
    let prog = steer::program(&p, &t).unwrap().unwrap();
    // Four linear runs (0-27, 56-83, 28-55, 84-111) and the fallback.
    assert_eq!(steer::segments(&p).len(), 5, "{}", prog.text);
    assert!(prog.insns.len() <= 16, "{}", prog.text);
}

#[test]
fn tree_depth_is_logarithmic() {
    let t = topo("xeon-2s-smt-112");
    let depth = |segs: usize| (usize::BITS - segs.leading_zeros()) as usize;
    let p = make(&t, &["--workers", "8"]);
    let segs = steer::segments(&p).len();
    let prog = steer::program(&p, &t).unwrap().unwrap();
    assert!(segs > 20, "round-robin map has many segments: {segs}");
    assert!(
        prog.longest_path <= depth(segs) + 3,
        "{} for {segs} segments",
        prog.longest_path
    );
    // Past 255 instructions a subtree is reached by a hop; still O(log n).
    let p = alternating(1000);
    let segs = steer::segments(&p).len();
    let prog = steer::program(&p, &t).unwrap().unwrap();
    assert!(
        prog.longest_path <= 2 * depth(segs) + 2,
        "{} for {segs} segments",
        prog.longest_path
    );
    assert!(prog.insns.len() < 2 * segs + 20);
}

/// A plan whose map alternates between two workers on `n` CPUs: one segment per CPU.
fn alternating(n: usize) -> Plan {
    let cpu = |i: usize| CpuId::new(i).unwrap();
    Plan {
        workers: vec![
            WorkerPlan {
                index: 0,
                cpu: cpu(0),
                node: NodeId(0),
            },
            WorkerPlan {
                index: 1,
                cpu: cpu(1),
                node: NodeId(0),
            },
        ],
        master_cpu: None,
        steer: SteerPolicy::Cpu,
        cpu_map: (0..n).map(|i| (cpu(2 * i), (i % 2) as u16)).collect(),
    }
}

#[test]
fn far_subtrees_hop_with_ja_and_still_answer_right() {
    let p = alternating(600);
    let t = topo("this-machine");
    let prog = steer::program(&p, &t).unwrap().unwrap();
    assert!(prog.text.contains("ja "), "needs a 32-bit hop");
    for &(c, i) in &p.cpu_map {
        assert_eq!(run(&prog.insns, c.get() as u32, 0, 0), u32::from(i));
        assert_eq!(
            run(&prog.insns, c.get() as u32 + 1, 0, 0),
            2,
            "gap between mapped ids"
        );
    }
}

#[test]
fn too_many_segments_is_an_error_not_a_fallback() {
    let p = alternating(2100);
    let err = steer::program(&p, &topo("this-machine")).unwrap_err();
    assert!(
        matches!(err, SteerError::TooLong { insns, .. } if insns > 4096),
        "{err}"
    );
    assert!(err.to_string().contains("more than the kernel's 4096"));
}

#[test]
fn tree_eval_agrees_with_the_plan_oracle_on_random_maps() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..300 {
        let workers = 2 + (next() % 6) as usize;
        let mut cpu_map = Vec::new();
        let mut c = 0usize;
        for _ in 0..(1 + next() % 40) {
            c += 1 + (next() % 3) as usize;
            cpu_map.push((CpuId::new(c).unwrap(), (next() % workers as u64) as u16));
        }
        let steer = if next() % 2 == 0 {
            SteerPolicy::Cpu
        } else {
            SteerPolicy::Numa
        };
        let p = Plan {
            workers: (0..workers)
                .map(|i| WorkerPlan {
                    index: i as u16,
                    cpu: CpuId::new(i).unwrap(),
                    node: NodeId((i * 2 / workers) as u32),
                })
                .collect(),
            master_cpu: None,
            steer,
            cpu_map,
        };
        let tree = steer::decision_tree(&p).unwrap();
        for cpu in 0..(c as u32 + 3) {
            for (h, r) in [(0, 3), (7, 0), (u32::MAX, 0)] {
                assert_eq!(
                    tree.eval(cpu, h, r),
                    steer::expected(&p, cpu, h, r),
                    "{p:?} cpu {cpu}"
                );
            }
        }
        steer::program(&p, &topo("this-machine")).unwrap();
    }
}

#[test]
fn hash_policy_has_no_program() {
    let t = topo("kunpeng920-2x2");
    let p = make(&t, &["--steer", "hash"]);
    assert_eq!(steer::program(&p, &t).unwrap(), None);
}

#[test]
fn no_packet_loads_in_any_program() {
    for name in &fixtures::names() {
        let t = topo(name);
        for policy in ["cpu", "numa"] {
            let p = make(&t, &["--steer", policy]);
            if let Some(prog) = steer::program(&p, &t).unwrap() {
                for insn in &prog.insns {
                    let mode = insn.code & 0xe0;
                    let is_load = matches!(insn.class(), 0 | 1);
                    let abs_ind = mode == 0x20 || mode == 0x40 || mode == 0xa0;
                    let ancillary = insn.k >= 0xffff_f000;
                    assert!(
                        !is_load || !abs_ind || ancillary,
                        "{name} {policy}: packet load {insn:?}"
                    );
                }
            }
        }
    }
}

/// stdout of a successful `steerd check ARGS`.
fn check_stdout(args: &[&str]) -> String {
    let out = crate::support::server::run_steerd(&[&["check"], args].concat(), b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn check_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&check_stdout(&all)).expect("check --json is JSON")
}

/// Re-assembles the program text from `steerd check --json` and runs every CPU of its
/// cpu_map through the interpreter.
fn assert_check_program(v: &serde_json::Value) {
    let program = &v["program"];
    let text = program["text"].as_str().unwrap();
    let insns = asm_bpf::assemble(text).unwrap();
    assert_eq!(program["bytecode"], asm_bpf::fmt::format_default(&insns));
    assert_eq!(program["instructions"], insns.len());
    let policy = v["policy"].as_str().unwrap();
    for entry in v["cpu_map"].as_array().unwrap() {
        let cpu = entry["cpu"].as_u64().unwrap() as u32;
        let index = entry["index"].as_u64().unwrap() as u32;
        let got = run(&insns, cpu, 0, 0);
        if policy == "cpu" {
            assert_eq!(got, index, "cpu {cpu}");
        } else {
            let node = &v["workers"][index as usize]["node"];
            assert_eq!(&v["workers"][got as usize]["node"], node, "cpu {cpu}");
        }
    }
}

#[test]
fn check_json_through_the_binary_on_every_fixture() {
    for name in &fixtures::names() {
        let dir = fixture(name);
        for policy in ["cpu", "numa"] {
            let v = check_json(&["--sysfs", dir.to_str().unwrap(), "--steer", policy]);
            let workers = v["workers"].as_array().unwrap();
            let online = v["online"].as_array().unwrap();
            assert_eq!(
                v["cpu_map"].as_array().unwrap().len(),
                online.len(),
                "{name}"
            );
            if workers.len() > 1 {
                assert_eq!(v["policy"], policy);
                assert_check_program(&v);
            } else {
                assert_eq!(v["policy"], "hash");
                assert!(v["program"].is_null());
            }
        }
    }
}

#[test]
fn check_json_kunpeng_layout() {
    let dir = fixture("kunpeng920-2x2");
    let v = check_json(&["--sysfs", dir.to_str().unwrap(), "--workers", "8"]);
    let cpus: Vec<u64> = v["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["cpu"].as_u64().unwrap())
        .collect();
    assert_eq!(cpus, [0, 4, 8, 12, 16, 20, 24, 28]);
    assert_eq!(v["master_cpu"], 1);
    assert_eq!(
        v["workers"][2],
        serde_json::json!({"index": 2, "cpu": 8, "node": 1})
    );
    assert_eq!(
        v["node_ranges"][3],
        serde_json::json!({"node": 3, "first": 6, "count": 2})
    );
    assert_eq!(v["cpu_map"][13], serde_json::json!({"cpu": 13, "index": 3}));
}

#[test]
fn check_json_container() {
    let dir = fixture("container-4-7");
    let v = check_json(&["--sysfs", dir.to_str().unwrap()]);
    assert_eq!(v["allowed"], serde_json::json!([4, 5, 6, 7]));
    assert_eq!(v["quota"]["worker_cap"], 3);
    assert_eq!(v["worker_cpus"], serde_json::json!([4, 5, 6]));
    assert_eq!(v["master_cpu"], 7);
}

#[test]
fn check_refuses_impossible_flags_with_the_stage() {
    let dir = fixture("container-4-7");
    let args = ["check", "--sysfs", dir.to_str().unwrap(), "--cpus", "0-5"];
    let out = crate::support::server::run_steerd(&args, b"");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "steerd: plan: --cpus: CPUs 0-3 are not allowed (allowed: 4-7)\n"
    );
}

#[test]
fn check_binds_nothing_and_prints_the_program() {
    // A plain listener (no SO_REUSEPORT) holds the port: anything that bound it would fail.
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let dir = fixture("kunpeng920-2x2");
    let text = check_stdout(&[
        "--listen",
        &addr,
        "--workers",
        "4",
        "--sysfs",
        dir.to_str().unwrap(),
    ]);
    assert!(text.contains(&format!("listen: {addr}")), "{text}");
    assert!(text.contains("master: CPU 1\n"), "{text}");
    let program = text
        .split("\nbytecode:\n")
        .nth(1)
        .expect("bytecode section");
    let source: String = text
        .lines()
        .skip_while(|l| !l.starts_with("program: "))
        .skip(1)
        .take_while(|l| *l != "bytecode:")
        .map(|l| format!("{l}\n"))
        .collect();
    let insns = asm_bpf::assemble(&source).unwrap();
    assert_eq!(program, asm_bpf::fmt::format_default(&insns));
    for (c, want) in [(0, 0), (7, 0), (8, 1), (31, 3), (32, 4)] {
        assert_eq!(run(&insns, c, 0, 0), want, "cpu {c}");
    }
    drop(held);
}

/// `n` CPUs whose node alternates (evens node 0, odds node 1), one worker each, under
/// `numa`: workers are numbered node by node, so every CPU starts a new segment.
fn alternating_nodes(n: usize) -> Plan {
    let cpu = |i: usize| CpuId::new(i).unwrap();
    let half = n.div_ceil(2);
    let index_of = |c: usize| (c % 2) * half + c / 2;
    let mut workers: Vec<WorkerPlan> = (0..n)
        .map(|c| WorkerPlan {
            index: index_of(c) as u16,
            cpu: cpu(c),
            node: NodeId((c % 2) as u32),
        })
        .collect();
    workers.sort_by_key(|w| w.index);
    Plan {
        workers,
        master_cpu: None,
        steer: SteerPolicy::Numa,
        cpu_map: (0..n).map(|c| (cpu(c), index_of(c) as u16)).collect(),
    }
}

/// Each node's spread is emitted once and reached by `ja`: 1024 CPUs alternating between
/// two nodes once needed 6673 instructions; the size now grows with segments + nodes.
#[test]
fn numa_with_alternating_nodes_fits_and_agrees_for_every_cpu() {
    let p = alternating_nodes(1024);
    let segs = steer::segments(&p).len();
    assert!(segs >= 1024, "one segment per CPU: {segs}");
    let prog = steer::program(&p, &topo("this-machine"))
        .expect("fits")
        .unwrap();
    assert!(
        prog.insns.len() <= 2 * segs + 2 * 6 + 2,
        "{} instructions for {segs} segments",
        prog.insns.len()
    );
    assert_eq!(
        prog.text.matches("ld #rxhash").count(),
        2,
        "one block per node"
    );
    for c in 0..1026u32 {
        for (h, r) in [(7, 0), (0x9e37_79b9, 0), (0, 3)] {
            assert_eq!(
                run(&prog.insns, c, h, r),
                steer::expected(&p, c, h, r),
                "cpu {c} rxhash {h} rand {r}"
            );
        }
    }
}

#[test]
fn a_numa_program_too_long_does_not_advise_numa() {
    let err = steer::program(&alternating_nodes(8000), &topo("this-machine")).unwrap_err();
    assert!(matches!(err, SteerError::TooLong { .. }), "{err}");
    let text = err.to_string();
    assert!(text.ends_with("use --steer hash"), "{text}");
    let err = steer::program(&alternating(2100), &topo("this-machine")).unwrap_err();
    assert!(
        err.to_string().ends_with("use --steer numa or hash"),
        "{err}"
    );
}
