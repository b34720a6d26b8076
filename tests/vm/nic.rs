//! Steering proven through a NIC: a multi-queue virtio-net device in the guest, behind a
//! PCI expander bridge on a chosen NUMA node, fed from a network namespace on the host.
//!
//! Input: a [`NicPlan`]; the guest's lines (`scripts/vm/guest.sh`: `nic_facts`,
//! `steerd check --json`, `nic_round`); what the host side did. Output: the guest
//! snippet, the host side ([`NicHost::drive`]) that answers the guest's `ready NAME`
//! lines with datagrams or connections, and checks whose oracles are the guest kernel
//! (`/sys`, `/proc/irq/N/effective_affinity_list`, `/proc/interrupts`) and the server's
//! accept counters. The host makes every connection; nothing in the guest is a client.
//!
//! How a SYN finds its CPU here: the host's tun driver puts each new flow on a queue by
//! its hash (`tun_automq_select_queue`, drivers/net/tun.c), QEMU hands queue q to the
//! guest's receive queue q, whose MSI-X interrupt is affine to one CPU; the SYN is
//! processed there, and steerd's program picks the worker from that CPU. The replies
//! leave on the transmit queue of the CPU that sends them (XPS, set by virtio_net), and
//! tun then keeps the flow on that queue.

use super::layout::{cpus, Layout};
use super::serve::Run;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const HOST_IP: &str = "10.77.0.1";
const GUEST_IP: &str = "10.77.0.2";
const TAP: &str = "steerd0";

/// Datagrams per priming: each from its own source port, so every receive queue sees
/// some (the chance that one of 8 queues sees none of 256 is below 1e-13).
const PRIME: u32 = 256;

/// What the NIC part of a guest does.
pub(super) struct NicPlan {
    /// Queue pairs of the NIC (`--nic TAP,QUEUES,NODE`).
    pub queues: usize,
    /// The NUMA node of the PCI expander bridge the NIC sits behind; `None`: on the root
    /// bus, with no node (the arm64 guest, whose device tree gives PCI none).
    pub node: Option<usize>,
    /// The CPU (of node 0) every queue interrupt is then made affine to.
    pub concentrate_on: usize,
    /// Connections with `--steer cpu`, `--steer hash`, then with the interrupts
    /// concentrated `--steer cpu` and `--steer numa`.
    pub cpu: u32,
    pub hash: u32,
    pub concentrated_cpu: u32,
    pub concentrated_numa: u32,
}

/// What the host answers each `ready NAME` line with.
enum Step {
    Datagrams(u32),
    Connections(u32),
}

impl NicPlan {
    /// `queues` queue pairs on `node`; 256 connections with `--steer cpu`, 128 with
    /// `hash`, then the interrupts on CPU 1 (node 0 in every layout) and 64 with `cpu`,
    /// 128 with `numa`.
    pub(super) fn usual(queues: usize, node: Option<usize>) -> NicPlan {
        NicPlan {
            queues,
            node,
            concentrate_on: 1,
            cpu: 256,
            hash: 128,
            concentrated_cpu: 64,
            concentrated_numa: 128,
        }
    }

    /// The `scripts/vm/run.sh` arguments for this NIC.
    pub(super) fn run_args(&self, ns: &NicHost) -> Vec<String> {
        let node = self.node.map(|n| format!(",{n}")).unwrap_or_default();
        let nic = format!("{TAP},{}{node}", self.queues);
        ["--nic", &nic, "--netns", &ns.name]
            .map(String::from)
            .to_vec()
    }

    /// The guest side; each section starts with `== nic...`.
    pub(super) fn snippet(&self) -> String {
        format!(
            "echo '== nic'; nic_up; nic_prime prime {PRIME}; nic_facts
echo '== nic-check'; steerd check --listen $NIC_ADDR:$PORT --json
LISTEN=$NIC_ADDR
echo '== nic-cpu'; serve_start; nic_round cpu {}; serve_stop
echo '== nic-hash'; serve_start --steer hash; nic_round hash {}; serve_stop
echo '== nic-concentrated'; nic_affine {c}; nic_prime prime-concentrated {PRIME}; nic_facts
echo '== nic-concentrated-cpu'; serve_start; nic_round concentrated-cpu {}; serve_stop
echo '== nic-concentrated-numa'; serve_start --steer numa; nic_round concentrated-numa {}; serve_stop
LISTEN=
",
            self.cpu,
            self.hash,
            self.concentrated_cpu,
            self.concentrated_numa,
            c = self.concentrate_on
        )
    }

