//! What a new worker will open, checked before a reload starts any: the root (a
//! directory that can be read), the pages the site rules name (each `--error-page` and
//! the `--fallback`: a regular file under the root that can be read), the `--basic-auth`
//! file (read and parsed whole: [`credentials`]; [`host_users`] reads every host's, whose
//! users the master hands to the workers it starts, so they serve exactly what was
//! checked) and the access log
//! (`access_log::dest::check`: a regular file, appendable or creatable, nothing created,
//! a FIFO refused from its `stat` so that the master never waits on it). Without this, a
//! HUP with a log the workers cannot open left no worker serving, the new ones restarting
//! in a loop, and a HUP after a page was deleted went through silently.
//!
//! The `--mime-types` file is read here too ([`media_types`]): at start, by `check`, and
//! by each reload, which serves with what it read or, when the file is refused, keeps
//! the running workers. It must be a regular file (a FIFO is refused from its `fstat`,
//! opened without waiting for a writer) of at most [`MIME_TYPES_MAX`] bytes.
//!
//! Input: the root path, the site rules and the log target. Output: the first
//! [`Problem`], printed as one line. The master runs it as the user the workers run as
//! (it dropped privileges after binding). The same checks before anything is bound are
//! `cmd/preflight.rs` (every problem, and the log once more as `--user`), which takes its
//! root and page checks from here.

use crate::access_log::dest;
use crate::auth::{Credentials, HostUsers};
use crate::config::{LogTarget, Serving};
use crate::files::{self, FileOptions, Lookup, PATH_MAX};
use crate::site::mime::{self, MediaTypes};
use crate::site::{type_room, SiteRules};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{FileType, Mode, OFlags};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

/// Largest `--mime-types` file read (Debian's `/etc/mime.types` is about 60 KB).
pub(crate) const MIME_TYPES_MAX: u64 = 1 << 20;

/// A check that failed: the stage to name and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    /// `root`, `site` or `access-log`.
    pub(crate) stage: &'static str,
    /// What failed and why.
    pub(crate) message: String,
}

impl core::fmt::Display for Problem {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.stage, self.message)
    }
}

/// The root must be a directory this process can read; its descriptor, for checks of
/// what lies under it.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn root(root: &Path) -> Result<OwnedFd, RootError> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    rustix::fs::open(root, flags, Mode::empty()).map_err(|e| RootError {
        path: root.to_path_buf(),
        error: e.into(),
    })
}

/// A root that cannot be opened as a directory: printed as `PATH: why`.
#[derive(Debug)]
pub(crate) struct RootError {
    /// The root given.
    pub(crate) path: std::path::PathBuf,
    /// Why `open(2)` refused it.
    pub(crate) error: std::io::Error,
}

impl core::fmt::Display for RootError {
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.error)
    }
}

/// Each `--error-page` and the `--fallback` must be a regular file under `root` that
/// this process can read (it is opened as a worker opens it, then closed): one problem
/// per page that is not, as `--error-page /404.html: why`.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn pages(root: BorrowedFd<'_>, site: &SiteRules) -> Vec<Problem> {
    let mut scratch = [0u8; PATH_MAX + 1];
    // Whether a page opens does not depend on its media type; it does on `--dotfiles`.
    let opts = FileOptions {
        dotfiles: site.dotfiles,
        ..FileOptions::default()
    }
    .plain();
    let mut found = Vec::new();
    for (flag, path) in site.pages() {
        let why = match files::open(root, path, &mut scratch, &opts) {
            Lookup::File(..) => continue,
            Lookup::Status(404) => "no such file under ROOT",
            Lookup::Status(403) => "refused (permissions, or a symlink leaving ROOT)",
            _ => "not a regular file",
        };
        let path = String::from_utf8_lossy(path);
        found.push(Problem {
            stage: "site",
            message: format!("{flag} {path}: {why}"),
        });
    }
    found
}

/// Largest htpasswd file read (about 50,000 users).
pub(crate) const HTPASSWD_MAX: u64 = 4 << 20;

/// The `--basic-auth` file, read and validated (`None` without the flag). A problem is
/// `--basic-auth FILE:LINE: why` (no line when the file as a whole is wrong).
// Out of line: several callers, one copy of its messages.
#[inline(never)]
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn credentials(site: &SiteRules) -> Result<Option<Credentials>, Problem> {
    let Some(rule) = &site.auth else {
        return Ok(None);
    };
    let file = rule.file.display();
    let problem = |message: String| Problem {
        stage: "site",
        message,
    };
    let text = read_small(&rule.file, HTPASSWD_MAX)
        .map_err(|e| problem(format!("--basic-auth {file}: cannot be read: {e}")))?;
    let key = crate::auth::process_key()
        .map_err(|e| problem(format!("--basic-auth {file}: getrandom: {e}")))?;
    Credentials::parse(&text, key).map(Some).map_err(|e| {
        problem(match e.line {
            0 => format!("--basic-auth {file}: {}", e.why),
            n => format!("--basic-auth {file}:{n}: {}", e.why),
        })
    })
}

