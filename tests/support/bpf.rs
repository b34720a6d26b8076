//! Shared by the `steerd bpf` command tests: run the real binary with given stdin.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `steerd ARGS` with `stdin` as its standard input and collects everything.
pub fn run_steerd(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_steerd"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn steerd");
    let mut input = child.stdin.take().expect("stdin");
    // steerd exits without reading stdin on a usage error: a broken pipe is fine.
    let _ = input.write_all(stdin);
    drop(input);
    child.wait_with_output().expect("wait for steerd")
}
