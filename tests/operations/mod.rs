//! What an operator sees: logs, metrics, health, the dashboard, signals, reloads and upgrades, the supervisor, socket activation, readiness, PID 1.

mod access_log;
mod activation;
mod dashboard;
mod health;
mod log_handover;
mod log_sinks;
mod log_stall;
mod master_accounting;
mod metrics;
mod metrics_conventions;
mod metrics_flood;
mod notify;
mod pid1;
mod reload;
mod shared_listeners;
mod stuck_stderr;
mod supervise;
mod upgrade;
mod zeroloss;
