//! Steering end to end through the real binary, by the kernel selftests' method
//! (`tools/testing/selftests/net/reuseport_bpf_cpu.c`, `so_incoming_cpu.c`): on loopback
//! the SYN is processed on the sending CPU, so a client thread pinned to CPU c must reach
//! the worker on CPU c, and that worker must see `SO_INCOMING_CPU == c` (the metrics'
//! locality counter). A second test moves packet processing to a chosen CPU with RPS on a
//! veth in a network namespace: then the client's CPU no longer matters.

use crate::support;

use std::process::Command;
use std::time::Duration;
use support::server::*;

/// Connections per client CPU.
const N: u64 = 24;

/// Makes `n` connections, each one request, from a thread pinned to `cpu`.
fn connect_from(cpu: usize, addr: std::net::SocketAddr, n: u64) {
    on_cpu(cpu, move || {
        for _ in 0..n {
            let (status, body) = get(addr, "/index.html");
            assert_eq!(status, 200, "{body}");
        }
    });
}

/// Two workers on the first two allowed CPUs with `--steer policy`; the policy in force
/// must be the one asked for.
fn start_two(policy: &str) -> Option<(Server, usize)> {
    let (a, b) = two_cpus()?;
    let cpus = format!("{a},{b}");
    let server = Server::start(&["--workers", "2", "--steer", policy, "--cpus", &cpus]);
    assert_eq!(server.policy(), policy);
    Some((server, a))
}

#[test]
fn cpu_steering_sends_each_client_cpu_to_its_worker() {
    if skip_without_steering("cpu_steering_sends_each_client_cpu_to_its_worker") {
        return;
    }
    let Some((server, _)) = start_two("cpu") else {
        return;
    };
    let plan = server.plan();
    assert_eq!(plan.len(), 2);
    // Forward then reverse, as the selftest does.
    let order: Vec<(usize, usize)> = plan
        .iter()
        .copied()
        .chain(plan.iter().rev().copied())
        .collect();
    for (index, cpu) in order {
        let before_acc = server.per_worker("steerd_connections_accepted_total");
        let before_loc = server.per_worker("steerd_connections_local_total");
        connect_from(cpu, server.addr, N);
        let acc = server.per_worker("steerd_connections_accepted_total");
        let loc = server.per_worker("steerd_connections_local_total");
        for (w, _) in server.plan() {
            let want = if w == index { N } else { 0 };
            assert_eq!(
                acc[w] - before_acc[w],
                want,
                "client on CPU {cpu}: worker {w} accepted {} (before {before_acc:?}, after {acc:?})",
                acc[w] - before_acc[w]
            );
            assert_eq!(
                loc[w] - before_loc[w],
                want,
                "client on CPU {cpu}: locality of worker {w}"
            );
        }
    }
}

#[test]
fn hash_steering_reports_the_split() {
    let Some((server, a)) = start_two("hash") else {
        return;
    };
    connect_from(a, server.addr, N);
    let acc = server.per_worker("steerd_connections_accepted_total");
    assert_eq!(
        acc.iter().sum::<u64>(),
        N,
        "every connection is counted once: {acc:?}"
    );
    eprintln!("hash split of {N} connections from CPU {a}: {acc:?}");
}

/// Two network namespaces joined by a veth pair, removed on drop. Only the addresses of
/// these namespaces are used.
struct NetnsPair {
    client: String,
    server: String,
}

impl NetnsPair {
    const CLIENT_IP: &'static str = "10.231.7.1";
    const SERVER_IP: &'static str = "10.231.7.2";

    fn create(rps_cpu: usize) -> Result<NetnsPair, String> {
        let tag = std::process::id() % 100_000;
        let pair = NetnsPair {
            client: format!("steerd-c{tag}"),
            server: format!("steerd-s{tag}"),
        };
        let (vc, vs) = (format!("sdc{tag}"), format!("sds{tag}"));
        let mask = format!("{:x}", 1u128 << rps_cpu);
        let steps: Vec<Vec<String>> = vec![
            sv(&["netns", "add", &pair.client]),
            sv(&["netns", "add", &pair.server]),
            sv(&[
                "-n",
                &pair.client,
                "link",
                "add",
                &vc,
                "type",
                "veth",
                "peer",
                "name",
                &vs,
                "netns",
                &pair.server,
            ]),
            sv(&[
                "-n",
                &pair.client,
                "addr",
                "add",
                &format!("{}/30", Self::CLIENT_IP),
                "dev",
                &vc,
            ]),
            sv(&[
                "-n",
                &pair.server,
                "addr",
                "add",
                &format!("{}/30", Self::SERVER_IP),
                "dev",
                &vs,
            ]),
            sv(&["-n", &pair.client, "link", "set", &vc, "up"]),
            sv(&["-n", &pair.server, "link", "set", &vs, "up"]),
            sv(&["-n", &pair.server, "link", "set", "lo", "up"]),
        ];
        for step in steps {
            run_ip(&step)?;
        }
        let rps = format!("echo {mask} > /sys/class/net/{vs}/queues/rx-0/rps_cpus");
        let out = Command::new("ip")
            .args(["netns", "exec", &pair.server, "sh", "-c", &rps])
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "setting rps_cpus: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(pair)
    }

