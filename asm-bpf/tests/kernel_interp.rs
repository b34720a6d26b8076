//! The kernel as the oracle for the interpreter (Linux only), with the method of the
//! kernel selftest `reuseport_bpf_cpu.c`.
//!
//! A reuseport group of N TCP listeners on 127.0.0.1 (the first binds port 0, the rest
//! the same port; index = listen() order) gets a program attached after the last
//! listen(). For each CPU this thread may run on, a client thread pinned to that CPU
//! connects; on loopback the SYN is processed on the sending CPU, so the kernel runs the
//! program with `#cpu` = that CPU and an empty payload. The listener that accepts must be
//! the one `interp::run` predicts for `Context { cpu, ..Default }`, and SO_INCOMING_CPU on
//! the accepted socket must be that CPU. An index >= N falls back to the kernel's hash,
//! so only "some listener accepts" is asserted then.
//!
//! Skips with a printed reason with fewer than 2 allowed CPUs, or where
//! SO_ATTACH_REUSEPORT_CBPF does not exist (qemu-user).
#![cfg(target_os = "linux")]
#![allow(unsafe_code)]

use asm_bpf::check::check;
use asm_bpf::insn::*;
use asm_bpf::interp::{run, Context};
use asm_bpf::Insn;
mod common;

use std::io;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

fn last_errno<T>() -> io::Result<T> {
    Err(io::Error::last_os_error())
}

/// The CPUs this thread may run on (`sched_getaffinity(0)`).
fn allowed_cpus() -> Vec<u32> {
    // SAFETY: cpu_set_t is plain data; all-zero bytes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a live cpu_set_t and the size passed is its exact size.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    assert_eq!(rc, 0, "sched_getaffinity: {}", io::Error::last_os_error());
    (0..libc::CPU_SETSIZE as u32)
        // SAFETY: c < CPU_SETSIZE, so the bit read lies inside `set`.
        .filter(|&c| unsafe { libc::CPU_ISSET(c as usize, &set) })
        .collect()
}

/// Pins the calling thread to `cpu` (`sched_setaffinity(0)` is per thread).
fn pin_to(cpu: u32) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; all-zero bytes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    assert!(cpu < libc::CPU_SETSIZE as u32, "cpu {cpu} beyond cpu_set_t");
    // SAFETY: cpu < CPU_SETSIZE (asserted), so the bit written lies inside `set`.
    unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    // SAFETY: set is a live cpu_set_t and the size passed is its exact size.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
    if rc != 0 {
        return last_errno();
    }
    Ok(())
}

fn setsockopt<T>(fd: &OwnedFd, name: i32, value: &T) -> io::Result<()> {
    // SAFETY: value points to a live T and optlen is its exact size; the kernel only
    // reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            name,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return last_errno();
    }
    Ok(())
}

fn loopback(port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
        },
        sin_zero: [0; 8],
    }
}

/// A nonblocking socket of `ty` with SO_REUSEPORT bound to 127.0.0.1:`port`; returns
/// it and the port it got.
fn bound_socket(ty: i32, port: u16) -> io::Result<(OwnedFd, u16)> {
    // SAFETY: socket(2) takes no pointers.
    let raw = unsafe {
        libc::socket(
            libc::AF_INET,
            ty | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        )
    };
    if raw < 0 {
        return last_errno();
    }
    // SAFETY: raw was just returned by socket(2) and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    setsockopt(&fd, libc::SO_REUSEPORT, &1i32)?;
    let addr = loopback(port);
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: addr is a live sockaddr_in and len is its exact size.
    if unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_in).cast(),
            len,
        )
    } != 0
    {
        return last_errno();
    }
    let mut got = loopback(0);
    let mut got_len = len;
    // SAFETY: got is a live sockaddr_in and got_len holds its exact size, which the
    // kernel updates.
    let rc = unsafe {
        libc::getsockname(
            fd.as_raw_fd(),
            (&mut got as *mut libc::sockaddr_in).cast(),
            &mut got_len,
        )
    };
    if rc != 0 {
        return last_errno();
    }
    Ok((fd, u16::from_be(got.sin_port)))
}

