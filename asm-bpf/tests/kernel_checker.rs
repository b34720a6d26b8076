//! The kernel as the oracle for the checker (Linux only).
//!
//! Every program is attached with `SO_ATTACH_FILTER` to a UDP socket and with
//! `SO_ATTACH_REUSEPORT_CBPF` to a UDP socket with SO_REUSEPORT bound to 127.0.0.1:0,
//! and `asm_bpf::check::check` must give the kernel's verdict on both paths:
//!
//! * success, or ENOMEM, is "accepted": ENOMEM is raised only after the classic checker
//!   passed, when the program converted to eBPF is larger than `net.core.optmem_max`;
//! * EINVAL is "refused";
//! * anything else fails the test.
//!
//! Cases: the checker vectors, every 16-bit opcode alone, and seeded random programs.
//! Skips with a printed reason where the socket options do not exist (qemu-user).
#![cfg(target_os = "linux")]
#![allow(unsafe_code)]

mod common;

use asm_bpf::check::check;
use asm_bpf::insn::*;
use asm_bpf::Insn;
use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// What the kernel said about a program on one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Accepted,
    Refused,
}

/// One socket per attach path; each attach replaces the previous program.
struct Oracle {
    filter: OwnedFd,
    reuseport: OwnedFd,
    /// Attaches refused with ENOMEM (accepted by the checker, too big after conversion).
    too_big: Cell<usize>,
}

