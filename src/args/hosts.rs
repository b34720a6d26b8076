//! Stage 1, virtual hosts: `--host 'NAME[,NAME...]=ROOT'`, `--allowed-host NAME`, and
//! what a host is once configured ([`HostArgs`]; the configuration file's host blocks,
//! `host NAME [NAME...]`, are read into [`FileHost`] and made into hosts by
//! `args/file.rs`).
//!
//! Input: a `--host` or `--allowed-host` value, or a `host` line's names. Output: the
//! names (checked, lowercase) and root; a host's site settings start as the defaults
//! (the settings outside any block, from the file, the environment and the command
//! line) and take its own lines on top: a single-valued setting replaces the default's,
//! a repeatable one extends the defaults' list, after them. The checks of the whole set
//! (a name given twice, `--allowed-host` beside hosts) are here too. No I/O: whether each
//! root exists is `steerd check`'s and the start's business.

use super::site::SiteArgs;
use super::{flag_error, ArgsError, ServeArgs};
use crate::site::hosts::check_name;
use std::path::PathBuf;

/// A host block as read: its names, the line of its `host` line, its settings (line,
/// NAME, VALUE), each checked on its own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FileHost {
    /// The names, lowercase.
    pub(crate) names: Vec<String>,
    /// The line of `host`.
    pub(crate) line: usize,
    /// Its settings, in file order.
    pub(crate) settings: Vec<(usize, String, String)>,
}

/// One virtual host, as configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostArgs {
    /// Its names, lowercase, in order (`*`: names no other host lists).
    pub(crate) names: Vec<String>,
    /// Its root.
    pub(crate) root: PathBuf,
    /// Its site settings: the defaults with its own on top.
    pub(crate) site: SiteArgs,
    /// Where it was given: `--host VALUE` or `FILE:LINE` of its `host` line.
    pub(crate) source: String,
}

/// The names of a `host` line or a `--host` value, checked, lowercased and without a
/// trailing dot.
pub(crate) fn names<'v>(list: impl Iterator<Item = &'v str>) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for given in list {
        let n = relative(given);
        check_name(n).map_err(|why| format!("{given:?}: {why}"))?;
        out.push(n.to_ascii_lowercase());
    }
    match out.is_empty() {
        true => Err("expected at least one name".into()),
        false => Ok(out),
    }
}

/// `--host NAME[,NAME...]=ROOT`: the names and the root, its site the defaults (given
/// when the whole set is in).
pub(crate) fn parse_flag(flag: &str, v: &str) -> Result<(Vec<String>, PathBuf), ArgsError> {
    let named = |why: String| flag_error(format!("{flag} {v:?}: {why}"));
    let (list, root) = v
        .split_once('=')
        .ok_or_else(|| named("expected NAME[,NAME...]=ROOT".into()))?;
    if root.is_empty() {
        return Err(named("expected a root directory after =".into()));
    }
    Ok((names(list.split(',')).map_err(named)?, PathBuf::from(root)))
}

/// `name` without its trailing dot: `example.com.` (the absolute name, RFC 1034 §3.1)
/// is the name `example.com`, as a request's host is taken (`site::hosts`).
fn relative(name: &str) -> &str {
    name.strip_suffix('.').unwrap_or(name)
}

/// A `--allowed-host` name, lowercase, without a trailing dot.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn parse_allowed(flag: &str, given: &str) -> Result<String, ArgsError> {
    let v = relative(given);
    match check_name(v) {
        Ok(()) if v != "*" => Ok(v.to_ascii_lowercase()),
        Ok(()) => Err(flag_error(format!(
            "{flag} *: every name is allowed without the flag"
        ))),
        Err(why) => Err(flag_error(format!("{flag} {given:?}: {why}"))),
    }
}

/// The checks of the whole set: every name once, `--allowed-host` only without hosts.
pub(crate) fn check(out: &ServeArgs) -> Result<(), ArgsError> {
    if !out.hosts.is_empty() && !out.allowed_hosts.is_empty() {
        return Err(flag_error(
            "--allowed-host applies without hosts: with --host or host blocks, a name no \
             host lists is already 421 (unless a host is *)"
                .to_string(),
        ));
    }
    let all = out
        .hosts
        .iter()
        .flat_map(|h| h.names.iter().map(move |n| (n, h)));
    for (i, (name, host)) in all.clone().enumerate() {
        if let Some((_, first)) = all.clone().take(i).find(|(n, _)| *n == name) {
            return Err(flag_error(format!(
                "host {name} at {} is already given at {}",
                host.source, first.source
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_flags_parse_and_refuse() {
        let (names, root) = parse_flag("--host", "A.test,www.a.test=/srv/a").unwrap();
        assert_eq!(names, ["a.test", "www.a.test"]);
        assert_eq!(root, PathBuf::from("/srv/a"));
        assert_eq!(parse_flag("--host", "*=/srv/any").unwrap().0, ["*"]);
        for (v, needle) in [
            ("a.test", "expected NAME[,NAME...]=ROOT"),
            ("a.test=", "expected a root directory"),
            ("a.test:80=/x", "\"a.test:80\": expected a host name"),
            ("a.test,,b=/x", "\"\": expected a host name"),
        ] {
            let e = parse_flag("--host", v).unwrap_err().message;
            assert!(
                e.starts_with(&format!("--host {v:?}: ")) && e.contains(needle),
                "{e}"
            );
        }
        assert_eq!(
            parse_allowed("--allowed-host", "NAS.local").unwrap(),
            "nas.local"
        );
        assert_eq!(
            parse_allowed("--allowed-host", "nas.local.").unwrap(),
            "nas.local"
        );
        assert_eq!(super::names(["A.test."].into_iter()).unwrap(), ["a.test"]);
        assert!(super::names(["."].into_iter()).is_err());
        assert!(parse_allowed("--allowed-host", "*").is_err());
        assert!(parse_allowed("--allowed-host", "a b").is_err());
    }
}
