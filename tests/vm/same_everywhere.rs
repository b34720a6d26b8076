//! The bytes steerd prints and sends do not depend on the CPU it runs on: 32-bit ARM,
//! RISC-V and big-endian s390x give what x86-64 gives.
//!
//! Input: a steerd binary under test and the x86-64 reference, the static
//! `target/static/steerd-x86_64-unknown-linux-gnu` that `scripts/static.sh` makes (or
//! `STEERD_SAME_REFERENCE`). Output: pass, or a failure naming each output that differs
//! and its first differing line. Compared, byte for byte:
//!
//! - `steerd check --json --sysfs FIXTURE` for every captured tree in `tests/data/sys/`
//!   (with its `.proc` twin where there is one), with `--steer cpu` and `--steer numa`:
//!   topology, plan, the steering program's text and its assembled bytecode;
//! - `steerd bpf asm` of each of those programs (which must also equal the bytecode
//!   `check` printed);
//! - the response bytes of `steerd serve` to every HTTP vector (`tests/data/http/`), each
//!   sent alone on a fresh connection and the write side shut, plus ranges of a sparse
//!   5 GiB file on both sides of 4 GiB. The `Date` value is masked; the files' mtimes are
//!   whole seconds (QEMU 7.2's s390x user mode reports no nanoseconds, which would
//!   change the ETag).
//!
//! `same_bytes_as_the_x86_64_reference` runs the binary of this build (on every target's
//! suite, under its QEMU there); `every_static_binary_gives_the_reference_bytes` runs the
//! other five static builds under their user-mode QEMU from the host suite. Each skips
//! (failing under CI) when the reference or an emulator is missing.

use crate::support;
use crate::support::http_cases;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};
use support::server::{Server, TempDir, PATIENCE};
use support::skip::skip_or_fail;

/// A way to run one steerd: a binary, through an emulator or not.
#[derive(Clone)]
struct Steerd {
    label: String,
    runner: Option<String>,
    binary: PathBuf,
}

impl Steerd {
    fn command(&self) -> Command {
        let mut c = match &self.runner {
            Some(qemu) => {
                let mut c = Command::new(qemu);
                c.arg(&self.binary);
                c
            }
            None => Command::new(&self.binary),
        };
        // The `sources` member of `check --json` reports STEERD_* variables.
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("STEERD_") {
                c.env_remove(name);
            }
        }
        c
    }
}

/// The x86-64 reference, or `None` after the skip line.
fn reference(test: &str) -> Option<Steerd> {
    let binary = std::env::var_os("STEERD_SAME_REFERENCE").map_or_else(
        || crate::support::target_dir().join("static/steerd-x86_64-unknown-linux-gnu"),
        PathBuf::from,
    );
    if !binary.is_file() {
        skip_or_fail(
            test,
            &format!(
                "no x86-64 reference at {} (scripts/static.sh)",
                binary.display()
            ),
        );
        return None;
    }
    Some(Steerd {
        label: "x86_64-unknown-linux-gnu".into(),
        runner: None,
        binary,
    })
}

/// Every captured tree: (name, sysfs, procfs twin).
fn fixtures() -> Vec<(String, PathBuf, Option<PathBuf>)> {
    let all = crate::support::fixtures::all().into_iter();
    all.map(|f| (f.name, f.sysfs, f.procfs)).collect()
}

/// One named output: its bytes.
type Outputs = Vec<(String, Vec<u8>)>;

/// Exit status, stdout and stderr of one run, as bytes to compare.
fn run(s: &Steerd, args: &[&str], stdin: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut child = s
        .command()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", s.label));
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    let mut all = format!("exit {:?}\n", out.status.code()).into_bytes();
    all.extend_from_slice(&out.stdout);
    all.extend_from_slice(b"\n-- stderr\n");
    all.extend_from_slice(&out.stderr);
    (all, out.stdout)
}