fn socket_udp() -> io::Result<OwnedFd> {
    // SAFETY: socket(2) takes no pointers; a non-negative result is a new descriptor
    // that nothing else owns, so OwnedFd may close it.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by socket(2) and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn set_int(fd: &OwnedFd, level: i32, name: i32, value: i32) -> io::Result<()> {
    // SAFETY: the option value points to a live i32 and optlen is its exact size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn bind_loopback_any_port(fd: &OwnedFd) -> io::Result<()> {
    let addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: addr is a live sockaddr_in and the length passed is its exact size.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `setsockopt(fd, SOL_SOCKET, option, &sock_fprog)`: Ok, or the errno.
fn attach(fd: &OwnedFd, option: i32, prog: &[Insn]) -> Result<(), i32> {
    // A dangling but non-null pointer for the empty program: the kernel refuses len 0
    // before reading anything.
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    assert_eq!(
        std::mem::size_of::<Insn>(),
        std::mem::size_of::<libc::sock_filter>()
    );
    // SAFETY: fprog points to `prog`, which holds `len` #[repr(C)] Insns laid out as
    // struct sock_filter (size asserted above) and outlives the call; the kernel only
    // reads it. optlen is the exact size of the sock_fprog.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            (&fprog as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    Err(io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

impl Oracle {
    /// Both sockets, or `None` (with the reason printed) if the kernel lacks the options.
    fn new() -> Option<Oracle> {
        let filter = socket_udp().expect("udp socket");
        let reuseport = socket_udp().expect("udp socket");
        set_int(&reuseport, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1).expect("SO_REUSEPORT");
        bind_loopback_any_port(&reuseport).expect("bind 127.0.0.1:0");
        let ret0 = [Insn::stmt(BPF_RET | BPF_K, 0)];
        for (fd, option) in [
            (&filter, libc::SO_ATTACH_FILTER),
            (&reuseport, libc::SO_ATTACH_REUSEPORT_CBPF),
        ] {
            match attach(fd, option, &ret0) {
                Ok(()) => {}
                Err(libc::ENOPROTOOPT) => {
                    common::skipped(&format!(
                        "setsockopt option {option} gives ENOPROTOOPT here"
                    ));
                    return None;
                }
                Err(e) => panic!("attaching `ret #0` with option {option}: errno {e}"),
            }
        }
        Some(Oracle {
            filter,
            reuseport,
            too_big: Cell::new(0),
        })
    }

    /// The kernel's verdicts on (SO_ATTACH_FILTER, SO_ATTACH_REUSEPORT_CBPF).
    fn verdicts(&self, prog: &[Insn]) -> (Verdict, Verdict) {
        let one = |fd: &OwnedFd, option: i32| match attach(fd, option, prog) {
            Ok(()) => Verdict::Accepted,
            Err(libc::ENOMEM) => {
                self.too_big.set(self.too_big.get() + 1);
                Verdict::Accepted
            }
            Err(libc::EINVAL) => Verdict::Refused,
            Err(e) => panic!("option {option}: unexpected errno {e} for {prog:?}"),
        };
        (
            one(&self.filter, libc::SO_ATTACH_FILTER),
            one(&self.reuseport, libc::SO_ATTACH_REUSEPORT_CBPF),
        )
    }

    /// A disagreement between the checker and either path, described; `None` if all agree.
    fn disagreement(&self, prog: &[Insn]) -> Option<String> {
        let ours = match check(prog) {
            Ok(()) => Verdict::Accepted,
            Err(_) => Verdict::Refused,
        };
        let (filter, reuseport) = self.verdicts(prog);
        if filter == ours && reuseport == ours {
            return None;
        }
        Some(format!(
            "checker {ours:?} ({:?}), SO_ATTACH_FILTER {filter:?}, \
             SO_ATTACH_REUSEPORT_CBPF {reuseport:?}, program ({} insns) {}",
            check(prog).err().map(|e| e.to_string()),
            prog.len(),
            bytecode(prog)
        ))
    }
}

/// The program in bpf_asm's default format (the first 64 instructions), for a message
/// that can be replayed.
fn bytecode(prog: &[Insn]) -> String {
    let shown = asm_bpf::fmt::format_default(&prog[..prog.len().min(64)]);
    match prog.len() > 64 {
        true => format!("{} ... ({} instructions)", shown.trim_end(), prog.len()),
        false => shown.trim_end().to_string(),
    }
}

fn assert_all_agree(what: &str, failures: Vec<String>, total: usize) {
    assert!(
        failures.is_empty(),
        "{what}: {} of {total} disagree:\n{}",
        failures.len(),
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn kernel_agrees_with_every_checker_vector() {
    let Some(oracle) = Oracle::new() else { return };
    let vectors = common::check_vectors();
    let failures: Vec<String> = vectors
        .iter()
        .filter_map(|v| {
            oracle
                .disagreement(&v.prog)
                .map(|d| format!("{}: {d}", v.name))
        })
        .collect();
    assert_all_agree("vectors", failures, vectors.len());
}

#[test]
fn kernel_agrees_on_every_16_bit_opcode() {
    let Some(oracle) = Oracle::new() else { return };
    let mut failures = Vec::new();
    let mut accepted = 0;
    for code in 0..=u16::MAX {
        // k 0 and 1: each opcode both where its k rule passes and where it fails
        // (div #0, ja 1 past the end), after a store so scratch loads are valid.
        for k in [0, 1] {
            let prog = [
                Insn::stmt(BPF_ST, 0),
                Insn::stmt(code, k),
                Insn::stmt(BPF_RET | BPF_K, 0),
            ];
            accepted += usize::from(check(&prog).is_ok());
            failures.extend(oracle.disagreement(&prog));
        }
    }
    assert_all_agree("opcodes", failures, 2 * 65536);
    // 49 opcodes with k 0 or 1, less div/mod #0, ja 1 and ld/ldx M[1] (never written).
    assert_eq!(accepted, 49 * 2 - 5);
}

#[test]
fn kernel_agrees_on_seeded_random_programs() {
    let Some(oracle) = Oracle::new() else { return };
    // ASM_BPF_ORACLE_SEED / ASM_BPF_ORACLE_COUNT replay or widen a run.
    let seed = common::env_u64("ASM_BPF_ORACLE_SEED", 0x5eed_b9f0);
    let count = common::env_u64("ASM_BPF_ORACLE_COUNT", 10_000) as usize;
    let mut rng = common::Rng(seed);
    let mut failures = Vec::new();
    let mut accepted = 0;
    for _ in 0..count {
        let prog = common::random_program(&mut rng);
        accepted += usize::from(check(&prog).is_ok());
        failures.extend(oracle.disagreement(&prog));
    }
    eprintln!(
        "random programs: seed {seed}, {count} programs, {accepted} accepted, \
         {} attaches refused for size (ENOMEM)",
        oracle.too_big.get()
    );
    assert_all_agree("random programs", failures, count);
    assert!(
        accepted > count / 10 && accepted < count * 9 / 10,
        "{accepted}"
    );
}
