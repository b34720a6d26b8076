//! The upgrade protocol between a running master and the binary it would re-execute:
//! the two answers a new binary must give before anything changes.
//!
//! 1. **Handshake** (during `check`): the master sets [`PROBE_VAR`] to the protocol it
//!    speaks ([`PROTOCOL`]); a binary that can adopt listeners named in
//!    `STEERD_REEXEC_FDS` and workers named in `STEERD_REEXEC_WORKERS` prints
//!    [`handshake_line`] on standard error. An older release knows neither the variable
//!    nor the hand-over, says nothing, and is refused.
//! 2. **Trial** (a `serve` in a child of the master): the binary is started with the real
//!    arguments, the listeners named as on a re-exec and [`TRIAL_VAR`] set; it goes
//!    through its bring-up up to seating the passed listeners in their groups, prints
//!    [`trial_line`] on standard error and exits 0, having opened, attached and started
//!    nothing. A wrapper whose `serve` exits, crashes or hangs fails here.
//!
//! Input: the environment. Output: the lines to print, and whether this process is a
//! trial. The master's side (running both, judging the answers) is `proof.rs`.

/// The version of the upgrade protocol this binary speaks.
pub(crate) const PROTOCOL: u32 = 1;
/// The variable that asks `check` for the handshake, set to the master's [`PROTOCOL`].
pub(crate) const PROBE_VAR: &str = "STEERD_UPGRADE_PROBE";
/// The variable that makes `serve` a trial (for the process `STEERD_REEXEC_PID`).
pub(crate) const TRIAL_VAR: &str = "STEERD_UPGRADE_TRIAL";

/// The handshake's answer: this binary adopts what a re-exec hands over.
pub(crate) fn handshake_line() -> String {
    format!(
        "steerd-upgrade-protocol {PROTOCOL}: adopts STEERD_REEXEC_FDS and STEERD_REEXEC_WORKERS"
    )
}

/// The trial's answer: this binary went through its bring-up with the passed listeners.
pub(crate) fn trial_line() -> String {
    format!("steerd-upgrade-trial {PROTOCOL}: would take over the passed listeners")
}

/// In `check`: the handshake line to print when the master asked for the protocol this
/// binary speaks, taken from the environment once.
pub(crate) fn answer_probe() -> Option<String> {
    let asked = std::env::var(PROBE_VAR).ok();
    std::env::remove_var(PROBE_VAR);
    asked
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|&v| v == PROTOCOL)
        .map(|_| handshake_line())
}

/// In `serve`: true when this process is an upgrade's trial (the variable is removed).
/// Read before `inherit::take_from_env`, which removes the variable naming the process
/// the hand-over is for.
pub(crate) fn take_trial() -> bool {
    let set = std::env::var_os(TRIAL_VAR).is_some();
    std::env::remove_var(TRIAL_VAR);
    set && crate::inherit::reexec_is_ours()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answers_name_the_protocol() {
        assert!(handshake_line().starts_with(&format!("steerd-upgrade-protocol {PROTOCOL}")));
        assert!(trial_line().starts_with(&format!("steerd-upgrade-trial {PROTOCOL}")));
        assert_ne!(handshake_line(), trial_line());
    }
}
