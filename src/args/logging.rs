//! The flags of the access log and of the real client address, in one place:
//! `--access-log PATH|-|syslog|off`, `--log-format combined|common|json`,
//! `--syslog-socket PATH`, `--real-ip-from CIDR` (repeatable), `--real-ip-recursive`,
//! `--proxy-protocol`.
//!
//! Input: flags and their values as the serve parser meets them, routed by their
//! [`LogFlag`] tag in the table of `args/serve.rs` (no flag is matched by name here). Output: a validated
//! [`Logging`]. No syscalls: whether the log can be opened (as `--user`) is checked by
//! the master before it binds. `syslog` sends to `/dev/log` unless `--syslog-socket`
//! names another datagram socket (a chroot's, a container's, a test's); a file that is
//! really called `syslog` or `off` is given as `./syslog`.

use super::{err, ArgsError};
use crate::config::{Cidr, LogFormat, LogTarget, Logging, DEV_LOG};
use std::path::PathBuf;

/// Which of these flags a serve table entry is (`args/serve.rs`): the table names each
/// flag once, and this tag routes its value here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LogFlag {
    /// `--access-log`
    AccessLog,
    /// `--log-format`
    LogFormat,
    /// `--syslog-socket`
    SyslogSocket,
    /// `--real-ip-from`
    RealIpFrom,
    /// `--real-ip-recursive`
    RealIpRecursive,
    /// `--proxy-protocol`
    ProxyProtocol,
}

/// The flags as they arrive (the syslog socket may come after `--access-log syslog`).
#[derive(Debug, Default)]
pub(crate) struct LogFlags {
    args: Logging,
    syslog_socket: Option<PathBuf>,
}

impl LogFlags {
    /// Applies the flag `to` (spelled `flag`) with its value (empty for the switches), as
    /// `args/serve.rs`'s table routes it here.
    pub(crate) fn set(&mut self, to: LogFlag, flag: &str, v: &str) -> Result<(), ArgsError> {
        match to {
            LogFlag::AccessLog => self.args.access_log = target(flag, v)?,
            LogFlag::LogFormat => self.args.log_format = format(flag, v)?,
            LogFlag::SyslogSocket if v.is_empty() => return err(format!("{flag}: empty path")),
            LogFlag::SyslogSocket => self.syslog_socket = Some(PathBuf::from(v)),
            LogFlag::RealIpFrom => self.args.real_ip_from.push(cidr(flag, v)?),
            LogFlag::RealIpRecursive => self.args.real_ip_recursive = true,
            LogFlag::ProxyProtocol => self.args.proxy_protocol = true,
        }
        Ok(())
    }

    /// The options once every flag is read.
    pub(crate) fn finish(self) -> Result<Logging, ArgsError> {
        let mut args = self.args;
        if args.proxy_protocol && args.real_ip_from.is_empty() {
            return err(
                "--proxy-protocol needs --real-ip-from: only the peers it names may \
                 send a PROXY header, and with none every connection would be closed",
            );
        }
        if args.real_ip_recursive && args.real_ip_from.is_empty() {
            return err(
                "--real-ip-recursive needs --real-ip-from: X-Forwarded-For is read only \
                 from the proxies it names, and the walk passes only those",
            );
        }
        if args.real_ip_recursive && args.proxy_protocol {
            return err(
                "--real-ip-recursive walks X-Forwarded-For, which is not read with \
                 --proxy-protocol (the PROXY header names the client)",
            );
        }
        match (&mut args.access_log, self.syslog_socket) {
            (LogTarget::Syslog(path), Some(socket)) => *path = socket,
            (_, Some(_)) => return err("--syslog-socket needs --access-log syslog"),
            _ => {}
        }
        Ok(args)
    }
}

fn target(flag: &str, v: &str) -> Result<LogTarget, ArgsError> {
    Ok(match v {
        "off" => LogTarget::Off,
        "-" => LogTarget::Stdout,
        "syslog" => LogTarget::Syslog(PathBuf::from(DEV_LOG)),
        "" => return err(format!("{flag}: empty path (use off to disable)")),
        path => LogTarget::File(PathBuf::from(path)),
    })
}

