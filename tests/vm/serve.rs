//! What one `steerd serve` run inside a guest showed, and the checks on it.
//!
//! Input: the lines `guest.sh` printed between `serve_start` and `serve_stop` (startup
//! lines, `/proc` affinities, metrics deltas per client CPU, respawns, complaints).
//! Output: a [`Run`], and assertions whose oracles are the kernel (`Cpus_allowed_list`),
//! the layout's own node table and distances, and the server's counters, which count
//! what `accept` returned on each worker. The plan steerd made is never the oracle.

use super::layout::{cpus, Layout};
use std::collections::{BTreeMap, BTreeSet};

/// One worker process as `/proc` shows it.
pub(super) struct Worker {
    pub pid: u32,
    pub allowed: Vec<usize>,
}

/// One serve run.
pub(super) struct Run {
    /// The section name, for messages.
    pub name: String,
    pub lines: Vec<String>,
    /// The CPU of listener index 0, from `steerd: worker 0 cpu C node N`.
    pub first_worker_cpu: Option<usize>,
    pub master_allowed: Vec<usize>,
    pub workers: Vec<Worker>,
    /// (client CPU, worker CPU) -> connections accepted there during that client's probe.
    pub accepted: BTreeMap<(usize, usize), u64>,
    /// The same for connections whose `SO_INCOMING_CPU` was the worker's CPU.
    pub local: BTreeMap<(usize, usize), u64>,
    /// (CPU, old pid, new pid, new Cpus_allowed_list)
    pub respawns: Vec<(usize, String, String, String)>,
    pub complaints: Vec<String>,
    pub failed_requests: Vec<String>,
}

fn num<T: std::str::FromStr>(word: &str, line: &str) -> T {
    word.parse()
        .unwrap_or_else(|_| panic!("not a number: {word:?} in {line:?}"))
}

impl Run {
    pub(super) fn parse(name: &str, lines: &[String]) -> Run {
        let mut run = Run {
            name: name.to_string(),
            lines: lines.to_vec(),
            first_worker_cpu: None,
            master_allowed: Vec::new(),
            workers: Vec::new(),
            accepted: BTreeMap::new(),
            local: BTreeMap::new(),
            respawns: Vec::new(),
            complaints: Vec::new(),
            failed_requests: Vec::new(),
        };
        for line in lines {
            let f: Vec<&str> = line.split_whitespace().collect();
            match f.as_slice() {
                ["steerd:", "worker", "0", "cpu", c, ..] => {
                    run.first_worker_cpu = Some(num(c, line));
                }
                ["master", list] => run.master_allowed = cpus(list),
                ["worker", pid, list] => run.workers.push(Worker {
                    pid: num(pid, line),
                    allowed: cpus(list),
                }),
                ["probe", from, "failed"] => run.failed_requests.push(from.to_string()),
                ["probe", from, counter, cpu, delta] => {
                    let key = (num(from, line), num(cpu, line));
                    let map = match *counter {
                        "accepted" => &mut run.accepted,
                        _ => &mut run.local,
                    };
                    *map.entry(key).or_insert(0) += num::<u64>(delta, line);
                }
                ["respawned", cpu, old, new, rest @ ..] => run.respawns.push((
                    num(cpu, line),
                    old.to_string(),
                    new.to_string(),
                    rest.join(" "),
                )),
                ["complaint", ..] => run.complaints.push(line.clone()),
                _ => {}
            }
        }
        run
    }

    fn fail<T>(&self, what: &str) -> Result<T, String> {
        Err(format!(
            "{}: {what}\nguest lines:\n{}",
            self.name,
            self.lines.join("\n")
        ))
    }

    /// The workers' CPUs; each worker must be allowed on exactly one CPU.
    pub(super) fn worker_cpus(&self) -> Result<BTreeSet<usize>, String> {
        let mut set = BTreeSet::new();
        for w in &self.workers {
            if w.allowed.len() != 1 {
                return self.fail(&format!("worker {} may run on {:?}", w.pid, w.allowed));
            }
            if !set.insert(w.allowed[0]) {
                return self.fail(&format!("two workers on CPU {}", w.allowed[0]));
            }
        }
        Ok(set)
    }

    /// One worker on each of `expected`, pinned there and nowhere else.
    pub(super) fn check_one_worker_per_cpu(&self, expected: &[usize]) -> Result<(), String> {
        let got: Vec<usize> = self.worker_cpus()?.into_iter().collect();
        if got != expected {
            return self.fail(&format!("workers on CPUs {got:?}, expected {expected:?}"));
        }
        Ok(())
    }

