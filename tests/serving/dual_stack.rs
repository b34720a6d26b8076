//! A dual-stack socket passed by socket activation, through the real binary: systemd makes
//! `ListenStream=80` and `ListenStream=[::]:80` with `IPV6_V6ONLY=0`, and the members
//! steerd makes beside it must have the same, or the kernel puts them in a second
//! reuseport group and every IPv4 connection goes to worker 0 (`listen/member.rs`).
//!
//! The test makes a listening `[::]:0` socket with `SO_REUSEPORT` and `IPV6_V6ONLY=0`,
//! passes it as descriptor 3 (`LISTEN_PID`, `LISTEN_FDS`), starts `--workers 2`, and
//! connects from a thread pinned to each worker's CPU over IPv4 and over IPv6: both
//! workers must accept, each counting its connections local. `steerd check` under the same
//! variables names the passed socket's real address and what `serve` would do with it.
//!
//! One test only: the passed descriptor must be inheritable (no close-on-exec) while the
//! child starts, and no other test of this binary may spawn a process meanwhile.

use crate::support;

use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use support::server::*;
use support::skip::skip_or_fail;

const NAME: &str = "a_dual_stack_passed_socket_steers_ipv4_and_ipv6";

/// A listening dual-stack `[::]:0` socket with `SO_REUSEPORT`, inheritable; `None` without
/// IPv6.
fn dual_stack_listener() -> Option<OwnedFd> {
    use rustix::net::{sockopt, AddressFamily, SocketType};
    let fd = rustix::net::socket(AddressFamily::INET6, SocketType::STREAM, None).ok()?;
    sockopt::set_socket_reuseport(&fd, true).unwrap();
    sockopt::set_ipv6_v6only(&fd, false).unwrap();
    let any: SocketAddr = "[::]:0".parse().unwrap();
    rustix::net::bind(&fd, &any).ok()?;
    rustix::net::listen(&fd, 128).unwrap();
    rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::empty()).unwrap();
    Some(fd)
}

/// True when `[::1]` takes connections here.
fn has_ipv6_loopback() -> bool {
    std::net::TcpListener::bind("[::1]:0").is_ok()
}

#[test]
fn a_dual_stack_passed_socket_steers_ipv4_and_ipv6() {
    let Some(sock) = dual_stack_listener().filter(|_| has_ipv6_loopback()) else {
        return skip_or_fail(NAME, "no IPv6 here");
    };
    if let Some(why) = cbpf_refused() {
        return skip_or_fail(NAME, why);
    }
    let Some((a, b)) = two_cpus() else {
        return skip_or_fail(NAME, "needs two allowed CPUs");
    };
    let root = TempDir::new("dual-stack");
    std::fs::write(root.path().join("index.html"), b"both\n").unwrap();
    let root = root.path().display().to_string();
    let port = SocketAddr::try_from(rustix::net::getsockname(&sock).unwrap())
        .unwrap()
        .port();

    let out = with_socket(&sock, &format!("check {root} --workers 2 --cpus {a},{b}"))
        .output()
        .expect("check");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}{err}");
    let listen = format!("listen: [::]:{port}\n");
    assert!(
        text.contains(&listen),
        "check names the passed address: {text}{err}"
    );
    let passed = format!(
        "passed: http on [::]:{port} (v6only=0): adopted as member 0 of group [::]:{port}, \
         1 more made beside it with v6only=0"
    );
    assert!(
        text.contains(&passed),
        "check says what serve would do: {text}{err}"
    );

    let server = Server::spawn(&mut with_socket(
        &sock,
        &format!("serve {root} --workers 2 --cpus {a},{b} --metrics 127.0.0.1:0"),
    ));
    drop(sock);
    assert_eq!(server.policy(), "cpu", "{:?}", server.lines());
    let v4: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let v6: SocketAddr = format!("[::1]:{port}").parse().unwrap();
    for (i, addr) in [v4, v6].into_iter().enumerate() {
        let before = server.per_worker("steerd_connections_accepted_total");
        for cpu in [a, b] {
            on_cpu(cpu, move || {
                for _ in 0..8 {
                    assert_eq!(get(addr, "/index.html"), (200, "both\n".into()));
                }
            });
        }
        let after = server.per_worker("steerd_connections_accepted_total");
        let got: Vec<u64> = after.iter().zip(&before).map(|(x, y)| x - y).collect();
        assert_eq!(
            got,
            vec![8, 8],
            "connection {i} to {addr}: each worker accepts those from its CPU: {got:?}"
        );
    }
    let local = server.per_worker("steerd_connections_local_total");
    assert_eq!(local, vec![16, 16], "every connection was local");
}