fn format(flag: &str, v: &str) -> Result<LogFormat, ArgsError> {
    match LogFormat::ALL.into_iter().find(|f| f.name() == v) {
        Some(f) => Ok(f),
        None => err(format!("{flag} {v:?}: expected combined, common or json")),
    }
}

/// `ADDR/LEN` or a bare `ADDR` (one host).
fn cidr(flag: &str, v: &str) -> Result<Cidr, ArgsError> {
    Cidr::parse(v).or_else(|e| err(format!("{flag} {v:?}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags as the serve parser routes them (through the one table).
    fn parse(flags: &[&str]) -> Result<Logging, ArgsError> {
        let args: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
        crate::args::parse_serve(&args).map(|s| s.logging)
    }

    #[test]
    fn defaults_and_destinations() {
        assert_eq!(parse(&[]).unwrap(), Logging::default());
        assert_eq!(parse(&[]).unwrap().log_format, LogFormat::Combined);
        let t = |v| parse(&["--access-log", v]).unwrap().access_log;
        assert_eq!(t("off"), LogTarget::Off);
        assert_eq!(t("-"), LogTarget::Stdout);
        assert_eq!(t("syslog"), LogTarget::Syslog(DEV_LOG.into()));
        assert_eq!(t("./syslog"), LogTarget::File("./syslog".into()));
        assert_eq!(
            t("/var/log/a.log"),
            LogTarget::File("/var/log/a.log".into())
        );
        let a = parse(&["--syslog-socket", "/tmp/s", "--access-log", "syslog"]).unwrap();
        assert_eq!(a.access_log, LogTarget::Syslog("/tmp/s".into()));
    }

    #[test]
    fn formats_and_client_address() {
        let a = parse(&[
            "--log-format",
            "json",
            "--real-ip-from",
            "127.0.0.0/8",
            "--real-ip-from",
            "::1",
            "--proxy-protocol",
        ])
        .unwrap();
        assert_eq!(a.log_format, LogFormat::Json);
        assert_eq!(a.real_ip_from.len(), 2);
        assert!(a.proxy_protocol);
        assert!(!a.real_ip_recursive);
        let r = parse(&["--real-ip-recursive", "--real-ip-from", "10.0.0.0/8"]).unwrap();
        assert!(r.real_ip_recursive);
    }

    #[test]
    fn refusals_name_the_flag() {
        for (flags, part) in [
            (&["--access-log", ""][..], "--access-log"),
            (&["--log-format", "clf"], "--log-format \"clf\""),
            (
                &["--real-ip-from", "10.0.0.1/8"],
                "--real-ip-from \"10.0.0.1/8\"",
            ),
            (&["--real-ip-from", "nope"], "not an IPv4 or IPv6 address"),
            (&["--real-ip-from", "10.0.0.0/"], "prefix length"),
            (&["--real-ip-from", "10.0.0.0/33"], "prefix length"),
            (&["--real-ip-from", "10.0.0.0/+8"], "prefix length"),
            (&["--real-ip-from", "10.0.0.0/8/8"], "prefix length"),
            (&["--real-ip-from", "010.0.0.0/8"], "not an IPv4"),
            (
                &["--proxy-protocol"],
                "--proxy-protocol needs --real-ip-from",
            ),
            (
                &["--real-ip-recursive"],
                "--real-ip-recursive needs --real-ip-from",
            ),
            (
                &[
                    "--real-ip-recursive",
                    "--real-ip-from",
                    "::1",
                    "--proxy-protocol",
                ],
                "--real-ip-recursive walks X-Forwarded-For, which is not read with",
            ),
            (&["--syslog-socket", "/tmp/s"], "--syslog-socket needs"),
            (&["--syslog-socket", ""], "--syslog-socket: empty"),
            (&["--log-format"], "--log-format needs a value"),
        ] {
            let e = parse(flags).unwrap_err().message;
            assert!(e.contains(part), "{flags:?}: {e}");
        }
    }
}
