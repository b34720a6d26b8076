//! Assembler stages 2 and 3: tokens to instructions (the grammar of `tools/bpf/bpf_exp.y`),
//! then labels to jump distances ([`crate::resolve`]).
//!
//! Input: bpf_asm source. Output: the program bpf_asm would print, or the error bpf_asm
//! would stop at, found in bpf_asm's order (spec 3.3): lexer and grammar errors,
//! `ldxb offset not supported!` and the 4096-instruction limit at the token where bison
//! meets them; label errors after the whole input parsed. The parser reads a token only
//! when bison would, so a bad byte after an error is never reached, and the checks made
//! when an instruction is complete happen before the next token is read, except after
//! a two-operand conditional jump, where bison must look ahead for a third operand.
//!
//! It does not check the program against the kernel's rules (`ret x` assembles): that is
//! the checker's job.

use crate::insn::*;
use crate::lex::{Lexer, Tok, Token};
use crate::names::Op;
use crate::resolve::{self, ResolveError, Targets};
use core::fmt;

/// Why bpf_asm would refuse a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AsmErrorKind {
    /// A token the grammar does not allow here (bison's "syntax error").
    Syntax,
    /// A byte no lexer rule matches, such as `\r`, `-` before a zero, or a lone letter.
    UnknownCharacter(u8),
    /// `ldxb N*([k]&MASK)` with N != 4 or MASK != 0xf.
    LdxbOffset,
    /// A 4097th instruction, or a label on a 4097th position.
    TooManyInsns,
    /// A jump to a label no instruction carries.
    NoSuchLabel(String),
    /// A conditional jump whose distance is outside 0..=255 (0-based instruction indexes).
    JumpOutOfRange {
        /// The jumping instruction.
        insn: usize,
        /// The instruction the label is on.
        target: usize,
    },
}

/// An assembly error: where it was found and bpf_asm's own message for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsmError {
    /// 1-based line of the offending token (for label errors: of the label's use).
    pub line: u32,
    /// 1-based byte column of that token.
    pub column: u32,
    /// What went wrong.
    pub kind: AsmErrorKind,
    /// The line bpf_asm prints on stderr for this error, without the newline.
    pub message: String,
}

impl AsmError {
    fn new(line: u32, column: u32, kind: AsmErrorKind) -> AsmError {
        let message = match &kind {
            AsmErrorKind::Syntax => format!("error: syntax error at line {line}"),
            AsmErrorKind::UnknownCharacter(_) => {
                format!("error: lex unknown character at line {line}")
            }
            AsmErrorKind::LdxbOffset => "ldxb offset not supported!".to_string(),
            AsmErrorKind::TooManyInsns => {
                format!("only max {BPF_MAXINSNS} insns allowed!")
            }
            AsmErrorKind::NoSuchLabel(name) => format!("no such label '{name}'!"),
            AsmErrorKind::JumpOutOfRange { insn, target } => {
                format!("error: insn #{insn} jumps to insn #{target}, which is out of range")
            }
        };
        AsmError {
            line,
            column,
            kind,
            message,
        }
    }

    /// What bpf_asm writes to stdout before failing: `unknown character 'C'` (the raw
    /// byte, no newline) for a lexer error, nothing otherwise.
    pub fn stdout_bytes(&self) -> Vec<u8> {
        match self.kind {
            AsmErrorKind::UnknownCharacter(0) => b"unknown character ''".to_vec(),
            AsmErrorKind::UnknownCharacter(c) => {
                let mut out = b"unknown character '".to_vec();
                out.extend([c, b'\'']);
                out
            }
            _ => Vec::new(),
        }
    }
}

impl fmt::Display for AsmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for AsmError {}

/// Assembles bpf_asm source text into the program bpf_asm prints.
pub fn assemble(src: &str) -> Result<Vec<Insn>, AsmError> {
    assemble_bytes(src.as_bytes())
}

/// Assembles bpf_asm source given as bytes (bpf_asm reads bytes: a comment may hold any).
pub fn assemble_bytes(src: &[u8]) -> Result<Vec<Insn>, AsmError> {
    let mut p = Parser::new(src);
    p.program()?;
    p.resolve()
}

/// A source position.
#[derive(Clone, Copy, Debug, Default)]
struct Pos {
    line: u32,
    column: u32,
}

impl From<&Token<'_>> for Pos {
    fn from(t: &Token<'_>) -> Pos {
        Pos {
            line: t.line,
            column: t.column,
        }
    }
}

/// One parsed instruction before label resolution.
struct Parsed<'a> {
    insn: Insn,
    targets: Targets<'a>,
    /// Where the k, jt and jf labels were written.
    uses: [Pos; 3],
}

