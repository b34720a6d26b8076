//! The steering program against the kernel on this machine (kernel-steering.md 2.8):
//! a reuseport group built from the live plan, the program attached after the last
//! listen(), and a client thread pinned to each allowed CPU; the connection must be
//! accepted on the listener the plan maps that CPU to, with SO_INCOMING_CPU equal to it.

use crate::support;

use rustix::net::{self, sockopt, AddressFamily, SocketAddrV4, SocketFlags, SocketType};
use std::net::{Ipv4Addr, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};
use steerd::args;
use steerd::cpuset::CpuId;
use steerd::plan::{self, Plan};
use steerd::steer;
use steerd::topology;

/// One listener per worker, in index order, on one loopback port; returns them and the port.
fn group(plan: &Plan) -> (Vec<OwnedFd>, u16) {
    let mut port = 0;
    let mut fds = Vec::new();
    for _ in &plan.workers {
        let fd = net::socket_with(
            AddressFamily::INET,
            SocketType::STREAM,
            SocketFlags::NONBLOCK,
            None,
        )
        .unwrap();
        sockopt::set_socket_reuseport(&fd, true).unwrap();
        net::bind(&fd, &SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)).unwrap();
        net::listen(&fd, 128).unwrap();
        if port == 0 {
            let addr = net::getsockname(&fd).unwrap();
            port = std::net::SocketAddr::try_from(addr).unwrap().port();
        }
        fds.push(fd);
    }
    (fds, port)
}

/// Connects from a thread pinned to `cpu`; the stream is kept open until returned.
fn connect_from(cpu: CpuId, port: u16) -> TcpStream {
    std::thread::spawn(move || {
        let mut set = rustix::thread::CpuSet::new();
        set.set(cpu.get());
        rustix::thread::sched_setaffinity(None, &set).unwrap();
        assert_eq!(rustix::thread::sched_getcpu(), cpu.get(), "pinned");
        TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap()
    })
    .join()
    .unwrap()
}

/// The listener index that accepts the next connection (within 2 s), and its fd.
fn accepted(fds: &[OwnedFd]) -> (usize, OwnedFd) {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        for (i, fd) in fds.iter().enumerate() {
            match net::accept_with(fd, SocketFlags::empty()) {
                Ok(conn) => return (i, conn),
                Err(rustix::io::Errno::AGAIN) => {}
                Err(e) => panic!("accept: {e}"),
            }
        }
        assert!(Instant::now() < deadline, "no listener accepted within 2 s");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Plans for this machine and attaches its program; `None` (after printing why) when the
/// test cannot run here.
fn steered(name: &str, flags: &[&str]) -> Option<(Plan, Vec<OwnedFd>, u16)> {
    let (topo, _) = topology::read("/sys".as_ref(), "/proc".as_ref());
    if topo.allowed.len() < 2 {
        let why = format!(
            "steering needs 2 allowed CPUs, this process has {}",
            topo.allowed
        );
        support::skip::skip_or_fail(name, &why);
        return None;
    }
    if support::server::skip_without_steering(name) {
        return None;
    }
    let v: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
    let plan = plan::make(&args::parse_serve(&v).unwrap(), &topo).unwrap();
    let prog = steer::program(&plan, &topo).unwrap().expect("a program");
    let (fds, port) = group(&plan);
    steerd::sys::attach_reuseport_cbpf(fds[fds.len() - 1].as_fd(), &prog.insns)
        .unwrap_or_else(|e| panic!("attach: {e}"));
    Some((plan, fds, port))
}

#[test]
fn each_cpu_lands_on_its_mapped_listener() {
    let Some((plan, fds, port)) = steered("each_cpu_lands_on_its_mapped_listener", &[]) else {
        return;
    };
    let (topo, _) = topology::read("/sys".as_ref(), "/proc".as_ref());
    let mut order: Vec<CpuId> = topo.allowed.iter().collect();
    for round in 0..4 {
        if round % 2 == 1 {
            order.reverse();
        }
        for &cpu in &order {
            let _client = connect_from(cpu, port);
            let (index, conn) = accepted(&fds);
            assert_eq!(index as u32, plan.index_for(cpu), "client on cpu {cpu}");
            assert_eq!(
                sockopt::socket_incoming_cpu(&conn).unwrap() as usize,
                cpu.get()
            );
        }
    }
}

#[test]
fn numa_policy_spreads_one_nodes_connections() {
    let Some((plan, fds, port)) = steered(
        "numa_policy_spreads_one_nodes_connections",
        &["--steer", "numa"],
    ) else {
        return;
    };
    let cpu = plan.workers[0].cpu;
    let ranges = plan.node_ranges();
    let range = &ranges
        .iter()
        .find(|(n, _)| *n == plan.workers[0].node)
        .unwrap()
        .1;
    let mut hits = vec![0; fds.len()];
    for _ in 0..40 {
        let _client = connect_from(cpu, port);
        let (index, _conn) = accepted(&fds);
        assert!(
            range.contains(&(index as u16)),
            "landed outside the node: {index}"
        );
        hits[index] += 1;
    }
    for i in range.clone() {
        assert!(
            hits[usize::from(i)] > 0,
            "listener {i} got none of 40: {hits:?}"
        );
    }
}
