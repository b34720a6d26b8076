//! bpf_asm's two output formats, printed byte for byte, and read back.
//!
//! Required reading: spec section 4 and `bpf_pretty_print`/`bpf_pretty_print_c` in
//! `tools/bpf/bpf_exp.y`. Output: the default format is one line, `N,` then
//! `code jt jf k,` per instruction (a trailing comma, one newline); the `-c` format is
//! `printf("{ %#04x, %2u, %2u, %#010x },\n")` per instruction, where the `#` flag prints
//! no `0x` for zero (`0000`, `0000000000`).
//!
//! Input to [`parse_bytecode`]: either format. The default format is also accepted
//! without its trailing comma (the xt_bpf man page's form) and with newlines instead of
//! commas (tcpdump `-ddd`); the C format accepts any C integer literal (tcpdump `-dd`).
//! Every field is range-checked; nothing here panics.

use crate::Insn;
use core::fmt;
use std::fmt::Write as _;

/// The default format: `N,code jt jf k,...,code jt jf k,` and a newline.
pub fn format_default(prog: &[Insn]) -> String {
    let mut out = format!("{},", prog.len());
    for i in prog {
        let _ = write!(out, "{} {} {} {},", i.code, i.jt, i.jf, i.k);
    }
    out.push('\n');
    out
}

/// The `-c` format: one `{ code, jt, jf, k },` line per instruction.
pub fn format_c(prog: &[Insn]) -> String {
    let mut out = String::new();
    for i in prog {
        let _ = writeln!(
            out,
            "{{ {}, {:2}, {:2}, {} }},",
            c_hex(i.code.into(), 4),
            i.jt,
            i.jf,
            c_hex(i.k, 10)
        );
    }
    out
}

/// printf's `%#0{width}x`: `0x` and lowercase hex zero-padded to `width` in all, except
/// that zero gets no prefix and is all zeros.
fn c_hex(v: u32, width: usize) -> String {
    if v == 0 {
        "0".repeat(width)
    } else {
        format!("{v:#0width$x}")
    }
}

/// Why text is not bytecode in either format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BytecodeError {
    /// 1-based line where the problem is.
    pub(crate) line: usize,
    /// What is wrong.
    pub(crate) message: String,
}

impl fmt::Display for BytecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for BytecodeError {}

fn err(line: usize, message: impl Into<String>) -> BytecodeError {
    BytecodeError {
        line,
        message: message.into(),
    }
}

/// Whether `text` looks like bytecode rather than bpf_asm source: its first
/// non-blank character is a digit (default format) or `{` (C format). bpf_asm source
/// never starts with a number or a brace. A leading C comment (bpf_dbg's dump) is
/// skipped first.
pub fn looks_like_bytecode(text: &str) -> bool {
    let first = text
        .lines()
        .map(strip_c_comments)
        .find(|l| !l.trim().is_empty());
    matches!(
        first.and_then(|l| l.trim_start().bytes().next()),
        Some(b'0'..=b'9' | b'{')
    )
}

/// Reads a program printed in either bpf_asm format (see the module doc).
pub fn parse_bytecode(text: &str) -> Result<Vec<Insn>, BytecodeError> {
    let c_format = text
        .lines()
        .map(strip_c_comments)
        .find(|l| !l.trim().is_empty());
    if c_format.is_some_and(|l| l.trim_start().starts_with('{')) {
        parse_c(text)
    } else {
        parse_default(text)
    }
}

/// `N,code jt jf k,...`: pieces separated by commas or newlines.
fn parse_default(text: &str) -> Result<Vec<Insn>, BytecodeError> {
    let mut pieces = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for piece in line.split(',') {
            pieces.push((
                n + 1,
                piece.trim_matches(|c| c == ' ' || c == '\t' || c == '\r'),
            ));
        }
    }
    while pieces.last().is_some_and(|&(_, p)| p.is_empty()) {
        pieces.pop();
    }
    let Some(&(line, count)) = pieces.first() else {
        return Err(err(1, "no instruction count"));
    };
    let count: usize = decimal(count, u16::MAX.into())
        .map_err(|m| err(line, format!("instruction count: {m}")))?
        .try_into()
        .unwrap_or(usize::MAX);
    let insns = &pieces[1..];
    if insns.len() != count {
        let last = pieces.last().map_or(1, |&(l, _)| l);
        let message = format!("count says {count} instructions, found {}", insns.len());
        return Err(err(last, message));
    }
    insns
        .iter()
        .enumerate()
        .map(|(i, &(line, piece))| {
            let fields: Vec<&str> = piece.split([' ', '\t']).filter(|f| !f.is_empty()).collect();
            fields_to_insn(&fields, decimal)
                .map_err(|m| err(line, format!("instruction {i} `{piece}`: {m}")))
        })
        .collect()
}