/// A TCP listener in a reuseport group on 127.0.0.1:`port` (0: any).
fn listener(port: u16) -> io::Result<(OwnedFd, u16)> {
    let (fd, port) = bound_socket(libc::SOCK_STREAM, port)?;
    // SAFETY: listen(2) takes no pointers.
    if unsafe { libc::listen(fd.as_raw_fd(), 64) } != 0 {
        return last_errno();
    }
    Ok((fd, port))
}

/// `SO_ATTACH_REUSEPORT_CBPF` through `fd`: Ok, or the errno.
fn attach_cbpf(fd: &OwnedFd, prog: &[Insn]) -> Result<(), i32> {
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    setsockopt(fd, libc::SO_ATTACH_REUSEPORT_CBPF, &fprog)
        .map_err(|e| e.raw_os_error().unwrap_or(0))
}

/// Waits up to 5 s until exactly one of `fds` is readable; returns its index.
fn one_ready(fds: &[OwnedFd]) -> usize {
    let mut polled: Vec<libc::pollfd> = fds
        .iter()
        .map(|s| libc::pollfd {
            fd: s.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: polled is a live array of polled.len() pollfd entries the kernel writes.
    let n = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, 5000) };
    assert_eq!(n, 1, "expected one ready socket within 5 s");
    polled
        .iter()
        .position(|p| p.revents & libc::POLLIN != 0)
        .expect("ready")
}

/// N listeners in one reuseport group, in listen() order.
struct Group {
    listeners: Vec<OwnedFd>,
    port: u16,
}

impl Group {
    fn new(n: usize) -> Group {
        let (first, port) = listener(0).expect("first listener");
        let mut listeners = vec![first];
        for _ in 1..n {
            listeners.push(listener(port).expect("reuseport listener").0);
        }
        Group { listeners, port }
    }

    /// Attaches `prog` to the group through listener 0. Err(errno) on refusal.
    fn attach(&self, prog: &[Insn]) -> Result<(), i32> {
        attach_cbpf(&self.listeners[0], prog)
    }

    /// Waits up to 5 s for one connection on any listener; returns its index and the
    /// accepted socket.
    fn accept_one(&self) -> (usize, OwnedFd) {
        let index = one_ready(&self.listeners);
        let raw = loop {
            // SAFETY: null address pointers ask accept4 for no peer address.
            let raw = unsafe {
                libc::accept4(
                    self.listeners[index].as_raw_fd(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    libc::SOCK_CLOEXEC,
                )
            };
            if raw >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                break raw;
            }
        };
        assert!(raw >= 0, "accept4: {}", io::Error::last_os_error());
        // SAFETY: raw was just returned by accept4 and is owned by nobody else.
        (index, unsafe { OwnedFd::from_raw_fd(raw) })
    }
}

fn incoming_cpu(fd: &OwnedFd) -> u32 {
    let mut cpu: i32 = -1;
    let mut len = std::mem::size_of::<i32>() as libc::socklen_t;
    // SAFETY: cpu is a live i32 and len holds its exact size.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_INCOMING_CPU,
            (&mut cpu as *mut i32).cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0, "SO_INCOMING_CPU: {}", io::Error::last_os_error());
    cpu as u32
}

/// Connects to 127.0.0.1:`port` from a thread pinned to `cpu`; the stream is returned
/// so the connection stays open until it is accepted.
fn connect_from(cpu: u32, port: u16) -> TcpStream {
    std::thread::spawn(move || {
        pin_to(cpu).expect("pin client thread");
        TcpStream::connect(("127.0.0.1", port)).expect("connect")
    })
    .join()
    .expect("client thread")
}

/// Whether SO_ATTACH_REUSEPORT_CBPF exists here; prints why not.
fn reuseport_cbpf_available() -> bool {
    let probe = Group::new(1);
    match probe.attach(&[Insn::stmt(BPF_RET | BPF_K, 0)]) {
        Ok(()) => true,
        Err(libc::ENOPROTOOPT) => {
            common::skipped("SO_ATTACH_REUSEPORT_CBPF gives ENOPROTOOPT here");
            false
        }
        Err(e) => panic!("attaching ret #0: errno {e}"),
    }
}