    /// The master may run only on CPUs of the first worker's node, inside `allowed`.
    pub(super) fn check_master(&self, layout: &Layout, allowed: &[usize]) -> Result<(), String> {
        let Some(first) = self.first_worker_cpu else {
            return self.fail("no `worker 0 cpu` startup line");
        };
        let node = layout.node_cpus(layout.node_of(first));
        let m = &self.master_allowed;
        if m.is_empty() || !m.iter().all(|c| node.contains(c) && allowed.contains(c)) {
            return self.fail(&format!(
                "master may run on {m:?}; the first worker is on CPU {first}, node CPUs {node:?}, allowed {allowed:?}"
            ));
        }
        Ok(())
    }

    /// Every client CPU's connections were accepted, `per_cpu` of them, by workers that
    /// `expect(client, worker)` allows, and the run saw no failed request.
    fn check_landing(
        &self,
        clients: &[usize],
        per_cpu: u64,
        expect: impl Fn(usize, usize) -> bool,
    ) -> Result<(), String> {
        if !self.failed_requests.is_empty() {
            return self.fail(&format!(
                "requests failed from CPUs {:?}",
                self.failed_requests
            ));
        }
        for &from in clients {
            let landed: Vec<(usize, u64)> = self
                .accepted
                .iter()
                .filter(|((f, _), _)| *f == from)
                .map(|((_, w), n)| (*w, *n))
                .collect();
            let total: u64 = landed.iter().map(|(_, n)| n).sum();
            if total != per_cpu || landed.iter().any(|(w, _)| !expect(from, *w)) {
                return self.fail(&format!(
                    "client on CPU {from}: {per_cpu} connections landed on (worker CPU, count) {landed:?}"
                ));
            }
        }
        Ok(())
    }

    /// `--steer cpu`: a client CPU that has a worker is served by that worker, 100% local;
    /// one without a worker by a worker of its own node, or of the nearest node that has
    /// workers.
    pub(super) fn check_cpu_steering(
        &self,
        layout: &Layout,
        clients: &[usize],
        per_cpu: u64,
    ) -> Result<(), String> {
        let workers = self.worker_cpus()?;
        self.check_landing(clients, per_cpu, |from, w| {
            if workers.contains(&from) {
                w == from
            } else {
                nearest_nodes(layout, from, &workers).contains(&layout.node_of(w))
            }
        })?;
        for &from in clients.iter().filter(|c| workers.contains(c)) {
            let local = self.local.get(&(from, from)).copied().unwrap_or(0);
            if local != per_cpu {
                return self.fail(&format!(
                    "client on CPU {from}: {local} of {per_cpu} connections counted local"
                ));
            }
        }
        Ok(())
    }

    /// `--steer numa`: each client's connections stay on workers of its node (or the
    /// nearest node with workers), and each node's connections are spread over more than
    /// one of its workers when it has several.
    pub(super) fn check_numa_steering(
        &self,
        layout: &Layout,
        clients: &[usize],
        per_cpu: u64,
    ) -> Result<(), String> {
        let workers = self.worker_cpus()?;
        self.check_landing(clients, per_cpu, |from, w| {
            nearest_nodes(layout, from, &workers).contains(&layout.node_of(w))
        })?;
        for node in 0..layout.nodes() {
            let node_workers = workers
                .iter()
                .filter(|w| layout.node_of(**w) == node)
                .count();
            let used: BTreeSet<usize> = self
                .accepted
                .keys()
                .filter(|(from, _)| layout.node_of(*from) == node)
                .map(|(_, w)| *w)
                .collect();
            if node_workers > 1 && used.len() < 2 {
                return self.fail(&format!(
                    "node {node}: all its clients' connections went to workers {used:?} of {node_workers}"
                ));
            }
        }
        Ok(())
    }

    /// The worker on `cpu` was killed and a new process took its place on that CPU.
    pub(super) fn check_respawn(&self, cpu: usize) -> Result<(), String> {
        match self.respawns.iter().find(|r| r.0 == cpu) {
            Some((_, old, new, list)) if new != "none" && new != old && cpus(list) == [cpu] => {
                Ok(())
            }
            other => self.fail(&format!("no respawn on CPU {cpu}: {other:?}")),
        }
    }

    /// The master exited 0 on SIGTERM.
    pub(super) fn check_stopped(&self) -> Result<(), String> {
        if !self.lines.iter().any(|l| l == "stopped 0") {
            return self.fail("the master did not exit 0 on SIGTERM");
        }
        Ok(())
    }
}

