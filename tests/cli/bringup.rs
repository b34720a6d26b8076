//! The master's bring-up order, as the kernel saw it (strace of the real binary): the
//! allowed CPU set is read before anything is pinned; each worker's listeners are made
//! (`listen()`, which fixes the reuseport index) in plan order while the master is pinned
//! to that worker's CPU; the master then returns to its CPU and attaches the program once
//! per group, after the last `listen()`.

use crate::support;

use std::process::Command;
use std::time::Duration;
use support::server::*;

/// One traced call of the master: name and the raw line.
struct Call {
    name: String,
    line: String,
}

fn master_calls(trace: &str) -> Vec<Call> {
    let first_pid = trace.split_whitespace().next().unwrap_or("").to_string();
    trace
        .lines()
        .filter(|l| l.split_whitespace().next() == Some(first_pid.as_str()))
        .filter_map(|l| {
            let rest = l.split_once(' ')?.1.trim_start();
            let name = rest.split('(').next()?.to_string();
            Some(Call {
                name,
                line: rest.to_string(),
            })
        })
        .collect()
}

/// The CPU list of `sched_setaffinity(0, SIZE, [CPUS]) = 0`.
fn affinity_cpus(line: &str) -> String {
    line.split('[')
        .nth(1)
        .and_then(|r| r.split(']').next())
        .unwrap_or("")
        .to_string()
}

#[test]
fn listeners_are_made_on_their_workers_cpus_in_plan_order_then_steered() {
    let Some((a, b)) = two_cpus() else { return };
    if skip_without_steering("listeners_are_made_on_their_workers_cpus_in_plan_order_then_steered")
    {
        return;
    }
    if Command::new("strace").arg("-V").output().is_err() {
        crate::support::skip::skip_or_fail(
            &crate::support::skip::this_test(),
            "strace is not installed",
        );
        return;
    }
    let dir = TempDir::new("bringup");
    let trace_path = dir.path().join("trace");
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let cpus = format!("{a},{b}");
    let mut server = Server::spawn(Command::new("strace").args([
        "-f",
        "-qq",
        "-o",
        &trace_path.display().to_string(),
        "-e",
        "trace=sched_getaffinity,sched_setaffinity,listen,setsockopt",
        binary(),
        "serve",
        &root.display().to_string(),
        "--listen",
        "127.0.0.1:0",
        "--listen",
        "127.0.0.2:0",
        "--workers",
        "2",
        "--steer",
        "cpu",
        "--cpus",
        &cpus,
    ]));
    let plan = server.plan();
    let policy = server.wait_line(|l| l.starts_with("steerd: policy "));
    let master_pid: u32 = policy.rsplit("pid ").next().unwrap().parse().unwrap();
    let master_cpu = policy
        .split("master on cpu ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .expect("master pinned")
        .to_string();
    send_signal(master_pid, libc::SIGTERM);
    let _ = server.wait_exit(Duration::from_secs(30));
    let trace = std::fs::read_to_string(&trace_path).expect("trace");
    let calls = master_calls(&trace);

    let pos = |pred: &dyn Fn(&Call) -> bool| calls.iter().position(pred);
    let first_get = pos(&|c| c.name == "sched_getaffinity").expect("affinity read");
    let first_set = pos(&|c| c.name == "sched_setaffinity").expect("master pinned");
    assert!(
        first_get < first_set,
        "the allowed set is read before pinning"
    );
    assert_eq!(affinity_cpus(&calls[first_set].line), master_cpu);

    // After the master pins itself: for each worker, pin to its CPU then two listen()s.
    let bring_up: Vec<&Call> = calls[first_set + 1..]
        .iter()
        .filter(|c| c.name != "sched_getaffinity")
        .filter(|c| c.name != "setsockopt" || c.line.contains("SO_ATTACH_REUSEPORT_CBPF"))
        .collect();
    let mut i = 0;
    for &(index, cpu) in &plan {
        assert_eq!(
            bring_up[i].name, "sched_setaffinity",
            "worker {index}: {}",
            bring_up[i].line
        );
        assert_eq!(
            affinity_cpus(&bring_up[i].line),
            cpu.to_string(),
            "worker {index}"
        );
        assert!(
            bring_up[i + 1].line.starts_with("listen("),
            "{}",
            bring_up[i + 1].line
        );
        assert!(
            bring_up[i + 2].line.starts_with("listen("),
            "{}",
            bring_up[i + 2].line
        );
        i += 3;
    }
    assert_eq!(
        affinity_cpus(&bring_up[i].line),
        master_cpu,
        "back on the master's CPU"
    );
    for group in 0..2 {
        let call = &bring_up[i + 1 + group];
        assert!(
            call.line.contains("SO_ATTACH_REUSEPORT_CBPF"),
            "group {group}: {}",
            call.line
        );
        assert!(call.line.ends_with("= 0"), "{}", call.line);
    }
    let attaches = calls
        .iter()
        .filter(|c| c.line.contains("SO_ATTACH_REUSEPORT_CBPF"))
        .count();
    assert_eq!(attaches, 2, "one attach per group");
}