    fn steps(&self) -> Vec<(&'static str, Step)> {
        vec![
            ("prime", Step::Datagrams(PRIME)),
            ("cpu", Step::Connections(self.cpu)),
            ("hash", Step::Connections(self.hash)),
            ("prime-concentrated", Step::Datagrams(PRIME)),
            ("concentrated-cpu", Step::Connections(self.concentrated_cpu)),
            (
                "concentrated-numa",
                Step::Connections(self.concentrated_numa),
            ),
        ]
    }
}

/// The host side: a network namespace of our own holding a multi-queue tap device with
/// the address `HOST_IP`; QEMU runs in it. Dropping it deletes the namespace, and with
/// it the tap.
pub(super) struct NicHost {
    name: String,
    /// One line per step the host took, for the checks and the failure messages.
    pub log: Mutex<Vec<String>>,
}

impl NicHost {
    /// Creates the namespace and the tap, or says why it cannot (not root, no `ip`, no
    /// `/dev/net/tun`, no multi-queue tap support).
    pub(super) fn create() -> Result<NicHost, String> {
        if !rustix::process::geteuid().is_root() {
            return Err("a tap device in a network namespace needs root".into());
        }
        // One name per host, not per process: the tests of one process run in parallel,
        // and one host's drop must not delete the namespace another guest runs in.
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let host = NicHost {
            name: format!("steerd-nic{}-{n}", std::process::id()),
            log: Mutex::new(Vec::new()),
        };
        let ns = host.name.as_str();
        let addr = format!("{HOST_IP}/24");
        let steps: [&[&str]; 5] = [
            &["netns", "add", ns],
            &[
                "-n",
                ns,
                "tuntap",
                "add",
                "dev",
                TAP,
                "mode",
                "tap",
                "multi_queue",
            ],
            &["-n", ns, "addr", "add", &addr, "dev", TAP],
            &["-n", ns, "link", "set", TAP, "up"],
            &["-n", ns, "link", "set", "lo", "up"],
        ];
        for args in steps {
            let out = Command::new("ip")
                .args(args)
                .output()
                .map_err(|e| format!("ip: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "ip {}: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
        Ok(host)
    }

    /// Moves the calling thread (only it: setns is per thread) into the namespace.
    fn enter(&self) -> Result<(), String> {
        let ns = std::fs::File::open(format!("/run/netns/{}", self.name))
            .map_err(|e| format!("/run/netns/{}: {e}", self.name))?;
        use std::os::fd::AsFd;
        rustix::thread::move_into_link_name_space(
            ns.as_fd(),
            Some(rustix::thread::LinkNameSpaceType::Network),
        )
        .map_err(|e| format!("setns: {e}"))
    }

    fn note(&self, line: String) {
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(line);
    }

    /// The host's part while the guest runs: for each step, waits for the guest's
    /// `ready NAME` on its stdout (`live`), then sends what the step asks for. Stops at
    /// the first step the guest never gets to. Everything is bounded in count and time.
    pub(super) fn drive(&self, plan: &NicPlan, live: &Path, stopped: &AtomicBool) {
        // a second boot of the same guest starts the log afresh
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clear();
        if let Err(e) = self.enter() {
            return self.note(format!("host: {e}"));
        }
        for (name, step) in plan.steps() {
            if !wait_ready(live, name, stopped) {
                return self.note(format!("host: the guest never printed `ready {name}`"));
            }
            let line = match step {
                Step::Datagrams(n) => datagrams(n),
                Step::Connections(n) => connections(n),
            };
            self.note(format!("{name}: {line}"));
        }
    }

    fn lines(&self) -> Vec<String> {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Drop for NicHost {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// Until the guest's stdout has the line `ready NAME` (true), or the guest stopped or
/// 600 s passed (false).
fn wait_ready(live: &Path, name: &str, stopped: &AtomicBool) -> bool {
    let want = format!("ready {name}");
    let deadline = Instant::now() + Duration::from_secs(600);
    while Instant::now() < deadline && !stopped.load(Ordering::Relaxed) {
        let text = std::fs::read(live).unwrap_or_default();
        if String::from_utf8_lossy(&text).lines().any(|l| l == want) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

/// `n` datagrams to the guest's discard port, each from a new socket (a new source port).
fn datagrams(n: u32) -> String {
    let to: SocketAddr = format!("{GUEST_IP}:9").parse().expect("address");
    let mut sent = 0;
    for _ in 0..n {
        let sock = UdpSocket::bind(format!("{HOST_IP}:0"));
        if sock.and_then(|s| s.send_to(b"prime", to)).is_ok() {
            sent += 1;
        }
    }
    format!("{sent} datagrams sent")
}

/// `n` connections to the guest's steerd, one after another, each one `GET` with
/// `Connection: close` read to the end; at most 600 s in all.
fn connections(n: u32) -> String {
    let to: SocketAddr = format!("{GUEST_IP}:8080").parse().expect("address");
    let deadline = Instant::now() + Duration::from_secs(600);
    let (mut ok, mut failed, mut first_error) = (0, 0, String::new());
    for _ in 0..n {
        if Instant::now() > deadline {
            break;
        }
        match fetch(to) {
            Ok(()) => ok += 1,
            Err(e) => {
                failed += 1;
                if first_error.is_empty() {
                    first_error = e;
                }
            }
        }
    }
    format!("{ok} connections ok, {failed} failed {first_error}")
}

fn fetch(to: SocketAddr) -> Result<(), String> {
    let timeout = Duration::from_secs(30);
    let mut s = TcpStream::connect_timeout(&to, timeout).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    s.write_all(b"GET /a HTTP/1.1\r\nHost: guest\r\nConnection: close\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut reply = Vec::new();
    s.read_to_end(&mut reply).map_err(|e| e.to_string())?;
    if reply.starts_with(b"HTTP/1.1 200") {
        Ok(())
    } else {
        Err(format!(
            "reply {:?}",
            String::from_utf8_lossy(&reply[..reply.len().min(40)])
        ))
    }
}

/// One interrupt vector of the NIC as the guest listed it.
struct Irq {
    name: String,
    smp: Vec<usize>,
    eff: Vec<usize>,
}

/// The `nic_facts` lines.
struct Facts {
    interface: String,
    queues: usize,
    /// `numa_node`: `None` for -1.
    node: Option<usize>,
    local: Vec<usize>,
    irqs: Vec<Irq>,
}

fn field<'a>(words: &[&'a str], key: &str) -> Option<&'a str> {
    let prefix = format!("{key}=");
    words.iter().find_map(|w| w.strip_prefix(prefix.as_str()))
}

fn facts(lines: &[String]) -> Result<Facts, String> {
    let bad = || format!("no `nic` facts line in {lines:#?}");
    let nic_line = lines
        .iter()
        .find(|l| l.starts_with("nic "))
        .ok_or_else(bad)?;
    let w: Vec<&str> = nic_line.split_whitespace().collect();
    let num = |key| field(&w, key).and_then(|v| v.parse().ok()).ok_or_else(bad);
    let mut f = Facts {
        interface: w[1].to_string(),
        queues: num("queues")?,
        node: field(&w, "node").ok_or_else(bad)?.parse().ok(),
        local: cpus(field(&w, "local").ok_or_else(bad)?),
        irqs: Vec::new(),
    };
    for line in lines.iter().filter(|l| l.starts_with("irq ")) {
        let w: Vec<&str> = line.split_whitespace().collect();
        let list = |key| field(&w, key).map(cpus).ok_or(format!("bad line {line:?}"));
        f.irqs.push(Irq {
            name: w.get(2).unwrap_or(&"").to_string(),
            smp: list("smp")?,
            eff: list("eff")?,
        });
    }
    Ok(f)
}

impl Facts {
    fn queue_irqs(&self) -> impl Iterator<Item = &Irq> {
        self.irqs
            .iter()
            .filter(|i| i.name.contains("-input.") || i.name.contains("-output."))
    }

    /// The receive queues' interrupts: the host's traffic has just passed through each,
    /// so their effective affinity is current. (On x86 a vector moves to its new CPU at
    /// its next interrupt; a transmit queue that has not raised one since still shows
    /// the CPU it started on.)
    fn input_irqs(&self) -> impl Iterator<Item = &Irq> {
        self.irqs.iter().filter(|i| i.name.contains("-input."))
    }

    /// The CPUs the receive queues' interrupts are delivered to.
    fn input_cpus(&self) -> BTreeSet<usize> {
        self.input_irqs()
            .flat_map(|i| i.eff.iter().copied())
            .collect()
    }
}

/// One `nic_round`: per worker CPU (accepted, local), and per CPU the increase of the
/// receive-queue interrupts.
struct Round {
    run: Run,
    conns: BTreeMap<usize, (u64, u64)>,
    irqs: BTreeMap<usize, u64>,
}

fn round(name: &str, lines: &[String]) -> Round {
    let mut r = Round {
        run: Run::parse(name, lines),
        conns: BTreeMap::new(),
        irqs: BTreeMap::new(),
    };
    let n = |w: &str| {
        w.parse::<u64>()
            .unwrap_or_else(|_| panic!("{name}: {w:?} in {lines:?}"))
    };
    for line in lines {
        match line.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["conn", c, a, l] => {
                r.conns.insert(n(c) as usize, (n(a), n(l)));
            }
            ["irq", c, k] => {
                r.irqs.insert(n(c) as usize, n(k));
            }
            _ => {}
        }
    }
    r
}

impl Round {
    fn accepted(&self) -> u64 {
        self.conns.values().map(|(a, _)| a).sum()
    }

    fn local(&self) -> u64 {
        self.conns.values().map(|(_, l)| l).sum()
    }

    fn fail<T>(&self, what: &str) -> Result<T, String> {
        Err(format!(
            "{}: {what}\nguest lines:\n{}",
            self.run.name,
            self.run.lines.join("\n")
        ))
    }

    /// Every one of `count` connections accepted, and the server stopped cleanly.
    fn check_complete(&self, count: u32) -> Result<(), String> {
        if self.accepted() != u64::from(count) {
            return self.fail(&format!(
                "{} of {count} connections accepted",
                self.accepted()
            ));
        }
        self.run.check_stopped()
    }

    /// One line for the log and the docs.
    fn summary(&self) -> String {
        let split: Vec<String> = self
            .conns
            .iter()
            .map(|(c, (a, l))| format!("{c}:{a}/{l}"))
            .collect();
        let irqs: Vec<String> = self.irqs.iter().map(|(c, k)| format!("{c}:{k}")).collect();
        format!(
            "{}: {} accepted, {} local; per worker CPU accepted/local [{}]; receive interrupts per CPU [{}]",
            self.run.name,
            self.accepted(),
            self.local(),
            split.join(" "),
            irqs.join(" ")
        )
    }
}

/// How far a worker's share of the connections may be from its CPU's share of the
/// receive interrupts (`--steer cpu`), in percentage points: a connection raised 3 to 5
/// receive interrupts (NAPI may take several packets per interrupt), so the count per
/// connection varies a little from queue to queue. Measured: at most 1.9 points.
pub(super) const SPLIT_TOLERANCE_PCT: f64 = 4.0;

/// The NIC part of one guest, checked. Prints one line per round (the figures of
/// docs/placement.md).
pub(super) fn check(
    sections: &dyn Fn(&str) -> Vec<String>,
    host: &NicHost,
    plan: &NicPlan,
    layout: &Layout,
) {
    let log = host.lines();
    let name = format!("{} {}", layout.arch.name(), layout.preset);
    println!("{name} nic host: {}", log.join("; "));
    for (name, step) in plan.steps() {
        let line = log.iter().find(|l| l.starts_with(&format!("{name}: ")));
        let ok = match (line, step) {
            (Some(l), Step::Connections(n)) => {
                l.contains(&format!(": {n} connections ok, 0 failed"))
            }
            (Some(_), Step::Datagrams(_)) => true,
            (None, _) => false,
        };
        assert!(ok, "host side of step {name}: {log:#?}");
    }
    let ok = |r: Result<(), String>| r.unwrap_or_else(|e| panic!("{e}"));

    let facts = facts(&sections("nic")).unwrap_or_else(|e| panic!("{e}"));
    ok(check_facts(&facts, plan, layout));
    ok(check_plan(&sections("nic-check"), &facts, plan, layout));

    let cpu = round("nic-cpu", &sections("nic-cpu"));
    println!("{name} {}", cpu.summary());
    ok(cpu.check_complete(plan.cpu));
    let widest = check_cpu_split(&cpu, &facts).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "{name} nic cpu split: {} receive interrupts for {} connections; widest gap between a worker's share of the connections and its CPU's share of the interrupts: {widest:.2} percentage points (tolerance {SPLIT_TOLERANCE_PCT})",
        cpu.irqs.values().sum::<u64>(),
        cpu.accepted()
    );

    let hash = round("nic-hash", &sections("nic-hash"));
    println!("{name} {}", hash.summary());
    ok(hash.check_complete(plan.hash));
    ok(check_hash(&hash, layout));
    println!(
        "{name} nic hash locality: {} of {} = {:.1}% (1/{} = {:.1}%)",
        hash.local(),
        hash.accepted(),
        100.0 * hash.local() as f64 / hash.accepted() as f64,
        layout.cpus,
        100.0 / layout.cpus as f64
    );

    let concentrated = facts_of(&sections("nic-concentrated"));
    ok(check_concentrated(&concentrated, plan));
    let c = plan.concentrate_on;
    let conc_cpu = round("nic-concentrated-cpu", &sections("nic-concentrated-cpu"));
    println!("{name} {}", conc_cpu.summary());
    ok(conc_cpu.check_complete(plan.concentrated_cpu));
    if conc_cpu.conns.keys().ne([c].iter()) || conc_cpu.local() != conc_cpu.accepted() {
        ok(conc_cpu.fail(&format!(
            "every connection should be accepted by CPU {c}'s worker and local"
        )));
    }
    if conc_cpu.irqs.keys().ne([c].iter()) {
        ok(conc_cpu.fail(&format!("receive interrupts should all be on CPU {c}")));
    }
    let conc_numa = round("nic-concentrated-numa", &sections("nic-concentrated-numa"));
    println!("{name} {}", conc_numa.summary());
    ok(conc_numa.check_complete(plan.concentrated_numa));
    let node = layout.node_cpus(layout.node_of(c));
    let used: Vec<usize> = conc_numa.conns.keys().copied().collect();
    if used.iter().any(|w| !node.contains(w)) || (node.len() > 1 && used.len() < 2) {
        ok(conc_numa.fail(&format!(
            "--steer numa should spread CPU {c}'s connections over workers of its node {node:?}"
        )));
    }
}

fn facts_of(lines: &[String]) -> Facts {
    facts(lines).unwrap_or_else(|e| panic!("{e}"))
}

/// The NIC's local CPUs: its node's, or every CPU when it has no node.
fn nic_cpus(plan: &NicPlan, layout: &Layout) -> Vec<usize> {
    match plan.node {
        Some(n) => layout.node_cpus(n),
        None => (0..layout.cpus).collect(),
    }
}

/// The device as the guest's kernel shows it: the queues asked for, the node of the
/// expander bridge, that node's CPUs as `local_cpulist`, two interrupts per queue, and
/// each receive queue's delivered to one CPU inside its affinity mask.
fn check_facts(f: &Facts, plan: &NicPlan, layout: &Layout) -> Result<(), String> {
    let expect = (plan.queues, plan.node, nic_cpus(plan, layout));
    if (f.queues, f.node, f.local.clone()) != expect {
        return Err(format!(
            "NIC {}: queues {}, node {:?}, local CPUs {:?}; expected {expect:?}",
            f.interface, f.queues, f.node, f.local
        ));
    }
    let queue_irqs: Vec<&Irq> = f.queue_irqs().collect();
    if queue_irqs.len() != 2 * plan.queues {
        return Err(format!(
            "{} queue interrupts, expected {}",
            queue_irqs.len(),
            2 * plan.queues
        ));
    }
    for i in f.input_irqs() {
        if i.eff.len() != 1 || !i.smp.contains(&i.eff[0]) {
            return Err(format!(
                "{}: effective {:?} not one CPU of {:?}",
                i.name, i.eff, i.smp
            ));
        }
    }
    Ok(())
}

/// `steerd check --listen GUEST_IP:PORT --json`: the NIC, its node and local CPUs, and
/// the CPUs its queue interrupts are delivered to as the guest listed them (on x86 a
/// transmit queue's stays where it started until its first interrupt; steerd reads the
/// same files); the NIC's node's workers first.
fn check_plan(lines: &[String], f: &Facts, plan: &NicPlan, layout: &Layout) -> Result<(), String> {
    let json: Value = super::report::parse(lines)?;
    let nic = &json["nic"];
    let ids = |v: &Value| -> Vec<usize> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_u64())
                    .map(|x| x as usize)
                    .collect()
            })
            .unwrap_or_default()
    };
    let irq_cpus: BTreeSet<usize> = f.queue_irqs().flat_map(|i| i.eff.iter().copied()).collect();
    let got = (
        nic["interface"].as_str(),
        nic["node"].as_u64(),
        ids(&nic["local_cpus"]),
        ids(&nic["irq_cpus"]),
    );
    let want = (
        Some(f.interface.as_str()),
        plan.node.map(|n| n as u64),
        nic_cpus(plan, layout),
        irq_cpus.into_iter().collect::<Vec<_>>(),
    );
    if got != want {
        return Err(format!(
            "steerd check saw the NIC as {got:?}; the guest's /sys says {want:?}"
        ));
    }
    let workers: Vec<usize> = ids(&json["worker_cpus"]);
    let first: Vec<usize> = json["workers"]
        .as_array()
        .ok_or("no workers array")?
        .iter()
        .take(layout.cpus_per_node)
        .filter_map(|w| w["cpu"].as_u64().map(|c| c as usize))
        .collect();
    let first_node = plan.node.unwrap_or(0);
    if workers.len() != layout.cpus || first != layout.node_cpus(first_node) {
        return Err(format!(
            "workers {workers:?}: listener indexes 0.. should be node {first_node}'s CPUs, got {first:?}"
        ));
    }
    Ok(())
}

