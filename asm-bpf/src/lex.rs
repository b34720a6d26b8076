//! Assembler stage 1: bpf_asm source bytes to tokens, one at a time, on demand.
//!
//! Required reading: spec sections 2.1 and 2.2, and `tools/bpf/bpf_exp.l`. The scanner
//! there is flex with `%option caseless yylineno 8bit`; this one reproduces it by trying
//! every rule at the current position and keeping the longest match, the earlier rule
//! winning a tie. Rule order: mnemonics, `#?len`, `#?extension`, punctuation and the
//! letters `x a M`, numbers (hex, binary, decimal, octal), identifiers, then the rules
//! that produce nothing (block comment, `;` comment, `#` comment in column 1,
//! whitespace), then "any other byte", which is the lexer error.
//!
//! Tokens are produced lazily because bpf_asm's parser asks for them lazily: a bad byte
//! after the first syntax error is never seen. Positions are 1-based; the column counts
//! bytes. The lexer never panics and never allocates.

use crate::names::{Op, EXTENSIONS, MNEMONICS};

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tok<'a> {
    /// A mnemonic.
    Op(Op),
    /// `len` or `#len`.
    Len,
    /// An ancillary name (with or without `#`): its `SKF_AD_*` offset.
    Ext(u32),
    /// One of `: , # % [ ] ( ) + * &`, or `x`, `a`, `M` (stored lowercase: `x`, `a`, `m`).
    Punct(u8),
    /// A number, already converted as bpf_asm converts it.
    Num(u32),
    /// An identifier (a label), case preserved.
    Label(&'a [u8]),
    /// End of input.
    Eof,
}

/// A token and where it starts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Token<'a> {
    pub(crate) tok: Tok<'a>,
    pub(crate) line: u32,
    pub(crate) column: u32,
}

/// A byte no rule accepts, and where it is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct UnknownByte {
    pub(crate) byte: u8,
    pub(crate) line: u32,
    pub(crate) column: u32,
}

/// The scanner: a cursor over the source with flex's line counter.
pub(crate) struct Lexer<'a> {
    src: &'a [u8],
    pos: usize,
    line: u32,
    line_start: usize,
}

/// What the longest match at a position turned out to be.
#[derive(Clone, Copy)]
enum Rule {
    Op(Op),
    Len,
    Ext(u32),
    Punct(u8),
    Hex,
    Bin,
    Dec,
    Oct,
    Ident,
    Skip,
    Unknown,
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(src: &'a [u8]) -> Lexer<'a> {
        Lexer {
            src,
            pos: 0,
            line: 1,
            line_start: 0,
        }
    }

    /// The next token, skipping comments and whitespace.
    pub(crate) fn next_token(&mut self) -> Result<Token<'a>, UnknownByte> {
        loop {
            let line = self.line;
            let column = (self.pos - self.line_start + 1) as u32;
            if self.pos >= self.src.len() {
                return Ok(Token {
                    tok: Tok::Eof,
                    line,
                    column,
                });
            }
            let (len, rule) = self.longest_match();
            let text = &self.src[self.pos..self.pos + len];
            self.advance(len);
            let tok = match rule {
                Rule::Skip => continue,
                Rule::Unknown => {
                    return Err(UnknownByte {
                        byte: text[0],
                        line,
                        column,
                    })
                }
                Rule::Op(op) => Tok::Op(op),
                Rule::Len => Tok::Len,
                Rule::Ext(off) => Tok::Ext(off),
                Rule::Punct(p) => Tok::Punct(p),
                Rule::Hex => Tok::Num(hex_value(&text[2..])),
                Rule::Bin => Tok::Num(signed_value(&text[2..], 2)),
                Rule::Dec => Tok::Num(signed_value(text, 10)),
                Rule::Oct => Tok::Num(signed_value(&text[1..], 8)),
                Rule::Ident => Tok::Label(text),
            };
            return Ok(Token { tok, line, column });
        }
    }

    /// Consumes `len` bytes, counting newlines as flex's `yylineno` does.
    fn advance(&mut self, len: usize) {
        for i in self.pos..self.pos + len {
            if self.src[i] == b'\n' {
                self.line += 1;
                self.line_start = i + 1;
            }
        }
        self.pos += len;
    }

