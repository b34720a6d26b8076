//! What `serve` would refuse, found before anything is bound: the served root, the pages
//! the site options name, the `--mime-types` file, the `--basic-auth` file, the access
//! log, `--user`. `check` and `serve` both run it, so `check` refuses first whatever
//! `serve` would.
//!
//! Input: validated [`ServeArgs`] (their syntax is already checked). Output: one
//! [`Failure`] per problem, each printed as one line. It reads and opens, but changes
//! nothing: the access log must be a regular file (a FIFO is refused from its `stat`,
//! never opened) and is opened for appending only if it exists (otherwise its
//! directory is checked for writing), and nothing is created; a syslog socket must
//! accept a connection. With `--user` (run as root), the root, the pages and the
//! `--mime-types` file are checked again as that user, and the log only as that user
//! (`as_user.rs`), since the workers open them as that user (and a reload checks them
//! as that user too).

use super::Failure;
use crate::args::ServeArgs;
use crate::config::LogTarget;
use rustix::fd::AsFd;

/// Every problem found, in the order root, pages, media types, access log, user.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn problems(args: &ServeArgs) -> Vec<Failure> {
    let mut found = Vec::new();
    let site = args.site.rules();
    match crate::preflight::root(&args.root) {
        Ok(root) => {
            let pages = crate::preflight::pages(root.as_fd(), &site);
            found.extend(pages.into_iter().map(|p| Failure::new(p.stage, p.message)));
        }
        Err(e) => found.push(Failure::new("root", e)),
    }
    let defaults = files_named(&site);
    for h in &args.hosts {
        let host = |what: String| format!("host {} ({}): {what}", h.names[0], h.source);
        let rules = h.site.rules();
        let mut problems = files_named(&rules);
        match crate::preflight::root(&h.root) {
            Ok(root) => problems.extend(crate::preflight::pages(root.as_fd(), &rules)),
            Err(e) => found.push(Failure::new("root", host(e.to_string()))),
        }
        // A file the host has from the defaults is named once, below.
        problems.retain(|p| !defaults.contains(p));
        found.extend(
            problems
                .into_iter()
                .map(|p| Failure::new(p.stage, host(p.message))),
        );
    }
    found.extend(
        defaults
            .into_iter()
            .map(|p| Failure::new(p.stage, p.message)),
    );
    let files_checked = found.is_empty();
    let user = args.user.as_ref().map(crate::user::lookup);
    let log = &args.logging.access_log;
    // Root with `--user`: the workers open the log as that user, never as root, so it is
    // checked as that user only. Checking it as root too would refuse a log only that
    // user may write whenever root lacks CAP_DAC_OVERRIDE (a hardened unit's bounding set).
    // A FIFO (or any other file that is not regular) is refused from its `stat`: opening
    // it would wait for a reader, or hand the reader an end of file when closed again.
    let kind = match log {
        LogTarget::File(p) => crate::access_log::dest::not_regular(p),
        _ => None,
    };
    match &user {
        _ if kind.is_some() => found.extend(kind.map(|k| log_failure(log, k.to_string()))),
        Some(Ok(id)) if super::as_user::becomes_other(id) => {
            if let Err(e) = super::as_user::log(log, id) {
                let why = match log {
                    LogTarget::Syslog(_) => {
                        format!("cannot be connected to as uid {}: {e}", id.uid)
                    }
                    _ => format!("cannot be opened as uid {}: {e}", id.uid),
                };
                found.push(log_failure(log, why));
            }
        }
        _ => {
            if let Err(e) = crate::access_log::dest::check(log) {
                let why = match log {
                    LogTarget::Syslog(_) => format!("cannot be connected to: {e}"),
                    _ => format!("cannot be opened for appending: {e}"),
                };
                found.push(log_failure(log, why));
            }
        }
    }
    match user {
        Some(Err(e)) => found.push(Failure::new("user", e)),
        Some(Ok(id)) if files_checked => {
            if let Err(p) = super::as_user::files(&args.root, &site, &id) {
                found.push(Failure::new(p.stage, p.message));
            }
        }
        _ => {}
    }
    found
}

/// The problems of the files `site` names besides its pages: the `--mime-types` file,
/// the `--basic-auth` file and the `--compress-cache` directory.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn files_named(site: &crate::site::SiteRules) -> Vec<crate::preflight::Problem> {
    [
        crate::preflight::media_types(site).err(),
        crate::preflight::credentials(site).err(),
        crate::preflight::compress_cache(site).err(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// What `serve` would accept but an operator should change: the rule warnings of the
/// defaults and of each host (`explain::rule_warnings`); an htpasswd file whose
/// hashes have different costs. Then the time of a check tells which cost a name is
/// checked at (an unknown name at the cost of its decoy, `auth::htpasswd`): not whether
/// it is a user, but which group it falls in. One line, `site: --basic-auth FILE: ...`.
pub(crate) fn warnings(args: &ServeArgs) -> Vec<String> {
    let site = args.site.rules();
    let mut found = super::explain::rule_warnings(&site, &args.root);
    // Each host's rules under its root; what the defaults already said is said once.
    for h in &args.hosts {
        let own = super::explain::rule_warnings(&h.site.rules(), &h.root);
        let new: Vec<String> = own.into_iter().filter(|w| !found.contains(w)).collect();
        let host = |w: String| format!("host {} ({}): {w}", h.names[0], h.source);
        found.extend(new.into_iter().map(host));
    }
    found.extend(hash_costs(&site));
    found
}

/// Hashes of different costs in the `--basic-auth` file.
fn hash_costs(site: &crate::site::SiteRules) -> Vec<String> {
    let (Some(rule), Ok(Some(users))) = (&site.auth, crate::preflight::credentials(site)) else {
        return Vec::new();
    };
    let costs = users.costs();
    if costs.len() < 2 {
        return Vec::new();
    }
    let each: Vec<String> = costs
        .iter()
        .map(|(cost, n)| format!("{cost}: {n} user{}", if *n == 1 { "" } else { "s" }))
        .collect();
    vec![format!(
        "site: --basic-auth {}: the hashes have different costs ({}), so the time a check \
         takes tells which of them a name is checked at; hash every password at one cost",
        rule.file.display(),
        each.join(", ")
    )]
}

/// `access-log: PATH: why`.
#[cfg_attr(feature = "cold-size", optimize(size))]
fn log_failure(log: &LogTarget, why: String) -> Failure {
    match log {
        LogTarget::File(p) | LogTarget::Syslog(p) => {
            Failure::new("access-log", format!("{}: {why}", p.display()))
        }
        LogTarget::Off | LogTarget::Stdout => Failure::new("access-log", why),
    }
}
