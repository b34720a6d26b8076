//! The static binary on real kernels with the topologies steerd is for: emulated
//! multi-socket NUMA guests booted by `scripts/vm/run.sh` (QEMU, TCG), one guest per
//! layout, every check for that layout in one boot.
//!
//! Input: the static binary from `scripts/static.sh` (or `STEERD_STATIC_BIN`,
//! `STEERD_STATIC_BIN_ARM64`, `_ARM`, `_S390X`, `_RISCV64`). Output: pass, or a failure
//! naming the check and the guest's lines. Each test skips with one printed line when
//! QEMU, the binary or a guest kernel is missing (under CI it fails instead), or when
//! `STEERD_VM=0`. Timing inside a guest means nothing (its vCPUs are threads on two host
//! cores): only behaviour is checked.
//!
//! In each guest, `steerd serve` runs several times (`scripts/vm/guest.sh`): default
//! options (one pinned worker per CPU, master beside worker 0, `--steer cpu` from every
//! CPU, then a worker killed and respawned), `--steer numa`, `--workers 2`, and on the
//! 8-CPU layouts under `taskset -c 2-5` and with CPU 3 offline. Clients are busybox
//! `wget` pinned with `taskset`, one connection per request; the server's own counters
//! (read from `/metrics` before and after each client CPU) say which worker accepted.
//!
//! The 32-bit ARM, s390x and riscv64 guests (`arm_virt_4`, `s390x_guest`,
//! `riscv64_guest`: 4 CPUs each, one node) get the default run and a respawn; on s390x a
//! big-endian kernel runs the steering program.
//!
//! The x86 kunpeng920-2x2 and xeon-2s-smt guests and the arm64 kunpeng920-2x2 guest
//! also get, first in the same boot, a multi-queue virtio-net NIC on a tap device in a
//! network namespace of the test's own, and the host makes the connections through it
//! (`tests/vm/nic.rs`); that part is skipped with one line where no tap device can be
//! created (not root, no `/dev/net/tun`).

use super::harness::{boot, boot_with, Extra, Guest};
use super::layout::{
    Layout, ARM64_KUNPENG, ARM64_KUNPENG_32, ARM_VIRT_4, RISCV64_VIRT_4, S390X_CCW_4, X86_KUNPENG,
    X86_NUMA4_SMT32, X86_XEON,
};
use super::nic::{NicHost, NicPlan};
use super::report;
use super::serve::Run;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// What to run in one guest beyond the default serve run.
struct Plan {
    /// Connections per client CPU with `--steer cpu` and with `--steer numa`.
    per_cpu: u64,
    per_cpu_numa: u64,
    /// Also run with `--workers 2`, under `taskset -c 2-5` and with CPU 3 offline.
    variants: bool,
    /// Also give the guest a multi-queue NIC fed from the host (`tests/vm/nic.rs`),
    /// first in the same boot.
    nic: Option<NicPlan>,
}

/// The guest side: each section starts with a `== NAME` line.
fn snippet(plan: &Plan) -> String {
    let (n, m) = (plan.per_cpu, plan.per_cpu_numa);
    let mut sh = format!(
        "echo '== sys'; sys_layout
echo '== version'; steerd --version
echo '== topo'; steerd topo --json
echo '== check'; steerd check --json
PROBES={n}
echo '== default'; serve_start; probe_all
echo '== respawn'; respawn 1; procs $SERVE_PID; probe 1; serve_stop
echo '== numa'; serve_start --steer numa; PROBES={m}; probe_all; serve_stop; PROBES={n}
"
    );
    if plan.variants {
        sh.push_str(
            "echo '== fewer'; serve_start --workers 2; probe_all; serve_stop
echo '== taskset'; SERVE_PREFIX='taskset -c 2-5'; serve_start; PROBES=1; probe_all; serve_stop
SERVE_PREFIX=
echo '== offline'; echo 0 > /sys/devices/system/cpu/cpu3/online
PROBES=2; serve_start; probe_all; serve_stop
echo 1 > /sys/devices/system/cpu/cpu3/online
",
        );
    }
    sh
}

fn run(test: &str, layout: &Layout, plan: &Plan, timeout_secs: u64) {
    let timeout = Duration::from_secs(timeout_secs);
    let Some(nic) = &plan.nic else {
        if let Some(guest) = boot(test, layout, &snippet(plan), timeout) {
            check(&guest, layout, plan);
        }
        return;
    };
    let host = match NicHost::create() {
        Ok(host) => host,
        Err(e) => {
            crate::support::skip::skip_or_fail(
                &format!("the NIC part of {test}"),
                &format!("cannot create a multi-queue tap device: {e}"),
            );
            if let Some(guest) = boot(test, layout, &snippet(plan), timeout) {
                check(&guest, layout, plan);
            }
            return;
        }
    };
    let during = |live: &Path, stopped: &AtomicBool| host.drive(nic, live, stopped);
    let extra = Extra {
        args: nic.run_args(&host),
        during: Some(&during),
    };
    let sh = format!("{}{}", nic.snippet(), snippet(plan));
    if let Some(guest) = boot_with(test, layout, &sh, timeout, &extra) {
        check(&guest, layout, plan);
        super::nic::check(&|name| guest.section(name).to_vec(), &host, nic, layout);
    }
}

