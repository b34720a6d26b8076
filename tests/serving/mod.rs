//! What a client sees of `steerd serve`: files, ranges, errors, listings, auth, CORS, media types, keep-alive, fairness and listeners.

mod access;
mod basic_auth;
mod basic_auth_file;
mod binary;
mod cold_disk;
mod compress;
mod config_file;
mod cors;
mod dotfiles;
mod drain;
mod dual_stack;
mod event_loop;
mod everyday;
mod fairness;
mod files;
mod hosts;
mod list_dirs;
mod mime_limit;
mod mime_types;
mod multihost;
mod proxy;
mod proxy_garden;
mod rules;
mod send_buffer;
mod upstream_harness;
mod validators;