/// The CPUs this thread may use, or `None` (reason printed) if the CPU tests cannot
/// run here.
fn setup() -> Option<Vec<u32>> {
    let cpus = allowed_cpus();
    if cpus.len() < 2 {
        common::skipped(&format!(
            "needs 2 allowed CPUs, this process may use {cpus:?}"
        ));
        return None;
    }
    reuseport_cbpf_available().then_some(cpus)
}

/// Runs `prog` on a group of `n` listeners with a client on every allowed CPU, forward
/// then reverse, and compares each landing listener with the interpreter.
fn assert_kernel_agrees(name: &str, prog: &[Insn], n: usize, cpus: &[u32]) {
    assert_eq!(check(prog), Ok(()), "{name}: the checker must accept it");
    let group = Group::new(n);
    group
        .attach(prog)
        .unwrap_or_else(|e| panic!("{name}: attach errno {e}"));
    let order = cpus.iter().chain(cpus.iter().rev());
    for &cpu in order {
        let predicted = run(
            prog,
            &Context {
                cpu,
                ..Context::default()
            },
        );
        let _client = connect_from(cpu, group.port);
        let (index, conn) = group.accept_one();
        eprintln!("{name}: cpu {cpu} -> {index} (predicted {predicted})");
        if (predicted as usize) < n {
            assert_eq!(
                index, predicted as usize,
                "{name}: cpu {cpu}: kernel chose listener {index}, interpreter {predicted}"
            );
        }
        assert_eq!(incoming_cpu(&conn), cpu, "{name}: SO_INCOMING_CPU");
    }
}

fn ld_cpu() -> Insn {
    Insn::stmt(BPF_LD | BPF_W | BPF_ABS, ancillary_k(SKF_AD_CPU))
}
fn ret_a() -> Insn {
    Insn::stmt(BPF_RET | BPF_A, 0)
}

/// `cpus[i]` -> listener `len - 1 - i`, any other CPU -> `fallback`.
fn jeq_chain(cpus: &[u32], fallback: u32) -> Vec<Insn> {
    let m = cpus.len();
    assert!(m < 255, "one jeq per CPU, jt must stay below 256");
    let mut prog = vec![ld_cpu()];
    for &c in cpus {
        // From jeq i at 1 + i to ret i at m + 2 + i.
        prog.push(Insn::jump(BPF_JMP | BPF_JEQ | BPF_K, c, m as u8, 0));
    }
    prog.push(Insn::stmt(BPF_RET | BPF_K, fallback));
    for i in 0..m {
        prog.push(Insn::stmt(BPF_RET | BPF_K, (m - 1 - i) as u32));
    }
    prog
}

#[test]
fn kernel_steers_by_cpu_as_the_interpreter_predicts() {
    let Some(cpus) = setup() else { return };
    // One listener per CPU number up to the highest allowed one.
    let n = *cpus.iter().max().expect("cpus") as usize + 1;
    let last = n as u32 - 1;
    let identity = [ld_cpu(), ret_a()];
    let reversed = [
        ld_cpu(),
        Insn::stmt(BPF_MISC | BPF_TAX, 0),
        Insn::stmt(BPF_LD | BPF_IMM, last),
        Insn::stmt(BPF_ALU | BPF_SUB | BPF_X, 0),
        ret_a(),
    ];
    let rotate = [
        ld_cpu(),
        Insn::stmt(BPF_ALU | BPF_ADD | BPF_K, 1),
        Insn::stmt(BPF_ALU | BPF_MOD | BPF_K, n as u32),
        ret_a(),
    ];
    assert_kernel_agrees("ld #cpu; ret a", &identity, n, &cpus);
    assert_kernel_agrees("n-1 - cpu", &reversed, n, &cpus);
    assert_kernel_agrees("(cpu + 1) mod n", &rotate, n, &cpus);
    assert_kernel_agrees("jeq chain", &jeq_chain(&cpus, n as u32), cpus.len(), &cpus);
}