/// `--steer cpu`: every connection local, accepted only on CPUs that receive-queue
/// interrupts are delivered to, and each worker's share of the connections within
/// [`SPLIT_TOLERANCE_PCT`] of its CPU's share of the receive interrupts. Returns the
/// widest gap, in percentage points.
fn check_cpu_split(r: &Round, f: &Facts) -> Result<f64, String> {
    if r.local() != r.accepted() {
        return r.fail("with --steer cpu every connection should be local");
    }
    let irq_cpus = f.input_cpus();
    if r.conns.keys().any(|c| !irq_cpus.contains(c)) {
        return r.fail(&format!(
            "connections on a CPU no receive queue interrupts ({irq_cpus:?})"
        ));
    }
    let (conns, irqs) = (r.accepted() as f64, r.irqs.values().sum::<u64>() as f64);
    let cpus: BTreeSet<usize> = r.conns.keys().chain(r.irqs.keys()).copied().collect();
    let mut widest = 0.0f64;
    for c in cpus {
        let conn_pct = 100.0 * r.conns.get(&c).map_or(0, |x| x.0) as f64 / conns;
        let irq_pct = 100.0 * r.irqs.get(&c).copied().unwrap_or(0) as f64 / irqs.max(1.0);
        if (conn_pct - irq_pct).abs() > SPLIT_TOLERANCE_PCT {
            return r.fail(&format!(
                "CPU {c}: {conn_pct:.1}% of the connections but {irq_pct:.1}% of the receive interrupts"
            ));
        }
        widest = widest.max((conn_pct - irq_pct).abs());
    }
    Ok(widest)
}