/// `check --json` on every fixture and policy, and `bpf asm` of each program.
fn check_outputs(s: &Steerd) -> Outputs {
    let mut out = Vec::new();
    for (name, sysfs, procfs) in fixtures() {
        for policy in ["cpu", "numa"] {
            let mut args = vec!["check", "--json", "--steer", policy];
            args.extend(["--sysfs", sysfs.to_str().unwrap()]);
            if let Some(p) = &procfs {
                args.extend(["--procfs", p.to_str().unwrap()]);
            }
            let (all, stdout) = run(s, &args, b"");
            out.push((format!("check {name} --steer {policy}"), all));
            let Ok(json) = serde_json::from_slice::<serde_json::Value>(&stdout) else {
                continue; // the difference, if any, is in the output above
            };
            let program = &json["program"];
            if let (Some(text), Some(bytecode)) =
                (program["text"].as_str(), program["bytecode"].as_str())
            {
                let (all, stdout) = run(s, &["bpf", "asm"], text.as_bytes());
                assert_eq!(
                    String::from_utf8_lossy(&stdout),
                    bytecode,
                    "{}: bpf asm of {name}'s program differs from check's bytecode",
                    s.label
                );
                out.push((format!("bpf asm {name} --steer {policy}"), all));
            }
        }
    }
    out
}

/// A served tree whose every byte and time is fixed: an index, a small file, a
/// directory, and a sparse 5 GiB file.
fn site() -> TempDir {
    let root = TempDir::new("same");
    let p = root.path();
    std::fs::write(
        p.join("index.html"),
        b"<!doctype html><p>same everywhere</p>\n",
    )
    .unwrap();
    std::fs::write(p.join("a.txt"), b"abcdefghijklmnopqrstuvwxyz\n").unwrap();
    std::fs::create_dir(p.join("dir")).unwrap();
    std::fs::write(p.join("dir/index.html"), b"dir\n").unwrap();
    let big = std::fs::File::create(p.join("big.bin")).unwrap();
    big.set_len(5 << 30).unwrap();
    let when = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for f in ["index.html", "a.txt", "dir/index.html", "big.bin"] {
        let file = std::fs::File::options()
            .write(true)
            .open(p.join(f))
            .unwrap();
        file.set_modified(when).unwrap();
    }
    root
}

/// Responses are compared up to this many bytes: a full answer of the 5 GiB file is
/// told by its head and first bytes.
const READ_LIMIT: usize = 64 << 10;

/// What the server sent for `input` sent alone, the write side then shut (the first
/// [`READ_LIMIT`] bytes), with the `Date` value masked.
fn exchange(server: &Server, input: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect_timeout(&server.addr, PATIENCE).expect("connect");
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    // The server may answer and close before it has read everything (an error ends the
    // connection): a write it refuses is part of the exchange, not a failure.
    let _ = s.write_all(input);
    let _ = s.shutdown(Shutdown::Write);
    let mut raw = Vec::new();
    if let Err(e) = (&mut s).take(READ_LIMIT as u64).read_to_end(&mut raw) {
        raw.extend_from_slice(format!("<read: {:?}>", e.kind()).as_bytes());
    }
    mask_dates(&raw)
}

fn mask_dates(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = memchr::memmem::find(rest, b"\r\nDate: ") {
        let value = at + b"\r\nDate: ".len();
        out.extend_from_slice(&rest[..value]);
        out.extend_from_slice(b"<date>");
        let end = memchr::memmem::find(&rest[value..], b"\r\n").map_or(rest.len(), |e| value + e);
        rest = &rest[end..];
    }
    out.extend_from_slice(rest);
    out
}