#[test]
fn aborted_programs_send_everything_to_listener_0() {
    let Some(cpus) = setup() else { return };
    let n = cpus.len().max(2);
    // A SYN has no payload: ld [0] aborts with 0.
    let oob = [
        Insn::stmt(BPF_LD | BPF_W | BPF_ABS, 0),
        Insn::stmt(BPF_RET | BPF_K, 1),
    ];
    // Division by X = 0 aborts with 0, where (cpu + 1) would otherwise be returned.
    let div0 = [
        ld_cpu(),
        Insn::stmt(BPF_ALU | BPF_ADD | BPF_K, 1),
        Insn::stmt(BPF_LDX | BPF_W | BPF_IMM, 0),
        Insn::stmt(BPF_ALU | BPF_DIV | BPF_X, 0),
        ret_a(),
    ];
    for (name, prog) in [("ld [0]", &oob[..]), ("div x by 0", &div0[..])] {
        for &cpu in &cpus {
            assert_eq!(
                run(
                    prog,
                    &Context {
                        cpu,
                        ..Context::default()
                    }
                ),
                0,
                "{name}"
            );
        }
        assert_kernel_agrees(name, prog, n, &cpus);
    }
    // #len is 0 on a SYN: every connection to listener 1.
    let len_plus_1 = [
        Insn::stmt(BPF_LD | BPF_W | BPF_LEN, 0),
        Insn::stmt(BPF_ALU | BPF_ADD | BPF_K, 1),
        ret_a(),
    ];
    assert_kernel_agrees("#len + 1", &len_plus_1, n, &cpus);
}

/// UDP part: a reuseport group of [`UDP_GROUP`] sockets; each random program ends by
/// folding A's 32 bits into 4 with xor and adding 1, so a run that completes selects
/// sockets 1..=16 (any wrong bit of A changes which) and an aborted one socket 0. Every
/// datagram must land where the interpreter says, with a context built from what is
/// known about a loopback datagram: its payload, and for SKF_NET_OFF and SKF_LL_OFF
/// loads the Ethernet, IPv4 and UDP headers (the generator reads only fields that do
/// not vary: version, TOS, total length, TTL, protocol, addresses, ports, UDP length).
const UDP_GROUP: usize = 17;

struct UdpGroup {
    sockets: Vec<OwnedFd>,
    port: u16,
}

fn udp_socket(port: u16) -> io::Result<(OwnedFd, u16)> {
    bound_socket(libc::SOCK_DGRAM, port)
}

impl UdpGroup {
    fn new() -> UdpGroup {
        let (first, port) = udp_socket(0).expect("first udp socket");
        let mut sockets = vec![first];
        for _ in 1..UDP_GROUP {
            sockets.push(udp_socket(port).expect("reuseport udp socket").0);
        }
        UdpGroup { sockets, port }
    }

    fn attach(&self, prog: &[Insn]) {
        attach_cbpf(&self.sockets[0], prog)
            .unwrap_or_else(|e| panic!("attach errno {e}: {prog:?}"));
    }

    /// Waits up to 5 s for the datagram; returns the index of the socket holding it.
    fn receive(&self, payload: &[u8]) -> usize {
        let index = one_ready(&self.sockets);
        let mut buf = [0u8; 256];
        // SAFETY: buf is a live, writable buffer of buf.len() bytes.
        let got = unsafe {
            libc::recv(
                self.sockets[index].as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                0,
            )
        };
        assert_eq!(
            usize::try_from(got).ok(),
            Some(payload.len()),
            "datagram length"
        );
        assert_eq!(&buf[..payload.len()], payload, "another datagram arrived");
        index
    }
}

/// The IPv4 and UDP headers of a loopback datagram, then its payload, with the
/// fields that vary (identification, flags, checksums) left 0.
fn udp_network_bytes(src_port: u16, dst_port: u16, payload: &[u8]) -> Vec<u8> {
    let total = (28 + payload.len()) as u16;
    let mut b = vec![0x45, 0];
    b.extend(total.to_be_bytes());
    b.extend([0, 0, 0, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1]);
    b.extend(src_port.to_be_bytes());
    b.extend(dst_port.to_be_bytes());
    b.extend((total - 20).to_be_bytes());
    b.extend([0, 0]);
    b.extend_from_slice(payload);
    b
}