/// The value, or a panic with the check's message.
fn ok<T>(result: Result<T, String>) -> T {
    result.unwrap_or_else(|e| panic!("{e}"))
}

fn check(guest: &Guest, layout: &Layout, plan: &Plan) {
    assert_eq!(guest.status, 0, "guest snippet failed:\n{}", guest.stderr);
    layout.check_sys(guest.section("sys"));
    let version = guest.section("version");
    assert!(
        version.len() == 1 && version[0].starts_with("steerd "),
        "steerd --version in the guest printed {version:?}"
    );
    let topo = ok(report::parse(guest.section("topo")));
    ok(report::check_topology(&topo, layout));
    let plan_json = ok(report::parse(guest.section("check")));
    ok(report::check_default_plan(&plan_json, layout));

    let all: Vec<usize> = (0..layout.cpus).collect();
    let serve = |name: &str| {
        let run = Run::parse(name, guest.section(name));
        println!("{} {}", layout.preset, run.summary(layout));
        run
    };

    let default = serve("default");
    ok(default.check_one_worker_per_cpu(&all));
    ok(default.check_master(layout, &all));
    ok(default.check_cpu_steering(layout, &all, plan.per_cpu));

    let respawn = serve("respawn");
    ok(respawn.check_respawn(1));
    ok(respawn.check_one_worker_per_cpu(&all));
    ok(respawn.check_cpu_steering(layout, &[1], plan.per_cpu));
    ok(respawn.check_stopped());

    let numa = serve("numa");
    ok(numa.check_one_worker_per_cpu(&all));
    ok(numa.check_numa_steering(layout, &all, plan.per_cpu_numa));
    ok(numa.check_stopped());

    if plan.variants {
        let fewer = serve("fewer");
        assert_eq!(
            ok(fewer.worker_cpus()).len(),
            2,
            "--workers 2: {:?}",
            fewer.lines
        );
        ok(fewer.check_cpu_steering(layout, &all, plan.per_cpu));
        ok(fewer.check_stopped());

        let taskset = serve("taskset");
        ok(taskset.check_one_worker_per_cpu(&[2, 3, 4, 5]));
        ok(taskset.check_master(layout, &[2, 3, 4, 5]));
        ok(taskset.check_cpu_steering(layout, &all, 1));
        ok(taskset.check_stopped());

        let online: Vec<usize> = all.iter().copied().filter(|c| *c != 3).collect();
        let offline = serve("offline");
        ok(offline.check_one_worker_per_cpu(&online));
        ok(offline.check_cpu_steering(layout, &online, 2));
        ok(offline.check_stopped());
        let usual = [&default, &respawn];
        for c in &offline.complaints {
            assert!(
                usual.iter().any(|r| r.complaints.contains(c)),
                "with CPU 3 offline steerd said {c:?}, which it does not say with every CPU online"
            );
        }
    }
}

#[test]
fn x86_kunpeng920_2x2() {
    // Two workers per node: with 2 CPUs x 12 connections a node, the chance that a fair
    // spread leaves one of them unused is 2^-23; with 4 a CPU it was 1/128 a node.
    let plan = Plan {
        per_cpu: 3,
        per_cpu_numa: 12,
        variants: true,
        nic: Some(NicPlan::usual(8, Some(1))),
    };
    run("x86_kunpeng920_2x2", &X86_KUNPENG, &plan, 900);
}

#[test]
fn x86_xeon_2s_smt() {
    let plan = Plan {
        per_cpu: 3,
        per_cpu_numa: 4,
        variants: true,
        nic: Some(NicPlan::usual(4, Some(1))),
    };
    run("x86_xeon_2s_smt", &X86_XEON, &plan, 900);
}

#[test]
fn x86_numa4_smt32() {
    let plan = Plan {
        per_cpu: 2,
        per_cpu_numa: 2,
        variants: false,
        nic: None,
    };
    run("x86_numa4_smt32", &X86_NUMA4_SMT32, &plan, 600);
}

