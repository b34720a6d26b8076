//! `--syscalls`: `strace -c -f` attached to every process of a server tree during one
//! extra run per side, and its counts per request.
//!
//! Input: the server's root PID; strace's summary (parsed by `procs::parse_strace`).
//! Output: [`Traced`], the calls per request, as a text line or a number for JSON.
//! Counts only: strace slows what it traces, so traced runs are never timed.

use crate::bench::procs;
use crate::bench::BenchError;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// `strace -c -f` attached to every process of a server tree.
pub(crate) struct Tracer {
    child: Child,
    out: std::path::PathBuf,
}

impl Tracer {
    /// Starts strace on every process of the tree under `root`.
    pub(super) fn attach(root: u32) -> Result<Tracer, BenchError> {
        let out =
            std::env::temp_dir().join(format!("steerd-ab-strace-{}-{root}", std::process::id()));
        let mut cmd = Command::new("strace");
        cmd.args(["-c", "-f", "-q", "-o"]).arg(&out);
        for pid in procs::tree_pids(root) {
            cmd.arg("-p").arg(pid.to_string());
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(BenchError::StraceStart)?;
        // strace attaches to each PID before it starts counting; give it a moment.
        std::thread::sleep(Duration::from_millis(500));
        Ok(Tracer { child, out })
    }

    /// SIGINT makes strace detach and write its summary.
    pub(super) fn finish(mut self) -> Result<String, BenchError> {
        if let Some(pid) = rustix::process::Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
        }
        let _ = self.child.wait();
        let text = std::fs::read_to_string(&self.out).map_err(BenchError::StraceRead);
        let _ = std::fs::remove_file(&self.out);
        text
    }
}

/// The traced run's counts.
#[derive(Clone, Debug, Default)]
pub(crate) struct Traced {
    /// Responses of the traced run.
    pub(crate) requests: u64,
    /// strace's total and per-call counts, when it printed a summary.
    pub(crate) summary: Option<(u64, Vec<(String, u64)>)>,
}

impl Traced {
    /// Calls per request: the total, and each call of at least 0.01, most first.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(super) fn per_request(&self) -> Option<(f64, Vec<(String, f64)>)> {
        let (total, rows) = self.summary.as_ref()?;
        let n = self.requests.max(1) as f64;
        let mut per: Vec<(String, f64)> = rows
            .iter()
            .map(|(s, c)| (s.clone(), *c as f64 / n))
            .collect();
        super::super::sort_few_by(&mut per, |x, y| x.1.total_cmp(&y.1).is_gt());
        per.retain(|(_, c)| *c >= 0.01);
        Some((*total as f64 / n, per))
    }

    /// The line printed after the rounds.
    pub(super) fn text(&self, side: &str) -> String {
        match self.per_request() {
            None => format!("syscalls {side}: strace gave no summary"),
            Some((total, per)) => {
                let rows: Vec<String> = per.iter().map(|(s, c)| format!("{s} {c:.2}")).collect();
                format!(
                    "syscalls {side}: {total:.2} per request over {} requests ({})",
                    self.requests,
                    rows.join(", ")
                )
            }
        }
    }
}
