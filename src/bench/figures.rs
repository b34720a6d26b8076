//! What one measured run produced, whichever program generated the load.
//!
//! Input: nothing; `ab.rs` fills [`RunFigures`] from the builtin load generator and the
//! server's process tree, `wrk.rs` from wrk's report. Output: the figures, the metrics
//! compared over them ([`METRICS`]) and the per-worker split as text. No I/O here.

/// What one measured run produced.
#[derive(Clone, Debug, Default)]
pub(crate) struct RunFigures {
    /// Responses per second.
    pub(crate) rps: f64,
    /// Median latency, microseconds.
    pub(crate) p50_us: f64,
    /// 99th percentile latency, microseconds.
    pub(crate) p99_us: f64,
    /// Server process tree CPU time per response, microseconds.
    pub(crate) server_cpu_us: f64,
    /// Load generator CPU time per response, microseconds.
    pub(crate) client_cpu_us: f64,
    /// Responses.
    pub(crate) requests: u64,
    /// Failed requests of every kind.
    pub(crate) errors: u64,
    /// Connections accepted per worker during the run, when the server reports it.
    pub(crate) split: Option<Vec<u64>>,
    /// Share of those connections accepted on the CPU that received them (steerd's
    /// `connections_local` counter), percent.
    pub(crate) local_pct: Option<f64>,
    /// The run's latencies (the builtin client keeps them; wrk does not), for the CDFs
    /// of `bench ab --svg`.
    pub(crate) latency: Option<super::hist::Hist>,
}

/// Reads one metric from a run.
pub(crate) type Getter = fn(&RunFigures) -> f64;

/// The metrics compared, with how each is read from a run.
pub(crate) const METRICS: [(&str, Getter); 5] = [
    ("requests/s", |r| r.rps),
    ("p50 latency (us)", |r| r.p50_us),
    ("p99 latency (us)", |r| r.p99_us),
    ("server CPU per request (us)", |r| r.server_cpu_us),
    ("client CPU per request (us)", |r| r.client_cpu_us),
];

/// The two sides' names, by side index.
pub(crate) const SIDES: [&str; 2] = ["A", "B"];

/// Worker shares as percentages, or "n/a".
pub(crate) fn split_text(split: Option<&[u64]>) -> String {
    let Some(s) = split.filter(|s| !s.is_empty()) else {
        return "n/a".into();
    };
    let total: u64 = s.iter().sum::<u64>().max(1);
    let parts: Vec<String> = s
        .iter()
        .enumerate()
        .map(|(i, &n)| format!("w{i} {:.1}%", n as f64 * 100.0 / total as f64))
        .collect();
    parts.join(" / ")
}
