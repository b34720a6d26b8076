//! More than one host behind the balancer people already run: three "hosts" (network
//! namespaces), each running steerd on its own `--cpus`, behind an nftables DNAT that
//! picks a backend with `numgen random` (the rule shape kube-proxy's nftables mode
//! programs for a Service) in a fourth namespace, and a client in a fifth.
//!
//! What must hold: every request is answered, every host gets a share, and each host's
//! locality (`steerd_connections_local_total / accepted`) behind the balancer is what it
//! is when the same client reaches that host alone. Nothing in steerd knows about the
//! balancer: a DNAT'd SYN is one more SYN to steer.
//!
//! ```text
//!  client ns            balancer ns                         host ns (x3)
//!  10.77.0.1 --veth-- 10.77.0.2   prerouting: 10.96.0.10:80
//!                                 -> numgen random mod 3 -> dnat 10.78.N.2:8080
//!                     10.78.N.1 --veth-- 10.78.N.2  steerd --listen 10.78.N.2:8080
//! ```

use crate::support;

use std::net::SocketAddr;
use std::process::Command;
use support::server::*;

/// The Service address the client uses (a ClusterIP, assigned to no interface).
const VIP: &str = "10.96.0.10";
/// Hosts behind the balancer.
const HOSTS: usize = 3;
/// Requests per client CPU for each host alone; three times as many through the VIP.
const PER_CPU: usize = 40;

/// The five namespaces, removed on drop.
struct Cluster {
    tag: String,
}

impl Cluster {
    fn ns(&self, what: &str) -> String {
        format!("steerd-mh{}-{what}", self.tag)
    }

    fn host(i: usize) -> String {
        format!("h{}", i + 1)
    }

    fn host_ip(i: usize) -> String {
        format!("10.78.{}.2", i + 1)
    }

    /// `Err` when namespaces cannot be created here (the test then skips); a later
    /// step that fails is a failure of the test.
    fn create() -> Result<Cluster, String> {
        let c = Cluster {
            tag: (std::process::id() % 100_000).to_string(),
        };
        let (cl, lb) = (c.ns("client"), c.ns("lb"));
        run("ip", &["netns", "add", &cl], None)?;
        let mut steps: Vec<String> = vec![
            format!("netns add {lb}"),
            format!("-n {cl} link add tolb type veth peer name tocl netns {lb}"),
            format!("-n {cl} addr add 10.77.0.1/30 dev tolb"),
            format!("-n {lb} addr add 10.77.0.2/30 dev tocl"),
            format!("-n {cl} link set tolb up"),
            format!("-n {cl} link set lo up"),
            format!("-n {lb} link set tocl up"),
            format!("-n {lb} link set lo up"),
            format!("-n {cl} route add 10.96.0.0/16 via 10.77.0.2"),
            format!("-n {cl} route add 10.78.0.0/16 via 10.77.0.2"),
        ];
        for i in 0..HOSTS {
            let (h, name) = (c.ns(&Self::host(i)), Self::host(i));
            let n = i + 1;
            steps.extend([
                format!("netns add {h}"),
                format!("-n {lb} link add {name} type veth peer name eth0 netns {h}"),
                format!("-n {lb} addr add 10.78.{n}.1/30 dev {name}"),
                format!("-n {h} addr add 10.78.{n}.2/30 dev eth0"),
                format!("-n {lb} link set {name} up"),
                format!("-n {h} link set eth0 up"),
                format!("-n {h} link set lo up"),
                format!("-n {h} route add default via 10.78.{n}.1"),
            ]);
        }
        for step in steps {
            run("ip", &step.split(' ').collect::<Vec<_>>(), None).expect("ip");
        }
        // Forwarding in the balancer's namespace only (the sysctl is per namespace).
        let sysctl = [
            "netns",
            "exec",
            &lb,
            "sysctl",
            "-qw",
            "net.ipv4.ip_forward=1",
        ];
        run("ip", &sysctl, None).expect("forwarding in the balancer namespace");
        let nft = ["netns", "exec", &lb, "nft", "-f", "-"];
        run("ip", &nft, Some(&ruleset())).expect("the Service's nftables rules");
        Ok(c)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let mut names = vec![self.ns("client"), self.ns("lb")];
        names.extend((0..HOSTS).map(|i| self.ns(&Self::host(i))));
        for ns in names {
            let _ = Command::new("ip").args(["netns", "del", &ns]).output();
        }
    }
}