    /// flex's choice at the current position: the longest match, earliest rule on a tie.
    fn longest_match(&self) -> (usize, Rule) {
        let s = &self.src[self.pos..];
        let at_bol = self.pos == 0 || self.src[self.pos - 1] == b'\n';
        let mut best = (0, Rule::Unknown);
        let mut offer = |len: usize, rule: Rule| {
            if len > best.0 {
                best = (len, rule);
            }
        };
        if let Some((len, op)) = longest_word(s, MNEMONICS) {
            offer(len, Rule::Op(op));
        }
        offer(hashed_word(s, "len"), Rule::Len);
        for &(name, off) in EXTENSIONS {
            offer(hashed_word(s, name), Rule::Ext(off));
        }
        if let Some(p) = punct(s[0]) {
            offer(1, Rule::Punct(p));
        }
        offer(hex_len(s), Rule::Hex);
        offer(bin_len(s), Rule::Bin);
        offer(dec_len(s), Rule::Dec);
        offer(oct_len(s), Rule::Oct);
        offer(ident_len(s), Rule::Ident);
        offer(block_comment_len(s), Rule::Skip);
        offer(line_comment_len(s, at_bol), Rule::Skip);
        offer(space_len(s), Rule::Skip);
        if s[0] != b'\n' {
            offer(1, Rule::Unknown);
        }
        best
    }
}

/// The longest table word that `s` starts with (any case).
fn longest_word<T: Copy>(s: &[u8], table: &[(&str, T)]) -> Option<(usize, T)> {
    table
        .iter()
        .filter(|(w, _)| starts_with_caseless(s, w))
        .max_by_key(|(w, _)| w.len())
        .map(|&(w, v)| (w.len(), v))
}

/// Length of `"#"?word` at the start of `s` (any case), or 0.
fn hashed_word(s: &[u8], word: &str) -> usize {
    let hash = usize::from(s.first() == Some(&b'#'));
    if starts_with_caseless(&s[hash..], word) {
        hash + word.len()
    } else {
        0
    }
}

fn starts_with_caseless(s: &[u8], word: &str) -> bool {
    s.len() >= word.len() && s[..word.len()].eq_ignore_ascii_case(word.as_bytes())
}

/// The single-character tokens; `x`, `a` and `M` in either case, stored lowercase.
fn punct(b: u8) -> Option<u8> {
    match b {
        b':' | b',' | b'#' | b'%' | b'[' | b']' | b'(' | b')' | b'+' | b'*' | b'&' => Some(b),
        b'x' | b'X' | b'a' | b'A' | b'm' | b'M' => Some(b.to_ascii_lowercase()),
        _ => None,
    }
}

/// Count of leading bytes of `s` satisfying `f`.
fn run(s: &[u8], f: impl Fn(u8) -> bool) -> usize {
    s.iter().take_while(|&&b| f(b)).count()
}

/// `0[xX][0-9a-fA-F]+`
fn hex_len(s: &[u8]) -> usize {
    prefixed_len(s, b'x', |b| b.is_ascii_hexdigit())
}

/// `0[bB][01]+`
fn bin_len(s: &[u8]) -> usize {
    prefixed_len(s, b'b', |b| b == b'0' || b == b'1')
}

fn prefixed_len(s: &[u8], letter: u8, digit: impl Fn(u8) -> bool) -> usize {
    if s.len() < 3 || s[0] != b'0' || s[1].to_ascii_lowercase() != letter {
        return 0;
    }
    match run(&s[2..], digit) {
        0 => 0,
        n => 2 + n,
    }
}

/// `0|[-+]?[1-9][0-9]*`
fn dec_len(s: &[u8]) -> usize {
    if s[0] == b'0' {
        return 1;
    }
    let sign = usize::from(s[0] == b'-' || s[0] == b'+');
    match s.get(sign) {
        Some(b'1'..=b'9') => sign + 1 + run(&s[sign + 1..], |b| b.is_ascii_digit()),
        _ => 0,
    }
}

/// `0[0-7]+`
fn oct_len(s: &[u8]) -> usize {
    if s[0] != b'0' {
        return 0;
    }
    match run(&s[1..], |b| (b'0'..=b'7').contains(&b)) {
        0 => 0,
        n => 1 + n,
    }
}

/// `[a-zA-Z_][a-zA-Z0-9_]+`: at least two characters.
fn ident_len(s: &[u8]) -> usize {
    if !(s[0].is_ascii_alphabetic() || s[0] == b'_') {
        return 0;
    }
    match run(&s[1..], |b| b.is_ascii_alphanumeric() || b == b'_') {
        0 => 0,
        n => 1 + n,
    }
}

/// `"/*"([^*]|\*[^/])*"*/"`: inside the body a `*` always takes the byte after it, so
/// the comment closes at the first `*/` whose `*` starts a body unit. Without such a
/// close the rule does not match at all.
fn block_comment_len(s: &[u8]) -> usize {
    if !s.starts_with(b"/*") {
        return 0;
    }
    let mut i = 2;
    while i < s.len() {
        if s[i] != b'*' {
            i += 1;
        } else if i + 1 >= s.len() {
            return 0;
        } else if s[i + 1] == b'/' {
            return i + 2;
        } else {
            i += 2;
        }
    }
    0
}