impl Run {
    /// One line for the test log: where the connections landed.
    pub(super) fn summary(&self, layout: &Layout) -> String {
        let total: u64 = self.accepted.values().sum();
        let same_cpu: u64 = self
            .accepted
            .iter()
            .filter(|((f, w), _)| f == w)
            .map(|(_, n)| n)
            .sum();
        let same_node: u64 = self
            .accepted
            .iter()
            .filter(|((f, w), _)| layout.node_of(*f) == layout.node_of(*w))
            .map(|(_, n)| n)
            .sum();
        let local: u64 = self.local.values().sum();
        format!(
            "{}: {} workers, {total} connections: {same_cpu} on the client's CPU, {same_node} on its node, {local} counted local by SO_INCOMING_CPU",
            self.name,
            self.workers.len()
        )
    }
}

/// The nodes nearest to `from`'s node (by the SLIT) among those that have a worker.
fn nearest_nodes(layout: &Layout, from: usize, workers: &BTreeSet<usize>) -> Vec<usize> {
    let with_workers: BTreeSet<usize> = workers.iter().map(|w| layout.node_of(*w)).collect();
    let row = layout.distances[layout.node_of(from)];
    let best = with_workers.iter().map(|n| row[*n]).min().unwrap_or(0);
    with_workers
        .into_iter()
        .filter(|n| row[*n] == best)
        .collect()
}

/// The oracles above must be able to fail: fed lines a wrong server would print, they
/// return an error. These run without QEMU.
#[cfg(test)]
mod oracles_fail {
    use super::super::layout::X86_KUNPENG;
    use super::Run;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(|l| l.trim().to_string()).collect()
    }

    const TWO_WORKERS: &str = "steerd: worker 0 cpu 0 node 0
        master 1
        worker 10 0
        worker 11 2";

    #[test]
    fn cpu_steering_oracle_rejects_a_remote_landing() {
        // CPU 4 (node 2) is nearest to node 0 (distance 20, node 1 is 22): landing on
        // CPU 2's worker is wrong, landing on CPU 0's is right.
        let wrong = Run::parse("t", &lines(&format!("{TWO_WORKERS}\nprobe 4 accepted 2 1")));
        assert!(wrong.check_cpu_steering(&X86_KUNPENG, &[4], 1).is_err());
        let right = Run::parse("t", &lines(&format!("{TWO_WORKERS}\nprobe 4 accepted 0 1")));
        right.check_cpu_steering(&X86_KUNPENG, &[4], 1).unwrap();
    }

    #[test]
    fn cpu_steering_oracle_wants_every_connection_local() {
        let text = format!("{TWO_WORKERS}\nprobe 2 accepted 2 3\nprobe 2 local 2 2");
        let run = Run::parse("t", &lines(&text));
        assert!(run.check_cpu_steering(&X86_KUNPENG, &[2], 3).is_err());
        assert!(run.check_cpu_steering(&X86_KUNPENG, &[2], 4).is_err());
    }

    #[test]
    fn numa_oracle_wants_a_spread_and_no_other_node() {
        let all_on_one =
            "master 0\nworker 1 0\nworker 2 1\nprobe 0 accepted 0 2\nprobe 1 accepted 0 2";
        let run = Run::parse("t", &lines(all_on_one));
        assert!(run.check_numa_steering(&X86_KUNPENG, &[0, 1], 2).is_err());
        let other_node = "master 0\nworker 1 0\nworker 2 2\nprobe 0 accepted 2 1";
        let run = Run::parse("t", &lines(other_node));
        assert!(run.check_numa_steering(&X86_KUNPENG, &[0], 1).is_err());
    }

    #[test]
    fn placement_oracles_reject_a_wide_worker_and_a_far_master() {
        let wide = Run::parse("t", &lines("worker 10 0-1"));
        assert!(wide.check_one_worker_per_cpu(&[0]).is_err());
        let far = Run::parse(
            "t",
            &lines("steerd: worker 0 cpu 0 node 0\nmaster 4\nworker 10 0"),
        );
        assert!(far.check_master(&X86_KUNPENG, &[0, 4]).is_err());
        let near = Run::parse(
            "t",
            &lines("steerd: worker 0 cpu 0 node 0\nmaster 1\nworker 10 0"),
        );
        near.check_master(&X86_KUNPENG, &[0, 1]).unwrap();
    }
}
