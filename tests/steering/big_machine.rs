//! A generated 2048-CPU machine through the real binary: `topo` and `check` finish and
//! still place by the rules (one worker per physical core first, nodes and caches
//! balanced). Set handling, grouping and the spread order were once quadratic in the CPU
//! count (check took minutes on 8192 CPUs); the figures are in docs/placement.md. This
//! test asserts behaviour only: timings belong to measurements, not to assertions.

use crate::support;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use support::server::{binary, TempDir, PATIENCE};

const CPUS: usize = 2048;
/// CPU `c` and `c + CORES` are SMT siblings.
const CORES: usize = CPUS / 2;
const CORES_PER_NODE: usize = CORES / 2;
const CORES_PER_LLC: usize = 16;

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("{text}\n")).unwrap();
}

/// Two nodes of 512 cores with two threads each (Linux numbering: siblings are `c` and
/// `c + 1024`), one package per node, an L3 shared by 16 cores.
fn generate(sys: &Path) {
    write(sys, "devices/system/cpu/online", &format!("0-{}", CPUS - 1));
    write(
        sys,
        "devices/system/cpu/possible",
        &format!("0-{}", CPUS - 1),
    );
    let span = |first: usize, n: usize| {
        format!(
            "{}-{},{}-{}",
            first,
            first + n - 1,
            first + CORES,
            first + CORES + n - 1
        )
    };
    for node in 0..2 {
        let first = node * CORES_PER_NODE;
        let dir = format!("devices/system/node/node{node}");
        write(sys, &format!("{dir}/cpulist"), &span(first, CORES_PER_NODE));
        write(
            sys,
            &format!("{dir}/distance"),
            if node == 0 { "10 21" } else { "21 10" },
        );
    }
    for cpu in 0..CPUS {
        let core = cpu % CORES;
        let node = core / CORES_PER_NODE;
        let llc = core / CORES_PER_LLC * CORES_PER_LLC;
        let t = format!("devices/system/cpu/cpu{cpu}/topology");
        write(
            sys,
            &format!("{t}/core_cpus_list"),
            &format!("{core},{}", core + CORES),
        );
        write(
            sys,
            &format!("{t}/package_cpus_list"),
            &span(node * CORES_PER_NODE, CORES_PER_NODE),
        );
        write(sys, &format!("{t}/physical_package_id"), &node.to_string());
        write(sys, &format!("{t}/core_id"), &core.to_string());
        let c = format!("devices/system/cpu/cpu{cpu}/cache/index0");
        write(sys, &format!("{c}/level"), "3");
        write(sys, &format!("{c}/type"), "Unified");
        write(
            sys,
            &format!("{c}/shared_cpu_list"),
            &span(llc, CORES_PER_LLC),
        );
    }
}

/// Runs steerd to completion (bounded: killed after a generous limit) and parses its JSON.
/// The output is read by a thread, so a full pipe never stalls the child.
fn steerd_json(args: &[&str]) -> serde_json::Value {
    let child = Command::new(binary())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn steerd");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let Ok(out) = rx.recv_timeout(6 * PATIENCE) else {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        panic!("steerd {args:?} did not finish");
    };
    let out = out.expect("output");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.is_empty(), "no warnings expected: {err}");
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn a_2048_cpu_machine_is_read_and_planned_by_the_rules() {
    let dir = TempDir::new("big");
    let sys = dir.path().join("sys");
    generate(&sys);
    let sys = sys.display().to_string();

    let topo = steerd_json(&["topo", "--sysfs", &sys, "--json"]);
    assert_eq!(topo["online"].as_array().unwrap().len(), CPUS);
    assert_eq!(topo["cores"].as_array().unwrap().len(), CORES);
    assert_eq!(
        topo["llc_groups"].as_array().unwrap().len(),
        CORES / CORES_PER_LLC
    );
    assert_eq!(topo["cpus"][1500]["core_cpus"], "476,1500");

    let check = steerd_json(&["check", "--sysfs", &sys, "--workers", "1000", "--json"]);
    let workers = check["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 1000);
    let mut per_node: HashMap<u64, usize> = HashMap::new();
    let mut per_llc: HashMap<usize, usize> = HashMap::new();
    let mut cores = std::collections::HashSet::new();
    for w in workers {
        let cpu = w["cpu"].as_u64().unwrap() as usize;
        *per_node.entry(w["node"].as_u64().unwrap()).or_default() += 1;
        *per_llc.entry(cpu % CORES / CORES_PER_LLC).or_default() += 1;
        assert!(
            cores.insert(cpu % CORES),
            "two workers on core {}",
            cpu % CORES
        );
    }
    assert_eq!(per_node[&0], 500);
    assert_eq!(per_node[&1], 500);
    assert!(
        per_llc.values().all(|&n| n == 15 || n == 16),
        "LLCs unbalanced: {per_llc:?}"
    );
    assert!(check["program"]["instructions"].as_u64().unwrap() <= 4096);
    assert_eq!(check["cpu_map"].as_array().unwrap().len(), CPUS);

    let numa = steerd_json(&["check", "--sysfs", &sys, "--steer", "numa", "--json"]);
    assert_eq!(numa["workers"].as_array().unwrap().len(), CPUS);
    assert_eq!(numa["policy"], "numa");
}
