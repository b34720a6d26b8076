//! The master process: fork, pin, supervise, signals.
