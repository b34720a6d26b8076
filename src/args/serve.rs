//! Stage 1, the flags of `serve` (and `check`): one table, [`FLAGS`], from which the
//! parser applies each flag, `STEERD_*` variables are named (`args/env.rs`), `check
//! --json` lists its sources, and `--help` is rendered ([`help`]).
//!
//! Input: the serve tokens (the command line, after those the variables made). Output: a
//! validated [`ServeArgs`]. The value parsers are in `args.rs` (the serve scalars),
//! `args/logging.rs`, `args/listen.rs` and `args/site.rs`; each names its flag and value.

use super::flag::{lookup, rendered, row, rows, Flag, Seen, Takes};
use super::logging::LogFlags;
use super::{
    err, flag_error, listen, parse_addr, parse_cpus, parse_master_cpu, parse_secs, parse_size,
    parse_slots, parse_steer, parse_user, parse_workers, ArgsError, ServeArgs, DEFAULT_LISTEN,
};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The serve options as they arrive, before the checks of the whole set.
pub struct Draft<'a> {
    out: ServeArgs,
    logging: LogFlags,
    /// Each bad site option is one line of the error, so all of them show at once.
    site_errors: Vec<String>,
    per_addr: Option<u32>,
    hosts: &'a dyn Fn() -> Option<String>,
}

/// Where a serve flag's value goes; [`apply`] parses it there. A tag rather than a
/// function per flag: the table stays plain data (no relocation per entry in a
/// static-pie binary) and the parsers stay in one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Apply {
    /// `--listen`, `-l`, `-p`.
    Listen,
    /// `--workers`, `-w`.
    Workers,
    /// `--cpus`.
    Cpus,
    /// `--steer`.
    Steer,
    /// `--master-cpu`.
    MasterCpu,
    /// `--user`.
    User,
    /// `--max-conns`.
    MaxConns,
    /// `--max-conns-per-addr`.
    PerAddr,
    /// `--header-timeout`.
    HeaderTimeout,
    /// `--keepalive-timeout`.
    KeepaliveTimeout,
    /// `--send-timeout`.
    SendTimeout,
    /// `--send-buffer`.
    SendBuffer,
    /// `--shutdown-timeout`.
    ShutdownTimeout,
    /// `--metrics`.
    Metrics,
    /// The access log and client address flags (`args/logging.rs`).
    Log,
    /// The everyday-serving flags (`args/site.rs`); a bad one is collected, not fatal.
    Site,
    /// `--list-dirs`.
    ListDirs,
    /// `--sysfs`.
    Sysfs,
    /// `--procfs`.
    Procfs,
}

/// Applies `flag` (as spelled) with its value (empty for a switch) to the draft.
fn apply(d: &mut Draft<'_>, to: Apply, flag: &str, v: &str) -> Result<(), ArgsError> {
    let out = &mut d.out;
    match to {
        Apply::Listen => {
            let l = listen::parse(v, d.hosts).or_else(|why| err(format!("{flag} {why}")))?;
            if l.implied {
                out.listen_implied.extend(&l.addrs);
            }
            out.listen.extend(l.addrs);
        }
        Apply::Workers => out.workers = parse_workers(v)?,
        Apply::Cpus => out.cpus = Some(parse_cpus(v)?),
        Apply::Steer => out.steer = parse_steer(v)?,
        Apply::MasterCpu => out.master_cpu = parse_master_cpu(v)?,
        Apply::User => out.user = Some(parse_user(v)?),
        Apply::MaxConns => out.max_conns = parse_slots(flag, v)?,
        Apply::PerAddr => d.per_addr = Some(parse_slots(flag, v)?),
        Apply::HeaderTimeout => out.header_timeout = parse_secs(flag, v)?,
        Apply::KeepaliveTimeout => out.keepalive_timeout = parse_secs(flag, v)?,
        Apply::SendTimeout => out.send_timeout = parse_secs(flag, v)?,
        Apply::SendBuffer => out.send_buffer = Some(parse_size(flag, v)?),
        Apply::ShutdownTimeout => out.shutdown_timeout = parse_secs(flag, v)?,
        Apply::Metrics => out.metrics = Some(parse_addr(flag, v)?),
        Apply::Log => d.logging.set(flag, v)?,
        Apply::Site => d
            .site_errors
            .extend(out.site.set(flag, v).err().map(|e| e.message)),
        Apply::ListDirs => out.site.list_dirs = true,
        Apply::Sysfs => out.roots.sysfs = PathBuf::from(v),
        Apply::Procfs => out.roots.procfs = PathBuf::from(v),
    }
    Ok(())
}

const fn value(name: &'static str, hint: &'static str, apply: Apply) -> Flag<Apply> {
    Flag::long(name, hint, Takes::Value, apply)
}

const fn repeated(name: &'static str, hint: &'static str, apply: Apply) -> Flag<Apply> {
    Flag::long(name, hint, Takes::Repeated, apply)
}

