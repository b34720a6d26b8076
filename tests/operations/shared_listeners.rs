//! The listeners every process of the server shares, through the real binary: a worker
//! never shuts a socket the master and the worker's successors hold (QUIT to one worker
//! leaves its slot serving, healthy, reloadable and upgradable), and a storm of HUPs
//! while idle keep-alive clients hold connections keeps the number of retiring workers
//! bounded (the oldest is told to close its idle connections at once) and shows it in
//! `steerd_retiring_workers`.

use crate::support;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use support::server::*;

/// Connections opened from a thread pinned to `cpu`, each with one request answered.
fn requests_from(cpu: usize, addr: SocketAddr, n: usize) -> Vec<u16> {
    on_cpu(cpu, move || {
        (0..n).map(|_| get(addr, "/index.html").0).collect()
    })
}

#[test]
fn quit_to_one_worker_leaves_its_listener_serving_reloadable_and_upgradable() {
    let name = "quit_to_one_worker_leaves_its_listener_serving_reloadable_and_upgradable";
    let Some((a, b)) = two_cpus() else {
        return support::skip::skip_or_fail(name, "needs two allowed CPUs");
    };
    if let Some(why) = cbpf_refused() {
        return support::skip::skip_or_fail(name, why);
    }
    let cpus = format!("{a},{b}");
    let server = Server::start(&["--workers", "2", "--cpus", &cpus, "--shutdown-timeout", "5"]);
    server.wait_healthy();
    let old = server.worker_pid(1);
    send_signal(old, libc::SIGQUIT);
    let new = wait_for_new_pid(&server, 1, old);
    wait_until("the worker told to stop has exited", || !alive(old));
    server.wait_healthy();
    let before = server.per_worker("steerd_connections_accepted_total")[1];
    let statuses = requests_from(b, server.addr, 20);
    assert!(statuses.iter().all(|&s| s == 200), "{statuses:?}");
    let after = server.per_worker("steerd_connections_accepted_total")[1];
    assert!(
        after >= before + 20,
        "the replacement (pid {new}) accepts on slot 1's listener: {before} -> {after}"
    );
    let m = server.metrics.expect("--metrics");
    assert_eq!(get(m, "/health").0, 200);

    server.signal(libc::SIGHUP);
    wait_until("the reload starts a new worker 1", || {
        server.worker_pid(1) != new
    });
    let reloaded = server.worker_pid(1);
    wait_until("the reload's workers serve", || get(m, "/health").0 == 200);
    assert!(requests_from(b, server.addr, 5).iter().all(|&s| s == 200));

    server.signal(libc::SIGUSR2);
    let line = server.wait_line(|l| {
        l.contains("upgrade: this binary took over ") || l.contains("keeps serving")
    });
    assert!(
        line.contains("took over"),
        "the upgrade re-executes: {line}\n{}",
        server.lines().join("\n")
    );
    wait_until("the upgrade starts a new worker 1", || {
        server.worker_pid(1) != reloaded
    });
    wait_until("the upgraded workers serve", || get(m, "/health").0 == 200);
    // The new image counts from zero, and its slot 1 takes over once the worker before
    // the upgrade has retired.
    wait_until("the worker before the upgrade has retired", || {
        !alive(reloaded)
    });
    let before = server.per_worker("steerd_connections_accepted_total");
    assert!(requests_from(b, server.addr, 10).iter().all(|&s| s == 200));
    let after = server.per_worker("steerd_connections_accepted_total");
    assert!(
        after[1] >= before[1] + 10,
        "slot 1 serves after the upgrade: {before:?} -> {after:?}"
    );
}

/// A keep-alive client that sends a request now and then, reconnecting when the server
/// closed its connection between requests (as keep-alive clients do).
struct Client {
    addr: SocketAddr,
    stream: TcpStream,
}

impl Client {
    fn open(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut c = Client { addr, stream };
        assert_eq!(
            c.ask(),
            Some(200),
            "the first request on a fresh connection"
        );
        c
    }

    /// One request on the open connection: its status, or `None` when the connection
    /// turned out to be closed before the request was read.
    fn ask(&mut self) -> Option<u16> {
        let req = b"GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n";
        self.stream.write_all(req).ok()?;
        let mut r = std::io::BufReader::new(&mut self.stream);
        support::client::read_response(&mut r, false)
            .ok()
            .map(|resp| resp.status)
    }

    /// A request that must succeed: on a closed idle connection, once more on a new one.
    fn request(&mut self) -> u16 {
        if let Some(s) = self.ask() {
            return s;
        }
        *self = Client::open(self.addr);
        200
    }
}

#[test]
fn a_hup_storm_with_idle_clients_keeps_the_retiring_workers_bounded() {
    const CLIENTS: usize = 16;
    const HUPS: usize = 30;
    const PER_HUP: usize = 2;
    let server = Server::start(&[
        "--workers",
        "2",
        "--keepalive-timeout",
        "120",
        "--shutdown-timeout",
        "120",
    ]);
    server.wait_healthy();
    // Each generation is left holding idle connections: new ones open after every HUP.
    let mut clients: Vec<Client> = (0..CLIENTS).map(|_| Client::open(server.addr)).collect();
    for n in 1..=HUPS {
        server.signal(libc::SIGHUP);
        server.wait_lines(|l| l.contains("reload: starting new workers"), n);
        std::thread::sleep(Duration::from_millis(50));
        clients.extend((0..PER_HUP).map(|_| Client::open(server.addr)));
    }
    server.wait_healthy();
    // Current and predecessor, and at most two retiring, per slot; a worker told to
    // close its idle connections is gone as soon as it has. The master counts a
    // retiring worker until it has reaped it, so the gauge is read after a look at the
    // children: it may lag their exits (slow under user-mode QEMU), never lead them.
    let bound = 2 * 4;
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut most = 0;
    let retiring = loop {
        let before = children(server.pid).len();
        most = most.max(before);
        let retiring = *server
            .metrics()
            .get("steerd_retiring_workers{process=\"master\"}")
            .expect("steerd_retiring_workers in /metrics");
        let settled = before <= bound && retiring <= 4 && retiring as usize + 2 <= before;
        if settled {
            break retiring;
        }
        assert!(
            Instant::now() < deadline,
            "not settled 30 s after {HUPS} HUPs: {before} children of the master \
             (bound {bound}), steerd_retiring_workers {retiring} (bound 4, and 2 fewer \
             than the children)"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    eprintln!("most children seen while settling: {most}; retiring now: {retiring}");
    for c in &mut clients {
        assert_eq!(c.request(), 200, "a request after the storm");
    }
}
