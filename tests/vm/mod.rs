//! The static binary elsewhere: emulated NUMA guests, containers, systemd, and the same bytes on every target.

mod containers;
mod guests;
mod harness;
mod layout;
mod nic;
mod report;
mod same_everywhere;
mod serve;
mod systemd;