    fn client_ns(&self) -> ClientNs {
        ClientNs(self.client.clone())
    }
}

/// The client namespace's name; a thread enters it with [`ClientNs::enter`].
#[derive(Clone)]
struct ClientNs(String);

impl ClientNs {
    /// Moves the calling thread (only it: setns is per thread) into the namespace.
    fn enter(&self) {
        let ns = std::fs::File::open(format!("/run/netns/{}", self.0)).expect("netns handle");
        use std::os::fd::AsFd;
        rustix::thread::move_into_link_name_space(
            ns.as_fd(),
            Some(rustix::thread::LinkNameSpaceType::Network),
        )
        .expect("setns into the client namespace");
    }
}

impl Drop for NetnsPair {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth end inside it, and with it the peer.
        for ns in [&self.client, &self.server] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

fn sv(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

fn run_ip(args: &[String]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

#[test]
fn rps_cpu_decides_the_worker_whatever_the_client_cpu() {
    let Some((a, b)) = two_cpus() else { return };
    if skip_without_steering("rps_cpu_decides_the_worker_whatever_the_client_cpu") {
        return;
    }
    if !is_root() {
        crate::support::skip::skip_or_fail(
            &crate::support::skip::this_test(),
            "network namespaces need root",
        );
        return;
    }
    // Receive processing on CPU b, clients on both CPUs: everything must reach b's worker.
    let pair = match NetnsPair::create(b) {
        Ok(p) => p,
        Err(e) => {
            crate::support::skip::skip_or_fail(
                &crate::support::skip::this_test(),
                &format!("cannot build a veth pair in network namespaces: {e}"),
            );
            return;
        }
    };
    let root = TempDir::new("netns");
    std::fs::write(root.path().join("index.html"), b"hello\n").unwrap();
    let listen = format!("{}:0", NetnsPair::SERVER_IP);
    let cpus = format!("{a},{b}");
    let server = Server::spawn(Command::new("ip").args([
        "netns",
        "exec",
        &pair.server,
        binary(),
        "serve",
        &root.path().display().to_string(),
        "--listen",
        &listen,
        "--metrics",
        &listen,
        "--workers",
        "2",
        "--steer",
        "cpu",
        "--cpus",
        &cpus,
    ]));
    let index_b = server
        .plan()
        .iter()
        .find(|&&(_, c)| c == b)
        .expect("worker on b")
        .0;
    let addr = server.addr;
    let ns = pair.client_ns();
    for client_cpu in [a, b, a] {
        let before = metrics_from_client(&ns, &server);
        let client = ns.clone();
        std::thread::spawn(move || {
            client.enter();
            pin_thread(client_cpu);
            for _ in 0..N {
                let (status, _) = get(addr, "/index.html");
                assert_eq!(status, 200);
            }
        })
        .join()
        .expect("client");
        let after = metrics_from_client(&ns, &server);
        for (w, _) in server.plan() {
            let want = if w == index_b { N } else { 0 };
            assert_eq!(
                after.0[w] - before.0[w],
                want,
                "client CPU {client_cpu}, worker {w} accepted"
            );
            assert_eq!(
                after.1[w] - before.1[w],
                want,
                "client CPU {client_cpu}, worker {w} local"
            );
        }
    }
    drop(server);
    std::thread::sleep(Duration::from_millis(50));
}

/// (accepted, local) per worker, read from inside the client namespace.
fn metrics_from_client(ns: &ClientNs, server: &Server) -> (Vec<u64>, Vec<u64>) {
    let ns = ns.clone();
    let plan = server.plan();
    let maddr = server.metrics.expect("metrics");
    std::thread::spawn(move || {
        ns.enter();
        let (status, body) = get(maddr, "/metrics");
        assert_eq!(status, 200);
        let m = parse_metrics(&body);
        let pick = |fam: &str| -> Vec<u64> {
            plan.iter()
                .map(|(i, c)| {
                    m.iter()
                        .find(|(k, _)| {
                            k.starts_with(&format!("{fam}{{worker=\"{i}\",cpu=\"{c}\","))
                        })
                        .map(|(_, v)| *v)
                        .expect("series")
                })
                .collect()
        };
        (
            pick("steerd_connections_accepted_total"),
            pick("steerd_connections_local_total"),
        )
    })
    .join()
    .expect("metrics client")
}
