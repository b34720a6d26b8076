//! Stage 1, the one shape of a flag: every subcommand's flags are one table of [`Flag`]
//! (its name and short forms, the hint of its value, its help line, whether it repeats,
//! and how it is applied), and that subcommand's `--help` is rendered from the table.
//!
//! Input: a table. Output: the help rows and usage words, and a lookup by spelling.
//! The parsers walk their own tokens (each subcommand has its own positional words) but
//! find, refuse a second use of, and apply every flag through the table, so a flag the
//! help shows is a flag the parser takes, and the other way round (`args::tests`:
//! `the_flag_table_the_parser_and_the_help_agree` for `serve`,
//! `the_tables_of_topo_check_and_probe_agree_with_their_help`,
//! `the_tables_of_bench_and_bpf_agree_with_their_help`).

use core::iter::Peekable;
use std::sync::OnceLock;

/// How a flag takes its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Takes {
    /// One value, once.
    Value,
    /// One value each time, any number of times.
    Repeated,
    /// No value: present or not; once.
    Switch,
}

/// One flag of a subcommand; `A` is how it is applied to that subcommand's draft.
///
/// Its `text` is the flag as the help shows it, then its help: the first line is the
/// long name and the hint of its value (`--listen ADDR:PORT`, or the bare name of a
/// switch), every further line one line of help. A flag with no help line shares the
/// row of the flag before it (`--sysfs DIR, --procfs DIR`). One string per entry keeps
/// the table small: each string in it is a relocation in a static-pie binary.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Flag<A> {
    /// `--listen ADDR:PORT\naddress to listen on; ...`
    pub(crate) text: &'static str,
    /// Other spellings, each with the hint it is shown with on a row of its own
    /// (`("-p", "PORT")`), or an empty hint when the help does not show it (`("-l", "")`).
    pub(crate) short: &'static [(&'static str, &'static str)],
    /// Whether it takes a value, and how often.
    pub(crate) takes: Takes,
    /// How the flag (as spelled) and its value (empty for a switch) are applied.
    pub(crate) apply: A,
}

impl<A> Flag<A> {
    /// A flag with no short form.
    pub(crate) const fn new(text: &'static str, takes: Takes, apply: A) -> Self {
        Flag {
            text,
            short: &[],
            takes,
            apply,
        }
    }

    /// `--listen ADDR:PORT`, or the bare name of a switch.
    pub(crate) fn label(&self) -> &'static str {
        first_line(self.text)
    }

    /// `--listen`
    pub(crate) fn name(&self) -> &'static str {
        first_word(first_line(self.text))
    }

    /// True when `word` is this flag in one of its spellings, as given (no `=VALUE`).
    pub(crate) fn spelled(&self, word: &str) -> bool {
        spells(self.text, self.short, word)
    }

    /// True when `arg` is this flag, in any of its spellings (`--listen`, `-p`,
    /// `--listen=...`).
    pub(crate) fn is(&self, arg: &str) -> bool {
        spells(self.text, self.short, first_word_before(arg, '='))
    }
}

// The string work is out of line and not generic: one copy for every table.

