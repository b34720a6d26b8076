//! The generations of workers: readiness reports, reloads (a successor beside each
//! running worker, the predecessor retired once the successor serves) and binary
//! upgrades (the new binary proved by its `check` and a trial `serve`, then re-executed
//! in this process, whose next image keeps these workers as the predecessors of its own).
//!
//! Input: the supervisor's slots and the workers' readiness pipe. Output: workers
//! started and retired, `READY=1` / `RELOADING=1` notifications, the `/health` verdict.
//! Spawning, reaping and stopping are `supervisor.rs`.

use super::backoff::BACKOFF_FIRST;
use super::{Retiring, Supervisor, NO_BLOCK, RETIRING_PER_SLOT};
use crate::inherit;
use crate::signals;
use crate::sys;
use crate::upgrade::proof::{self, Stage, Verdict};
use crate::upgrade::{self, TakenOver};
use crate::worker::LEFT_LISTENER;
use rustix::process::{Pid, Signal};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Instant;

impl Supervisor<'_> {
    /// Reads the workers' reports (each a pid, 4 bytes): the worker serves, so the
    /// predecessor on its slot retires. When every slot serves: `READY=1`, and a master
    /// started by an upgrade tells the old one.
    pub(super) fn read_ready(&mut self) {
        self.read_reports();
        if self.all_serving() && !self.announced {
            self.announced = true;
            self.retire_held();
            // Started as a second master by an older steerd's upgrade: that master tells
            // the manager (`MAINPID=`).
            match self.report_to.take() {
                Some(pipe) => upgrade::report_ready(pipe),
                None => {
                    let status = format!("serving with {} workers", self.slots.len());
                    self.notifier.ready(&status);
                }
            }
        }
    }

    /// Reads every report waiting on the pipe: "serves" ones act at once
    /// ([`Self::serving`]), "left its listener" ones are kept for a graceful stop.
    pub(super) fn read_reports(&mut self) {
        let mut buf = [0u8; 256];
        while let Ok(n @ 1..) = rustix::io::read(&self.s.ready.0, &mut buf) {
            for chunk in buf[..n].chunks_exact(4) {
                let word = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
                if word & LEFT_LISTENER != 0 {
                    self.left.push(word & !LEFT_LISTENER);
                } else {
                    self.serving(word);
                }
            }
        }
    }

    fn serving(&mut self, pid: u32) {
        let Some(slot) = self.slots.iter_mut().find(|s| {
            s.pid
                .is_some_and(|p| p.as_raw_nonzero().get() as u32 == pid)
        }) else {
            return;
        };
        slot.serving = true;
        if let Some((old, block)) = slot.predecessor.take() {
            self.retire(old, block);
        }
    }

    /// Tells `pid` to retire (USR2) and keeps it among the retiring. Past
    /// [`RETIRING_PER_SLOT`] for its slot, the oldest of that slot not yet told is told to
    /// close its idle connections now (WINCH).
    pub(super) fn retire(&mut self, pid: Pid, block: usize) {
        let _ = rustix::process::kill_process(pid, Signal::USR2);
        self.retiring.push(Retiring {
            pid,
            block,
            hurried: false,
        });
        let n = self.slots.len();
        let slot_of = |b: usize| (b != NO_BLOCK).then(|| b % n);
        let same = |r: &Retiring| !r.hurried && slot_of(r.block) == slot_of(block);
        let waiting = self.retiring.iter().filter(|r| same(r)).count();
        let excess = waiting.saturating_sub(RETIRING_PER_SLOT);
        for r in self.retiring.iter_mut().filter(|r| same(r)).take(excess) {
            let _ = rustix::process::kill_process(r.pid, Signal::WINCH);
            r.hurried = true;
        }
    }

    fn all_serving(&self) -> bool {
        self.slots.iter().all(|s| s.pid.is_some() && s.serving)
    }

    /// `/health`: every slot has a serving worker (a predecessor still serving counts)
    /// and every listener listens (as last checked, `check_listeners`).
    pub(super) fn healthy(&self) -> bool {
        self.unlistening.is_none()
            && self
                .slots
                .iter()
                .all(|s| (s.pid.is_some() && s.serving) || s.predecessor.is_some())
    }

    /// A reload refused: one line saying why; the running workers serve on.
    fn refuse_reload(&mut self, why: &dyn core::fmt::Display) {
        crate::say!("reload: {why}; keeping the running workers");
        self.notifier.status(&format!("reload refused: {why}"));
    }

    /// HUP: with `--config`, the configuration read again (`Shared::reread`; refused in
    /// one line if it does not parse or changes a listener setting); then, if the root,
    /// the site's pages, the `--basic-auth` file and the log open as a
    /// worker will open them (`preflight::worker_files`, the start-up checks) and the
    /// `--mime-types` file reads and parses (`preflight::media_types`), a successor for
    /// every slot, serving the types and the users as read now; each predecessor retires
    /// when its successor serves (`read_ready`). Otherwise one line, and the running
    /// workers stay.
    pub(super) fn handle_reload(&mut self) {
        if !signals::arrived(libc::SIGHUP, &mut self.seen.hup) {
            return;
        }
        // With `--config`: the file as it is now (the running workers keep the old).
        let fresh = match self.s.reread.map(|read| read()) {
            Some(Ok(cfg)) => Some(cfg),
            Some(Err(e)) => return self.refuse_reload(&e),
            None => None,
        };
        let mut fresh = fresh;
        let checked = reload_files(fresh.as_mut().unwrap_or(&mut self.cfg));
        match checked {
            Ok(users) => self.s.auth = users,
            Err(p) => return self.refuse_reload(&p),
        }
        if let Some(mut cfg) = fresh {
            self.host_rows.assign(&mut cfg.hosts);
            cfg.number_upstreams(&mut self.upstream_rows);
            self.cfg = cfg;
        }
        crate::say!("reload: starting new workers, stopping the old ones gracefully");
        self.notifier.reloading("reloading");
        self.announced = false;
        let n = self.slots.len();
        for i in 0..n {
            let slot = &mut self.slots[i];
            if let Some(current) = slot.pid.take() {
                if slot.predecessor.is_none() {
                    slot.predecessor = Some((current, slot.block));
                } else {
                    // An earlier reload's successor that does not serve yet: the older
                    // predecessor keeps serving, this one retires.
                    let block = slot.block;
                    self.retire(current, block);
                }
            }
            let slot = &mut self.slots[i];
            slot.serving = false;
            slot.crashes = 0;
            // The new generation counts into the slot's other block.
            slot.block = (slot.block + n) % (2 * n);
            if let Err(e) = self.spawn(i) {
                crate::say!("worker {i}: fork: {e}; retrying");
                self.slots[i].respawn_at = Some(Instant::now() + BACKOFF_FIRST);
            }
        }
    }

    /// USR2: prove the binary at our path able to take over (`upgrade::proof`: its
    /// `check` answers the handshake, then its trial `serve`); the re-exec follows in
    /// [`Self::poll_upgrade`].
    pub(super) fn handle_upgrade(&mut self) {
        if !signals::arrived(libc::SIGUSR2, &mut self.seen.usr2) {
            return;
        }
        if self.proving.is_some() {
            crate::say!("upgrade: one is already under way");
            return;
        }
        let Some(launch) = &self.launch else {
            crate::say!("upgrade: refused: the path of this binary is unknown");
            return;
        };
        match proof::start(launch) {
            Ok(p) => {
                crate::say!("upgrade: checking {}", launch.exe.display());
                self.notifier.status("upgrade: checking the new binary");
                self.proving = Some(p);
            }
            Err(e) => crate::say!(
                "upgrade: checking {}: {e}; the running master keeps serving",
                launch.exe.display()
            ),
        }
    }

    /// Moves the proof on: a passed `check` starts the trial, a passed trial re-executes
    /// in place. A refused stage, a trial that cannot start or a failed `execve` leaves
    /// this master and its workers serving, with one line.
    pub(super) fn poll_upgrade(&mut self) {
        let Some(p) = &mut self.proving else {
            return;
        };
        let stage = p.stage();
        match p.poll(Instant::now()) {
            Verdict::Waiting => {}
            Verdict::Refused(why) => self.refuse_upgrade(&why),
            Verdict::Passed if stage == Stage::Check => {
                self.proving = None;
                self.start_trial();
            }
            Verdict::Passed => {
                self.proving = None;
                self.reexec();
            }
        }
    }

    fn refuse_upgrade(&mut self, why: &str) {
        self.stop_upgrade();
        crate::say!("upgrade: refused: {why}; the running master keeps serving");
        self.notifier.status("upgrade refused; serving");
    }

    /// The second stage: the new binary as `serve`, with copies of the listeners.
    fn start_trial(&mut self) {
        let Some(launch) = &self.launch else {
            return;
        };
        let fds = self.handed_fds();
        match proof::trial(launch, &fds) {
            Ok(p) => {
                crate::say!(
                    "upgrade: {} answers the handshake; trying it as serve with the listeners passed",
                    launch.exe.display()
                );
                self.proving = Some(p);
            }
            Err(e) => {
                let why = format!("{} serve (trial): {e}", launch.exe.display());
                self.refuse_upgrade(&why);
            }
        }
    }

    /// The descriptors a re-exec hands over (and a trial gets): every listener in group
    /// and index order, then the metrics listener.
    fn handed_fds(&self) -> Vec<(BorrowedFd<'_>, &'static str)> {
        let mut fds: Vec<(BorrowedFd<'_>, &str)> = self
            .s
            .listeners
            .groups
            .iter()
            .flat_map(|g| g.fds.iter().map(|f| (f.as_fd(), "listen")))
            .collect();
        fds.extend(self.s.metrics.map(|(m, _)| (m.as_fd(), inherit::METRICS)));
        fds
    }

    /// Hands the listeners and the workers to the new binary in this very process, with
    /// the signal state reset (the new program starts as any program does).
    fn reexec(&mut self) {
        let Some(launch) = &self.launch else {
            return;
        };
        let fds = self.handed_fds();
        let workers = self.handed_over();
        crate::say!(
            "upgrade: re-executing {} as pid {} with {} workers serving meanwhile",
            launch.exe.display(),
            rustix::process::getpid().as_raw_nonzero(),
            workers.iter().filter(|w| w.slot.is_some()).count()
        );
        self.notifier.reloading("upgrading");
        let _ = sys::pin_to_set(&launch.affinity);
        let err = match sys::reset_for_exec(signals::DROPPED_ACROSS_EXEC) {
            Ok(()) => upgrade::reexec(launch, &fds, &workers),
            Err(e) => e,
        };
        let _ = sys::pin_to_set(self.s.home);
        if let Err(e) = signals::install() {
            crate::say!("warning: upgrade: installing the signal handlers again: {e}");
        }
        crate::say!(
            "upgrade: exec {}: {err}; the running master keeps serving",
            launch.exe.display()
        );
        self.notifier.ready("upgrade failed; serving");
    }

    /// Every live worker for the next image: per slot the one serving it (the
    /// predecessor while a reload's successor starts), the rest as retiring.
    fn handed_over(&self) -> Vec<TakenOver> {
        let mut out = Vec::new();
        let retiring = |pid| TakenOver { slot: None, pid };
        for (i, slot) in self.slots.iter().enumerate() {
            let serving = match (slot.predecessor, slot.pid) {
                (Some((pred, _)), current) => {
                    out.extend(current.map(retiring));
                    Some(pred)
                }
                (None, current) => current,
            };
            out.extend(serving.map(|pid| TakenOver { slot: Some(i), pid }));
        }
        out.extend(self.retiring.iter().map(|r| retiring(r.pid)));
        out.extend(self.held.iter().map(|&pid| retiring(pid)));
        out
    }

    /// Stops the new binary's `check`, if one runs.
    pub(super) fn stop_upgrade(&mut self) {
        if let Some(p) = self.proving.take() {
            p.abandon();
        }
    }

    /// Workers an upgrade took over for slots this plan does not have: retired once every
    /// slot serves.
    fn retire_held(&mut self) {
        for pid in std::mem::take(&mut self.held) {
            self.retire(pid, NO_BLOCK);
        }
    }
}

/// The files every host's workers will open, checked as they will meet them (the root,
/// the pages, the access log, the htpasswd and media types files); with all of them
/// good, each site's media types as read now are put in `cfg`, and the users returned.
fn reload_files(
    cfg: &mut crate::config::Serving,
) -> Result<crate::auth::HostUsers, crate::preflight::Problem> {
    let log = cfg.logging.access_log.clone();
    let mut types = Vec::new();
    for (root, site) in cfg.sites_mut() {
        crate::preflight::worker_files(root, site, &log)?;
        types.push(crate::preflight::media_types(site)?);
    }
    let users = crate::preflight::host_users(cfg)?;
    for ((_, site), t) in cfg.sites_mut().into_iter().zip(types) {
        site.types = t;
    }
    Ok(users)
}
