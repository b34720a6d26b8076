//! `steerd check --explain PATH` (with `--explain-host NAME`) and `--explain-addr ADDR`,
//! and what `check` warns about the rules.
//!
//! Input: validated [`ServeArgs`] (their site rules compiled as a worker compiles them)
//! and, for `--explain`, a request path with an optional `?QUERY`, taken as decoded, and
//! the host it names (`--explain-host`). Output: the explanation on standard output (with
//! hosts, the host that answers, its names and where it was given, or the 421; the rule and its source, the redirect
//! target, the upstream a proxy rule forwards to, or the file that answers, the header lines and the `Cache-Control` line that
//! apply), and [`rule_warnings`]: a rule that can never match because an earlier one
//! answers whatever it would, a redirect loop between rules, a rule that shadows files
//! under the root. It opens files under the root as a worker does (`files::open`) and
//! walks the root's tree (`read_dir`, dot-names skipped, at most [`WALK_MAX`] entries)
//! for the shadowed files; it changes nothing and binds nothing.

use super::Failure;
use crate::args::site::SiteArgs;
use crate::args::ServeArgs;
use crate::files::{self, FileOptions, Lookup, PATH_MAX};
use crate::site::access::{AccessList, Verdict};
use crate::site::glob::Captures;
use crate::site::hosts::HostTable;
use crate::site::rules::{first_match, Action, Rule};
use crate::site::upstream::Upstream;
use crate::site::SiteRules;
use rustix::fd::{AsFd, BorrowedFd};
use std::fmt::Write as _;
use std::net::IpAddr;
use std::path::Path;

/// Most entries of the root's tree `check` looks at for files a rule shadows.
const WALK_MAX: usize = 20_000;

/// Prints what would answer `target` for a request naming `host` (none: a request
/// without a Host) and whether a client at `addr` is let in; returns the exit status.
#[inline(never)]
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn main(
    args: &ServeArgs,
    target: Option<&str>,
    host: Option<&str>,
    addr: Option<IpAddr>,
) -> Result<i32, Failure> {
    // Only a request (or a named host) is answered by a host; an address alone is
    // checked against the defaults' lists, as a connection is before its request.
    let (site_args, root) = match (target, host) {
        (None, None) => (&args.site, args.root.as_path()),
        _ => match host_of(args, host) {
            Some(found) => found,
            None => return Ok(0),
        },
    };
    let mut site = site_args.rules();
    if let Some(ip) = addr {
        print!("{}", explain_addr(&site.access, ip));
    }
    let Some(target) = target else {
        return Ok(0);
    };
    site.types =
        crate::preflight::media_types(&site).map_err(|p| Failure::new(p.stage, p.message))?;
    let root = crate::preflight::root(root).map_err(|e| Failure::new("root", e))?;
    print!("{}", explain(&site, root.as_fd(), target));
    Ok(0)
}

/// The site and root that answer a request naming `host`, its `host:` line printed
/// when there are hosts; `None` (the 421 printed) when no host answers.
fn host_of<'a>(args: &'a ServeArgs, host: Option<&str>) -> Option<(&'a SiteArgs, &'a Path)> {
    let names: Vec<Vec<String>> = args.hosts.iter().map(|h| h.names.clone()).collect();
    let table = HostTable::new(&names, &args.allowed_hosts, &args.listen);
    match (table.pick(host.map(str::as_bytes)), args.hosts.is_empty()) {
        (None, _) => {
            let name = host.unwrap_or("a request without Host");
            println!("host: none answers {name}\nanswer: 421");
            None
        }
        (Some(_), true) => Some((&args.site, &args.root)),
        (Some(i), false) => {
            let h = &args.hosts[usize::from(i)];
            println!("host: {} ({})", h.names.join(" "), h.source);
            Some((&h.site, &h.root))
        }
    }
}

/// Whether `--allow` and `--deny` let a client at `ip` in, and which entry says so.
fn explain_addr(list: &AccessList, ip: IpAddr) -> String {
    let verdict = match list.verdict(ip) {
        Verdict::Admitted(None) => "admitted (no --allow given)".to_string(),
        Verdict::Admitted(Some(e)) => format!("admitted by allow {} ({})", e.net, e.given),
        Verdict::Denied(e) => format!("refused by deny {} ({})", e.net, e.given),
        Verdict::NotAllowed => "refused: in no --allow network".to_string(),
    };
    format!("address: {ip}\naccess: {verdict}\n")
}

