//! `steerd bpf ...` arguments to a typed [`Bpf`] command (part of stage 1).
//!
//! Input: the arguments after `bpf`. Output: which subcommand, its input (FILE, or stdin
//! for `-` or none) and, for `run`, the described packet; or an [`ArgsError`] followed by
//! the subcommand's usage line. Each subcommand's flags are one table ([`SUBCOMMANDS`]),
//! from which its `--help` and the usage lines of `steerd bpf --help` are rendered. It
//! reads no file: `cmd/bpf.rs` and `cmd/bpf_exec.rs` do the work.

use super::flag::{
    lookup, rendered, rows, split_inline, usage_words, wants_help, Flag, Seen, Takes,
};
use super::{ArgsError, Command};
use std::sync::OnceLock;

/// A command line of a `bpf` subcommand being parsed: what its flags set.
#[derive(Default)]
pub(crate) struct Draft {
    c_format: bool,
    packet: Packet,
    len: Option<u32>,
}

/// Where a `bpf` flag's value goes; [`apply`] parses it there (a tag, as in
/// `args/serve.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Apply {
    /// `asm -c`
    CFormat,
    /// `run --cpu`
    Cpu,
    /// `run --queue`
    Queue,
    /// `run --rxhash`
    Rxhash,
    /// `run --rand`
    Rand,
    /// `run --len`
    Len,
    /// `run --payload`
    Payload,
}

/// Applies a `bpf` flag (as spelled) with its value (empty for a switch) to the draft.
fn apply(d: &mut Draft, to: Apply, flag: &str, v: &str) -> Result<(), BadArg> {
    let word = |max: u32| number(flag, v, max.into()).map(|n| n as u32);
    let p = &mut d.packet;
    match to {
        Apply::CFormat => d.c_format = true,
        Apply::Cpu => p.cpu = word(u32::MAX)?,
        Apply::Queue => p.queue = word(u16::MAX.into())? as u16,
        Apply::Rxhash => p.rxhash = word(u32::MAX)?,
        Apply::Rand => p.rand = word(u32::MAX)?,
        Apply::Len => d.len = Some(word(u32::MAX)?),
        Apply::Payload => p.payload = hex(v)?,
    }
    Ok(())
}

/// One subcommand: its name, its usage line (`{}` where its flags go), what it does (the
/// column of `steerd bpf --help`, then the rest of its own `--help`), and its flags.
pub(crate) struct Subcommand {
    /// `asm`
    pub(crate) name: &'static str,
    /// `asm{} [FILE|-]`
    usage: &'static str,
    /// The line of `steerd bpf --help`.
    what: &'static str,
    /// Its own `--help`, after the usage line.
    about: &'static str,
    /// Its flags.
    pub(crate) flags: &'static [Flag<Apply>],
}

const fn run_flag(text: &'static str, apply: Apply) -> Flag<Apply> {
    Flag::new(text, Takes::Value, apply)
}

/// The flags of `bpf run`: the packet the program is run on.
const RUN_FLAGS: &[Flag<Apply>] = &[
    run_flag("--cpu N\nwhat #cpu loads (default 0)", Apply::Cpu),
    run_flag("--queue Q\nwhat #queue loads (default 0)", Apply::Queue),
    run_flag("--rxhash H\nwhat #rxhash loads (default 0)", Apply::Rxhash),
    run_flag("--rand R\nwhat #rand loads (default 0)", Apply::Rand),
    run_flag(
        "--len L\nwhat #len loads (default: the payload's length; not below it)",
        Apply::Len,
    ),
    run_flag(
        "--payload HEX\nthe bytes packet loads read, as hex digit pairs (default none)",
        Apply::Payload,
    ),
];

/// Every `bpf` subcommand, in the order of `steerd bpf --help`. Numbers are decimal or
/// `0x` hexadecimal; a flag's value may follow `=` (`--cpu=3`).
pub(crate) const SUBCOMMANDS: &[Subcommand] = &[
    Subcommand {
        name: "asm",
        usage: "asm{} [FILE|-]",
        what: "assemble bpf_asm source; print as bpf_asm does (-c: C format)",
        about: "Assembles bpf_asm source from FILE or stdin and prints the bytecode as the kernel's\n\
                tools/bpf/bpf_asm does, exiting as it does.\n",
        flags: &[Flag::new(
            "-c\nprint the C-array format (bpf_asm -c)",
            Takes::Switch,
            Apply::CFormat,
        )],
    },
    Subcommand {
        name: "dis",
        usage: "dis{} [FILE|-]",
        what: "bytecode (either bpf_asm output format) to bpf_asm source",
        about: "Prints bytecode from FILE or stdin (either bpf_asm output format, or source) as\n\
                bpf_asm source.\n",
        flags: &[],
    },
    Subcommand {
        name: "check",
        usage: "check{} [FILE|-]",
        what: "would the kernel accept this program?",
        about: "Prints ok and exits 0 when the kernel would accept the program in FILE or stdin\n\
                (source or bytecode); else exits 1 naming the instruction and the rule.\n",
        flags: &[],
    },
    Subcommand {
        name: "run",
        usage: "run [FILE|-]{}",
        what: "",
        about: "Runs the program in FILE or stdin (source or bytecode) on the packet the flags\n\
                describe and prints its return value; a program the kernel would refuse is not run.\n",
        flags: RUN_FLAGS,
    },
];