const fn switch(name: &'static str, apply: Apply) -> Flag<Apply> {
    Flag::long(name, "", Takes::Switch, apply)
}

/// Every flag of `serve` (and `check`), in the order of `--help`.
pub const FLAGS: &[Flag<Apply>] = &[
    Flag {
        short: &[("-l", ""), ("-p", "PORT")],
        ..repeated("--listen", "ADDR:PORT", Apply::Listen).help(
            "address to listen on; repeatable (default: 127.0.0.1:8080);\n\
             also PORT or :PORT (every interface, IPv4 and IPv6),\n\
             localhost:PORT, NAME:PORT (from /etc/hosts, no DNS)",
        )
    },
    Flag {
        short: &[("-w", "")],
        ..value("--workers", "N|auto", Apply::Workers)
            .help("worker count (default auto: one per allowed CPU, capped by quota)")
    },
    value("--cpus", "LIST", Apply::Cpus).help("worker CPUs, such as 0-3,8"),
    value("--steer", "cpu|numa|hash", Apply::Steer)
        .help("connection steering policy (default cpu)"),
    value("--master-cpu", "auto|N|none", Apply::MasterCpu)
        .help("master placement (default auto: the first worker's node)"),
    value("--user", "NAME|UID[:GID]", Apply::User).help("drop privileges after binding"),
    value("--max-conns", "N", Apply::MaxConns).help("connection slots per worker (default 10240)"),
    value("--max-conns-per-addr", "N", Apply::PerAddr).help(
        "slots one client address (IPv4, IPv6 /64; a peer in\n\
         --real-ip-from is not limited) may hold (default\n\
         max-conns/4, at least 16)",
    ),
    value("--header-timeout", "S", Apply::HeaderTimeout)
        .help("deadline for a request head; 408 after it (default 20)"),
    value("--keepalive-timeout", "S", Apply::KeepaliveTimeout)
        .help("idle keep-alive time (default 30)"),
    value("--send-timeout", "S", Apply::SendTimeout)
        .help("longest send stall before closing (default 60)"),
    value("--send-buffer", "SIZE", Apply::SendBuffer).help(
        "SO_SNDBUF of each connection, such as 64k or 1M (default: the\n\
         kernel's autotuning, up to net.ipv4.tcp_wmem's maximum)",
    ),
    value("--shutdown-timeout", "S", Apply::ShutdownTimeout)
        .help("graceful stop (SIGQUIT) grace period (default 30)"),
    value("--access-log", "PATH|-|syslog|off", Apply::Log)
        .help("access log: a file, standard output or /dev/log (default off)"),
    value("--log-format", "FORMAT", Apply::Log).help("combined, common or json (default combined)"),
    value("--syslog-socket", "PATH", Apply::Log)
        .help("the socket of --access-log syslog (default /dev/log)"),
    repeated("--real-ip-from", "CIDR", Apply::Log).help(
        "trusted proxy network; repeatable: the client is the last\n\
         X-Forwarded-For address (or the PROXY header's)",
    ),
    switch("--real-ip-recursive", Apply::Log).help(
        "the client is the first X-Forwarded-For address from the\n\
         right not in --real-ip-from (a chain of proxies)",
    ),
    switch("--proxy-protocol", Apply::Log)
        .help("connections begin with a PROXY v1/v2 header (needs --real-ip-from)"),
    value("--metrics", "ADDR:PORT", Apply::Metrics).help(
        "dashboard (/), /status.json, Prometheus /metrics and /health\n\
         (GET or HEAD), served by the master",
    ),
    value("--precompressed", "LIST|off", Apply::Site)
        .help("serve F.br, F.zst, F.gz for F when accepted (default br,zstd,gzip)"),
    repeated("--header", "'NAME: VALUE'", Apply::Site)
        .help("add to every 2xx, 3xx and 304 response; repeatable"),
    repeated("--cache-control", "PAT=VAL", Apply::Site).help(
        "Cache-Control for paths matching PAT (* in a segment, **\n\
         across; first match wins); repeatable",
    ),
    repeated("--error-page", "CODE=PATH", Apply::Site)
        .help("body of error CODE from the file PATH under ROOT; repeatable"),
    value("--fallback", "PATH", Apply::Site)
        .help("answer paths that do not exist with PATH, status 200 (SPA)"),
    value("--fallback-skip", "LIST", Apply::Site)
        .help("extensions that still get 404, such as css,js,png"),
    repeated("--mime", "EXT=TYPE", Apply::Site).help(
        "media type of .EXT (over --mime-types and the built-in\n\
         table); repeatable",
    ),
    value("--mime-types", "FILE", Apply::Site).help(
        "media types from FILE, /etc/mime.types format (over the\n\
         built-in table; read again by HUP)",
    ),
    value("--dotfiles", "deny|allow", Apply::Site).help(
        "deny (default): paths with a segment beginning with . are\n\
         404, as missing files (/.well-known/ is served)",
    ),
    repeated("--cors", "ORIGIN|*", Apply::Site).help(
        "browsers on ORIGIN (https://app.example) may read the site:\n\
         Access-Control-Allow-Origin, preflights for GET/HEAD\n\
         answered 204; repeatable",
    ),
    value("--basic-auth", "FILE", Apply::Site).help(
        "every request needs a user and password of the htpasswd FILE\n\
         (bcrypt or SHA-crypt hashes; reread on HUP), else 401;\n\
         the password travels in clear: serve through TLS",
    ),
    value("--basic-auth-realm", "REALM", Apply::Site)
        .help("the realm the browser shows (default steerd)"),
    repeated("--basic-auth-skip", "GLOB", Apply::Site).help(
        "paths served without credentials, as --cache-control\n\
         patterns (/favicon.ico); repeatable",
    ),
    switch("--list-dirs", Apply::ListDirs).help(
        "a directory without index.html gets a listing: HTML, or\n\
         JSON when Accept prefers application/json (default off: 404)",
    ),
    value("--sysfs", "DIR", Apply::Sysfs)
        .help("read the kernel's files from elsewhere (for tests)"),
    value("--procfs", "DIR", Apply::Procfs),
];