impl<'a> Parsed<'a> {
    fn stmt(code: u16, k: u32) -> Parsed<'a> {
        Parsed {
            insn: Insn::stmt(code, k),
            targets: Targets::default(),
            uses: [Pos::default(); 3],
        }
    }
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    peeked: Option<Token<'a>>,
    insns: Vec<Insn>,
    labels: Vec<Option<&'a [u8]>>,
    targets: Vec<Targets<'a>>,
    uses: Vec<[Pos; 3]>,
    pending_label: Option<&'a [u8]>,
}

fn syntax(t: &Token<'_>) -> AsmError {
    AsmError::new(t.line, t.column, AsmErrorKind::Syntax)
}

impl<'a> Parser<'a> {
    fn new(src: &'a [u8]) -> Parser<'a> {
        Parser {
            lexer: Lexer::new(src),
            peeked: None,
            insns: Vec::new(),
            labels: Vec::new(),
            targets: Vec::new(),
            uses: Vec::new(),
            pending_label: None,
        }
    }

    fn next(&mut self) -> Result<Token<'a>, AsmError> {
        if let Some(t) = self.peeked.take() {
            return Ok(t);
        }
        self.lexer
            .next_token()
            .map_err(|e| AsmError::new(e.line, e.column, AsmErrorKind::UnknownCharacter(e.byte)))
    }