/// A Service as kube-proxy's nftables mode writes it: match the ClusterIP and port, pick
/// an endpoint chain with `numgen random mod N vmap`, DNAT there.
fn ruleset() -> String {
    let mut s = String::from("table ip steerd_service {\n  chain prerouting {\n");
    s += "    type nat hook prerouting priority dstnat; policy accept;\n";
    let arms: Vec<String> = (0..HOSTS).map(|i| format!("{i} : goto ep{i}")).collect();
    s += &format!(
        "    ip daddr {VIP} tcp dport 80 numgen random mod {HOSTS} vmap {{ {} }}\n  }}\n",
        arms.join(", ")
    );
    for i in 0..HOSTS {
        s += &format!(
            "  chain ep{i} {{\n    meta l4proto tcp dnat to {}:8080\n  }}\n",
            Cluster::host_ip(i)
        );
    }
    s + "}\n"
}

fn run(cmd: &str, args: &[&str], stdin: Option<&str>) -> Result<(), String> {
    use std::io::Write;
    let mut child = Command::new(cmd)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("{cmd}: {e}"))?;
    let mut input = child.stdin.take().expect("stdin");
    input
        .write_all(stdin.unwrap_or("").as_bytes())
        .map_err(|e| format!("{cmd}: {e}"))?;
    drop(input);
    let out = child
        .wait_with_output()
        .map_err(|e| format!("{cmd}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{cmd} {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// Runs `f` on a thread that entered namespace `ns` (setns is per thread).
fn in_ns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        use std::os::fd::AsFd;
        let handle = std::fs::File::open(&path).expect("netns handle");
        rustix::thread::move_into_link_name_space(
            handle.as_fd(),
            Some(rustix::thread::LinkNameSpaceType::Network),
        )
        .expect("setns");
        f()
    })
    .join()
    .expect("namespace thread")
}

/// `(accepted, local)` summed over a host's workers, read from the client namespace.
fn totals(client: &str, metrics: SocketAddr) -> (u64, u64) {
    in_ns(client, move || {
        let (status, body) = get(metrics, "/metrics");
        assert_eq!(status, 200, "{body}");
        let m = parse_metrics(&body);
        let sum = |fam: &str| -> u64 {
            m.iter()
                .filter(|(k, _)| k.starts_with(&format!("{fam}{{")))
                .map(|(_, v)| v)
                .sum()
        };
        (
            sum("steerd_connections_accepted_total"),
            sum("steerd_connections_local_total"),
        )
    })
}

/// `n` requests (each on its own connection) to `addr` from a client-namespace thread
/// pinned to each of `cpus` in turn; panics on any answer but 200.
fn requests(client: &str, cpus: &[usize], addr: SocketAddr, n: usize) {
    for &cpu in cpus {
        in_ns(client, move || {
            pin_thread(cpu);
            for _ in 0..n {
                let (status, body) = get(addr, "/index.html");
                assert_eq!(status, 200, "{addr}: {body}");
            }
        });
    }
}

