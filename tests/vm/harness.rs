//! Booting a guest for a test: finds QEMU and the static binary (or says why the test is
//! skipped), runs `scripts/vm/run.sh` one guest at a time, and splits the guest's output
//! into the sections the snippet printed.
//!
//! Input: a [`Layout`] and a guest shell snippet, and optionally ([`Extra`]) more
//! `run.sh` arguments and a host side that runs while the guest does, following its
//! stdout. Output: [`Guest`] (status, stdout by section, stderr, wall time), or `None`
//! after one printed line saying why it skipped (under CI a missing QEMU, binary or guest
//! kernel fails the test instead: `tests/support/skip.rs`; `STEERD_VM=0` always skips). It asserts nothing about steerd: the
//! tests do.

use super::layout::{Arch, Layout};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What came back from one guest.
pub(super) struct Guest {
    /// The snippet's exit status.
    pub status: i32,
    /// Stdout lines by section: a line `== NAME` starts section NAME; lines before the
    /// first marker are in section "".
    pub sections: BTreeMap<String, Vec<String>>,
    /// The snippet's stderr (and the harness's complaints).
    pub stderr: String,
}

impl Guest {
    /// The lines of section `name`, or a panic naming what the guest printed instead.
    pub(super) fn section(&self, name: &str) -> &[String] {
        match self.sections.get(name) {
            Some(lines) => lines,
            None => panic!(
                "guest printed no section {name:?} (status {}); sections: {:?}; stderr:\n{}",
                self.status,
                self.sections.keys().collect::<Vec<_>>(),
                self.stderr
            ),
        }
    }
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false)
}

/// The static binary for `arch`: `STEERD_STATIC_BIN` (x86-64), `STEERD_STATIC_BIN_ARM64`,
/// `STEERD_STATIC_BIN_ARM`, `STEERD_STATIC_BIN_S390X` or `STEERD_STATIC_BIN_RISCV64`, else
/// where `scripts/static.sh` leaves it.
fn static_binary(arch: Arch) -> PathBuf {
    let (var, target) = match arch {
        Arch::X86_64 => ("STEERD_STATIC_BIN", "x86_64-unknown-linux-gnu"),
        Arch::Arm64 => ("STEERD_STATIC_BIN_ARM64", "aarch64-unknown-linux-musl"),
        Arch::Arm => ("STEERD_STATIC_BIN_ARM", "armv7-unknown-linux-musleabihf"),
        Arch::S390x => ("STEERD_STATIC_BIN_S390X", "s390x-unknown-linux-musl"),
        Arch::Riscv64 => ("STEERD_STATIC_BIN_RISCV64", "riscv64gc-unknown-linux-gnu"),
    };
    match std::env::var_os(var) {
        Some(path) => PathBuf::from(path),
        None => crate::support::target_dir()
            .join(target)
            .join("release/steerd"),
    }
}

/// True when the VM tests are turned off (`STEERD_VM=0`, as the user-mode QEMU lanes
/// do: the host's run boots the guests).
fn turned_off() -> bool {
    std::env::var("STEERD_VM").as_deref() == Ok("0")
}