/// `{ code, jt, jf, k },` per line; blank lines and C comments are skipped.
fn parse_c(text: &str) -> Result<Vec<Insn>, BytecodeError> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let uncommented = strip_c_comments(line);
        let l = uncommented.trim_matches(|c: char| c.is_ascii_whitespace());
        if l.is_empty() {
            continue;
        }
        let inner = l
            .strip_prefix('{')
            .and_then(|rest| rest.strip_suffix(',').unwrap_or(rest).strip_suffix('}'))
            .ok_or_else(|| err(n + 1, format!("`{l}` is not `{{ code, jt, jf, k }},`")))?;
        let fields: Vec<&str> = inner.split(',').map(str::trim).collect();
        let insn =
            fields_to_insn(&fields, c_integer).map_err(|m| err(n + 1, format!("`{l}`: {m}")))?;
        out.push(insn);
    }
    Ok(out)
}

/// `line` without its `/* ... */` and `// ...` comments (bpf_dbg's dump has a comment
/// line; C arrays often carry one per instruction).
fn strip_c_comments(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    loop {
        let block = rest.find("/*");
        let slashes = rest.find("//");
        match (block, slashes) {
            (Some(b), s) if s.is_none_or(|s| b < s) => {
                out.push_str(&rest[..b]);
                match rest[b + 2..].find("*/") {
                    Some(end) => rest = &rest[b + 2 + end + 2..],
                    None => return out,
                }
            }
            (_, Some(s)) => {
                out.push_str(&rest[..s]);
                return out;
            }
            _ => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

/// Four numbers to an instruction, each checked against its field's width.
fn fields_to_insn(
    fields: &[&str],
    number: fn(&str, u64) -> Result<u64, String>,
) -> Result<Insn, String> {
    let [code, jt, jf, k] = fields else {
        return Err(format!("expected 4 numbers, found {}", fields.len()));
    };
    let field =
        |name: &str, text: &str, max: u64| number(text, max).map_err(|m| format!("{name}: {m}"));
    Ok(Insn {
        code: field("code", code, u16::MAX.into())? as u16,
        jt: field("jt", jt, u8::MAX.into())? as u8,
        jf: field("jf", jf, u8::MAX.into())? as u8,
        k: field("k", k, u32::MAX.into())? as u32,
    })
}

/// An unsigned decimal no larger than `max`.
fn decimal(text: &str, max: u64) -> Result<u64, String> {
    digits(text, 10, max)
}

/// A C integer literal: `0x` hex, `0` octal, or decimal, no larger than `max`.
fn c_integer(text: &str, max: u64) -> Result<u64, String> {
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        digits(hex, 16, max).map_err(|m| format!("`{text}`: {m}"))
    } else if text.len() > 1 && text.starts_with('0') {
        digits(&text[1..], 8, max).map_err(|m| format!("`{text}`: {m}"))
    } else {
        digits(text, 10, max)
    }
}

fn digits(text: &str, radix: u32, max: u64) -> Result<u64, String> {
    if text.is_empty() || !text.chars().all(|c| c.is_digit(radix)) {
        return Err(format!("`{text}` is not a base-{radix} number"));
    }
    match u64::from_str_radix(text, radix) {
        Ok(v) if v <= max => Ok(v),
        _ => Err(format!("`{text}` is larger than {max}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARP: [Insn; 4] = [
        Insn::stmt(0x28, 12),
        Insn::jump(0x15, 0x806, 0, 1),
        Insn::stmt(0x06, 0xffff_ffff),
        Insn::stmt(0x06, 0),
    ];

    #[test]
    fn default_format_has_trailing_comma() {
        assert_eq!(
            format_default(&ARP),
            "4,40 0 0 12,21 0 1 2054,6 0 0 4294967295,6 0 0 0,\n"
        );
    }

    #[test]
    fn c_format_prints_zero_without_prefix() {
        let prog = [Insn::stmt(0, 42), Insn::jump(0xb1, 0, 17, 255)];
        assert_eq!(
            format_c(&prog),
            "{ 0000,  0,  0, 0x0000002a },\n{ 0xb1, 17, 255, 0000000000 },\n"
        );
    }

    #[test]
    fn both_formats_parse_back() {
        assert_eq!(parse_bytecode(&format_default(&ARP)), Ok(ARP.to_vec()));
        assert_eq!(parse_bytecode(&format_c(&ARP)), Ok(ARP.to_vec()));
        let man_page = "4,40 0 0 12,21 0 1 2054,6 0 0 4294967295,6 0 0 0";
        assert_eq!(parse_bytecode(man_page), Ok(ARP.to_vec()));
        let ddd = "4\n40 0 0 12\n21 0 1 2054\n6 0 0 4294967295\n6 0 0 0\n";
        assert_eq!(parse_bytecode(ddd), Ok(ARP.to_vec()));
    }

    #[test]
    fn bad_bytecode_is_refused() {
        for bad in [
            "",
            "2,6 0 0 0,",
            "1,6 0 0,",
            "1,6 0 256 0,",
            "1,65536 0 0 0,",
            "1,6 0 0 4294967296,",
            "1,6 0 0 -1,",
            "1,,6 0 0 0,",
            "{ 0x06, 0, 0 },",
            "{ 0x06, 0, 0, 0x1ffffffff },",
            "{ 0x06, 0, 0, 09 },",
        ] {
            assert!(parse_bytecode(bad).is_err(), "{bad:?}");
        }
    }
}
