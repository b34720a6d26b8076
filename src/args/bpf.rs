//! `steerd bpf ...` arguments to a typed [`Bpf`] command (part of stage 1).
//!
//! Input: the arguments after `bpf`. Output: which subcommand, its input (FILE, or stdin
//! for `-` or none) and, for `run`, the described packet; or an [`ArgsError`] whose usage
//! text is the one the subcommand prints. It reads no file: `cmd/bpf.rs` and
//! `cmd/bpf_exec.rs` do the work.

use super::ArgsError;

/// The usage text of `steerd bpf`, printed for `--help` and after a usage error.
pub(crate) const USAGE: &str = "\
usage: steerd bpf asm [-c] [FILE|-]   assemble bpf_asm source; print as bpf_asm does (-c: C format)
       steerd bpf dis [FILE|-]        bytecode (either bpf_asm output format) to bpf_asm source
       steerd bpf check [FILE|-]      would the kernel accept this program?
       steerd bpf run [FILE|-] [--cpu N] [--queue Q] [--rxhash H] [--rand R] [--len L] [--payload HEX]
";
const CHECK_USAGE: &str = "usage: steerd bpf check [FILE|-]\n";
const RUN_USAGE: &str = "usage: steerd bpf run [FILE|-] [--cpu N] [--queue Q] [--rxhash H] \
                         [--rand R] [--len L] [--payload HEX]\n";

/// A parsed `steerd bpf` command. `input` is the FILE argument; `None` or `-` is stdin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bpf {
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
pub struct Packet {
    /// `--cpu`: what `#cpu` loads.
    pub cpu: u32,
    /// `--queue`: what `#queue` loads.
    pub queue: u16,
    /// `--rxhash`: what `#rxhash` loads.
    pub rxhash: u32,
    /// `--rand`: what `#rand` loads.
    pub rand: u32,
    /// `--len`: what `#len` loads (the payload length unless given).
    pub len: u32,
    /// `--payload`: the bytes packet loads read.
    pub payload: Vec<u8>,
}

/// What `steerd bpf ARGS` asks for: `None` for help.
pub fn parse(args: &[String]) -> Result<Option<Bpf>, ArgsError> {
    let Some((sub, rest)) = args.split_first() else {
        return Err(usage("no subcommand".into(), USAGE));
    };
    let wrong = |why: BadArg| usage(format!("{sub}: {why}"), USAGE);
    match sub.as_str() {
        "asm" => {
            let (c_format, input) = input_args(rest, true).map_err(wrong)?;
            Ok(Some(Bpf::Asm { c_format, input }))
        }
        "dis" => {
            let (_, input) = input_args(rest, false).map_err(wrong)?;
            Ok(Some(Bpf::Dis { input }))
        }
        "check" => {
            let mut input = None;
            for a in rest {
                positional(&mut input, a)
                    .map_err(|why| usage(format!("check: {why}"), CHECK_USAGE))?;
            }
            Ok(Some(Bpf::Check { input }))
        }
        "run" => {
            let (input, packet) =
                run_args(rest).map_err(|why| usage(format!("run: {why}"), RUN_USAGE))?;
            Ok(Some(Bpf::Run { input, packet }))
        }
        "-h" | "--help" | "help" => Ok(None),
        other => Err(usage(format!("unknown subcommand `{other}`"), USAGE)),
    }
}

/// One bad word of a `bpf` command line (printed after the subcommand's name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BadArg {
    /// A flag the subcommand does not take.
    UnknownOption(String),
    /// A second input: the first when it is named, and this one.
    MoreThanOneInput(Option<String>, String),
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
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            BadArg::UnknownOption(o) => write!(f, "unknown option `{o}`"),
            BadArg::MoreThanOneInput(None, a) => write!(f, "more than one input: `{a}`"),
            BadArg::MoreThanOneInput(Some(first), a) => {
                write!(f, "more than one input: `{first}` and `{a}`")
            }
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
fn usage(message: String, usage: &'static str) -> ArgsError {
    ArgsError {
        stage: "bpf",
        message,
        usage,
    }
}

/// `asm`'s and `dis`'s arguments: `-c` (when allowed) and the one input.
fn input_args(args: &[String], allow_c: bool) -> Result<(bool, Option<String>), BadArg> {
    let mut c_format = false;
    let mut path: Option<String> = None;
    for a in args {
        match a.as_str() {
            "-c" if allow_c => c_format = true,
            flag if flag.starts_with('-') && flag != "-" => {
                return Err(BadArg::UnknownOption(flag.to_string()))
            }
            _ if path.is_some() => return Err(BadArg::MoreThanOneInput(None, a.to_string())),
            _ => path = Some(a.to_string()),
        }
    }
    Ok((c_format, path))
}

/// Records `a` as the one input path, or says why it cannot be one.
fn positional(path: &mut Option<String>, a: &str) -> Result<(), BadArg> {
    if a.starts_with('-') && a != "-" {
        return Err(BadArg::UnknownOption(a.to_string()));
    }
    if let Some(first) = path {
        return Err(BadArg::MoreThanOneInput(Some(first.clone()), a.to_string()));
    }
    *path = Some(a.to_string());
    Ok(())
}

/// Parses `run`'s arguments into the input path and the packet.
fn run_args(args: &[String]) -> Result<(Option<String>, Packet), BadArg> {
    let mut path = None;
    let mut ctx = Packet::default();
    let mut len = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        if !flag.starts_with("--") {
            positional(&mut path, a)?;
            continue;
        }
        let value = match inline.or_else(|| it.next().cloned()) {
            Some(v) => v,
            None => return Err(BadArg::NeedsValue(flag.to_string())),
        };
        match flag {
            "--cpu" => ctx.cpu = number(flag, &value, u32::MAX.into())? as u32,
            "--queue" => ctx.queue = number(flag, &value, u16::MAX.into())? as u16,
            "--rxhash" => ctx.rxhash = number(flag, &value, u32::MAX.into())? as u32,
            "--rand" => ctx.rand = number(flag, &value, u32::MAX.into())? as u32,
            "--len" => len = Some(number(flag, &value, u32::MAX.into())? as u32),
            "--payload" => ctx.payload = hex(&value)?,
            _ => return Err(BadArg::UnknownOption(flag.to_string())),
        }
    }
    let payload = u32::try_from(ctx.payload.len()).map_err(|_| BadArg::PayloadTooLong)?;
    ctx.len = match len {
        Some(l) if l < payload => {
            return Err(BadArg::LenShort { len: l, payload });
        }
        Some(l) => l,
        None => payload,
    };
    Ok((path, ctx))
}

/// A decimal or `0x` hexadecimal number no larger than `max`.
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