/// `";"[^\n]*` anywhere, and `^#.*` in the first column.
fn line_comment_len(s: &[u8], at_bol: bool) -> usize {
    if s[0] == b';' || (at_bol && s[0] == b'#') {
        run(s, |b| b != b'\n')
    } else {
        0
    }
}

/// `[ \t]+` and `[ \n]+`: the longer of the two.
fn space_len(s: &[u8]) -> usize {
    run(s, |b| b == b' ' || b == b'\t').max(run(s, |b| b == b' ' || b == b'\n'))
}

/// `strtoul(text, 16)` on a 64-bit machine, truncated to 32 bits: saturates at 2^64-1.
fn hex_value(digits: &[u8]) -> u32 {
    let mut v: u64 = 0;
    for &d in digits {
        let digit = (d as char).to_digit(16).unwrap_or(0) as u64;
        v = match v.checked_mul(16).and_then(|v| v.checked_add(digit)) {
            Some(v) => v,
            None => return u64::MAX as u32,
        };
    }
    v as u32
}

/// `strtol(text, radix)` on a 64-bit machine, truncated to 32 bits: an optional sign,
/// then digits; saturates at `i64::MAX` and `i64::MIN`.
fn signed_value(text: &[u8], radix: u32) -> u32 {
    let (negative, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    // Accumulate the magnitude in i128 so i64::MIN's magnitude fits.
    let limit: i128 = if negative {
        -(i64::MIN as i128)
    } else {
        i64::MAX as i128
    };
    let mut magnitude: i128 = 0;
    for &d in digits {
        let digit = (d as char).to_digit(radix).unwrap_or(0) as i128;
        magnitude = (magnitude * radix as i128 + digit).min(limit);
    }
    let value = if negative { -magnitude } else { magnitude };
    value as i64 as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(src: &str) -> Vec<Tok<'_>> {
        let mut lx = Lexer::new(src.as_bytes());
        let mut out = Vec::new();
        loop {
            match lx.next_token() {
                Ok(Token { tok: Tok::Eof, .. }) => return out,
                Ok(t) => out.push(t.tok),
                Err(e) => {
                    out.push(Tok::Punct(e.byte | 0x80));
                    return out;
                }
            }
        }
    }

    #[test]
    fn numbers_convert_like_strtol() {
        assert_eq!(toks("-1"), [Tok::Num(0xffff_ffff)]);
        assert_eq!(toks("4294967296"), [Tok::Num(0)]);
        assert_eq!(toks("0x1ffffffff"), [Tok::Num(0xffff_ffff)]);
        assert_eq!(toks("99999999999999999999"), [Tok::Num(0xffff_ffff)]);
        assert_eq!(toks("-99999999999999999999"), [Tok::Num(0)]);
        assert_eq!(
            toks("0B101 017 0XfF"),
            [Tok::Num(5), Tok::Num(15), Tok::Num(255)]
        );
        assert_eq!(toks("084"), [Tok::Num(0), Tok::Num(84)]);
    }

    #[test]
    fn longest_match_then_rule_order() {
        assert_eq!(toks("ret"), [Tok::Op(Op::Ret)]);
        assert_eq!(toks("return"), [Tok::Label(b"return")]);
        assert_eq!(toks(" #lenx"), [Tok::Len, Tok::Punct(b'x')]);
        assert_eq!(toks("#lenx\nneg"), [Tok::Op(Op::Neg)]);
        assert_eq!(toks("#len\nneg"), [Tok::Len, Tok::Op(Op::Neg)]);
        assert_eq!(toks("+14"), [Tok::Num(14)]);
        assert_eq!(toks("#"), [Tok::Punct(b'#')]);
        assert_eq!(toks("#cpu"), [Tok::Ext(36)]);
        assert_eq!(toks("# foo\n ret"), [Tok::Op(Op::Ret)]);
        assert_eq!(toks(" # f"), [Tok::Punct(b'#'), Tok::Punct(b'f' | 0x80)]);
    }

    #[test]
    fn block_comments_close_on_odd_star_runs() {
        for closed in ["/**/", "/* a */", "/* a ***/"] {
            assert_eq!(
                toks(&format!("{closed} tax")),
                [Tok::Op(Op::Tax)],
                "{closed}"
            );
        }
        for open in ["/***/", "/* a **/", "/* a ****/"] {
            assert_eq!(toks(open)[0], Tok::Punct(b'/' | 0x80), "{open}");
        }
        assert_eq!(toks("/***/ x */ tax"), [Tok::Op(Op::Tax)]);
    }
}
