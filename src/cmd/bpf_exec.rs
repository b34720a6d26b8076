//! `steerd bpf check|run`: placeholder on the `asm` branch so it builds; the checker
//! branch's file replaces this one at merge.

/// `steerd bpf check [FILE|-]`; `args` are the arguments after `check`.
pub fn check(_args: &[String]) -> i32 {
    eprintln!("steerd: bpf: check: not built on this branch");
    2
}

/// `steerd bpf run [FILE|-] [options]`; `args` are the arguments after `run`.
pub fn run(_args: &[String]) -> i32 {
    eprintln!("steerd: bpf: run: not built on this branch");
    2
}