#[inline(never)]
#[cfg_attr(feature = "cold-size", optimize(size))]
fn first_line(text: &'static str) -> &'static str {
    first_word_before(text, '\n')
}

fn first_word(label: &'static str) -> &'static str {
    first_word_before(label, ' ')
}

#[inline(never)]
#[cfg_attr(feature = "cold-size", optimize(size))]
fn first_word_before(text: &str, end: char) -> &str {
    text.split_once(end).map_or(text, |(w, _)| w)
}

#[inline(never)]
#[cfg_attr(feature = "cold-size", optimize(size))]
fn spells(text: &'static str, short: &[(&str, &str)], word: &str) -> bool {
    word == first_word(first_line(text)) || short.iter().any(|(s, _)| *s == word)
}

/// A help text rendered the first time it is asked for, then kept for the process
/// (one instance of the lazy cell's code for every table).
pub(crate) fn rendered(cell: &'static OnceLock<String>, render: fn() -> String) -> &'static str {
    cell.get_or_init(render)
}

/// True when `args` asks for help (`-h` or `--help` anywhere).
pub(crate) fn wants_help(args: &[String]) -> bool {
    args.iter().any(|a| a == "-h" || a == "--help")
}

/// A command-line word as its flag and its inline value: `--name=VALUE` is split at the
/// first `=`; any other word (short flags, positional words) is whole, with no value.
pub(crate) fn split_inline(arg: &str) -> (&str, Option<&str>) {
    match arg.split_once('=') {
        Some((flag, value)) if flag.starts_with("--") => (flag, Some(value)),
        _ => (arg, None),
    }
}

/// The flag of `table` spelled `word` exactly (`-w`, `--workers`; no `=VALUE`).
pub(crate) fn lookup<'t, A>(table: &'t [Flag<A>], word: &str) -> Option<&'t Flag<A>> {
    table.iter().find(|f| f.spelled(word))
}

/// The help rows of `table`, the label column `width` wide: `    LABEL  help`, with a
/// label too wide for the column on a line of its own and every further line of help
/// under the first.
pub(crate) fn rows<A>(table: &[Flag<A>], width: usize) -> String {
    let entries: &mut dyn Iterator<Item = Entry> = &mut table.iter().map(|f| (f.text, f.short));
    rows_of(&mut entries.peekable(), width)
}

/// A table entry's text and short forms: what its help row is made of.
type Entry = (&'static str, &'static [(&'static str, &'static str)]);

/// [`rows`], not generic: one copy for every table.
#[inline(never)]
#[cfg_attr(feature = "cold-size", optimize(size))]
fn rows_of(entries: &mut Peekable<&mut dyn Iterator<Item = Entry>>, width: usize) -> String {
    let mut out = String::new();
    while let Some((text, short)) = entries.next() {
        let (mut label, help) = (first_line(text).to_string(), help_of(text));
        while let Some((joined, _)) = entries.next_if(|(t, _)| help_of(t).is_empty()) {
            label = format!("{label}, {}", first_line(joined));
        }
        row(&mut out, &label, help, width);
        let name = first_word(first_line(text));
        for (short, hint) in short.iter().filter(|(_, hint)| !hint.is_empty()) {
            row(
                &mut out,
                &format!("{short} {hint}"),
                &format!("{name} {hint}"),
                width,
            );
        }
    }
    out
}

fn help_of(text: &'static str) -> &'static str {
    text.split_once('\n').map_or("", |(_, h)| h)
}

/// One help row (see [`rows`]), for a word that is no flag (`ROOT`).
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn row(out: &mut String, label: &str, help: &str, width: usize) {
    let mut lines = help.lines();
    let first = lines.next().unwrap_or("");
    if label.len() < width {
        out.push_str(&format!("    {label:<width$}{first}\n"));
    } else {
        out.push_str(&format!("    {label}\n    {:width$}{first}\n", ""));
    }
    for line in lines {
        out.push_str(&format!("    {:width$}{line}\n", ""));
    }
}

/// ` [--sysfs DIR] [--json]`: the table as the words of a usage line.
pub(crate) fn usage_words<A>(table: &[Flag<A>]) -> String {
    bracketed(&mut table.iter().map(Flag::label))
}

#[inline(never)]
#[cfg_attr(feature = "cold-size", optimize(size))]
fn bracketed(labels: &mut dyn Iterator<Item = &'static str>) -> String {
    labels.map(|l| format!(" [{l}]")).collect()
}

/// The flags used so far, so that one which does not repeat is refused a second time
/// (a second value would silently win).
#[derive(Debug, Default)]
pub(crate) struct Seen<'a>(Vec<&'a str>);

/// A flag that does not repeat, given twice: printed as `--workers given twice`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Twice(pub String);

impl core::fmt::Display for Twice {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} given twice", self.0)
    }
}

impl<'a> Seen<'a> {
    /// Notes a use of `flag`; a second use of one that does not repeat is [`Twice`].
    pub(crate) fn note<A>(&mut self, flag: &Flag<A>) -> Result<(), Twice> {
        self.note_name(flag.name(), flag.takes)
    }

    /// As [`Seen::note`], by name: a word in no table (`-`) is refused as itself.
    #[inline(never)]
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn note_name(&mut self, name: &'a str, takes: Takes) -> Result<(), Twice> {
        if takes == Takes::Repeated {
            return Ok(());
        }
        if self.0.contains(&name) {
            return Err(Twice(name.to_string()));
        }
        self.0.push(name);
        Ok(())
    }
}
