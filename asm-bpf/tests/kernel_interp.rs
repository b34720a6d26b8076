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

/// A nonblocking TCP listener with SO_REUSEPORT on 127.0.0.1:`port`; returns it and
/// the port it got.
fn listener(port: u16) -> io::Result<(OwnedFd, u16)> {
    let flags = libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
    // SAFETY: socket(2) takes no pointers.
    let raw = unsafe { libc::socket(libc::AF_INET, flags, 0) };
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
    // SAFETY: listen(2) takes no pointers.
    if unsafe { libc::listen(fd.as_raw_fd(), 64) } != 0 {
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
        let fprog = libc::sock_fprog {
            len: prog.len() as u16,
            filter: prog.as_ptr() as *mut libc::sock_filter,
        };
        setsockopt(&self.listeners[0], libc::SO_ATTACH_REUSEPORT_CBPF, &fprog)
            .map_err(|e| e.raw_os_error().unwrap_or(0))
    }

    /// Waits up to 5 s for one connection on any listener; returns its index and the
    /// accepted socket.
    fn accept_one(&self) -> (usize, OwnedFd) {
        let mut fds: Vec<libc::pollfd> = self
            .listeners
            .iter()
            .map(|l| libc::pollfd {
                fd: l.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: fds is a live array of fds.len() pollfd entries the kernel writes.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 5000) };
        assert!(n > 0, "no listener got the connection within 5 s");
        let index = fds
            .iter()
            .position(|p| p.revents & libc::POLLIN != 0)
            .expect("ready");
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

/// The machine's CPUs, or `None` (reason printed) if this test cannot run here.
fn setup() -> Option<Vec<u32>> {
    let cpus = allowed_cpus();
    if cpus.len() < 2 {
        eprintln!("skipped: needs 2 allowed CPUs, this process may use {cpus:?}");
        return None;
    }
    let probe = Group::new(1);
    match probe.attach(&[Insn::stmt(BPF_RET | BPF_K, 0)]) {
        Ok(()) => Some(cpus),
        Err(libc::ENOPROTOOPT) => {
            eprintln!("skipped: SO_ATTACH_REUSEPORT_CBPF gives ENOPROTOOPT here");
            None
        }
        Err(e) => panic!("attaching ret #0: errno {e}"),
    }
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