impl Subcommand {
    /// `run [FILE|-] [--cpu N] ...`: the usage line's words after `steerd bpf `.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn words(&self) -> String {
        self.usage.replacen("{}", &usage_words(self.flags), 1)
    }

    /// `usage: steerd bpf check [FILE|-]`: printed after a usage error.
    fn usage_line(&self) -> String {
        format!("usage: steerd bpf {}\n", self.words())
    }

    /// Its `--help`: the usage line, what it does, and its flags.
    fn help(&self) -> String {
        let options = match self.flags {
            [] => String::new(),
            flags => format!("\noptions:\n{}", rows(flags, 16)),
        };
        format!("{}\n{}{options}", self.usage_line(), self.about)
    }
}

/// `steerd bpf --help`, printed after a usage error of no subcommand: one line each.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn usage() -> &'static str {
    static USAGE: OnceLock<String> = OnceLock::new();
    rendered(&USAGE, || {
        let mut out = String::new();
        for (i, sub) in SUBCOMMANDS.iter().enumerate() {
            let lead = if i == 0 { "usage:" } else { "      " };
            let line = format!("{lead} steerd bpf {:<20}{}", sub.words(), sub.what);
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    })
}

/// A text made once for the process, for as long as it runs (a help text or a usage
/// line printed before exiting).
fn kept(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

/// A parsed `steerd bpf` command. `input` is the FILE argument; `None` or `-` is stdin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Bpf {
    /// `asm [-c] [FILE|-]`
    Asm {
        /// `-c`: print the C-array format.
        c_format: bool,
        /// The input path.
        input: Option<String>,
    },
    /// `dis [FILE|-]`
    Dis {
        /// The input path.
        input: Option<String>,
    },
    /// `check [FILE|-]`
    Check {
        /// The input path.
        input: Option<String>,
    },
    /// `run [FILE|-] [packet options]`
    Run {
        /// The input path.
        input: Option<String>,
        /// The packet the program is run on.
        packet: Packet,
    },
}

/// The packet `bpf run` describes: ancillary values and the payload.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Packet {
    /// `--cpu`: what `#cpu` loads.
    pub(crate) cpu: u32,
    /// `--queue`: what `#queue` loads.
    pub(crate) queue: u16,
    /// `--rxhash`: what `#rxhash` loads.
    pub(crate) rxhash: u32,
    /// `--rand`: what `#rand` loads.
    pub(crate) rand: u32,
    /// `--len`: what `#len` loads (the payload length unless given).
    pub(crate) len: u32,
    /// `--payload`: the bytes packet loads read.
    pub(crate) payload: Vec<u8>,
}

/// What `steerd bpf ARGS` asks for: a [`Command::Bpf`], or a help text.
pub(crate) fn parse(args: &[String]) -> Result<Command, ArgsError> {
    let Some((sub, rest)) = args.split_first() else {
        return Err(refused("no subcommand".into(), usage()));
    };
    if matches!(sub.as_str(), "-h" | "--help" | "help") {
        return Ok(Command::Help(usage()));
    }
    let Some(this) = SUBCOMMANDS.iter().find(|s| s.name == sub) else {
        return Err(refused(format!("unknown subcommand `{sub}`"), usage()));
    };
    if wants_help(rest) {
        return Ok(Command::Help(kept(this.help())));
    }
    let wrong = |why: BadArg| refused(format!("{sub}: {why}"), kept(this.usage_line()));
    let (draft, input) = words(this.flags, rest).map_err(wrong)?;
    let bpf = match sub.as_str() {
        "asm" => Bpf::Asm {
            c_format: draft.c_format,
            input,
        },
        "dis" => Bpf::Dis { input },
        "check" => Bpf::Check { input },
        _ => Bpf::Run {
            input,
            packet: packet(draft).map_err(wrong)?,
        },
    };
    Ok(Command::Bpf(bpf))
}

/// One bad word of a `bpf` command line (printed after the subcommand's name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BadArg {
    /// A flag the subcommand does not take.
    UnknownOption(String),
    /// A second input: the first, and this one.
    MoreThanOneInput(String, String),
    /// A flag that does not repeat, given twice.
    Twice(String),
    /// A flag whose value is missing.
    NeedsValue(String),
    /// A number that is none (`max: None`) or larger than `max`.
    Number {
        /// The flag.
        flag: String,
        /// Its value.
        text: String,
        /// The bound it passed, if it is a number.
        max: Option<u64>,
    },
    /// A payload longer than `#len` can say.
    PayloadTooLong,
    /// `--len` below the payload's length.
    LenShort {
        /// `--len`.
        len: u32,
        /// The payload's length.
        payload: u32,
    },
    /// `--payload` with an odd number of hex digits (how many).
    OddHex(usize),
    /// `--payload` with a pair that is no hex byte.
    NotHexByte(String),
}

