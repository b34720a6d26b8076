//! Golden vectors kept as data (`tests/data/`): published bpf_asm programs and bytecode
//! with their exact outputs, and one-line accepted and refused programs. Every expected
//! output and message was produced by bpf_asm built from mainline `tools/bpf`; the
//! published ones (filter.rst, the xt_bpf man page, Envoy) also match their documents.

use asm_bpf::{assemble, assemble_bytes, dis, fmt, AsmErrorKind, Insn};
use common::{cases, data, read};
use std::path::PathBuf;

mod common;

/// Files in `dir` ending in `ext`, sorted.
fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(data(dir))
        .expect("data directory")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no *.{ext} in {dir}");
    out
}

/// Disassembling a program and assembling the text gives the same bytes.
fn assert_round_trip(prog: &[Insn], what: &str) {
    let text = dis::disassemble_exact(prog).unwrap_or_else(|e| panic!("{what}: {e}"));
    let again = assemble(&text).unwrap_or_else(|e| panic!("{what}: {e}\n{text}"));
    assert_eq!(again, prog, "{what}: disassembly\n{text}");
    assert_eq!(
        fmt::parse_bytecode(&fmt::format_default(prog)).as_deref(),
        Ok(prog)
    );
    assert_eq!(
        fmt::parse_bytecode(&fmt::format_c(prog)).as_deref(),
        Ok(prog)
    );
}

#[test]
fn programs_assemble_to_the_published_bytes_in_both_formats() {
    for src_path in files("programs", "bpf") {
        let name = src_path.display().to_string();
        let prog = assemble(&read(&src_path)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let default = read(&src_path.with_extension("out"));
        assert_eq!(fmt::format_default(&prog), default, "{name}");
        let c = read(&src_path.with_extension("out-c"));
        assert_eq!(fmt::format_c(&prog), c, "{name} -c");
        assert_round_trip(&prog, &name);
    }
}

#[test]
fn published_bytecode_parses_and_round_trips() {
    for path in files("bytecode", "txt") {
        let name = path.display().to_string();
        let prog = fmt::parse_bytecode(&read(&path)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            fmt::format_default(&prog),
            read(&path.with_extension("out")),
            "{name}"
        );
        assert_round_trip(&prog, &name);
    }
}

#[test]
fn accepted_one_liners_match_bpf_asm() {
    for (src, expected) in cases("accept.txt") {
        let shown = String::from_utf8_lossy(&src);
        let prog = assemble_bytes(&src).unwrap_or_else(|e| panic!("{shown:?}: {e}"));
        assert_eq!(
            fmt::format_default(&prog),
            format!("{expected}\n"),
            "{shown:?}"
        );
        assert_round_trip(&prog, &shown);
    }
}

#[test]
fn refused_one_liners_fail_where_and_as_bpf_asm_does() {
    for (src, expected) in cases("reject.txt") {
        let shown = String::from_utf8_lossy(&src);
        let e = assemble_bytes(&src).expect_err(&shown);
        assert_eq!(
            format!("{}:{} {}", e.line, e.column, e.message),
            expected,
            "{shown:?}"
        );
        if let AsmErrorKind::UnknownCharacter(c) = e.kind {
            let line = src
                .split(|&b| b == b'\n')
                .nth(e.line as usize - 1)
                .expect("line");
            assert_eq!(line[e.column as usize - 1], c, "{shown:?}: column");
        }
    }
}

fn repeat(line: &str, n: usize) -> String {
    line.repeat(n)
}

#[test]
fn instruction_limit_is_4096() {
    assert_eq!(
        assemble(&repeat("ret #0\n", 4096)).map(|p| p.len()),
        Ok(4096)
    );
    let e = assemble(&repeat("ret #0\n", 4097)).unwrap_err();
    assert_eq!(
        (e.line, e.message.as_str()),
        (4097, "only max 4096 insns allowed!")
    );
    let e = assemble(&(repeat("ret #0\n", 4096) + "end:")).unwrap_err();
    assert_eq!(
        e.kind,
        AsmErrorKind::TooManyInsns,
        "a label on the 4097th position"
    );
    let e = assemble(&(repeat("ret #0\n", 4096) + "ldxb 5*([0]&0xf)")).unwrap_err();
    assert_eq!(
        e.kind,
        AsmErrorKind::LdxbOffset,
        "ldxb is checked before the limit"
    );
    let e = assemble(&(repeat("ret #0\n", 4096) + "?")).unwrap_err();
    assert_eq!(e.kind, AsmErrorKind::UnknownCharacter(b'?'));
}

#[test]
fn conditional_jumps_reach_255_and_no_further() {
    let body = |n| repeat("ld #1\n", n);
    let p = assemble(&format!("jeq #1, far\n{}far: ret a", body(255))).unwrap();
    assert_eq!((p[0].jt, p[0].jf), (255, 0));
    let e = assemble(&format!("jeq #1, far\n{}far: ret a", body(256))).unwrap_err();
    assert_eq!(
        e.message,
        "error: insn #0 jumps to insn #257, which is out of range"
    );
    assert_eq!((e.line, e.column), (1, 9));
    let e = assemble(&format!(
        "jeq #1, near, far\n{}far: ret a\nnear: ret #0",
        body(256)
    ))
    .unwrap_err();
    assert_eq!(
        e.message,
        "error: insn #0 jumps to insn #258, which is out of range"
    );
    let e = assemble("back: ld #1\njeq #1, back\nret a").unwrap_err();
    assert_eq!(
        e.message,
        "error: insn #1 jumps to insn #0, which is out of range"
    );
    let p = assemble(&format!("ja far\n{}far: ret a", body(300))).unwrap();
    assert_eq!(p[0].k, 300, "ja has a 32-bit distance");
    let p = assemble("self: ja self").unwrap();
    assert_eq!(p[0].k, u32::MAX, "backward ja wraps, unchecked");
}

#[test]
fn label_errors_come_after_parsing_in_k_jt_jf_order() {
    let e = assemble("jeq #1, nojt, nojf\nja nok\nret #0").unwrap_err();
    assert_eq!(e.message, "no such label 'nok'!");
    assert_eq!((e.line, e.column), (2, 4));
    let e = assemble("jeq #1, ok, nojf\njeq #1, nojt\nok: ret #0").unwrap_err();
    assert_eq!(e.message, "no such label 'nojt'!");
    let e = assemble("jmp nope\nret #0\n?").unwrap_err();
    assert_eq!(
        e.kind,
        AsmErrorKind::UnknownCharacter(b'?'),
        "lexing comes first"
    );
    let p = assemble("dup: ret #1\ndup: ret #2\nDup: ja dup").unwrap();
    assert_eq!(
        p[2].k,
        u32::MAX - 2,
        "the first definition wins, case-sensitively"
    );
}