#[test]
fn arm64_kunpeng920_clusters() {
    let plan = Plan {
        per_cpu: 2,
        per_cpu_numa: 3,
        variants: false,
        nic: Some(NicPlan::usual(8, None)),
    };
    run("arm64_kunpeng920_clusters", &ARM64_KUNPENG, &plan, 900);
}

/// Two 4-core clusters per node: `steerd topo` shows the eight clusters, and
/// `--workers 8` puts one worker in each cluster rather than two in one. Plan only: no
/// server runs in this guest.
#[test]
fn arm64_kunpeng920_32_cluster_spread() {
    let layout = &ARM64_KUNPENG_32;
    let snippet = "echo '== sys'; sys_layout
echo '== topo'; steerd topo --json
echo '== spread'; steerd check --json --workers 8
";
    let timeout = Duration::from_secs(300);
    let Some(guest) = boot(
        "arm64_kunpeng920_32_cluster_spread",
        layout,
        snippet,
        timeout,
    ) else {
        return;
    };
    assert_eq!(guest.status, 0, "guest snippet failed:\n{}", guest.stderr);
    layout.check_sys(guest.section("sys"));
    ok(report::check_topology(
        &ok(report::parse(guest.section("topo"))),
        layout,
    ));
    let spread = ok(report::parse(guest.section("spread")));
    ok(report::check_cluster_spread(&spread, layout, 8));
}

/// 32-bit ARM: the armv7 musl binary on Debian's armmp-lpae kernel, 4 CPUs. One pinned
/// worker per CPU, the kernel accepting the steering program, every client CPU's
/// connections on its own CPU's worker, a killed worker respawned on its CPU.
#[test]
fn arm_virt_4() {
    four_cpus("arm_virt_4", &ARM_VIRT_4, 600);
}

/// Big-endian: the s390x musl binary on Debian 12's s390x kernel (s390-ccw-virtio, 4
/// CPUs), the checks of [`arm_virt_4`]. The steering program's loads and the plan it is
/// assembled from meet a big-endian kernel here: a connection on the wrong worker fails.
#[test]
fn s390x_guest() {
    four_cpus("s390x_guest", &S390X_CCW_4, 300);
}

/// RISC-V: the riscv64 static glibc binary on Debian 13's riscv64 kernel (riscv64 is not
/// a Debian 12 architecture; the kernel boots under Debian 12's QEMU with its built-in
/// OpenSBI), 4 harts, the checks of [`arm_virt_4`].
#[test]
fn riscv64_guest() {
    four_cpus("riscv64_guest", &RISCV64_VIRT_4, 300);
}

/// A guest of four CPUs on one node: the default plan, one pinned worker per
/// CPU, every client CPU's connections on its own CPU's worker, no transparent huge page
/// in any process after serving (the armv7 and riscv64 kernels have them `always`), a
/// killed worker (on CPU 2) respawned there, and the kernel taking the steering program.
fn four_cpus(test: &str, layout: &Layout, timeout_secs: u64) {
    let snippet = "echo '== version'; steerd --version
echo '== check'; steerd check --json
PROBES=3
echo '== default'; serve_start; probe_all
echo '== huge'; huge_pages $SERVE_PID
echo '== respawn'; respawn 2; procs $SERVE_PID; probe 2; serve_stop
";
    let Some(guest) = boot(test, layout, snippet, Duration::from_secs(timeout_secs)) else {
        return;
    };
    assert_eq!(guest.status, 0, "guest snippet failed:\n{}", guest.stderr);
    let version = guest.section("version");
    assert!(
        version.len() == 1 && version[0].starts_with("steerd "),
        "steerd --version in the guest printed {version:?}"
    );
    ok(report::check_default_plan(
        &ok(report::parse(guest.section("check"))),
        layout,
    ));
    let all: Vec<usize> = (0..layout.cpus).collect();
    let default = Run::parse("default", guest.section("default"));
    println!(
        "{} {} {}",
        layout.arch.name(),
        layout.preset,
        default.summary(layout)
    );
    ok(default.check_one_worker_per_cpu(&all));
    ok(default.check_master(layout, &all));
    ok(default.check_cpu_steering(layout, &all, 3));
    let mode = ok(report::check_no_huge_pages(guest.section("huge")));
    println!(
        "{} {}: transparent huge pages {mode}, none taken",
        layout.arch.name(),
        layout.preset
    );
    let respawn = Run::parse("respawn", guest.section("respawn"));
    ok(respawn.check_respawn(2));
    ok(respawn.check_one_worker_per_cpu(&all));
    ok(respawn.check_cpu_steering(layout, &[2], 3));
    ok(respawn.check_stopped());
    for c in default.complaints.iter().chain(&respawn.complaints) {
        assert!(
            !c.contains("falling back"),
            "the kernel refused the steering program: {c}"
        );
    }
}
