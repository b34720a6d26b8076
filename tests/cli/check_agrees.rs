//! `check` and `serve` make the same plan: both read the NIC of the listen address
//! before planning (`cmd/prepare.rs`). On a captured two-node layout of this machine's
//! two CPUs, with the listen address's interface on node 1, the NIC moves worker 0 to
//! node 1; `serve`'s `worker I cpu C node N` lines must equal `check --json`'s workers.
//! Its topology warnings carry the stage once (`warning: topology: ...`).

use crate::support;

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::Path;
use std::process::Command;
use support::server::*;

/// This machine's source address toward a documentation address (no packet is sent:
/// a UDP connect only picks the route). `None` without a non-loopback route.
fn routed_local_ip() -> Option<IpAddr> {
    let s = UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("203.0.113.1:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// CPU 0 on node 0, CPU 1 on node 1; every route goes through eth0, whose device sits on
/// node 1. Node 0's distance row is one entry too long: one topology warning.
fn two_node_tree(dir: &Path) {
    write(dir, "sys/devices/system/cpu/online", "0-1\n");
    write(dir, "sys/devices/system/node/node0/cpulist", "0\n");
    write(dir, "sys/devices/system/node/node1/cpulist", "1\n");
    write(dir, "sys/devices/system/node/node0/distance", "10 20 20\n");
    write(dir, "sys/devices/system/node/node1/distance", "20 10\n");
    write(dir, "sys/class/net/eth0/device/numa_node", "1\n");
    write(dir, "proc/self/status", "Cpus_allowed_list:\t0-1\n");
    write(dir, "proc/self/cgroup", "0::/\n");
    write(dir, "proc/self/mountinfo", "");
    write(
        dir,
        "proc/net/route",
        "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n\
         eth0\t00000000\t00000000\t0001\t0\t0\t0\t00000000\t0\t0\t0\n",
    );
}

#[test]
fn serve_places_workers_as_check_does() {
    if allowed_cpus() != [0, 1] {
        let why = format!("needs CPUs 0 and 1 allowed, has {:?}", allowed_cpus());
        crate::support::skip::skip_or_fail("serve_places_workers_as_check_does", &why);
        return;
    }
    let Some(ip) = routed_local_ip() else {
        crate::support::skip::skip_or_fail(
            &crate::support::skip::this_test(),
            "no non-loopback local address",
        );
        return;
    };
    let tree = TempDir::new("agree");
    two_node_tree(tree.path());
    let sys = tree.path().join("sys").display().to_string();
    let proc = tree.path().join("proc").display().to_string();
    let listen = SocketAddr::new(ip, 0).to_string();
    let flags = [
        "--sysfs",
        &sys,
        "--procfs",
        &proc,
        "--listen",
        &listen,
        "--workers",
        "1",
    ];
    let out = Command::new(binary())
        .arg("check")
        .args(flags)
        .arg("--json")
        .output()
        .expect("run check");
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let checked: Vec<(usize, usize)> = v["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            let n = |k: &str| w[k].as_u64().unwrap() as usize;
            (n("index"), n("cpu"))
        })
        .collect();
    // The NIC's node wins: without the NIC the only worker would be on CPU 0.
    assert_eq!(checked, [(0, 1)], "check ignored the NIC: {v}");
    let server = Server::start(&flags);
    assert_eq!(
        server.plan(),
        checked,
        "serve planned differently from check"
    );
    assert!(server
        .find_line(|l| l == "steerd: worker 0 cpu 1 node 1")
        .is_some());
    let warning = server.wait_line(|l| l.contains("node0/distance"));
    assert!(
        warning.starts_with("steerd: warning: topology: ")
            && !warning.contains("topology: topology:"),
        "{warning}"
    );
}
