//! What `serve` would refuse, found before anything is bound: the served root, the pages
//! the site options name, the access log, `--user`. `check` and `serve` both run it, so
//! `check` refuses first whatever `serve` would.
//!
//! Input: validated [`ServeArgs`] (their syntax is already checked). Output: one
//! [`Failure`] per problem, each printed as one line. It reads and opens, but changes
//! nothing: the access log is opened for appending only if it exists (otherwise its
//! directory is checked for writing), and nothing is created; a syslog socket must
//! accept a connection. With `--user`, the log, the root and the pages are checked again
//! as that user (`as_user.rs`), since the workers open them as that user (and a reload
//! checks them as that user too).

use super::Failure;
use crate::args::ServeArgs;
use crate::config::LogTarget;
use rustix::fd::AsFd;

/// Every problem found, in the order root, pages, access log, user.
pub fn problems(args: &ServeArgs) -> Vec<Failure> {
    let mut found = Vec::new();
    let site = args.site.rules();
    match crate::preflight::root(&args.root) {
        Ok(root) => {
            let pages = crate::preflight::pages(root.as_fd(), &site);
            found.extend(pages.into_iter().map(|p| Failure::new(p.stage, p.message)));
        }
        Err(e) => found.push(Failure::new("root", e)),
    }
    let files_checked = found.is_empty();
    let log = &args.logging.access_log;
    let log_checked = crate::access_log::dest::check(log);
    if let Err(e) = &log_checked {
        let why = match log {
            LogTarget::Syslog(_) => format!("cannot be connected to: {e}"),
            _ => format!("cannot be opened for appending: {e}"),
        };
        found.push(log_failure(log, why));
    }
    if let Some(spec) = &args.user {
        match crate::user::lookup(spec) {
            Err(e) => found.push(Failure::new("user", e)),
            Ok(id) => {
                if files_checked {
                    if let Err(p) = super::as_user::files(&args.root, &site, &id) {
                        found.push(Failure::new(p.stage, p.message));
                    }
                }
                if log_checked.is_ok() {
                    if let Err(e) = super::as_user::log(log, &id) {
                        let why = format!("cannot be opened as uid {}: {e}", id.uid);
                        found.push(log_failure(log, why));
                    }
                }
            }
        }
    }
    found
}

/// `access-log: PATH: why`.
fn log_failure(log: &LogTarget, why: String) -> Failure {
    match log {
        LogTarget::File(p) | LogTarget::Syslog(p) => {
            Failure::new("access-log", format!("{}: {why}", p.display()))
        }
        LogTarget::Off | LogTarget::Stdout => Failure::new("access-log", why),
    }
}
