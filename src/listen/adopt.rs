//! Which `--listen` group each passed listening socket joins (socket activation, binary
//! upgrade). Pure: addresses in, a seating plan out.
//!
//! Rules: a passed socket joins the group of the `--listen` address equal to its own, or
//! of one with the same IP and port 0 (an upgraded master runs with the arguments of the
//! first, which may have asked for port 0); its members keep the order they were passed
//! in, which for an upgrade is the group order. When no `--listen` address matches any
//! passed socket and the addresses are just the default, the passed sockets' addresses
//! are the listen addresses (a socket unit says where to listen). Every passed socket
//! must find a group and have `SO_REUSEPORT`, and no group may get more sockets than
//! there are workers.

use std::net::SocketAddr;

/// One passed listening socket, as `inherit.rs` saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Offered {
    /// Its name from `LISTEN_FDNAMES`.
    pub(crate) name: String,
    /// Its bound address.
    pub(crate) addr: SocketAddr,
    /// Whether it has `SO_REUSEPORT`.
    pub(crate) reuseport: bool,
}

/// The groups to make: each address with the indexes (into the offered list) of the
/// sockets it starts with.
pub(crate) type Seating = Vec<(SocketAddr, Vec<usize>)>;

/// Seats `offered` in the groups of `addrs` (`default_only`: `addrs` is the default the
/// user did not choose). `workers` bounds a group's size.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn seat(
    addrs: &[SocketAddr],
    default_only: bool,
    offered: &[Offered],
    workers: usize,
) -> Result<Seating, SeatError> {
    if let Some(o) = offered.iter().find(|o| !o.reuseport) {
        return Err(no_reuseport(&o.name, o.addr));
    }
    let matches = |want: &SocketAddr, got: &SocketAddr| {
        want == got || (want.port() == 0 && want.ip() == got.ip())
    };
    let none_match = !offered
        .iter()
        .any(|o| addrs.iter().any(|a| matches(a, &o.addr)));
    let wanted: Vec<SocketAddr> = if default_only && none_match && !offered.is_empty() {
        let mut v: Vec<SocketAddr> = Vec::new();
        for o in offered {
            if !v.contains(&o.addr) {
                v.push(o.addr);
            }
        }
        v
    } else {
        addrs.to_vec()
    };
    let mut seating: Seating = Vec::new();
    let mut used = vec![false; offered.len()];
    for want in &wanted {
        let first = (0..offered.len()).find(|&i| !used[i] && matches(want, &offered[i].addr));
        let Some(first) = first else {
            seating.push((*want, Vec::new()));
            continue;
        };
        let addr = offered[first].addr;
        let members: Vec<usize> = (0..offered.len())
            .filter(|&i| !used[i] && offered[i].addr == addr)
            .collect();
        if members.len() > workers {
            return Err(SeatError::TooMany {
                addr,
                count: members.len(),
                workers,
            });
        }
        for &i in &members {
            used[i] = true;
        }
        seating.push((addr, members));
    }
    if let Some(i) = used.iter().position(|u| !u) {
        return Err(SeatError::NotListened {
            name: offered[i].name.clone(),
            addr: offered[i].addr,
        });
    }
    Ok(seating)
}

/// Why a passed socket named `name` on `addr` cannot be adopted.
pub(crate) fn no_reuseport(name: &str, addr: SocketAddr) -> SeatError {
    SeatError::NoReuseport {
        name: name.to_string(),
        addr,
    }
}

/// Why the passed sockets cannot be seated in the planned groups; each names the socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SeatError {
    /// A passed socket without `SO_REUSEPORT`: no listener can join it.
    NoReuseport {
        /// Its name (`LISTEN_FDNAMES`).
        name: String,
        /// Its address.
        addr: SocketAddr,
    },
    /// More sockets passed for one address than workers planned.
    TooMany {
        /// The address.
        addr: SocketAddr,
        /// Sockets passed for it.
        count: usize,
        /// Workers planned.
        workers: usize,
    },
    /// A passed socket whose address no `--listen` names.
    NotListened {
        /// Its name.
        name: String,
        /// Its address.
        addr: SocketAddr,
    },
}

impl core::fmt::Display for SeatError {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SeatError::NoReuseport { name, addr } => write!(
                f,
                "inherited socket {name} on {addr} has no SO_REUSEPORT (set ReusePort=yes in \
                 the socket unit): steerd cannot add its workers' listeners beside it"
            ),
            SeatError::TooMany {
                addr,
                count,
                workers,
            } => write!(
                f,
                "{count} sockets passed for {addr}, more than the {workers} workers planned"
            ),
            SeatError::NotListened { name, addr } => write!(
                f,
                "inherited socket {name} on {addr} is not among the --listen addresses"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(name: &str, addr: &str, reuseport: bool) -> Offered {
        Offered {
            name: name.into(),
            addr: addr.parse().unwrap(),
            reuseport,
        }
    }

    fn a(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn nothing_offered_keeps_the_addresses() {
        let s = seat(&[a("127.0.0.1:8080")], true, &[], 4).unwrap();
        assert_eq!(s, vec![(a("127.0.0.1:8080"), vec![])]);
    }

    #[test]
    fn a_socket_unit_gives_the_address_when_none_was_chosen() {
        let offered = [o("http", "0.0.0.0:80", true)];
        let s = seat(&[a("127.0.0.1:8080")], true, &offered, 4).unwrap();
        assert_eq!(s, vec![(a("0.0.0.0:80"), vec![0])]);
        let e = seat(&[a("127.0.0.1:8080")], false, &offered, 4)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not among the --listen"), "{e}");
    }

    #[test]
    fn an_upgrade_seats_whole_groups_in_order_and_port_zero_matches() {
        let offered = [
            o("listen", "127.0.0.1:4000", true),
            o("listen", "127.0.0.1:4000", true),
            o("listen", "[::1]:5000", true),
            o("listen", "[::1]:5000", true),
        ];
        let addrs = [a("127.0.0.1:0"), a("[::1]:5000"), a("127.0.0.2:7")];
        let s = seat(&addrs, false, &offered, 2).unwrap();
        assert_eq!(
            s,
            vec![
                (a("127.0.0.1:4000"), vec![0, 1]),
                (a("[::1]:5000"), vec![2, 3]),
                (a("127.0.0.2:7"), vec![])
            ]
        );
        let e = seat(&addrs, false, &offered, 1).unwrap_err().to_string();
        assert!(e.contains("more than the 1 workers"), "{e}");
    }

    #[test]
    fn a_socket_without_reuseport_is_refused_by_name() {
        let e = seat(&[], true, &[o("web", "0.0.0.0:80", false)], 2)
            .unwrap_err()
            .to_string();
        assert!(e.contains("web") && e.contains("no SO_REUSEPORT"), "{e}");
    }
}