/// Ancillary offsets whose value for a loopback datagram is what the default
/// [`Context`] says (not cpu, rxhash, rand or poff, which vary or need the dissector).
const STABLE_ANCILLARY: [u32; 12] = [
    SKF_AD_PROTOCOL,
    SKF_AD_PKTTYPE,
    SKF_AD_IFINDEX,
    SKF_AD_NLATTR,
    SKF_AD_NLATTR_NEST,
    SKF_AD_MARK,
    SKF_AD_QUEUE,
    SKF_AD_HATYPE,
    SKF_AD_ALU_XOR_X,
    SKF_AD_VLAN_TAG,
    SKF_AD_VLAN_TAG_PRESENT,
    SKF_AD_VLAN_TPID,
];

/// Loopback's link-layer header length (an Ethernet header with zero addresses).
const ETH_HLEN: i32 = 14;

/// (size, offset) of the network-header reads that do not vary between datagrams.
const STABLE_NET_READS: [(u16, i32); 11] = [
    (BPF_B, 0),
    (BPF_B, 1),
    (BPF_H, 2),
    (BPF_B, 8),
    (BPF_B, 9),
    (BPF_W, 12),
    (BPF_W, 16),
    (BPF_H, 20),
    (BPF_W, 20),
    (BPF_H, 24),
    (BPF_W, 28),
];

/// One instruction of a random body of `len` instructions at `pc`: no `ret a`, jumps
/// stay inside the body or land on the tail.
fn body_insn(rng: &mut common::Rng, len: usize, pc: usize) -> Insn {
    let small = |rng: &mut common::Rng| rng.below(40) as u32;
    let any = |rng: &mut common::Rng| match rng.below(3) {
        0 => rng.next() as u32,
        _ => rng.below(40) as u32,
    };
    let after = (len - pc) as u64; // instructions after this one, the tail's first included
    match rng.below(14) {
        0 => Insn::stmt(BPF_LD | BPF_IMM, any(rng)),
        1 => Insn::stmt(
            BPF_LD | [BPF_W, BPF_H, BPF_B][rng.below(3) as usize] | BPF_ABS,
            small(rng),
        ),
        2 => Insn::stmt(
            BPF_LD | [BPF_W, BPF_H, BPF_B][rng.below(3) as usize] | BPF_IND,
            small(rng),
        ),
        3 => {
            let off = STABLE_ANCILLARY[rng.below(STABLE_ANCILLARY.len() as u64) as usize];
            Insn::stmt(
                BPF_LD | [BPF_W, BPF_H, BPF_B][rng.below(3) as usize] | BPF_ABS,
                ancillary_k(off),
            )
        }
        4 => {
            let (size, off) = STABLE_NET_READS[rng.below(STABLE_NET_READS.len() as u64) as usize];
            // Through the link-layer header too: loopback's is 14 bytes, both MACs 0.
            let base = match rng.below(3) {
                0 => SKF_LL_OFF + ETH_HLEN,
                _ => SKF_NET_OFF,
            };
            Insn::stmt(BPF_LD | size | BPF_ABS, (base + off) as u32)
        }
        5 => match rng.below(4) {
            0 => Insn::stmt(BPF_LDX | BPF_B | BPF_MSH, SKF_NET_OFF as u32),
            1 => Insn::stmt(BPF_LDX | BPF_B | BPF_MSH, small(rng)),
            2 => Insn::stmt(BPF_LDX | BPF_W | BPF_LEN, 0),
            _ => Insn::stmt(BPF_LDX | BPF_W | BPF_IMM, any(rng)),
        },
        6 => Insn::stmt(
            [BPF_ST, BPF_STX][rng.below(2) as usize],
            rng.below(4) as u32,
        ),
        7 => Insn::stmt(
            [BPF_LD | BPF_MEM, BPF_LDX | BPF_MEM][rng.below(2) as usize],
            rng.below(4) as u32,
        ),
        8 => Insn::stmt(
            [BPF_MISC | BPF_TAX, BPF_MISC | BPF_TXA, BPF_LD | BPF_LEN][rng.below(3) as usize],
            0,
        ),
        9 | 10 => {
            // Shifts twice as often: the X & 31 rule needs X >= 32 to show.
            let op = [
                BPF_ADD, BPF_SUB, BPF_MUL, BPF_DIV, BPF_OR, BPF_AND, BPF_LSH, BPF_RSH, BPF_NEG,
                BPF_MOD, BPF_XOR, BPF_LSH, BPF_RSH,
            ][rng.below(13) as usize];
            let code = BPF_ALU | op | [BPF_K, BPF_X][rng.below(2) as usize];
            let k = match op {
                BPF_LSH | BPF_RSH => rng.below(32) as u32,
                BPF_DIV | BPF_MOD => 1 + rng.below(9) as u32,
                _ => any(rng),
            };
            let code = if op == BPF_NEG {
                BPF_ALU | BPF_NEG
            } else {
                code
            };
            Insn::stmt(code, k)
        }
        11 | 12 => {
            let op = [BPF_JEQ, BPF_JGT, BPF_JGE, BPF_JSET][rng.below(4) as usize];
            let src = [BPF_K, BPF_X][rng.below(2) as usize];
            let field = |rng: &mut common::Rng| rng.below(after.min(256)) as u8;
            Insn::jump(BPF_JMP | op | src, small(rng), field(rng), field(rng))
        }
        _ => Insn::stmt(BPF_RET | BPF_K, rng.below(UDP_GROUP as u64) as u32),
    }
}