/// The width of the label column of `steerd serve --help`.
const LABEL_WIDTH: usize = 26;

/// `steerd serve --help`, rendered once from [`FLAGS`].
pub fn help() -> &'static str {
    static HELP: OnceLock<String> = OnceLock::new();
    rendered(&HELP, || {
        let mut text = String::from("USAGE: steerd [serve] [ROOT] [OPTIONS]\n\n");
        row(
            &mut text,
            "ROOT",
            "directory to serve (default: .)",
            LABEL_WIDTH,
        );
        text.push_str(&rows(FLAGS, LABEL_WIDTH));
        text.push_str(
            "\n\
             Every flag may also come from the environment: STEERD_ and its name in capitals with\n\
             - as _ (STEERD_LISTEN=:8080, STEERD_ACCESS_LOG=-); repeatables comma-separated (\\, for a\n\
             comma in a value), switches 1 or 0. A flag on the command line wins.\n",
        );
        text
    })
}

/// Parses serve tokens, wherever they came from.
pub fn parse_tokens(
    args: &[String],
    hosts: &dyn Fn() -> Option<String>,
) -> Result<ServeArgs, ArgsError> {
    let mut d = Draft {
        out: ServeArgs::default(),
        logging: LogFlags::default(),
        site_errors: Vec::new(),
        per_addr: None,
        hosts,
    };
    let mut root: Option<PathBuf> = None;
    let mut seen = Seen::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (word, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ => (arg.as_str(), None),
        };
        let Some(flag) = lookup(FLAGS, word) else {
            if word.starts_with('-') {
                seen.note_name(word, Takes::Value)
                    .or_else(|t| err(t.to_string()))?;
            }
            match word {
                f if f.starts_with('-') && f.len() > 1 => {
                    return err(format!("unknown flag {f:?} (see --help)"))
                }
                _ if root.is_some() => return err(format!("more than one ROOT given ({arg:?})")),
                _ => root = Some(PathBuf::from(arg)),
            }
            continue;
        };
        seen.note(flag).or_else(|t| err(t.to_string()))?;
        let value = match (flag.takes, inline) {
            (Takes::Switch, _) => "",
            (_, Some(v)) => v,
            (_, None) => match it.next() {
                Some(v) => v.as_str(),
                None => return err(format!("{word} needs a value")),
            },
        };
        apply(&mut d, flag.apply, word, value)?;
    }
    d.finish(root)
}

impl Draft<'_> {
    /// The checks of the whole set, once every flag is in.
    fn finish(self, root: Option<PathBuf>) -> Result<ServeArgs, ArgsError> {
        let mut out = self.out;
        if let Some(r) = root {
            out.root = r;
        }
        out.max_conns_per_addr = self
            .per_addr
            .unwrap_or_else(|| crate::config::default_conns_per_addr(out.max_conns));
        out.logging = self.logging.finish()?;
        if out.listen.is_empty() {
            out.listen.push(
                DEFAULT_LISTEN
                    .parse()
                    .expect("default listen address parses"),
            );
        }
        check_listen_unique(&out.listen)?;
        if !self.site_errors.is_empty() {
            return Err(flag_error(self.site_errors.join("\n")));
        }
        out.site.validate()?;
        Ok(out)
    }
}

fn check_listen_unique(addrs: &[SocketAddr]) -> Result<(), ArgsError> {
    for (i, a) in addrs.iter().enumerate() {
        if addrs[..i].contains(a) {
            return err(format!("--listen {a} given twice"));
        }
    }
    Ok(())
}