/// The explanation of `target` (`PATH[?QUERY]`) against `site` served from `root`.
fn explain(site: &SiteRules, root: BorrowedFd<'_>, target: &str) -> String {
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    let mut out = format!("path: {path}\n");
    if let Some(auth) = &site.auth {
        let skipped = match auth.skips(path.as_bytes()) {
            true => " (not for this path: basic-auth-skip)",
            false => "",
        };
        let _ = writeln!(out, "auth: {}{skipped}", auth.file.display());
    }
    let mut caps = Captures::default();
    let mut served = path.to_string();
    match first_match(&site.rules, path.as_bytes(), &mut caps) {
        None => out.push_str("rule: none\n"),
        Some(rule) => {
            let to = target_of(rule, path, &caps, query.map(str::as_bytes));
            match rule.action {
                Action::Redirect(code) => {
                    let _ = writeln!(out, "rule: {} (redirect {})", rule.source, rule.from_text);
                    let _ = writeln!(out, "answer: {code}, Location: {to}");
                    return with_lines(out, site, None);
                }
                Action::Proxy => {
                    let up = rule.upstream.as_ref().map(ToString::to_string);
                    let up = up.unwrap_or_default();
                    let _ = writeln!(out, "rule: {} (proxy {})", rule.source, rule.from_text);
                    let _ = writeln!(out, "answer: forwarded to {up}");
                    return out;
                }
                Action::Rewrite => {
                    let _ = writeln!(
                        out,
                        "rule: {} (rewrite {} to {to})",
                        rule.source, rule.from_text
                    );
                    served = to;
                }
            }
        }
    }
    let opts = FileOptions::serving(site);
    let mut scratch = [0u8; PATH_MAX + 1];
    let mut found = files::open(root, served.as_bytes(), &mut scratch, &opts);
    if matches!(found, Lookup::Status(404)) && !served.ends_with('/') {
        for ext in &site.try_ext {
            let candidate = format!("{served}.{}", String::from_utf8_lossy(ext));
            let tried = files::open(root, candidate.as_bytes(), &mut scratch, &opts);
            if !matches!(tried, Lookup::Status(404)) {
                let _ = writeln!(out, "try-ext: {candidate}");
                (served, found) = (candidate, tried);
                break;
            }
        }
    }
    if matches!(found, Lookup::Status(404)) {
        if let Some(fallback) = site.fallback_for(path.as_bytes()) {
            served = String::from_utf8_lossy(fallback).into_owned();
            let _ = writeln!(out, "fallback: {served}");
            found = files::open(root, fallback, &mut scratch, &opts);
        }
    }
    match found {
        Lookup::File(_, meta) => {
            let mime = String::from_utf8_lossy(meta.mime);
            let _ = writeln!(out, "file: {served} ({mime}, {} bytes)", meta.size);
            let _ = writeln!(out, "answer: 200");
            with_lines(out, site, Some(&served))
        }
        Lookup::AddSlash => {
            let _ = writeln!(out, "answer: 301, Location: {served}/ (a directory)");
            with_lines(out, site, None)
        }
        Lookup::Status(404) if site.list_dirs && served.ends_with('/') => {
            out + "answer: 200, a directory listing (--list-dirs)\n"
        }
        Lookup::Status(s) => {
            let page = site.error_page(s).map(String::from_utf8_lossy);
            let _ = writeln!(
                out,
                "answer: {s}{}",
                page.map_or(String::new(), |p| format!(", the page {p}"))
            );
            out
        }
    }
}

/// The `--header` lines (2xx and 3xx) and, for a file served at `path`, its
/// `Cache-Control` line.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn with_lines(mut out: String, site: &SiteRules, path: Option<&str>) -> String {
    for line in String::from_utf8_lossy(&site.headers).lines() {
        let _ = writeln!(out, "header: {line}");
    }
    let cache = path.and_then(|p| crate::site::cache_control(&site.cache_rules, p.as_bytes()));
    if let Some(line) = cache {
        let _ = writeln!(
            out,
            "cache-control: {}",
            String::from_utf8_lossy(line).trim_end()
        );
    }
    out
}

