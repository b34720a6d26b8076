//! The real bpf_asm as the oracle, when one is at hand: every data vector and thousands of
//! seeded random sources (well-formed programs and token soup) must give the same stdout
//! bytes, exit status and stderr line as `$BPF_ASM` (and `$BPF_ASM -c`).
//!
//! Opt-in: set `BPF_ASM` to a bpf_asm binary (`make -C tools/bpf bpf_asm` in a kernel tree
//! from Feb 2021 or later; `scripts/bpf-asm.sh` builds one from Debian's linux-source
//! package and prints its path, as `.ci/run` does); `BPF_ASM_CASES` sets the random count
//! (default 2000). Without `BPF_ASM` the test prints why it skipped, and fails under CI.

use asm_bpf::{assemble_bytes, fmt};
use common::{cases, data, Rng};
use std::io::Write;
use std::process::{Command, Stdio};

mod common;

/// What a run of bpf_asm (or of asm-bpf in its place) shows the user.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    status: i32,
    stdout: Vec<u8>,
    stderr: String,
}

fn real(bpf_asm: &str, src: &[u8], c_format: bool) -> Seen {
    let mut child = Command::new(bpf_asm)
        .args(if c_format { &["-c"][..] } else { &[] })
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run $BPF_ASM");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(src).expect("write stdin");
    drop(stdin);
    let out = child.wait_with_output().expect("wait for bpf_asm");
    Seen {
        status: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn ours(src: &[u8], c_format: bool) -> Seen {
    match assemble_bytes(src) {
        Ok(prog) => Seen {
            status: 0,
            stdout: match c_format {
                true => fmt::format_c(&prog).into_bytes(),
                false => fmt::format_default(&prog).into_bytes(),
            },
            stderr: String::new(),
        },
        Err(e) => Seen {
            status: 1,
            stdout: e.stdout_bytes(),
            stderr: format!("{}\n", e.message),
        },
    }
}

const MNEMONICS: &[&str] = &[
    "ldb", "ldh", "ld", "ldi", "ldx", "ldxi", "ldxb", "st", "stx", "jmp", "ja", "jeq", "jneq",
    "jne", "jlt", "jle", "jgt", "jge", "jset", "add", "sub", "mul", "div", "mod", "neg", "and",
    "xor", "or", "lsh", "rsh", "ret", "tax", "txa",
];
const OPERANDS: &[&str] = &[
    "#N",
    "N",
    "#len",
    "len",
    "#cpu",
    "rand",
    "M[N]",
    "[N]",
    "[x + N]",
    "[%x+N]",
    "[x+N]",
    "N*([N]&N)",
    "4*([N]&0xf)",
    "x",
    "%x",
    "a",
    "%a",
    "#N, L",
    "x, L",
    "#N, L, L",
    "%x,L,L",
    "L",
];
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "4",
    "15",
    "0xf",
    "017",
    "0b1111",
    "-1",
    "+5",
    "08",
    "0x",
    "-0",
    "4294967296",
    "0x1ffffffff",
    "99999999999999999999",
    "-99999999999999999999",
    "0XfF",
    "12abc",
];
const LABELS: &[&str] = &["l1", "l2", "out", "Out", "drop", "return", "_x"];
/// Forms bpf_asm accepts, `T` standing for a jump target.
const VALID: &[(&str, &[&str])] = &[
    (
        "ld",
        &[
            "#N", "#len", "len", "#cpu", "rand", "M[N]", "[N]", "[x + N]", "[%x+N]",
        ],
    ),
    ("ldh", &["[N]", "[x + N]", "#cpu", "proto"]),
    ("ldb", &["[N]", "[x+ N]", "#vlan_tpid"]),
    ("ldi", &["#N", "N"]),
    ("ldxi", &["#N", "N"]),
    ("ldx", &["#N", "len", "M[N]", "4*([N]&0xf)"]),
    ("ldxb", &["4*([N]&15)"]),
    ("st", &["M[N]"]),
    ("stx", &["M[N]"]),
    ("ja", &["T"]),
    ("jeq", &["#N, T", "x, T", "#N, T, T", "%x,T,T"]),
    ("jset", &["#N, T", "x, T, T"]),
    ("jne", &["#N, T", "x, T"]),
    ("jlt", &["#N, T", "%x, T"]),
    ("add", &["#N", "x", "%x"]),
    ("lsh", &["#N", "x"]),
    ("neg", &[""]),
    ("tax", &[""]),
    ("ret", &["#N", "a", "x", "%a"]),
];
const GOOD_NUMBERS: &[&str] = &["0", "1", "-1", "+7", "0x10", "017", "0b101", "4294967295"];

/// A program bpf_asm accepts, unless a jump lands too far (rarely).
fn valid_program(rng: &mut Rng) -> String {
    let n = 1 + rng.below(30);
    let mut out = String::new();
    for i in 0..n {
        let (mnemonic, forms) = rng.pick(VALID);
        let mut s = format!("l{i}: {mnemonic} {}", rng.pick(forms));
        while let Some(at) = s.find('N') {
            let k = *rng.pick(GOOD_NUMBERS);
            s.replace_range(at..at + 1, k);
        }
        while let Some(at) = s.find('T') {
            let target = format!("l{}", i + 1 + rng.below(n - i));
            s.replace_range(at..at + 1, &target);
        }
        out.push_str(&s);
        out.push('\n');
    }
    out + &format!("l{n}: ret #0\n")
}

const SOUP: &[&str] = &[
    "ld", "ret", "jeq", "ja", "x", "X", "a", "M", "#", "%", "[", "]", "(", ")", "+", "-", "*", "&",
    ":", ",", " ", "\t", "\n", "\n", "/*", "*/", "/", ";", "0", "1", "4", "0x", "0b", "f", "len",
    "cpu", "lbl", "_", "\r", "?", "07", "08", "+1", "-1",
];

/// A source line that is usually close to valid.
fn instruction(rng: &mut Rng) -> String {
    let mut s = format!("{} {}", rng.pick(MNEMONICS), rng.pick(OPERANDS));
    while let Some(at) = s.find('N') {
        let n = match rng.below(3) {
            0 => rng.pick(NUMBERS).to_string(),
            _ => rng.below(300).to_string(),
        };
        s.replace_range(at..at + 1, &n);
    }
    while let Some(at) = s.find('L') {
        let label = *rng.pick(LABELS);
        s.replace_range(at..at + 1, label);
    }
    if rng.below(4) == 0 {
        s = format!("{}: {s}", rng.pick(LABELS));
    }
    s
}

fn random_source(rng: &mut Rng) -> Vec<u8> {
    let n = rng.below(12);
    let parts: Vec<String> = match rng.below(4) {
        0 => (0..n * 2).map(|_| rng.pick(SOUP).to_string()).collect(),
        1 => vec![valid_program(rng)],
        _ => (0..n)
            .map(|_| instruction(rng) + *rng.pick(&["\n", " ", "\n\t"]))
            .collect(),
    };
    parts.concat().into_bytes()
}

/// Every source the data files hold.
fn vector_sources() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(data("programs")).expect("programs") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "bpf") {
            out.push(std::fs::read(path).expect("read vector"));
        }
    }
    for file in ["accept.txt", "reject.txt"] {
        out.extend(cases(file).into_iter().map(|(src, _)| src));
    }
    out
}

#[test]
fn asm_bpf_behaves_as_the_real_bpf_asm() {
    let Ok(bpf_asm) = std::env::var("BPF_ASM") else {
        common::skipped("set BPF_ASM=/path/to/bpf_asm to compare with the real bpf_asm");
        return;
    };
    let cases: u64 = std::env::var("BPF_ASM_CASES").map_or(2000, |n| n.parse().expect("count"));
    let mut rng = Rng(0x0bad_5eed);
    let mut sources = vector_sources();
    sources.extend((0..cases).map(|_| random_source(&mut rng)));
    let (mut accepted, mut differences) = (0, 0);
    for src in &sources {
        for c_format in [false, true] {
            let (want, got) = (real(&bpf_asm, src, c_format), ours(src, c_format));
            if want != got {
                differences += 1;
                eprintln!(
                    "{:?} (-c: {c_format}):\n  bpf_asm {want:?}\n  asm-bpf {got:?}",
                    String::from_utf8_lossy(src)
                );
            } else if want.status == 0 && !c_format {
                accepted += 1;
            }
        }
    }
    println!(
        "{} sources, {accepted} accepted, {differences} differences",
        sources.len()
    );
    assert_eq!(differences, 0);
}
