//! Stage 1, the configuration file (`--config FILE`, `STEERD_CONFIG`): the serve flags
//! spelled one a line, `NAME VALUE`.
//!
//! Input: the file's text (read by the caller and handed in through `args::Outside`: no
//! I/O here) and its name, the serve flag table (`args/serve.rs`), the command line and
//! the environment's tokens. Output: command-line tokens (`--flag=value`), each with the
//! `FILE:LINE` it came from, for the flags neither the command line nor the environment
//! gives, and the ROOT the file names (`root DIR`). A flag given there wins over the
//! file's lines for it, whole, as a command-line flag wins over its variable.
//!
//! Grammar, a line at a time: blank lines and lines whose first non-blank character is
//! `#` are skipped (a `#` later in a line is part of the value: header values and URLs
//! hold one); otherwise NAME is the first word, a serve flag's long name without `--`,
//! and VALUE the rest of the line, trimmed, exactly as the flag takes it (`header
//! X-Frame-Options: DENY`, `redirect /old/** /new/$1 301`); a switch is its name alone;
//! `root DIR` is the ROOT argument. Every line is checked on its own here, so an unknown
//! setting, a bad value or a second value for a setting that takes one is an error that
//! names `FILE:LINE`; what only the whole set shows (`--proxy-protocol` without
//! `--real-ip-from`) is checked with the command line's flags, as it is for flags.
//!
//! The file is read as [`Block`]s: the lines before any `host` line are the defaults; a
//! line `host NAME [NAME...]` opens a host block, which runs to the next `host` line and
//! holds `root` and site settings (`args::hosts::FileHost`, made into a host by `args/hosts.rs`
//! once the defaults are known). A single-valued setting once a block.

use super::flag::{lookup, Takes};
use super::hosts::{FileHost, HostArgs};
use super::serve::{check_value, Apply, FLAGS};
use super::site::SiteArgs;
use super::ArgsError;
use std::path::{Path, PathBuf};

/// One setting line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Setting<'t> {
    /// Its line number, from 1.
    pub(crate) line: usize,
    /// NAME, as written (`header`).
    pub(crate) name: &'t str,
    /// VALUE, trimmed (empty for a switch).
    pub(crate) value: &'t str,
}

/// The lines of one block: the defaults (no `hosts`), or one host's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Block<'t> {
    /// The names of a host block's `host` line; empty for the defaults.
    pub(crate) hosts: Vec<String>,
    /// The line of its `host` line (0 for the defaults).
    pub(crate) line: usize,
    /// Its settings, in file order.
    pub(crate) settings: Vec<Setting<'t>>,
}

/// A token made from a line: `--flag=value` (or `--flag`), and `FILE:LINE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FileToken {
    /// The token, as on a command line.
    pub(crate) token: String,
    /// Where it came from.
    pub(crate) at: String,
}

/// What the file adds to the command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FromFile {
    /// The tokens of the flags the command line and the environment do not give.
    pub(crate) tokens: Vec<FileToken>,
    /// `root DIR`, with its `FILE:LINE`.
    pub(crate) root: Option<(String, String)>,
    /// The host blocks, in file order.
    pub(crate) hosts: Vec<FileHost>,
}

/// An error at `FILE:LINE`, as the one line steerd prints.
fn at_line(file: &str, line: usize, what: impl core::fmt::Display) -> ArgsError {
    super::flag_error(format!("{file}:{line}: {what}"))
}

/// Splits `text` into blocks (the grammar above); `file` names it in errors.
pub(crate) fn blocks<'t>(file: &str, text: &'t str) -> Result<Vec<Block<'t>>, ArgsError> {
    let mut out = vec![Block::default()];
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
            return Err(at_line(file, i + 1, "a control character"));
        }
        let (name, value) = line.split_once([' ', '\t']).unwrap_or((line, ""));
        if name == "host" {
            let names = super::hosts::names(value.split_ascii_whitespace())
                .map_err(|why| at_line(file, i + 1, format!("host {why}")))?;
            out.push(Block {
                hosts: names,
                line: i + 1,
                settings: Vec::new(),
            });
            continue;
        }
        let setting = Setting {
            line: i + 1,
            name,
            value: value.trim(),
        };
        out.last_mut().expect("the defaults").settings.push(setting);
    }
    Ok(out)
}

