//! `steerd bpf check` and `steerd bpf run` through the real binary.
//!
//! `check` must give every checker vector's verdict and message (the same vectors the
//! asm-bpf kernel-oracle test attaches to real sockets); `run` must print the values of
//! `tests/data/bpf_run.txt` and what the interpreter computes (which asm-bpf's
//! kernel-oracle test compares with the kernel's reuseport selection); bad input and
//! bad flags get their exit statuses.

use crate::support::server::run_steerd;

use asm_bpf::interp::{self, Context};
use std::process::Output;

/// Runs `steerd bpf ARGS` with `stdin` as standard input.
fn steerd(args: &[&str], stdin: &str) -> Output {
    let argv: Vec<&str> = std::iter::once("bpf").chain(args.iter().copied()).collect();
    run_steerd(&argv, stdin.as_bytes())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// (exit status, stdout, stderr)
fn outcome(args: &[&str], stdin: &str) -> (i32, String, String) {
    let out = steerd(args, stdin);
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

const STEER_BY_CPU: &str = "; one listener per 3 CPUs\nld #cpu\nmod #3\nret a\n";

#[test]
fn check_accepts_source_from_a_file_and_stdin() {
    let dir = std::env::temp_dir().join(format!("steerd-bpf-exec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("steer.bpf");
    std::fs::write(&file, STEER_BY_CPU).expect("write program");
    let path = file.to_str().expect("utf-8 path");
    assert_eq!(
        outcome(&["check", path], ""),
        (0, "ok\n".into(), String::new())
    );
    assert_eq!(
        outcome(&["check", "-"], STEER_BY_CPU),
        (0, "ok\n".into(), String::new())
    );
    assert_eq!(
        outcome(&["check"], STEER_BY_CPU),
        (0, "ok\n".into(), String::new())
    );
    std::fs::remove_dir_all(&dir).expect("remove temp dir");
}

#[test]
fn check_gives_every_vector_its_verdict_and_rule() {
    let vectors = include_str!("../../asm-bpf/tests/data/check_vectors.txt");
    let mut cases = 0;
    for line in vectors
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let cols: Vec<&str> = line.split(" | ").collect();
        let (expect, bytecode) = (cols[0], cols[1]);
        let (status, stdout, stderr) = outcome(&["check"], bytecode);
        if expect == "ok" {
            assert_eq!((status, stdout.as_str()), (0, "ok\n"), "{line}\n{stderr}");
        } else {
            assert_eq!(status, 1, "{line}");
            assert_eq!(stdout, "", "{line}");
            assert_eq!(
                stderr,
                format!("steerd: bpf: check: <stdin>: {expect}\n"),
                "{line}"
            );
        }
        cases += 1;
    }
    assert!(cases > 90, "{cases} vectors");
}

#[test]
fn check_refuses_ret_x_from_source_and_reports_input_errors() {
    let (status, stdout, stderr) = outcome(&["check"], "ld #1\nret x\n");
    assert_eq!((status, stdout.as_str()), (1, ""));
    assert_eq!(
        stderr,
        "steerd: bpf: check: <stdin>: insn 1: ret x is not allowed (opcode 0x000e)\n"
    );
    // Not a program at all: exit 1 with the loader's message.
    let (status, _, stderr) = outcome(&["check"], "ld #1\nbogus\n");
    assert_eq!(status, 1);
    assert!(
        stderr.starts_with("steerd: bpf: check: <stdin>: "),
        "{stderr}"
    );
    let (status, _, stderr) = outcome(&["check", "/nonexistent/steerd.bpf"], "");
    assert_eq!(status, 1);
    assert!(stderr.contains("cannot read"), "{stderr}");
    // Usage errors exit 2.
    assert_eq!(outcome(&["check", "a", "b"], "").0, 2);
    assert_eq!(outcome(&["check", "--cpu", "1"], "").0, 2);
}

#[test]
fn run_prints_the_interpreters_value_for_each_context_field() {
    let prog = |src: &str| asm_bpf::assemble(src).expect("assemble");
    let cases: [(&str, &[&str], Context); 8] = [
        (
            STEER_BY_CPU,
            &["--cpu", "7"],
            Context {
                cpu: 7,
                ..Context::default()
            },
        ),
        (
            "ld #queue\nret a\n",
            &["--queue", "0x1f"],
            Context {
                queue: 31,
                ..Context::default()
            },
        ),
        (
            "ld #rxhash\nret a\n",
            &["--rxhash=4294967295"],
            Context {
                rxhash: u32::MAX,
                ..Context::default()
            },
        ),
        (
            "ld #rand\nret a\n",
            &["--rand", "12345"],
            Context {
                rand: 12345,
                ..Context::default()
            },
        ),
        (
            "ld [0]\nret a\n",
            &["--payload", "0A0b0c0D"],
            Context::with_packet(vec![10, 11, 12, 13]),
        ),
        // A SYN has no payload: the load aborts and the program returns 0.
        ("ld [0]\nret #5\n", &[], Context::default()),
        (
            "ld #len\nret a\n",
            &["--len", "100", "--payload", "01"],
            Context {
                len: 100,
                ..Context::with_packet(vec![1])
            },
        ),
        (
            "ldh [2]\nret a\n",
            &["--len", "4", "--payload", "ffff"],
            Context {
                len: 4,
                ..Context::with_packet(vec![0xff, 0xff])
            },
        ),
    ];
    for (src, flags, ctx) in cases {
        let mut args = vec!["run"];
        args.extend_from_slice(flags);
        let want = interp::run(&prog(src), &ctx);
        assert_eq!(
            outcome(&args, src),
            (0, format!("{want}\n"), String::new()),
            "{src} {flags:?}"
        );
    }
    // The same values written out, so a wrong interpreter cannot hide behind itself.
    assert_eq!(outcome(&["run", "--cpu", "7"], STEER_BY_CPU).1, "1\n");
    assert_eq!(
        outcome(&["run", "--payload", "0a0b0c0d"], "ld [0]\nret a\n").1,
        "168496141\n"
    );
    assert_eq!(
        outcome(
            &["run", "--len", "4", "--payload", "ffff"],
            "ldh [2]\nret a\n"
        )
        .1,
        "0\n"
    );
}

#[test]
fn run_gives_every_vector_its_value() {
    let vectors = include_str!("../data/bpf_run.txt");
    let mut cases = 0;
    for line in vectors
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let cols: Vec<&str> = line.split(" | ").collect();
        assert_eq!(cols.len(), 4, "bpf_run.txt: 4 columns in {line:?}");
        let mut args = vec!["run"];
        args.extend(cols[1].split_whitespace());
        let (status, stdout, stderr) = outcome(&args, cols[2]);
        match cols[0].strip_prefix("refused: ") {
            Some(rule) => {
                assert_eq!((status, stdout.as_str()), (1, ""), "{line}");
                assert_eq!(
                    stderr,
                    format!("steerd: bpf: run: <stdin>: {rule}\n"),
                    "{line}"
                );
            }
            None => assert_eq!(outcome_ok(status, &stdout, &stderr), cols[0], "{line}"),
        }
        cases += 1;
    }
    assert!(cases >= 28, "{cases} vectors");
}

/// The printed value of a successful run (asserting it was one).
fn outcome_ok<'a>(status: i32, stdout: &'a str, stderr: &str) -> &'a str {
    assert_eq!((status, stderr), (0, ""), "stdout {stdout:?}");
    stdout.strip_suffix('\n').expect("one line")
}