/// `--steer hash`: the kernel's hash ignores the CPU, so about one connection in the
/// number of workers is local; more than three times that means steering is on.
fn check_hash(r: &Round, layout: &Layout) -> Result<(), String> {
    if !r.run.lines.iter().any(|l| l.contains("policy hash")) {
        return r.fail("serve did not report policy hash");
    }
    let (local, accepted) = (r.local(), r.accepted());
    if local * layout.cpus as u64 > 3 * accepted {
        return r.fail(&format!("{local} of {accepted} local with --steer hash"));
    }
    Ok(())
}

/// Every queue interrupt affine to the one CPU chosen, and every receive queue's
/// delivered there.
fn check_concentrated(f: &Facts, plan: &NicPlan) -> Result<(), String> {
    let c = plan.concentrate_on;
    let mut wrong = f.queue_irqs().filter(|i| i.smp != [c]);
    match wrong
        .next()
        .or_else(|| f.input_irqs().find(|i| i.eff != [c]))
    {
        Some(i) => Err(format!(
            "{} after nic_affine {c}: affinity {:?}, effective {:?}",
            i.name, i.smp, i.eff
        )),
        None => Ok(()),
    }
}

/// The checks above must be able to fail: fed lines a wrong server or a stale interrupt
/// would give, they return an error. These run without QEMU.
#[cfg(test)]
mod oracles_fail {
    use super::super::layout::X86_KUNPENG;
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(|l| l.trim().to_string()).collect()
    }

    const TWO_QUEUES: &str = "nic eth0 queues=1 node=0 local=0-1
        irq 25 virtio0-input.0 smp=0 eff=0
        irq 26 virtio0-output.0 smp=0 eff=0
        irq 27 virtio0-input.1 smp=1 eff=1";

    #[test]
    fn cpu_split_oracle_wants_the_interrupt_shares_and_locality() {
        let f = facts(&lines(TWO_QUEUES)).unwrap();
        let good = round(
            "t",
            &lines("conn 0 10 10\nconn 1 10 10\nirq 0 40\nirq 1 42"),
        );
        check_cpu_split(&good, &f).unwrap();
        let skewed = round(
            "t",
            &lines("conn 0 10 10\nconn 1 10 10\nirq 0 40\nirq 1 10"),
        );
        assert!(check_cpu_split(&skewed, &f).is_err());
        let remote = round("t", &lines("conn 0 10 9\nconn 1 10 10\nirq 0 40\nirq 1 40"));
        assert!(check_cpu_split(&remote, &f).is_err());
        let elsewhere = round("t", &lines("conn 2 10 10\nirq 0 40"));
        assert!(check_cpu_split(&elsewhere, &f).is_err());
    }

    #[test]
    fn hash_oracle_rejects_steered_locality() {
        let steered = round("t", &lines("steerd: policy hash, 8 workers\nconn 0 16 16"));
        assert!(check_hash(&steered, &X86_KUNPENG).is_err());
        let hashed = round("t", &lines("steerd: policy hash, 8 workers\nconn 0 16 2"));
        check_hash(&hashed, &X86_KUNPENG).unwrap();
    }

    #[test]
    fn concentrated_oracle_rejects_a_stale_receive_interrupt() {
        let plan = NicPlan {
            queues: 2,
            node: Some(0),
            concentrate_on: 0,
            cpu: 0,
            hash: 0,
            concentrated_cpu: 0,
            concentrated_numa: 0,
        };
        let stale = TWO_QUEUES.replace("smp=1 eff=1", "smp=0 eff=1");
        assert!(check_concentrated(&facts(&lines(&stale)).unwrap(), &plan).is_err());
        let done = TWO_QUEUES.replace("smp=1 eff=1", "smp=0 eff=0");
        check_concentrated(&facts(&lines(&done)).unwrap(), &plan).unwrap();
    }
}