/// The tokens of `file`'s `text` for the flags `given` (the command line's and the
/// environment's tokens) does not name; every line checked on its own.
#[inline(never)]
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn tokens(
    file: &str,
    text: &str,
    given: &[&str],
    hosts: &dyn Fn() -> Option<String>,
) -> Result<FromFile, ArgsError> {
    let blocks = blocks(file, text)?;
    let mut out = FromFile::default();
    for b in blocks.iter().skip(1) {
        out.hosts.push(host_block(file, b)?);
    }
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for s in &blocks[0].settings {
        let at = format!("{file}:{}", s.line);
        let fail = |what: String| at_line(file, s.line, what);
        if s.name == "root" {
            match (&out.root, s.value) {
                (Some((_, first)), _) => {
                    return Err(fail(format!("a second root (first at {first})")))
                }
                (None, "") => return Err(fail("root needs a directory".into())),
                (None, dir) => out.root = Some((dir.to_string(), at)),
            }
            continue;
        }
        let long = format!("--{}", s.name);
        let flag = match lookup(FLAGS, &long) {
            Some(f) if f.name() == long && f.apply != Apply::Config => f,
            Some(_) if s.name == "config" => return Err(fail("a file cannot name another".into())),
            _ => return Err(fail(format!("unknown setting {:?}", s.name))),
        };
        if flag.takes != Takes::Repeated {
            if let Some((_, first)) = seen.iter().find(|(n, _)| *n == s.name) {
                let first = format!("{file}:{first}");
                return Err(fail(format!(
                    "a second value for {} (first at {first})",
                    s.name
                )));
            }
            seen.push((s.name, s.line));
        }
        let token = match (flag.takes, s.value) {
            (Takes::Switch, "") => long.clone(),
            (Takes::Switch, _) => {
                return Err(fail(format!("{} is a switch: its name alone", s.name)))
            }
            (_, "") => return Err(fail(format!("{} needs a value", s.name))),
            (_, v) => format!("{long}={v}"),
        };
        check_value(flag, &long, s.value, hosts).map_err(|e| fail(e.message))?;
        if !given.iter().any(|g| flag.is(g)) {
            out.tokens.push(FileToken { token, at });
        }
    }
    Ok(out)
}

/// The host of a file's block: the `defaults` with the block's lines on top; a block
/// without `root` serves ROOT (`root`).
pub(crate) fn from_block(
    file: &str,
    block: &FileHost,
    defaults: &SiteArgs,
    root: &Path,
) -> Result<HostArgs, ArgsError> {
    let at = |line: usize, what: String| at_line(file, line, what);
    let mut host = HostArgs {
        names: block.names.clone(),
        root: root.to_path_buf(),
        site: defaults.clone(),
        source: format!("{file}:{}", block.line),
    };
    for (line, name, value) in &block.settings {
        if name == "root" {
            host.root = PathBuf::from(value);
            continue;
        }
        let long = format!("--{name}");
        let flag = lookup(FLAGS, &long).filter(|f| f.name() == long);
        let Some((flag, Apply::Site(to))) = flag.map(|f| (f, f.apply)) else {
            return Err(at(
                *line,
                format!("{name} is not a site setting: it cannot go in a host block"),
            ));
        };
        match (flag.takes, value.is_empty()) {
            (Takes::Switch, false) => {
                return Err(at(*line, format!("{name} is a switch: its name alone")))
            }
            (Takes::Value | Takes::Repeated, true) => {
                return Err(at(*line, format!("{name} needs a value")))
            }
            _ => {}
        }
        host.site.rule_source = Some(format!("{file}:{line}"));
        host.site
            .apply(to, &long, value)
            .map_err(|e| at(*line, e.message))?;
    }
    host.site.rule_source = None;
    host.site
        .validate()
        .map_err(|e| at(block.line, e.message))?;
    Ok(host)
}