#[test]
fn run_takes_bytecode_and_refuses_what_the_kernel_refuses() {
    assert_eq!(
        outcome(&["run", "--cpu", "3"], "2,32 0 0 4294963236,22 0 0 0,").1,
        "3\n"
    );
    let (status, stdout, stderr) = outcome(&["run"], "1,14 0 0 0,");
    assert_eq!((status, stdout.as_str()), (1, ""));
    assert!(stderr.contains("insn 0: ret x is not allowed"), "{stderr}");
}

#[test]
fn run_rejects_bad_flag_values_with_status_2() {
    for flags in [
        &["--cpu", "abc"][..],
        &["--cpu", "4294967296"],
        &["--cpu", "+1"],
        &["--cpu", "-1"],
        &["--queue", "65536"],
        &["--rxhash", "0x"],
        &["--rand", ""],
        &["--payload", "abc"],
        &["--payload", "0g"],
        &["--payload", "+1"],
        &["--len", "1", "--payload", "0102"],
        &["--len"],
        &["--bogus", "1"],
        &["a.bpf", "b.bpf"],
    ] {
        let mut args = vec!["run"];
        args.extend_from_slice(flags);
        let (status, stdout, stderr) = outcome(&args, STEER_BY_CPU);
        assert_eq!(status, 2, "{flags:?}: {stderr}");
        assert_eq!(stdout, "", "{flags:?}");
        assert!(
            stderr.starts_with("steerd: bpf: run: "),
            "{flags:?}: {stderr}"
        );
    }
}