/// The response to every HTTP vector and to the ranges of the 5 GiB file.
fn http_outputs(s: &Steerd) -> Outputs {
    let root = site();
    let mut cmd = s.command();
    cmd.arg("serve")
        .arg(root.path())
        .args(["--listen", "127.0.0.1:0", "--workers", "1"]);
    let server = Server::spawn(&mut cmd);
    let mut out = Vec::new();
    for case in http_cases::all_cases() {
        out.push((
            format!("http vector {}", case.line),
            exchange(&server, &case.input),
        ));
    }
    for range in [
        "4294967290-4294967300",
        "5368709110-",
        "-3",
        "0-0,4294967296-4294967296",
    ] {
        let req = format!("GET /big.bin HTTP/1.1\r\nHost: a\r\nRange: bytes={range}\r\n\r\n");
        out.push((
            format!("big.bin range {range}"),
            exchange(&server, req.as_bytes()),
        ));
    }
    let head = b"HEAD /big.bin HTTP/1.1\r\nHost: a\r\n\r\n";
    out.push(("HEAD big.bin".into(), exchange(&server, head)));
    drop(server);
    out
}

fn all_outputs(s: &Steerd) -> Outputs {
    let mut out = check_outputs(s);
    out.extend(http_outputs(s));
    out
}

/// The names of the outputs of `got` that differ from `want`, each with its first
/// differing line.
fn differences(want: &Outputs, got: &Outputs) -> Vec<String> {
    assert_eq!(want.len(), got.len(), "not the same outputs");
    let mut diffs = Vec::new();
    for ((name, w), (_, g)) in want.iter().zip(got) {
        if w == g {
            continue;
        }
        let (w, g) = (String::from_utf8_lossy(w), String::from_utf8_lossy(g));
        let line = w.lines().zip(g.lines()).position(|(a, b)| a != b);
        let at = line.unwrap_or_else(|| w.lines().count().min(g.lines().count()));
        diffs.push(format!(
            "{name}: line {}:\n  x86-64: {:?}\n  here:   {:?}",
            at + 1,
            w.lines().nth(at).unwrap_or("<end>"),
            g.lines().nth(at).unwrap_or("<end>")
        ));
    }
    diffs
}

fn compare(want: &Outputs, s: &Steerd) -> Vec<String> {
    let got = all_outputs(s);
    let diffs = differences(want, &got);
    println!(
        "{}: {} outputs, {} differ from x86-64",
        s.label,
        got.len(),
        diffs.len()
    );
    diffs
        .into_iter()
        .map(|d| format!("{}: {d}", s.label))
        .collect()
}

#[test]
fn same_bytes_as_the_x86_64_reference() {
    let Some(reference) = reference("same_bytes_as_the_x86_64_reference") else {
        return;
    };
    let want = all_outputs(&reference);
    let here = Steerd {
        label: format!("this build ({})", std::env::consts::ARCH),
        runner: None,
        binary: env!("CARGO_BIN_EXE_steerd").into(),
    };
    let diffs = compare(&want, &here);
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

/// The static builds of `scripts/static.sh` other than the reference, with the user-mode
/// QEMU each needs on an x86-64 host.
const STATIC: &[(&str, Option<&str>)] = &[
    ("x86_64-unknown-linux-musl", None),
    ("aarch64-unknown-linux-musl", Some("qemu-aarch64-static")),
    ("armv7-unknown-linux-musleabihf", Some("qemu-arm-static")),
    ("riscv64gc-unknown-linux-gnu", Some("qemu-riscv64-static")),
    ("s390x-unknown-linux-musl", Some("qemu-s390x-static")),
];

#[test]
fn every_static_binary_gives_the_reference_bytes() {
    let test = "every_static_binary_gives_the_reference_bytes";
    let Some(reference) = reference(test) else {
        return;
    };
    let want = all_outputs(&reference);
    let mut diffs = Vec::new();
    for (target, qemu) in STATIC {
        let binary = crate::support::target_dir().join(format!("static/steerd-{target}"));
        let missing = if !binary.is_file() {
            Some(format!("no {} (scripts/static.sh)", binary.display()))
        } else if qemu.is_some_and(|q| !on_path(q)) {
            Some(format!("{} is not installed", qemu.unwrap()))
        } else {
            None
        };
        if let Some(why) = missing {
            skip_or_fail(&format!("{test}/{target}"), &why);
            continue;
        }
        let s = Steerd {
            label: target.to_string(),
            runner: qemu.map(String::from),
            binary,
        };
        diffs.extend(compare(&want, &s));
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}
