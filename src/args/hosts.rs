//! Stage 1, virtual hosts: `--host 'NAME[,NAME...]=ROOT'`, the configuration file's host
//! blocks (`host NAME [NAME...]`, read by `args/file.rs`), and `--allowed-host NAME`.
//!
//! Input: a `--host` value, or a block's lines with their `FILE:LINE`, and the defaults
//! (the site settings outside any block, from the file, the environment and the command
//! line). Output: one [`HostArgs`] a host: its names, its root and its site settings, which
//! start as the defaults and take the block's lines on top: a single-valued setting
//! replaces the default's, a repeatable one extends the defaults' list (after them). The
//! checks of the whole set (a name given twice, `--allowed-host` beside hosts) are here
//! too. No I/O: whether each root exists is `steerd check`'s and the start's business.

use super::file::FileHost;
use super::flag::{lookup, Takes};
use super::serve::{Apply, FLAGS};
use super::site::SiteArgs;
use super::{flag_error, ArgsError, ServeArgs};
use crate::site::hosts::check_name;
use std::path::PathBuf;

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

/// The names of a `host` line or a `--host` value, checked and lowercased.
pub(crate) fn names<'v>(list: impl Iterator<Item = &'v str>) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for n in list {
        check_name(n).map_err(|why| format!("{n:?}: {why}"))?;
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

/// A `--allowed-host` name, lowercase.
pub(crate) fn parse_allowed(flag: &str, v: &str) -> Result<String, ArgsError> {
    match check_name(v) {
        Ok(()) if v != "*" => Ok(v.to_ascii_lowercase()),
        Ok(()) => Err(flag_error(format!(
            "{flag} *: every name is allowed without the flag"
        ))),
        Err(why) => Err(flag_error(format!("{flag} {v:?}: {why}"))),
    }
}

/// The host of a file's block: the `defaults` with the block's lines on top; a block
/// without `root` serves ROOT (`root`).
pub(crate) fn from_block(
    file: &str,
    block: &FileHost,
    defaults: &SiteArgs,
    root: &std::path::Path,
) -> Result<HostArgs, ArgsError> {
    let at = |line: usize, what: String| flag_error(format!("{file}:{line}: {what}"));
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
        if PER_PROCESS.contains(&name.as_str()) {
            return Err(at(
                *line,
                format!("{name} is one for the whole server: set it outside host blocks"),
            ));
        }
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

/// Site settings read once for the whole server, so not per host yet: the htpasswd
/// users are read by the master for the one file, the media types file likewise.
const PER_PROCESS: &[&str] = &[
    "basic-auth",
    "basic-auth-realm",
    "basic-auth-skip",
    "mime-types",
    "compress-cache",
];

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
        assert!(parse_allowed("--allowed-host", "*").is_err());
        assert!(parse_allowed("--allowed-host", "a b").is_err());
    }
}
