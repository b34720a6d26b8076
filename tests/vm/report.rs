//! `steerd topo --json` and `steerd check --json` as printed inside a guest, checked
//! against the layout the guest was booted with (schema: docs/placement.md, section 4),
//! and the guest's count of the server's transparent huge pages.
//!
//! Input: the JSON lines of one section. Output: `Err` naming the first key that
//! disagrees with the layout. The layout's counts are the oracle, not the plan code.

use super::layout::Layout;
use serde_json::Value;

/// Parses the lines of one section as one JSON document.
pub(super) fn parse(lines: &[String]) -> Result<Value, String> {
    serde_json::from_str(&lines.join("\n"))
        .map_err(|e| format!("not JSON ({e}):\n{}", lines.join("\n")))
}

fn ids(v: &Value) -> Option<Vec<usize>> {
    v.as_array()?
        .iter()
        .map(|x| x.as_u64().map(|n| n as usize))
        .collect()
}

fn groups(v: &Value) -> Option<Vec<Vec<usize>>> {
    v.as_array()?.iter().map(ids).collect()
}

fn want<T: PartialEq + std::fmt::Debug>(
    key: &str,
    got: Option<T>,
    expected: T,
) -> Result<(), String> {
    match got {
        Some(g) if g == expected => Ok(()),
        other => Err(format!("{key}: got {other:?}, expected {expected:?}")),
    }
}

/// The aligned groups of `size` CPUs covering the layout.
fn partition(layout: &Layout, size: usize) -> Vec<Vec<usize>> {
    (0..layout.cpus / size)
        .map(|g| (g * size..(g + 1) * size).collect())
        .collect()
}

/// `steerd topo --json` (or the same keys of `check --json`) describes `layout`.
pub(super) fn check_topology(json: &Value, layout: &Layout) -> Result<(), String> {
    let all: Vec<usize> = (0..layout.cpus).collect();
    want("online", ids(&json["online"]), all.clone())?;
    want("allowed", ids(&json["allowed"]), all)?;
    let nodes = json["nodes"].as_array().ok_or("no nodes array")?;
    want("node count", Some(nodes.len()), layout.nodes())?;
    for (i, node) in nodes.iter().enumerate() {
        want("nodes[].node", node["node"].as_u64(), i as u64)?;
        want(
            &format!("node {i} cpus"),
            ids(&node["cpus"]),
            layout.node_cpus(i),
        )?;
        let row: Vec<usize> = layout.distances[i].iter().map(|d| *d as usize).collect();
        want(&format!("node {i} distances"), ids(&node["distances"]), row)?;
    }
    want(
        "packages",
        groups(&json["packages"]),
        partition(layout, layout.cpus_per_package),
    )?;
    want(
        "cores",
        groups(&json["cores"]),
        partition(layout, layout.threads_per_core),
    )?;
    if let Some(size) = layout.cpus_per_cluster {
        want(
            "clusters",
            groups(&json["clusters"]),
            partition(layout, size),
        )?;
    }
    Ok(())
}

/// `steerd check --json` with default options: one worker per CPU, in node order, the
/// master on the first worker's node, every CPU mapped to its own worker.
pub(super) fn check_default_plan(json: &Value, layout: &Layout) -> Result<(), String> {
    check_topology(json, layout)?;
    let all: Vec<usize> = (0..layout.cpus).collect();
    want("policy", json["policy"].as_str(), "cpu")?;
    want("worker_cpus", ids(&json["worker_cpus"]), all)?;
    let workers = json["workers"].as_array().ok_or("no workers array")?;
    let mut index_of = vec![usize::MAX; layout.cpus];
    let mut last_node = 0;
    for (i, w) in workers.iter().enumerate() {
        want("workers[].index", w["index"].as_u64(), i as u64)?;
        let cpu = w["cpu"].as_u64().ok_or("worker without cpu")? as usize;
        let node = layout.node_of(cpu);
        want(&format!("worker {i} node"), w["node"].as_u64(), node as u64)?;
        if node < last_node {
            return Err(format!(
                "worker {i} on node {node} after node {last_node}: nodes not contiguous"
            ));
        }
        last_node = node;
        index_of[cpu] = i;
    }
    let first = workers
        .first()
        .and_then(|w| w["cpu"].as_u64())
        .ok_or("no worker 0")? as usize;
    let master = json["master_cpu"].as_u64().ok_or("no master_cpu")? as usize;
    want(
        "master_cpu node",
        Some(layout.node_of(master)),
        layout.node_of(first),
    )?;
    let map = json["cpu_map"].as_array().ok_or("no cpu_map array")?;
    want("cpu_map length", Some(map.len()), layout.cpus)?;
    for entry in map {
        let cpu = entry["cpu"].as_u64().ok_or("cpu_map entry without cpu")? as usize;
        want(
            &format!("cpu_map[{cpu}]"),
            entry["index"].as_u64(),
            index_of[cpu] as u64,
        )?;
    }
    if !json["program"]["text"]
        .as_str()
        .is_some_and(|t| t.contains("#cpu"))
    {
        return Err(format!("program does not load #cpu: {}", json["program"]));
    }
    Ok(())
}

/// `steerd check --json --workers N` with one worker per cluster wanted: the workers sit
/// in N distinct clusters (the layout's), spread before doubling up.
pub(super) fn check_cluster_spread(
    json: &Value,
    layout: &Layout,
    workers: usize,
) -> Result<(), String> {
    let size = layout.cpus_per_cluster.ok_or("layout has no clusters")?;
    let cpus = ids(&json["worker_cpus"]).ok_or("no worker_cpus")?;
    want("worker count", Some(cpus.len()), workers)?;
    let mut clusters: Vec<usize> = cpus.iter().map(|c| c / size).collect();
    clusters.sort_unstable();
    clusters.dedup();
    want(
        &format!("distinct clusters of workers {cpus:?}"),
        Some(clusters.len()),
        workers.min(layout.cpus / size),
    )
}

/// `huge_pages` of guest.sh: "thp MODE", then "PID KB" for the master and each worker.
/// Every process holds 0 kB of transparent huge pages (`prctl(PR_SET_THP_DISABLE)`, see
/// `sys::base_pages_only`), whatever the kernel's mode; returns the mode.
pub(super) fn check_no_huge_pages(lines: &[String]) -> Result<String, String> {
    let mode = lines
        .first()
        .and_then(|l| l.strip_prefix("thp "))
        .ok_or_else(|| format!("no \"thp MODE\" line: {lines:?}"))?;
    let procs = &lines[1..];
    if procs.len() < 2 {
        return Err(format!("want the master and its workers: {lines:?}"));
    }
    for line in procs {
        let kb = line.split_whitespace().nth(1);
        if kb != Some("0") {
            return Err(format!(
                "huge pages taken (thp {mode}): {line:?} in {lines:?}"
            ));
        }
    }
    Ok(mode.to_string())
}