impl core::fmt::Display for BadArg {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            BadArg::UnknownOption(o) => write!(f, "unknown option `{o}`"),
            BadArg::MoreThanOneInput(first, a) => {
                write!(f, "more than one input: `{first}` and `{a}`")
            }
            BadArg::Twice(flag) => write!(f, "{flag} given twice"),
            BadArg::NeedsValue(flag) => write!(f, "{flag} needs a value"),
            BadArg::Number { flag, text, max } => match max {
                None => write!(f, "{flag} {text}: not a number"),
                Some(max) => write!(f, "{flag} {text}: larger than {max}"),
            },
            BadArg::PayloadTooLong => f.write_str("--payload: too long"),
            BadArg::LenShort { len, payload } => write!(
                f,
                "--len {len} is shorter than the payload ({payload} bytes)"
            ),
            BadArg::OddHex(n) => write!(f, "--payload: odd number of hex digits ({n})"),
            BadArg::NotHexByte(p) => write!(f, "--payload: `{p}` is not a hex byte"),
        }
    }
}

#[cold]
fn refused(message: String, usage: &'static str) -> ArgsError {
    ArgsError {
        stage: "bpf",
        message,
        usage,
    }
}

/// Applies the words of a subcommand's command line: its `flags` to a draft, the one
/// other word (a FILE, or `-`) as its input.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn words(flags: &[Flag<Apply>], args: &[String]) -> Result<(Draft, Option<String>), BadArg> {
    let mut draft = Draft::default();
    let mut path = None;
    let mut seen = Seen::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (word, inline) = split_inline(a);
        if !word.starts_with('-') || word == "-" {
            positional(&mut path, a)?;
            continue;
        }
        let f = lookup(flags, word).ok_or_else(|| BadArg::UnknownOption(word.to_string()))?;
        let value = match (f.takes, inline) {
            (Takes::Switch, _) => "",
            (_, Some(v)) => v,
            (_, None) => it
                .next()
                .ok_or_else(|| BadArg::NeedsValue(word.to_string()))?,
        };
        seen.note(f).map_err(|t| BadArg::Twice(t.0))?;
        apply(&mut draft, f.apply, word, value)?;
    }
    Ok((draft, path))
}

/// Records `a` as the one input path, or says why it cannot be one.
fn positional(path: &mut Option<String>, a: &str) -> Result<(), BadArg> {
    if a.starts_with('-') && a != "-" {
        return Err(BadArg::UnknownOption(a.to_string()));
    }
    if let Some(first) = path {
        return Err(BadArg::MoreThanOneInput(first.clone(), a.to_string()));
    }
    *path = Some(a.to_string());
    Ok(())
}

/// The packet of `run`: `#len` is the payload's length unless `--len` says more.
fn packet(draft: Draft) -> Result<Packet, BadArg> {
    let mut packet = draft.packet;
    let payload = u32::try_from(packet.payload.len()).map_err(|_| BadArg::PayloadTooLong)?;
    packet.len = match draft.len {
        Some(len) if len < payload => return Err(BadArg::LenShort { len, payload }),
        Some(len) => len,
        None => payload,
    };
    Ok(packet)
}

/// A decimal or `0x` hexadecimal number no larger than `max`.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn number(flag: &str, text: &str, max: u64) -> Result<u64, BadArg> {
    let (digits, radix) = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => (hex, 16),
        None => (text, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(BadArg::Number {
            flag: flag.to_string(),
            text: text.to_string(),
            max: None,
        });
    }
    match u64::from_str_radix(digits, radix) {
        Ok(v) if v <= max => Ok(v),
        _ => Err(BadArg::Number {
            flag: flag.to_string(),
            text: text.to_string(),
            max: Some(max),
        }),
    }
}

/// Bytes written as hex digit pairs (`0a1B..`), possibly empty.
fn hex(text: &str) -> Result<Vec<u8>, BadArg> {
    let nibble = |c: u8| (c as char).to_digit(16);
    let digits = text.as_bytes();
    if digits.len() % 2 != 0 {
        return Err(BadArg::OddHex(digits.len()));
    }
    digits
        .chunks(2)
        .map(|pair| match (nibble(pair[0]), nibble(pair[1])) {
            (Some(hi), Some(lo)) => Ok((hi * 16 + lo) as u8),
            _ => Err(BadArg::NotHexByte(pair.escape_ascii().to_string())),
        })
        .collect()
}
