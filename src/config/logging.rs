//! The access log and the client address it names, as plain values: where lines go,
//! how they look, which peers are trusted proxies, how far their `X-Forwarded-For` is
//! believed, whether connections begin with a PROXY header. The flags are parsed in
//! `args/logging.rs`; the loop and the master use these values.
//!
//! The networks themselves ([`Cidr`]) are `site::net`'s.

pub use crate::site::net::Cidr;
use std::path::PathBuf;

/// The local syslog daemon's socket.
pub(crate) const DEV_LOG: &str = "/dev/log";

/// Where access log lines go (`--access-log`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum LogTarget {
    /// No access log.
    #[default]
    Off,
    /// A file, appended to.
    File(PathBuf),
    /// The inherited standard output (`-`).
    Stdout,
    /// Datagrams to the syslog socket at this path (`syslog`).
    Syslog(PathBuf),
}

/// How a line is laid out (`--log-format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// NCSA combined: common plus the quoted `Referer` and `User-Agent`.
    #[default]
    Combined,
    /// NCSA common log format.
    Common,
    /// One JSON object per line, with the worker, CPU, locality, duration and cut-short mark.
    Json,
}

impl LogFormat {
    /// Every format, in the order the help text names them.
    pub(crate) const ALL: [LogFormat; 3] =
        [LogFormat::Combined, LogFormat::Common, LogFormat::Json];

    /// The flag's spelling.
    pub(crate) fn name(self) -> &'static str {
        match self {
            LogFormat::Combined => "combined",
            LogFormat::Common => "common",
            LogFormat::Json => "json",
        }
    }
}

/// The access log and the client address it names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Logging {
    /// Where lines go.
    pub access_log: LogTarget,
    /// How lines look.
    pub log_format: LogFormat,
    /// Peers whose `X-Forwarded-For` (or PROXY header) names the client.
    pub real_ip_from: Vec<Cidr>,
    /// `--real-ip-recursive`: `X-Forwarded-For` is walked from the right past every
    /// address in `real_ip_from`, not believed for its last address only.
    pub real_ip_recursive: bool,
    /// Every connection begins with a PROXY protocol header (only from `real_ip_from`).
    pub proxy_protocol: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_names() {
        assert_eq!(LogFormat::default(), LogFormat::Combined);
        let names: Vec<_> = LogFormat::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(names, ["combined", "common", "json"]);
    }
}