/// Each host's CPU set: its own pair when the machine has six CPUs to spare, else the
/// first two allowed CPUs for all three (a small machine cannot give three hosts their
/// own cores; the balancer's effect on locality is what is measured either way).
fn host_cpus(allowed: &[usize]) -> Vec<String> {
    (0..HOSTS)
        .map(|i| {
            let pick: Vec<usize> = if allowed.len() >= 2 * HOSTS {
                allowed[2 * i..2 * i + 2].to_vec()
            } else {
                allowed.iter().copied().take(2).collect()
            };
            pick.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect()
}

fn ratio(accepted: u64, local: u64) -> f64 {
    local as f64 / accepted.max(1) as f64
}

#[test]
fn three_hosts_behind_an_nftables_service_each_keep_their_locality() {
    if !is_root() {
        crate::support::skip::skip_or_fail(
            &crate::support::skip::this_test(),
            "network namespaces need root",
        );
        return;
    }
    if Command::new("nft").arg("--version").output().is_err() {
        crate::support::skip::skip_or_fail(
            &crate::support::skip::this_test(),
            "nft (nftables) is not installed",
        );
        return;
    }
    let cluster = match Cluster::create() {
        Ok(c) => c,
        Err(e) => {
            crate::support::skip::skip_or_fail(
                &crate::support::skip::this_test(),
                &format!("cannot build the namespaces, veths and nftables DNAT: {e}"),
            );
            return;
        }
    };
    let allowed = allowed_cpus();
    let cpus = host_cpus(&allowed);
    let root = TempDir::new("multihost");
    std::fs::write(root.path().join("index.html"), b"hello\n").unwrap();
    let servers: Vec<Server> = (0..HOSTS)
        .map(|i| {
            let ip = Cluster::host_ip(i);
            let mut cmd = Command::new("ip");
            cmd.args(["netns", "exec", &cluster.ns(&Cluster::host(i)), binary()])
                .args(["serve", &root.path().display().to_string()])
                .args(["--listen", &format!("{ip}:8080")])
                .args(["--metrics", &format!("{ip}:9090")])
                .args(["--cpus", &cpus[i]]);
            Server::spawn(&mut cmd)
        })
        .collect();
    let client = cluster.ns("client");
    let clients: Vec<usize> = allowed.iter().copied().take(2).collect();

    // Each host alone: the client reaches its address directly (routed, not DNAT'd).
    let mut alone = Vec::new();
    for s in &servers {
        let before = totals(&client, s.metrics.expect("metrics"));
        requests(&client, &clients, s.addr, PER_CPU);
        let after = totals(&client, s.metrics.expect("metrics"));
        let got = (after.0 - before.0, after.1 - before.1);
        assert_eq!(
            got.0,
            (PER_CPU * clients.len()) as u64,
            "host {} alone",
            s.addr
        );
        alone.push(ratio(got.0, got.1));
    }

    // All three behind the Service address.
    let before: Vec<(u64, u64)> = servers
        .iter()
        .map(|s| totals(&client, s.metrics.expect("metrics")))
        .collect();
    let vip: SocketAddr = format!("{VIP}:80").parse().unwrap();
    let total = HOSTS * PER_CPU;
    requests(&client, &clients, vip, total);
    let mut shares = Vec::new();
    for (i, s) in servers.iter().enumerate() {
        let after = totals(&client, s.metrics.expect("metrics"));
        let got = (after.0 - before[i].0, after.1 - before[i].1);
        shares.push(got);
    }
    let answered: u64 = shares.iter().map(|s| s.0).sum();
    eprintln!(
        "hosts {cpus:?}, clients on CPUs {clients:?}; alone: locality {:?}; behind the \
         Service: (accepted, local) {shares:?}",
        alone
    );
    assert_eq!(
        answered,
        (total * clients.len()) as u64,
        "every request reached exactly one host"
    );
    for (i, &(accepted, _)) in shares.iter().enumerate() {
        assert!(accepted > 0, "host {} got no share: {shares:?}", i + 1);
    }
    // Without the steering program each worker takes a hashed share and locality is a
    // coin toss per connection: there is no figure to keep.
    if skip_without_steering("three_hosts_behind_an_nftables_service (locality)") {
        return;
    }
    for (i, &(accepted, local)) in shares.iter().enumerate() {
        let behind = ratio(accepted, local);
        assert!(
            (behind - alone[i]).abs() <= 0.1,
            "host {}: locality {behind:.3} behind the balancer, {:.3} alone",
            i + 1,
            alone[i]
        );
    }
    drop(servers);
}