    fn peek(&mut self) -> Result<Token<'a>, AsmError> {
        let t = self.next()?;
        self.peeked = Some(t);
        Ok(t)
    }

    fn expect(&mut self, p: u8) -> Result<(), AsmError> {
        let t = self.next()?;
        match t.tok {
            Tok::Punct(q) if q == p => Ok(()),
            _ => Err(syntax(&t)),
        }
    }

    fn number(&mut self) -> Result<u32, AsmError> {
        let t = self.next()?;
        match t.tok {
            Tok::Num(n) => Ok(n),
            _ => Err(syntax(&t)),
        }
    }

    fn label(&mut self) -> Result<(&'a [u8], Pos), AsmError> {
        let t = self.next()?;
        match t.tok {
            Tok::Label(name) => Ok((name, Pos::from(&t))),
            _ => Err(syntax(&t)),
        }
    }

    /// `prog: line | prog line; line: [label ':'] instr`
    fn program(&mut self) -> Result<(), AsmError> {
        loop {
            let t = self.next()?;
            match t.tok {
                Tok::Eof if !self.insns.is_empty() => return Ok(()),
                Tok::Label(name) => {
                    self.expect(b':')?;
                    self.check_room(&t)?;
                    self.pending_label = Some(name);
                    let op = self.next()?;
                    match op.tok {
                        Tok::Op(o) => self.instruction(o, &op)?,
                        _ => return Err(syntax(&op)),
                    }
                }
                Tok::Op(o) => self.instruction(o, &t)?,
                _ => return Err(syntax(&t)),
            }
        }
    }

    /// bpf_asm's `bpf_assert_max`: no room for a 4097th instruction or label.
    fn check_room(&self, at: &Token<'_>) -> Result<(), AsmError> {
        if self.insns.len() >= BPF_MAXINSNS {
            return Err(AsmError::new(
                at.line,
                at.column,
                AsmErrorKind::TooManyInsns,
            ));
        }
        Ok(())
    }

    fn instruction(&mut self, op: Op, at: &Token<'a>) -> Result<(), AsmError> {
        let parsed = self.operands(op)?;
        self.check_room(at)?;
        self.insns.push(parsed.insn);
        self.labels.push(self.pending_label.take());
        self.targets.push(parsed.targets);
        self.uses.push(parsed.uses);
        Ok(())
    }

    fn operands(&mut self, op: Op) -> Result<Parsed<'a>, AsmError> {
        Ok(match op {
            Op::Ld => self.ld()?,
            Op::Ldh => self.ld_sized(BPF_H)?,
            Op::Ldb => self.ld_sized(BPF_B)?,
            Op::Ldi => Parsed::stmt(BPF_LD | BPF_IMM, self.bare_immediate()?),
            Op::Ldxi => Parsed::stmt(BPF_LDX | BPF_IMM, self.bare_immediate()?),
            Op::Ldx => self.ldx()?,
            Op::Ldxb => {
                let t = self.next()?;
                self.msh(t)?
            }
            Op::St => Parsed::stmt(BPF_ST, self.scratch()?),
            Op::Stx => Parsed::stmt(BPF_STX, self.scratch()?),
            Op::Jmp => {
                let (name, pos) = self.label()?;
                let mut p = Parsed::stmt(BPF_JMP | BPF_JA, 0);
                p.targets.k = Some(name);
                p.uses[0] = pos;
                p
            }
            Op::Jeq => self.cond_jump(BPF_JEQ, true)?,
            Op::Jgt => self.cond_jump(BPF_JGT, true)?,
            Op::Jge => self.cond_jump(BPF_JGE, true)?,
            Op::Jset => self.cond_jump(BPF_JSET, true)?,
            Op::Jneq => self.cond_jump(BPF_JEQ, false)?,
            Op::Jlt => self.cond_jump(BPF_JGE, false)?,
            Op::Jle => self.cond_jump(BPF_JGT, false)?,
            Op::Add => self.alu(BPF_ADD)?,
            Op::Sub => self.alu(BPF_SUB)?,
            Op::Mul => self.alu(BPF_MUL)?,
            Op::Div => self.alu(BPF_DIV)?,
            Op::Mod => self.alu(BPF_MOD)?,
            Op::And => self.alu(BPF_AND)?,
            Op::Or => self.alu(BPF_OR)?,
            Op::Xor => self.alu(BPF_XOR)?,
            Op::Lsh => self.alu(BPF_LSH)?,
            Op::Rsh => self.alu(BPF_RSH)?,
            Op::Neg => Parsed::stmt(BPF_ALU | BPF_NEG, 0),
            Op::Tax => Parsed::stmt(BPF_MISC | BPF_TAX, 0),
            Op::Txa => Parsed::stmt(BPF_MISC | BPF_TXA, 0),
            Op::Ret => self.ret()?,
        })
    }

    /// `ld`: `#k`, `len`, extension, `M[k]`, `[k]`, `[x + k]`.
    fn ld(&mut self) -> Result<Parsed<'a>, AsmError> {
        let t = self.next()?;
        Ok(match t.tok {
            Tok::Punct(b'#') => Parsed::stmt(BPF_LD | BPF_IMM, self.number()?),
            Tok::Len => Parsed::stmt(BPF_LD | BPF_W | BPF_LEN, 0),
            Tok::Punct(b'm') => Parsed::stmt(BPF_LD | BPF_MEM, self.bracketed()?),
            _ => return self.packet(BPF_W, t),
        })
    }

    /// `ldh`, `ldb`: `[k]`, `[x + k]`, extension.
    fn ld_sized(&mut self, size: u16) -> Result<Parsed<'a>, AsmError> {
        let t = self.next()?;
        self.packet(size, t)
    }

    /// A packet or ancillary load whose first operand token `t` was already read.
    fn packet(&mut self, size: u16, t: Token<'a>) -> Result<Parsed<'a>, AsmError> {
        match t.tok {
            Tok::Ext(off) => Ok(Parsed::stmt(BPF_LD | size | BPF_ABS, ancillary_k(off))),
            Tok::Punct(b'[') => {
                let t = self.next()?;
                let (mode, k) = match t.tok {
                    Tok::Num(k) => (BPF_ABS, k),
                    Tok::Punct(b'x') => (BPF_IND, self.plus_offset()?),
                    Tok::Punct(b'%') => {
                        self.expect(b'x')?;
                        (BPF_IND, self.plus_offset()?)
                    }
                    _ => return Err(syntax(&t)),
                };
                self.expect(b']')?;
                Ok(Parsed::stmt(BPF_LD | size | mode, k))
            }
            _ => Err(syntax(&t)),
        }
    }

    /// `+ k` inside `[x + k]`.
    fn plus_offset(&mut self) -> Result<u32, AsmError> {
        self.expect(b'+')?;
        self.number()
    }

    /// `ldi`/`ldxi`: `#k` or a bare `k`.
    fn bare_immediate(&mut self) -> Result<u32, AsmError> {
        let t = self.next()?;
        match t.tok {
            Tok::Punct(b'#') => self.number(),
            Tok::Num(k) => Ok(k),
            _ => Err(syntax(&t)),
        }
    }

    /// `ldx`: `#k`, `len`, `M[k]`, `4*([k]&0xf)`.
    fn ldx(&mut self) -> Result<Parsed<'a>, AsmError> {
        let t = self.next()?;
        Ok(match t.tok {
            Tok::Punct(b'#') => Parsed::stmt(BPF_LDX | BPF_IMM, self.number()?),
            Tok::Len => Parsed::stmt(BPF_LDX | BPF_W | BPF_LEN, 0),
            Tok::Punct(b'm') => Parsed::stmt(BPF_LDX | BPF_MEM, self.bracketed()?),
            Tok::Num(_) => self.msh(t)?,
            _ => return Err(syntax(&t)),
        })
    }

    /// `N * ( [ k ] & MASK )` with `first` the token read for N, then bpf_asm's check
    /// that N is 4 and MASK is 0xf.
    fn msh(&mut self, first: Token<'a>) -> Result<Parsed<'a>, AsmError> {
        let Tok::Num(n) = first.tok else {
            return Err(syntax(&first));
        };
        self.expect(b'*')?;
        self.expect(b'(')?;
        let k = self.bracketed()?;
        self.expect(b'&')?;
        let mask = self.number()?;
        self.expect(b')')?;
        if n != 4 || mask != 0xf {
            let kind = AsmErrorKind::LdxbOffset;
            return Err(AsmError::new(first.line, first.column, kind));
        }
        Ok(Parsed::stmt(BPF_LDX | BPF_MSH | BPF_B, k))
    }

    /// `M[k]`.
    fn scratch(&mut self) -> Result<u32, AsmError> {
        self.expect(b'm')?;
        self.bracketed()
    }

    /// `[k]`.
    fn bracketed(&mut self) -> Result<u32, AsmError> {
        self.expect(b'[')?;
        let k = self.number()?;
        self.expect(b']')?;
        Ok(k)
    }

    /// The operand of an ALU op or a comparison: `#k`, `x` or `%x`; the source bit and k.
    fn k_or_x(&mut self) -> Result<(u16, u32), AsmError> {
        let t = self.next()?;
        match t.tok {
            Tok::Punct(b'#') => Ok((BPF_K, self.number()?)),
            Tok::Punct(b'x') => Ok((BPF_X, 0)),
            Tok::Punct(b'%') => {
                self.expect(b'x')?;
                Ok((BPF_X, 0))
            }
            _ => Err(syntax(&t)),
        }
    }

    /// `op #k` or `op x` for an ALU operation.
    fn alu(&mut self, op: u16) -> Result<Parsed<'a>, AsmError> {
        let (src, k) = self.k_or_x()?;
        Ok(Parsed::stmt(BPF_ALU | op | src, k))
    }

    /// `op operand, L` and, when `two_targets`, `op operand, Lt, Lf`. The one-target form
    /// of `jeq jgt jge jset` fills jt; that of `jneq jlt jle` fills jf.
    fn cond_jump(&mut self, op: u16, two_targets: bool) -> Result<Parsed<'a>, AsmError> {
        let (src, k) = self.k_or_x()?;
        self.expect(b',')?;
        let (first, first_pos) = self.label()?;
        let mut p = Parsed::stmt(BPF_JMP | op | src, k);
        if !two_targets {
            p.targets.jf = Some(first);
            p.uses[2] = first_pos;
            return Ok(p);
        }
        p.targets.jt = Some(first);
        p.uses[1] = first_pos;
        if let Tok::Punct(b',') = self.peek()?.tok {
            self.next()?;
            let (second, second_pos) = self.label()?;
            p.targets.jf = Some(second);
            p.uses[2] = second_pos;
        }
        Ok(p)
    }

    /// `ret`: `#k`, `a`, `x`, `%a`, `%x`.
    fn ret(&mut self) -> Result<Parsed<'a>, AsmError> {
        let t = self.next()?;
        let t = match t.tok {
            Tok::Punct(b'#') => return Ok(Parsed::stmt(BPF_RET | BPF_K, self.number()?)),
            Tok::Punct(b'%') => self.next()?,
            _ => t,
        };
        match t.tok {
            Tok::Punct(b'a') => Ok(Parsed::stmt(BPF_RET | BPF_A, 0)),
            Tok::Punct(b'x') => Ok(Parsed::stmt(BPF_RET | BPF_X, 0)),
            _ => Err(syntax(&t)),
        }
    }

    /// Stage 3: labels to distances, errors placed at the label's use.
    fn resolve(mut self) -> Result<Vec<Insn>, AsmError> {
        let defs = (self.labels.iter().enumerate()).filter_map(|(i, l)| l.map(|l| (l, i)));
        resolve::resolve(&mut self.insns, defs, &self.targets).map_err(|e| {
            let (insn, slot, kind) = match e {
                ResolveError::NoSuchLabel { insn, slot, name } => {
                    (insn, slot, AsmErrorKind::NoSuchLabel(name))
                }
                ResolveError::OutOfRange { insn, slot, target } => {
                    (insn, slot, AsmErrorKind::JumpOutOfRange { insn, target })
                }
            };
            let pos = self.uses[insn][slot as usize];
            AsmError::new(pos.line, pos.column, kind)
        })?;
        Ok(self.insns)
    }
}