/// A checker-accepted random program: body, then A's bits folded into 1..=16.
fn udp_program(rng: &mut common::Rng) -> Vec<Insn> {
    loop {
        let len = 1 + rng.below(12) as usize;
        let mut prog: Vec<Insn> = (0..len).map(|pc| body_insn(rng, len, pc)).collect();
        // Fold the 32 bits of A into 4 with xor, so any wrong bit changes the socket.
        for shift in [16, 8, 4] {
            prog.extend([
                Insn::stmt(BPF_MISC | BPF_TAX, 0),
                Insn::stmt(BPF_ALU | BPF_RSH | BPF_K, shift),
                Insn::stmt(BPF_ALU | BPF_XOR | BPF_X, 0),
            ]);
        }
        prog.extend([
            Insn::stmt(BPF_ALU | BPF_AND | BPF_K, 15),
            Insn::stmt(BPF_ALU | BPF_ADD | BPF_K, 1),
            Insn::stmt(BPF_RET | BPF_A, 0),
        ]);
        if check(&prog).is_ok() {
            return prog;
        }
    }
}

#[test]
fn kernel_runs_random_programs_on_udp_payloads_as_the_interpreter_does() {
    if !reuseport_cbpf_available() {
        return;
    }
    let group = UdpGroup::new();
    let sender = std::net::UdpSocket::bind("127.0.0.1:0").expect("sender");
    let src_port = sender.local_addr().expect("sender address").port();
    // ASM_BPF_ORACLE_SEED / ASM_BPF_UDP_PROGRAMS replay or widen a run.
    let seed = common::env_u64("ASM_BPF_ORACLE_SEED", 0x0dd_ba11);
    let programs = common::env_u64("ASM_BPF_UDP_PROGRAMS", 2000);
    let mut rng = common::Rng(seed);
    let (mut aborted, mut sent) = (0, 0);
    for _ in 0..programs {
        let prog = udp_program(&mut rng);
        group.attach(&prog);
        for _ in 0..4 {
            let payload: Vec<u8> = (0..rng.below(24)).map(|_| rng.next() as u8).collect();
            let net = udp_network_bytes(src_port, group.port, &payload);
            let mut link = vec![0; 12];
            link.extend([0x08, 0x00]);
            link.extend_from_slice(&net);
            let ctx = Context {
                net,
                link: Some(link),
                ..Context::with_packet(payload.clone())
            };
            let predicted = run(&prog, &ctx) as usize;
            sender
                .send_to(&payload, ("127.0.0.1", group.port))
                .expect("send");
            let index = group.receive(&payload);
            assert_eq!(
                index,
                predicted,
                "payload {payload:02x?}: kernel chose {index}, interpreter {predicted}; program {}",
                asm_bpf::fmt::format_default(&prog)
            );
            aborted += usize::from(predicted == 0);
            sent += 1;
        }
    }
    eprintln!("udp: seed {seed}, {programs} programs, {sent} datagrams, {aborted} to socket 0");
    assert!(aborted > 0 && aborted < sent / 2, "{aborted} of {sent}");
}
