//! The command line: flags, start-up checks and their errors, `steerd check`, `steerd bpf`,
//! and the documentation's example command lines.

mod bpf;
mod bpf_exec;
mod bringup;
mod check_agrees;
mod command_line;
mod doc_examples;
mod errors;
mod startup_checks;
