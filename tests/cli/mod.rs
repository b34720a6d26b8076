//! The command line: flags, start-up checks and their errors, `steerd check`, `steerd bpf`.

mod bpf;
mod bpf_exec;
mod bringup;
mod check_agrees;
mod command_line;
mod errors;
mod startup_checks;
