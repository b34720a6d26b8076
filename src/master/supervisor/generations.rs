//! The generations of workers: readiness reports, reloads (a successor beside each
//! running worker, the predecessor retired once the successor serves) and binary
//! upgrades (a new master beside this one, this one handing over once it serves).
//!
//! Input: the supervisor's slots and the workers' readiness pipe. Output: workers
//! started and retired, `READY=1` / `RELOADING=1` / `MAINPID=` notifications, the
//! `/health` verdict. Spawning, reaping and stopping are `supervisor.rs`.

use super::{Supervisor, BACKOFF_FIRST, FAST_STOP_GRACE};
use crate::signals;
use crate::upgrade::{self, Outcome};
use rustix::process::{Signal, WaitOptions};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

impl Supervisor<'_> {
    /// Reads the workers' reports (each a pid, 4 bytes): the worker serves, so the
    /// predecessor on its slot retires. When every slot serves: `READY=1`, and a master
    /// started by an upgrade tells the old one.
    pub(super) fn read_ready(&mut self) {
        let mut buf = [0u8; 256];
        while let Ok(n @ 1..) = rustix::io::read(&self.s.ready.0, &mut buf) {
            for chunk in buf[..n].chunks_exact(4) {
                let pid = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
                self.serving(pid);
            }
        }
        if self.all_serving() && !self.announced {
            self.announced = true;
            // Started by an upgrade: the old master tells the manager (`MAINPID=`).
            match self.report_to.take() {
                Some(pipe) => upgrade::report_ready(pipe),
                None => {
                    let status = format!("serving with {} workers", self.slots.len());
                    self.notifier.ready(&status);
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
            let _ = rustix::process::kill_process(old, Signal::USR2);
            self.retiring.push((old, block));
        }
    }

    fn all_serving(&self) -> bool {
        self.slots.iter().all(|s| s.pid.is_some() && s.serving)
    }

    /// `/health`: every slot has a serving worker (a predecessor still serving counts).
    pub(super) fn healthy(&self) -> bool {
        self.slots
            .iter()
            .all(|s| (s.pid.is_some() && s.serving) || s.predecessor.is_some())
    }

    /// HUP: if the root, the site's pages and the log open as a worker will open them
    /// (`preflight::worker_files`, the start-up checks), a successor for every slot; each predecessor retires when its successor serves (`read_ready`).
    /// Otherwise one line, and the running workers stay.
    pub(super) fn handle_reload(&mut self) {
        if !signals::arrived(libc::SIGHUP, &mut self.seen.hup) {
            return;
        }
        let cfg = self.s.cfg;
        let log = &cfg.logging.access_log;
        if let Err(p) = crate::preflight::worker_files(&cfg.root, &cfg.site, log) {
            crate::say!("reload: {p}; keeping the running workers");
            self.notifier.status(&format!("reload refused: {p}"));
            return;
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
                    let _ = rustix::process::kill_process(current, Signal::USR2);
                    self.retiring.push((current, slot.block));
                }
            }
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

    /// USR2: start the binary at our path with our listeners (`upgrade.rs`).
    pub(super) fn handle_upgrade(&mut self) {
        if !signals::arrived(libc::SIGUSR2, &mut self.seen.usr2) {
            return;
        }
        if rustix::process::getpid().is_init() {
            crate::say!("upgrade: refused: this master is PID 1 and its namespace ends with it");
            return;
        }
        if self.upgrading.is_some() {
            crate::say!("upgrade: one is already under way");
            return;
        }
        let Some(launch) = &self.launch else {
            crate::say!("upgrade: refused: the path of this binary is unknown");
            return;
        };
        let fds: Vec<_> = self
            .s
            .listeners
            .groups
            .iter()
            .flat_map(|g| g.fds.iter().map(|f| f.as_fd()))
            .collect();
        match upgrade::start(launch, &fds, self.s.metrics.map(|(m, _)| m.as_fd())) {
            Ok(p) => {
                crate::say!(
                    "upgrade: started {} as pid {}",
                    launch.exe.display(),
                    p.pid.as_raw_nonzero()
                );
                self.notifier.reloading("upgrading");
                self.upgrading = Some(p);
            }
            Err(e) => crate::say!(
                "upgrade: starting {}: {e}; the running master keeps serving",
                launch.exe.display()
            ),
        }
    }

    /// True once the new master of an upgrade serves (then this one hands over); a
    /// failed upgrade is stopped and this master keeps serving.
    pub(super) fn poll_upgrade(&mut self) -> bool {
        let Some(p) = &self.upgrading else {
            return false;
        };
        match p.poll(Instant::now()) {
            Outcome::Waiting => false,
            Outcome::Ready => {
                let pid = p.pid.as_raw_nonzero().get() as u32;
                crate::say!("upgrade: new master pid {pid} serves; retiring this master's workers");
                self.notifier.main_pid(pid, "upgraded");
                self.upgrading = None;
                true
            }
            Outcome::Failed(why) => {
                self.stop_upgrade();
                crate::say!("upgrade: {why}; the running master keeps serving");
                self.notifier.ready("upgrade failed; serving");
                false
            }
        }
    }

    /// Stops the new master of an upgrade in progress (its workers die with it: they
    /// carry a parent-death signal) and reaps it.
    pub(super) fn stop_upgrade(&mut self) {
        let Some(p) = self.upgrading.take() else {
            return;
        };
        let _ = rustix::process::kill_process(p.pid, Signal::TERM);
        let deadline = Instant::now() + FAST_STOP_GRACE;
        loop {
            match rustix::process::waitpid(Some(p.pid), WaitOptions::NOHANG) {
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Ok(None) => {
                    let _ = rustix::process::kill_process(p.pid, Signal::KILL);
                    let _ = rustix::process::waitpid(Some(p.pid), WaitOptions::empty());
                    return;
                }
                _ => return,
            }
        }
    }
}