/// Each host's `--basic-auth` users, host 0 first (one entry without hosts): a file is
/// read once however many hosts name it, and those hosts share its users.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn host_users(cfg: &Serving) -> Result<HostUsers, Problem> {
    let sites = cfg.sites();
    // The bytes of the path, not `Path`'s component-wise equality (much more code).
    fn file(s: &SiteRules) -> Option<&std::ffi::OsStr> {
        s.auth.as_ref().map(|a| a.file.as_os_str())
    }
    let mut out: HostUsers = Vec::with_capacity(sites.len());
    for (i, site) in sites.iter().enumerate() {
        let same = sites[..i].iter().position(|s| file(s) == file(site));
        let users = match same {
            Some(at) => out[at].clone(),
            None => credentials(site)?.map(Arc::new),
        };
        out.push(users);
    }
    Ok(out)
}

/// The root, the pages its site rules name and the `--basic-auth` file, as a worker
/// would find them: the first problem, or the users the file names.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn site_files(
    root_dir: &Path,
    site: &SiteRules,
) -> Result<Option<Credentials>, Problem> {
    let root = root(root_dir).map_err(|e| Problem {
        stage: "root",
        message: e.to_string(),
    })?;
    if let Some(p) = pages(root.as_fd(), site).into_iter().next() {
        return Err(p);
    }
    credentials(site)
}

/// What a worker opens: the root, the pages its site rules name, the `--basic-auth`
/// file, the `--compress-cache` directory, then the access log.
pub(crate) fn worker_files(
    root_dir: &Path,
    site: &SiteRules,
    log: &LogTarget,
) -> Result<(), Problem> {
    site_files(root_dir, site)?;
    compress_cache(site)?;
    dest::check(log).map_err(|e| Problem {
        stage: "access-log",
        message: match log {
            LogTarget::File(p) | LogTarget::Syslog(p) => format!("{}: {e}", p.display()),
            LogTarget::Off | LogTarget::Stdout => e.to_string(),
        },
    })?;
    Ok(())
}

/// `--compress-cache DIR` must be a directory in which this process can make an
/// anonymous file (`O_TMPFILE`: a file system that has it, write permission), as the
/// workers will; the file made to check is never linked, so nothing is left behind.
// Out of line: several callers, one copy of its messages.
#[inline(never)]
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn compress_cache(site: &SiteRules) -> Result<(), Problem> {
    let Some(dir) = &site.compress.cache_dir else {
        return Ok(());
    };
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let tmp = OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC;
    rustix::fs::open(dir, flags, Mode::empty())
        .and_then(|d| rustix::fs::openat(&d, c".", tmp, Mode::from_raw_mode(0o600)))
        .map(drop)
        .map_err(|e| Problem {
            stage: "site",
            message: format!(
                "--compress-cache {}: {} (a writable directory on a file system with O_TMPFILE)",
                dir.display(),
                std::io::Error::from(e)
            ),
        })
}

/// The media types to serve with: `site.types` with the `--mime-types` file (if any)
/// read now and put between `--mime` and the built-in table. A file that cannot be read
/// or has a bad line is a problem naming the flag, the file and the line:
/// `--mime-types /etc/steerd/types:12: "text" is not a media type (...)`.
// Out of line: several callers, one copy of its messages.
#[inline(never)]
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn media_types(site: &SiteRules) -> Result<MediaTypes, Problem> {
    let Some(path) = &site.mime_types else {
        return Ok(site.types.clone());
    };
    let problem = |why: String| Problem {
        stage: "site",
        message: format!("--mime-types {}{why}", path.display()),
    };
    let text = read_small(path, MIME_TYPES_MAX).map_err(|e| problem(format!(": {e}")))?;
    let lines = site.head_bytes();
    let table =
        mime::file::parse(&text, type_room(lines), lines).map_err(|e| problem(format!(":{e}")))?;
    Ok(site.types.clone().with_file(table))
}

/// The bytes of a regular file of at most `max` bytes (the `--mime-types` and
/// `--basic-auth` files).
#[cfg_attr(feature = "cold-size", optimize(size))]
fn read_small(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind};
    // O_NONBLOCK: a FIFO opens at once (and is refused below) instead of waiting.
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, Mode::empty())?;
    let st = rustix::fs::fstat(&fd)?;
    if FileType::from_raw_mode(st.st_mode as _) != FileType::RegularFile {
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    let mut text = Vec::new();
    std::fs::File::from(fd)
        .take(max + 1)
        .read_to_end(&mut text)?;
    if text.len() as u64 > max {
        let why = format!("larger than {max} bytes");
        return Err(Error::new(ErrorKind::InvalidInput, why));
    }
    Ok(text)
}