/// A host block's lines (`root` and single values once); their values are checked as
/// they are applied, once the defaults are known ([`from_block`]).
fn host_block(file: &str, b: &Block<'_>) -> Result<FileHost, ArgsError> {
    let mut out = FileHost {
        names: b.hosts.clone(),
        line: b.line,
        settings: Vec::new(),
    };
    for s in &b.settings {
        let fail = |what: String| at_line(file, s.line, what);
        let long = format!("--{}", s.name);
        let flag = lookup(FLAGS, &long).filter(|f| f.name() == long);
        let single = s.name == "root" || flag.is_some_and(|f| f.takes != Takes::Repeated);
        if let Some((l, ..)) = out.settings.iter().find(|(_, n, _)| single && n == s.name) {
            return Err(fail(format!(
                "a second value for {} in this host block (first at {file}:{l})",
                s.name
            )));
        }
        if s.name == "root" && s.value.is_empty() {
            return Err(fail("root needs a directory".into()));
        }
        out.settings
            .push((s.line, s.name.to_string(), s.value.to_string()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<FromFile, String> {
        tokens("site.conf", text, &[], &|| None).map_err(|e| e.message)
    }

    #[test]
    fn lines_become_tokens_in_file_order() {
        let f = read(
            "# a site\n\nroot /srv/www\nheader X-Frame-Options: DENY\n  redirect /old/** /new/$1 301\n\
             list-dirs\nheader X-Color: #fff\nworkers 2\n",
        )
        .unwrap();
        assert_eq!(f.root, Some(("/srv/www".into(), "site.conf:3".into())));
        let tokens: Vec<_> = f.tokens.iter().map(|t| (&*t.token, &*t.at)).collect();
        assert_eq!(
            tokens,
            [
                ("--header=X-Frame-Options: DENY", "site.conf:4"),
                ("--redirect=/old/** /new/$1 301", "site.conf:5"),
                ("--list-dirs", "site.conf:6"),
                ("--header=X-Color: #fff", "site.conf:7"),
                ("--workers=2", "site.conf:8"),
            ]
        );
    }

    #[test]
    fn the_command_line_wins_whole() {
        let f = tokens(
            "c",
            "header A: 1\nheader B: 2\nworkers 2\n",
            &["--header=C: 3", "-w"],
            &|| None,
        );
        assert!(f.unwrap().tokens.is_empty());
    }

    #[test]
    fn errors_name_file_and_line() {
        for (text, needle) in [
            (
                "workers 2\nbogus 1\n",
                "site.conf:2: unknown setting \"bogus\"",
            ),
            (
                "--workers 2\n",
                "site.conf:1: unknown setting \"--workers\"",
            ),
            ("l 2\n", "site.conf:1: unknown setting \"l\""),
            ("\nworkers lots\n", "site.conf:2: --workers \"lots\""),
            (
                "workers 2\nworkers 3\n",
                "site.conf:2: a second value for workers (first at site.conf:1)",
            ),
            (
                "root a\nroot b\n",
                "site.conf:2: a second root (first at site.conf:1)",
            ),
            ("list-dirs yes\n", "site.conf:1: list-dirs is a switch"),
            ("header\n", "site.conf:1: header needs a value"),
            (
                "redirect /a\n",
                "site.conf:1: --redirect \"/a\": expected FROM TO [CODE]",
            ),
            (
                "config other.conf\n",
                "site.conf:1: a file cannot name another",
            ),
            ("host a.test:80\n", "site.conf:1: host \"a.test:80\""),
            ("host\n", "site.conf:1: host expected at least one name"),
            (
                "host a.test\nfallback /a\nfallback /b\n",
                "site.conf:3: a second value for fallback in this host block",
            ),
            ("header A:\u{1}b\n", "site.conf:1: a control character"),
        ] {
            let e = read(text).unwrap_err();
            assert!(e.starts_with(needle), "{text:?}: {e}");
        }
    }
}
