//! `--metrics` and `--listen` through the real binary: the Prometheus endpoint answers
//! `GET /metrics` (and nothing else) with per-worker series that move with real traffic;
//! IPv6 and several listen addresses are served, each address its own steered group.

use crate::support;

use support::server::*;

#[test]
fn metrics_endpoint_serves_every_family_and_counts_traffic() {
    let server = Server::start(&[]);
    let maddr = server.metrics.expect("metrics");
    assert_eq!(get(maddr, "/nothing").0, 404);
    assert_eq!(get(maddr, "/metricsx").0, 404);
    let before = server.metrics();
    for (i, cpu) in server.plan() {
        let labels = format!("worker=\"{i}\",cpu=\"{cpu}\",node=\"0\"");
        for family in [
            "steerd_connections_accepted_total",
            "steerd_connections_local_total",
            "steerd_bytes_sent_total",
            "steerd_connections_open",
            "steerd_stale_events_total",
            "steerd_worker_respawns_total",
        ] {
            let key = format!("{family}{{{labels}}}");
            assert!(before.contains_key(&key), "missing {key}");
        }
        for class in ["1xx", "2xx", "3xx", "4xx", "5xx"] {
            let key = format!("steerd_responses_total{{{labels},class=\"{class}\"}}");
            assert!(before.contains_key(&key), "missing {key}");
        }
    }
    const N: u64 = 10;
    for _ in 0..N {
        assert_eq!(get(server.addr, "/index.html").0, 200);
    }
    assert_eq!(get(server.addr, "/no-such-file").0, 404);
    let sum = |m: &std::collections::HashMap<String, u64>, prefix: &str, suffix: &str| -> u64 {
        m.iter()
            .filter(|(k, _)| k.starts_with(prefix) && k.ends_with(suffix))
            .map(|(_, v)| *v)
            .sum()
    };
    let after = server.metrics();
    let acc = "steerd_connections_accepted_total{";
    assert_eq!(sum(&after, acc, "}") - sum(&before, acc, "}"), N + 1);
    let ok = "steerd_responses_total{";
    assert_eq!(
        sum(&after, ok, "class=\"2xx\"}") - sum(&before, ok, "class=\"2xx\"}"),
        N
    );
    assert_eq!(
        sum(&after, ok, "class=\"4xx\"}") - sum(&before, ok, "class=\"4xx\"}"),
        1
    );
    let bytes = "steerd_bytes_sent_total{";
    let sent = sum(&after, bytes, "}") - sum(&before, bytes, "}");
    assert!(
        sent >= N * "hello from steerd\n".len() as u64,
        "bytes sent {sent}"
    );
}

#[test]
fn ipv6_listener_is_served() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        crate::support::skip::skip_or_fail(&crate::support::skip::this_test(), "no IPv6 loopback");
        return;
    }
    let server = Server::start(&["--listen", "[::1]:0"]);
    assert!(server.addr.is_ipv6());
    let (status, body) = get(server.addr, "/index.html");
    assert_eq!((status, body.as_str()), (200, "hello from steerd\n"));
}

#[test]
fn every_listen_address_is_served_and_steered() {
    let cpus = allowed_cpus();
    let mut extra = vec!["--listen", "127.0.0.1:0", "--listen", "127.0.0.2:0"];
    let list;
    if cpus.len() >= 2 {
        list = format!("{},{}", cpus[0], cpus[1]);
        extra.extend(["--workers", "2", "--steer", "cpu", "--cpus", &list]);
    }
    let steered = cpus.len() >= 2
        && !skip_without_steering("every_listen_address_is_served_and_steered (the per-CPU split)");
    let server = Server::start(&extra);
    let addrs = server.addrs();
    assert_eq!(addrs.len(), 2);
    assert_ne!(addrs[0].ip(), addrs[1].ip());
    for (index, cpu) in server.plan() {
        let before = server.per_worker("steerd_connections_accepted_total");
        let targets = addrs.clone();
        on_cpu(cpu, move || {
            for addr in targets {
                for _ in 0..5 {
                    assert_eq!(get(addr, "/index.html").0, 200, "{addr}");
                }
            }
        });
        let after = server.per_worker("steerd_connections_accepted_total");
        if steered {
            // Both groups carry the program: all ten land on the client CPU's worker.
            assert_eq!(
                after[index] - before[index],
                10,
                "worker {index} on CPU {cpu}"
            );
        } else {
            assert_eq!(after.iter().sum::<u64>() - before.iter().sum::<u64>(), 10);
        }
    }
}