/// Why a guest for `arch` cannot run here, if it cannot.
fn missing(arch: Arch) -> Option<String> {
    if !on_path(arch.qemu()) {
        return Some(format!("{} is not installed", arch.qemu()));
    }
    let bin = static_binary(arch);
    if !bin.is_file() {
        return Some(format!(
            "no static binary at {} (build it with scripts/static.sh)",
            bin.display()
        ));
    }
    let fetch = Command::new(repo().join("scripts/vm/fetch.sh"))
        .arg(arch.name())
        .output();
    match fetch {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(format!(
            "no guest kernel: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Some(format!("scripts/vm/fetch.sh: {e}")),
    }
}

/// What the host does while a guest runs: it is given the file the guest's stdout grows
/// in and a flag that turns true once the guest has stopped, and must return soon after.
pub(super) type During<'a> = &'a (dyn Fn(&Path, &AtomicBool) + Sync);

/// More for one boot: `scripts/vm/run.sh` arguments, and a host side run alongside.
#[derive(Default)]
pub(super) struct Extra<'a> {
    pub args: Vec<String>,
    pub during: Option<During<'a>>,
}

/// Boots `layout`, runs `snippet` in the guest with steerd and `guest.sh` in its working
/// directory, and returns what it printed; `None` (after one line on stdout) when the
/// test has to be skipped here.
pub(super) fn boot(test: &str, layout: &Layout, snippet: &str, timeout: Duration) -> Option<Guest> {
    boot_with(test, layout, snippet, timeout, &Extra::default())
}

/// [`boot`] with `extra`.
pub(super) fn boot_with(
    test: &str,
    layout: &Layout,
    snippet: &str,
    timeout: Duration,
    extra: &Extra,
) -> Option<Guest> {
    if turned_off() {
        crate::support::skip::skip_or_fail(test, "STEERD_VM=0");
        return None;
    }
    if let Some(why) = missing(layout.arch) {
        crate::support::skip::skip_or_fail(test, &why);
        return None;
    }
    // Guests run one at a time and beside no measuring test: the host has two cores, and
    // two guests of 8-32 vCPUs each would only slow each other down past their timeouts.
    let _one = crate::support::serial::exclusive();
    // A guest that neither finishes nor dies is booted once more: under TCG on a busy
    // two-core host a boot has been seen to stall with no output at all. A steerd hang
    // stalls the second boot too, and fails.
    let mut attempt = 1;
    let (status, stdout, stderr) = loop {
        let (status, stdout, stderr) = boot_once(test, layout, snippet, timeout, extra);
        if (status != 124 && status != 125) || attempt == 2 {
            break (status, stdout, stderr);
        }
        println!("{test}: guest did not finish (status {status}); booting again:\n{stderr}");
        attempt += 1;
    };
    assert!(
        status != 124 && status != 125,
        "the guest did not finish (status {status}):\n{stderr}"
    );
    Some(Guest {
        status,
        sections: split_sections(&stdout),
        stderr,
    })
}

fn split_sections(stdout: &str) -> BTreeMap<String, Vec<String>> {
    let mut sections = BTreeMap::new();
    let mut current = String::new();
    for line in stdout.lines() {
        match line.strip_prefix("== ") {
            Some(name) => {
                current = name.trim().to_string();
                sections.entry(current.clone()).or_insert_with(Vec::new);
            }
            None => sections
                .entry(current.clone())
                .or_insert_with(Vec::new)
                .push(line.to_string()),
        }
    }
    sections
}

/// One boot of `scripts/vm/run.sh`, with `extra.during` run beside it; prints the guest's
/// duration and output size.
fn boot_once(
    test: &str,
    layout: &Layout,
    snippet: &str,
    timeout: Duration,
    extra: &Extra,
) -> (i32, String, String) {
    let started = Instant::now();
    let live = std::env::temp_dir().join(format!("steerd-vm-{}-{test}.out", std::process::id()));
    let mut command = Command::new(repo().join("scripts/vm/run.sh"));
    command
        .args(&extra.args)
        .args(extra.during.map(|_| "--stdout-file"))
        .args(extra.during.map(|_| &live))
        .args(["--arch", layout.arch.name(), "--preset", layout.preset])
        .args([
            "--timeout",
            &timeout.as_secs().to_string(),
            "--tcg",
            layout.tcg,
        ])
        .arg("--steerd")
        .arg(static_binary(layout.arch))
        .arg("--file")
        .arg(repo().join("scripts/vm/guest.sh"))
        .arg(format!(". ./guest.sh\n{snippet}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command
        .spawn()
        .expect("scripts/vm/run.sh could not be started");
    let stopped = AtomicBool::new(false);
    let out = std::thread::scope(|scope| {
        if let Some(during) = extra.during {
            scope.spawn(|| during(&live, &stopped));
        }
        let out = child.wait_with_output();
        stopped.store(true, Ordering::Relaxed);
        out
    })
    .expect("waiting for scripts/vm/run.sh");
    let _ = std::fs::remove_file(&live);
    let status = out.status.code().unwrap_or(-1);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    println!(
        "{test}: {} {} guest: {:.1} s, status {status}, {} bytes out",
        layout.arch.name(),
        layout.preset,
        started.elapsed().as_secs_f64(),
        out.stdout.len()
    );
    (status, stdout, stderr)
}
