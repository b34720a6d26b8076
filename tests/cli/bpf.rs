//! `steerd bpf asm|dis` through the real binary: stdout bytes and exit statuses as bpf_asm
//! gives them, input from a file, from `-` and from stdin by default, errors with
//! FILE:LINE:COLUMN on stderr, and usage errors.

use crate::support::server::run_steerd;

use std::path::{Path, PathBuf};

const ARP_DEFAULT: &str = "4,40 0 0 12,21 0 1 2054,6 0 0 4294967295,6 0 0 0,\n";
const ARP_C: &str = "\
{ 0x28,  0,  0, 0x0000000c },
{ 0x15,  0,  1, 0x00000806 },
{ 0x06,  0,  0, 0xffffffff },
{ 0x06,  0,  0, 0000000000 },
";

fn vector(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("asm-bpf/tests/data/programs")
        .join(name)
}

struct Output {
    status: i32,
    stdout: Vec<u8>,
    stderr: String,
}

/// Runs `steerd ARGS` with `stdin` as its standard input.
fn steerd(args: &[&str], stdin: &[u8]) -> Output {
    let out = run_steerd(args, stdin);
    Output {
        status: out.status.code().expect("exit status"),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn arp_source() -> Vec<u8> {
    std::fs::read(vector("filter-rst-arp.bpf")).expect("ARP vector")
}

#[test]
fn asm_prints_bpf_asm_default_format_from_a_file() {
    let path = vector("filter-rst-arp.bpf");
    let out = steerd(&["bpf", "asm", path.to_str().expect("utf-8 path")], b"");
    assert_eq!((out.status, out.stderr.as_str()), (0, ""));
    assert_eq!(String::from_utf8_lossy(&out.stdout), ARP_DEFAULT);
}

#[test]
fn asm_c_format_from_dash_and_from_plain_stdin() {
    for args in [&["bpf", "asm", "-c", "-"][..], &["bpf", "asm", "-c"][..]] {
        let out = steerd(args, &arp_source());
        assert_eq!((out.status, out.stderr.as_str()), (0, ""), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), ARP_C, "{args:?}");
    }
    let out = steerd(&["bpf", "asm"], &arp_source());
    assert_eq!(String::from_utf8_lossy(&out.stdout), ARP_DEFAULT);
}

#[test]
fn asm_error_exits_1_with_line_and_column_on_stderr() {
    let out = steerd(&["bpf", "asm"], b"ld #1\n  ret 0\n");
    assert_eq!(out.status, 1);
    assert!(
        out.stdout.is_empty(),
        "nothing on stdout for a syntax error"
    );
    assert_eq!(
        out.stderr,
        "steerd: bpf: asm: <stdin>:2:7: error: syntax error at line 2\n"
    );
    let out = steerd(&["bpf", "asm"], b"jmp nowhere\n");
    assert_eq!(out.status, 1);
    assert_eq!(
        out.stderr,
        "steerd: bpf: asm: <stdin>:1:5: no such label 'nowhere'!\n"
    );
}

#[test]
fn asm_unknown_character_goes_to_stdout_as_bpf_asm_prints_it() {
    let out = steerd(&["bpf", "asm", "-"], b"ret #0\r\n");
    assert_eq!(out.status, 1);
    assert_eq!(out.stdout, b"unknown character '\r'");
    assert!(out
        .stderr
        .contains("<stdin>:1:7: error: lex unknown character at line 1"));
}

#[test]
fn dis_output_reassembles_to_the_same_bytes() {
    let bytecode = "6,40 0 0 12,21 0 3 2048,48 0 0 23,21 0 1 1,6 0 0 65535,6 0 0 0\n";
    let dis = steerd(&["bpf", "dis", "-"], bytecode.as_bytes());
    assert_eq!((dis.status, dis.stderr.as_str()), (0, ""));
    let again = steerd(&["bpf", "asm"], &dis.stdout);
    assert_eq!(again.status, 0, "{}", again.stderr);
    assert_eq!(
        String::from_utf8_lossy(&again.stdout),
        "6,40 0 0 12,21 0 3 2048,48 0 0 23,21 0 1 1,6 0 0 65535,6 0 0 0,\n"
    );
    let c = steerd(&["bpf", "dis"], ARP_C.as_bytes());
    let again = steerd(&["bpf", "asm"], &c.stdout);
    assert_eq!(String::from_utf8_lossy(&again.stdout), ARP_DEFAULT);
}

#[test]
fn dis_flags_what_bpf_asm_cannot_express() {
    let out = steerd(&["bpf", "dis"], b"2,21 0 9 1,6 0 0 0,");
    assert_eq!(out.status, 1);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("raw { 0x15,  0,  9, 0x00000001 }"), "{text}");
    assert!(
        out.stderr.contains("insn #0 has no bpf_asm form"),
        "{}",
        out.stderr
    );
    assert_eq!(
        steerd(&["bpf", "asm"], &out.stdout).status,
        1,
        "raw lines never assemble"
    );
}

#[test]
fn usage_errors_exit_2() {
    for (args, usage) in [
        (&["bpf"][..], "usage: steerd bpf asm"),
        (&["bpf", "frob"], "usage: steerd bpf asm"),
        (
            &["bpf", "asm", "-x"],
            "usage: steerd bpf asm [-c] [FILE|-]\n",
        ),
        (
            &["bpf", "asm", "a", "b"],
            "usage: steerd bpf asm [-c] [FILE|-]\n",
        ),
        (&["bpf", "dis", "-c"], "usage: steerd bpf dis [FILE|-]\n"),
    ] {
        let out = steerd(args, b"");
        assert_eq!(out.status, 2, "{args:?}");
        assert!(out.stderr.contains(usage), "{args:?}: {}", out.stderr);
    }
    let help = steerd(&["bpf", "--help"], b"");
    assert_eq!(help.status, 0);
    assert!(String::from_utf8_lossy(&help.stdout).starts_with("usage: steerd bpf asm"));
    let help = steerd(&["bpf", "asm", "--help"], b"");
    assert_eq!(help.status, 0, "{}", help.stderr);
    assert!(String::from_utf8_lossy(&help.stdout).contains("    -c "));
}

#[test]
fn unreadable_file_exits_1() {
    let out = steerd(&["bpf", "asm", "/nonexistent/steerd-test.bpf"], b"");
    assert_eq!(out.status, 1);
    assert!(
        out.stderr
            .contains("cannot read /nonexistent/steerd-test.bpf"),
        "{}",
        out.stderr
    );
}
