//! Per-worker counters in a shared mapping; metrics text.
