//! What the workers will open, checked as the `--user` they will run as, before anything
//! is bound: the access log, and the root with the pages the site options name, the
//! `--mime-types` file and the `--basic-auth` file (the master reads both again as that
//! user at every HUP).
//!
//! Input: where the log goes, the root and site rules, and the identity `--user`
//! resolved to. Output: `Ok`, or the error the check gave. The invoking user's checks
//! (`access_log::dest::check`: an existing file opens for appending, a missing one has a
//! writable directory, the syslog socket accepts a connection; `preflight::root` and
//! `preflight::pages`: a readable directory, each page a regular file under it;
//! `preflight::media_types`: the file reads and parses; nothing is created) run again in
//! a short-lived child that first becomes that user, since the master drops privileges
//! only after binding and the workers then open these as that user; the child writes its
//! answer to a pipe. A log only root could write, or a root or
//! page only root could read, is so refused at start, as a reload would refuse it,
//! instead of by every worker or every request. Standard output is inherited, never
//! opened by path: nothing to check. Without root there is no other user to become:
//! nothing to check either (`serve` would fail to drop privileges).

use crate::access_log::dest;
use crate::config::LogTarget;
use crate::preflight::Problem;
use crate::site::SiteRules;
use crate::sys::{self, Forked};
use crate::user::Identity;
use rustix::process::WaitOptions;
use std::path::Path;

/// Longest answer a child sends back (a message is one line).
const ANSWER_MAX: usize = 4096;

/// Why a check as another user failed: the text the child sent back through the pipe
/// (an error crosses the process boundary as its message), or what went wrong around it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AsUserError(pub String);

impl core::fmt::Display for AsUserError {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

/// [`dest::check`] of `target` as `id`: the error's text when it fails.
pub(crate) fn log(target: &LogTarget, id: &Identity) -> Result<(), AsUserError> {
    if matches!(target, LogTarget::Off | LogTarget::Stdout) {
        return Ok(());
    }
    run_as(id, || {
        dest::check(target).map_err(|e| AsUserError(e.to_string()))
    })
}

/// The root and the pages of `site` as `id` would find them (`preflight::site_files`),
/// then its `--mime-types` file (`preflight::media_types`): the first problem. The child
/// sends it as `root` or `site`, a tab, and the message.
pub(crate) fn files(root: &Path, site: &SiteRules, id: &Identity) -> Result<(), Problem> {
    let checked = run_as(id, || {
        crate::preflight::site_files(root, site)
            .map(|_| ())
            .and_then(|()| crate::preflight::media_types(site).map(drop))
            .map_err(|p| AsUserError(format!("{}\t{}", p.stage, p.message)))
    });
    checked.map_err(|AsUserError(answer)| {
        let (stage, message) = answer.split_once('\t').unwrap_or(("site", &answer));
        Problem {
            stage: if stage == "root" { "root" } else { "site" },
            message: format!("{message} (as uid {})", id.uid),
        }
    })
}

/// True when this process is root and `id` another user: the checks of this module then
/// run in a child that becomes `id` (otherwise there is no one else to become).
pub(crate) fn becomes_other(id: &Identity) -> bool {
    let me = rustix::process::geteuid();
    me.is_root() && id.uid != me.as_raw()
}

/// Runs `check` in a child that first becomes `id`; its error text comes back through a
/// pipe. Nothing to do (`Ok`) unless this process is root and `id` another user.
fn run_as(
    id: &Identity,
    check: impl FnOnce() -> Result<(), AsUserError>,
) -> Result<(), AsUserError> {
    let failed = |what: &str, e: &dyn core::fmt::Display| AsUserError(format!("{what}: {e}"));
    if !becomes_other(id) {
        return Ok(());
    }
    let (rx, tx) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| failed("pipe", &e))?;
    let pid = match sys::fork().map_err(|e| failed("fork", &e))? {
        Forked::Child => {
            drop(rx);
            let answer = sys::become_user(id.uid, id.gid, &id.groups)
                .map_err(|e| AsUserError(format!("becoming uid {}: {e}", id.uid)))
                .and_then(|()| check());
            let code = match answer {
                Ok(()) => 0,
                Err(AsUserError(text)) => {
                    let bytes = text.as_bytes();
                    let _ = rustix::io::write(&tx, &bytes[..bytes.len().min(ANSWER_MAX)]);
                    1
                }
            };
            sys::exit_now(code)
        }
        Forked::Parent(pid) => pid,
    };
    drop(tx);
    let answer = read_answer(&rx);
    let status = loop {
        match rustix::process::waitpid(Some(pid), WaitOptions::empty()) {
            Ok(Some((_, status))) => break status,
            Ok(None) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(failed("waitpid", &e)),
        }
    };
    match status.exit_status() {
        Some(0) => Ok(()),
        Some(_) if !answer.is_empty() => Err(AsUserError(answer)),
        _ => Err(AsUserError("the check as --user died".into())),
    }
}

/// Everything the child wrote, until it closed the pipe (bounded).
#[cfg_attr(feature = "cold-size", optimize(size))]
fn read_answer(rx: &rustix::fd::OwnedFd) -> String {
    let mut buf = vec![0u8; ANSWER_MAX];
    let mut len = 0;
    while len < buf.len() {
        match rustix::io::read(rx, &mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => break,
        }
    }
    String::from_utf8_lossy(&buf[..len]).into_owned()
}