/// A rule's target for `path` (its captures in `caps`), as text.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn target_of(rule: &Rule, path: &str, caps: &Captures, query: Option<&[u8]>) -> String {
    let mut buf = vec![0u8; 4 * crate::http::MAX_TARGET];
    let n = rule.write_target(path.as_bytes(), caps, query, &mut buf);
    String::from_utf8_lossy(&buf[..n.unwrap_or(0)]).into_owned()
}

/// What `check` warns about the rules of `site` served from `root`: rules that never
/// match, redirect loops, shadowed files.
#[inline(never)]
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn rule_warnings(site: &SiteRules, root: &Path) -> Vec<String> {
    let rules = &site.rules;
    if rules.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut caps = Captures::default();
    let files = tree(root);
    for (j, rule) in rules.iter().enumerate() {
        let mut line = format!("rules: {}", name(rule));
        if let Some(earlier) = rules[..j].iter().find(|e| shadows(e, rule)) {
            line += " never matches: ";
            line += &name(earlier);
            out.push(line + " answers every path it would");
            continue;
        }
        if let Some(why) = rule.upstream.as_ref().and_then(unreachable_socket) {
            out.push(format!("{line} forwards to {why}"));
        }
        if let Some(cycle) = redirect_loop(rules, j) {
            out.push(format!("{line} is in a redirect loop: {cycle}"));
        }
        // A file the rule answers with itself (a rewrite to it) is not shadowed.
        let mut mine = files.iter().filter(|p| {
            let ruled = first_match(rules, p.as_bytes(), &mut caps);
            ruled.is_some_and(|r| core::ptr::eq(r, rule)) && target_of(rule, p, &caps, None) != **p
        });
        if let Some(first) = mine.next() {
            let more = mine.count();
            out.push(format!(
                "{line} shadows the file {first} (and {more} more): the rule answers instead"
            ));
        }
    }
    out
}

/// What is wrong with a unix upstream's socket path, seen now: it is missing or not a
/// socket (each request forwarded there would be answered 502).
fn unreachable_socket(upstream: &Upstream) -> Option<String> {
    use std::os::unix::fs::FileTypeExt;
    let Upstream::Unix(path) = upstream else {
        return None;
    };
    match std::fs::metadata(&**path) {
        Ok(m) if m.file_type().is_socket() => None,
        Ok(_) => Some(format!("{upstream}, which is not a socket")),
        Err(e) => Some(format!("{upstream}, which cannot be reached: {e}")),
    }
}

/// `SOURCE (FROM)`.
fn name(rule: &Rule) -> String {
    format!("{} ({})", rule.source, rule.from_text)
}

/// Whether `earlier` answers every path `later` matches: it matches every path, has
/// the same FROM, or matches the one path a literal FROM names.
fn shadows(earlier: &Rule, later: &Rule) -> bool {
    let mut caps = Captures::default();
    earlier.always_matches()
        || earlier.from_text == later.from_text
        || later
            .literal_from()
            .is_some_and(|p| earlier.matches(p.as_bytes(), &mut caps))
}

/// The loop rule `start` begins, when its redirects come back to it: followed from its
/// sample path (`Rule::sample_path`) through the redirects to paths on this server; named
/// once, by the loop's first rule.
fn redirect_loop(rules: &[Rule], start: usize) -> Option<String> {
    let mut caps = Captures::default();
    let mut path = rules[start].sample_path();
    let mut chain = String::new();
    for _ in 0..rules.len().min(16) {
        let rule = first_match(rules, path.as_bytes(), &mut caps)?;
        let i = rules.iter().position(|r| core::ptr::eq(r, rule))?;
        if i < start || !matches!(rule.action, Action::Redirect(_)) {
            return None;
        }
        if i == start && !chain.is_empty() {
            return Some(chain + " -> " + &name(rule));
        }
        if !chain.is_empty() {
            chain += " -> ";
        }
        chain += &name(rule);
        path = target_of(rule, &path, &caps, None);
        if !path.starts_with('/') {
            return None;
        }
    }
    None
}

/// The request paths of the regular files under `root` (dot-names skipped), at most
/// [`WALK_MAX`] entries looked at, in the order the directories list them.
fn tree(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![(root.to_path_buf(), String::new())];
    let mut seen = 0;
    while let Some((dir, prefix)) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > WALK_MAX {
                return out;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let path = format!("{prefix}/{name}");
            match entry.file_type() {
                Ok(t) if t.is_dir() => dirs.push((entry.path(), path)),
                Ok(t) if t.is_file() => out.push(path),
                _ => {}
            }
        }
    }
    out
}
