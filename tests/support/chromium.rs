//! Headless Chromium for the tests that check what a browser makes of steerd's pages:
//! the DOM after the page's scripts ran (`--dump-dom` with `--virtual-time-budget`), what
//! the console said, and screenshots.
//!
//! Chromium is the Debian package `chromium` (`.ci/run` installs it); without it the
//! callers skip with the reason. Every run has its own profile directory and is killed
//! by PID if it outlives its deadline.
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest a Chromium run may take on a loaded 2-CPU machine.
const DEADLINE: Duration = Duration::from_secs(90);

/// The Chromium binary, or `None` after printing why `test` is skipped.
pub(crate) fn chromium(test: &str) -> Option<&'static str> {
    let found = Command::new("chromium")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        crate::support::skip::skip_or_fail(test, "no chromium on PATH (Debian package `chromium`)");
    }
    found.then_some("chromium")
}

/// What one page load left.
pub(crate) struct Loaded {
    /// The serialized DOM (`--dump-dom`), or empty for a screenshot.
    pub dom: String,
    /// Chromium's log, with the page's console messages (`INFO:CONSOLE`).
    pub log: String,
}

impl Loaded {
    /// Uncaught script errors the console reported.
    pub(crate) fn script_errors(&self) -> Vec<&str> {
        self.log
            .lines()
            .filter(|l| l.contains(":CONSOLE") && l.contains("\"Uncaught"))
            .collect()
    }
}

/// Opens `url` in a `width` x `height` window, lets the page run for `budget_ms` of
/// virtual time (timers fire without waiting; network waits are real), then either dumps
/// the DOM or, with `screenshot`, writes a PNG there.
pub(crate) fn load(
    url: &str,
    (width, height): (u32, u32),
    budget_ms: u32,
    screenshot: Option<&Path>,
) -> Loaded {
    let dir = std::env::temp_dir().join(format!(
        "steerd-chromium-{}-{}",
        std::process::id(),
        unique()
    ));
    std::fs::create_dir_all(&dir).expect("profile dir");
    let (out, err) = (dir.join("stdout"), dir.join("stderr"));
    let mut cmd = Command::new("chromium");
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--hide-scrollbars",
        "--enable-logging=stderr",
    ])
    .arg(format!("--user-data-dir={}", dir.join("profile").display()))
    .arg(format!("--window-size={width},{height}"))
    .arg(format!("--virtual-time-budget={budget_ms}"));
    match screenshot {
        Some(png) => cmd.arg(format!("--screenshot={}", png.display())),
        None => cmd.arg("--dump-dom"),
    };
    let mut child = cmd
        .arg(url)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("stdout file"))
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("start chromium");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for chromium") {
            break status;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish {url} within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let loaded = Loaded {
        dom: std::fs::read_to_string(&out).unwrap_or_default(),
        log: std::fs::read_to_string(&err).unwrap_or_default(),
    };
    let _ = std::fs::remove_dir_all(&dir);
    assert!(status.success(), "chromium {url}: {status}\n{}", loaded.log);
    loaded
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The value of attribute `name` in the start tag `tag` (`data-req="12"` -> `12`).
pub(crate) fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let from = tag.find(&key)? + key.len();
    tag[from..].split('"').next()
}

/// Every start tag of the DOM text that contains `needle` (`class="cpu"`).
pub(crate) fn tags_with<'a>(dom: &'a str, needle: &str) -> Vec<&'a str> {
    dom.split('<')
        .filter(|t| !t.starts_with('/'))
        .map(|t| t.split('>').next().unwrap_or(""))
        .filter(|t| t.contains(needle))
        .collect()
}

/// A `file://` URL for `path`.
pub(crate) fn file_url(path: &Path) -> String {
    let abs: PathBuf = std::fs::canonicalize(path).expect("path exists");
    format!("file://{}", abs.display())
}
