//! `steerd bpf asm|check|run|dis`: the asm-bpf toolchain on the command line.

/// Runs `steerd bpf ...` and returns the exit status.
pub fn main(_args: &[String]) -> i32 {
    eprintln!("steerd: bpf: not built yet");
    2
}
