//! Socket activation through the real binary, with listening sockets this test creates
//! and passes the way systemd does (descriptor 3, `LISTEN_PID`, `LISTEN_FDS`,
//! `LISTEN_FDNAMES`): steerd adopts a socket that has `SO_REUSEPORT` as the first member of
//! its group and adds the other workers' members beside it; a socket without
//! `SO_REUSEPORT` is refused by `serve` with one line and named by `check`.
//!
//! One test only: the passed descriptor must be inheritable (no close-on-exec) while the
//! child starts, and no other test of this binary may spawn a process meanwhile.

use crate::support;

use std::os::fd::OwnedFd;
use support::server::*;

/// A listening socket on 127.0.0.1 (port chosen by the kernel), inheritable.
fn passed_listener(reuseport: bool) -> OwnedFd {
    use rustix::net::{sockopt, AddressFamily, SocketType};
    let fd = rustix::net::socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
    sockopt::set_socket_reuseport(&fd, reuseport).unwrap();
    let any: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
    rustix::net::bind(&fd, &any).unwrap();
    rustix::net::listen(&fd, 128).unwrap();
    rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::empty()).unwrap();
    fd
}

fn addr_of(fd: &OwnedFd) -> std::net::SocketAddr {
    std::net::SocketAddr::try_from(rustix::net::getsockname(fd).unwrap()).unwrap()
}

#[test]
fn passed_sockets_are_adopted_or_refused_with_a_reason() {
    let root = TempDir::new("activation");
    std::fs::write(root.path().join("index.html"), b"activated\n").unwrap();
    let root = root.path().display().to_string();

    // With SO_REUSEPORT: adopted, and the group gets a second member for worker 1.
    let sock = passed_listener(true);
    let addr = addr_of(&sock);
    let server = Server::spawn(&mut with_socket(
        &sock,
        &format!("serve {root} --workers 2 --metrics 127.0.0.1:0"),
    ));
    drop(sock);
    assert_eq!(server.addr, addr, "serves on the passed socket's address");
    assert!(
        server.find_line(|l| l.contains("adopted")).is_some(),
        "says it adopted the socket: {:?}",
        server.lines()
    );
    assert_eq!(get(addr, "/index.html"), (200, "activated\n".into()));
    if !skip_without_steering(
        "passed_sockets_are_adopted_or_refused_with_a_reason (both members serve)",
    ) {
        if let Some((a, b)) = two_cpus() {
            for cpu in [a, b] {
                on_cpu(cpu, move || {
                    for _ in 0..8 {
                        assert_eq!(get(addr, "/index.html").0, 200);
                    }
                });
            }
            let accepted = server.per_worker("steerd_connections_accepted_total");
            assert!(
                accepted.iter().all(|&n| n > 0),
                "both members of the group accept: {accepted:?}"
            );
        }
    }
    drop(server);

    // Without SO_REUSEPORT: serve refuses before starting anything, check says why.
    let plain = passed_listener(false);
    let out = with_socket(&plain, &format!("serve {root} --workers 2"))
        .output()
        .expect("serve");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("no SO_REUSEPORT") && err.contains("http"),
        "{err}"
    );
    let out = with_socket(&plain, "check").output().expect("check");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("no SO_REUSEPORT"), "{text}");
    drop(plain);
}
