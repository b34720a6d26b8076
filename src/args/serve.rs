//! Stage 1, the flags of `serve` (and `check`): one table, [`FLAGS`], from which the
//! parser applies each flag, `STEERD_*` variables are named (`args/env.rs`), `check
//! --json` lists its sources, and `--help` is rendered ([`help`]).
//!
//! Input: the serve tokens (the command line, after those the variables made). Output: a
//! validated [`ServeArgs`]. The value parsers are in `args.rs` (the serve scalars),
//! `args/logging.rs`, `args/listen.rs` and `args/site.rs`; each names its flag and value.

use super::flag::{lookup, rendered, row, rows, split_inline, Flag, Seen, Takes};
use super::logging::{LogFlag, LogFlags};
use super::site::SiteFlag;
use super::{
    err, flag_error, listen, parse_addr, parse_body_size, parse_cpus, parse_master_cpu, parse_secs,
    parse_size, parse_slots, parse_steer, parse_user, parse_workers, ArgsError, ServeArgs,
    DEFAULT_LISTEN,
};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The serve options as they arrive, before the checks of the whole set.
pub(crate) struct Draft<'a> {
    out: ServeArgs,
    logging: LogFlags,
    /// Each bad site option is one line of the error, so all of them show at once.
    site_errors: Vec<String>,
    per_addr: Option<u32>,
    hosts: &'a dyn Fn() -> Option<String>,
    /// `--host` values: names, root, the flag as given (their sites are the defaults).
    vhosts: Vec<(Vec<String>, PathBuf, String)>,
}

/// Where a serve flag's value goes; [`apply`] parses it there. A tag rather than a
/// function per flag: the table stays plain data (no relocation per entry in a
/// static-pie binary) and the parsers stay in one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Apply {
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
    /// `--max-body`.
    MaxBody,
    /// `--proxy-timeout`.
    ProxyTimeout,
    /// `--proxy-max-conns`.
    ProxyMaxConns,
    /// An access log or client address flag (`args/logging.rs`).
    Log(LogFlag),
    /// An everyday-serving flag (`args/site.rs`); a bad one is collected, not fatal.
    Site(SiteFlag),
    /// `--sysfs`.
    Sysfs,
    /// `--procfs`.
    Procfs,
    /// `--config`: read before the tokens are (`args/file.rs`); here only kept.
    Config,
    /// `--host` (`args/hosts.rs`).
    Host,
    /// `--allowed-host`.
    AllowedHost,
}

/// Applies `flag` (as spelled) with its value (empty for a switch) to the draft. Out of
/// line: the parser and [`check_value`] share one copy.
#[inline(never)]
#[cfg_attr(feature = "cold-size", optimize(size))]
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
        Apply::MaxBody => out.proxy.max_body = parse_body_size(flag, v)?,
        Apply::ProxyTimeout => out.proxy.timeout = parse_secs(flag, v)?,
        Apply::ProxyMaxConns => out.proxy.max_conns = parse_slots(flag, v)?,
        Apply::Log(to) => d.logging.set(to, flag, v)?,
        Apply::Site(to) => d
            .site_errors
            .extend(out.site.apply(to, flag, v).err().map(|e| e.message)),
        Apply::Sysfs => out.roots.sysfs = PathBuf::from(v),
        Apply::Procfs => out.roots.procfs = PathBuf::from(v),
        Apply::Config if v.is_empty() => return err(format!("{flag}: empty path")),
        Apply::Config => out.config = Some(PathBuf::from(v)),
        Apply::Host => {
            let (names, root) = super::hosts::parse_flag(flag, v)?;
            d.vhosts.push((names, root, format!("{flag} {v}")));
        }
        Apply::AllowedHost => out
            .allowed_hosts
            .push(super::hosts::parse_allowed(flag, v)?),
    }
    Ok(())
}

impl super::site::SiteArgs {
    /// Applies the serve flag spelled `flag` (one of `args/site.rs`'s; see [`SiteFlag`])
    /// with its value, found through the one flag table, [`FLAGS`].
    pub fn set(&mut self, flag: &str, value: &str) -> Result<(), ArgsError> {
        match lookup(FLAGS, flag).map(|f| f.apply) {
            Some(Apply::Site(to)) => self.apply(to, flag, value),
            _ => err(format!("unknown flag {flag:?} (see --help)")),
        }
    }
}

/// Whether `flag` (spelled `spelled`) takes `v`, on its own: what a configuration file's
/// line is checked with before the whole set is (`args/file.rs`).
pub(crate) fn check_value(
    flag: &Flag<Apply>,
    spelled: &str,
    v: &str,
    hosts: &dyn Fn() -> Option<String>,
) -> Result<(), ArgsError> {
    let mut d = Draft::new(hosts);
    apply(&mut d, flag.apply, spelled, v)?;
    match d.site_errors.is_empty() {
        true => Ok(()),
        false => Err(flag_error(d.site_errors.join("\n"))),
    }
}

const fn value(text: &'static str, apply: Apply) -> Flag<Apply> {
    Flag::new(text, Takes::Value, apply)
}

const fn repeated(text: &'static str, apply: Apply) -> Flag<Apply> {
    Flag::new(text, Takes::Repeated, apply)
}

const fn switch(text: &'static str, apply: Apply) -> Flag<Apply> {
    Flag::new(text, Takes::Switch, apply)
}

/// Every flag of `serve` (and `check`), in the order of `--help`.
pub(crate) const FLAGS: &[Flag<Apply>] = &[
    Flag {
        short: &[("-l", ""), ("-p", "PORT")],
        ..repeated(
            "--listen ADDR:PORT\n\
         address to listen on; repeatable (default: 127.0.0.1:8080);\n\
             also PORT or :PORT (every interface, IPv4 and IPv6),\n\
             localhost:PORT, NAME:PORT (from /etc/hosts, no DNS)",
            Apply::Listen,
        )
    },
    Flag {
        short: &[("-w", "")],
        ..value(
            "--workers N|auto\n\
         worker count (default auto: one per allowed CPU, capped by quota)",
            Apply::Workers,
        )
    },
    value(
        "--cpus LIST\n\
         worker CPUs, such as 0-3,8",
        Apply::Cpus,
    ),
    value(
        "--steer cpu|numa|hash\n\
         connection steering policy (default cpu)",
        Apply::Steer,
    ),
    value(
        "--master-cpu auto|N|none\n\
         master placement (default auto: the first worker's node)",
        Apply::MasterCpu,
    ),
    value(
        "--user NAME|UID[:GID]\n\
         drop privileges after binding",
        Apply::User,
    ),
    value(
        "--max-conns N\n\
         connection slots per worker (default 10240)",
        Apply::MaxConns,
    ),
    value(
        "--max-conns-per-addr N\n\
         slots one client address (IPv4, IPv6 /64; a peer in\n\
         --real-ip-from is not limited) may hold (default\n\
         max-conns/4, at least 16)",
        Apply::PerAddr,
    ),
    value(
        "--header-timeout S\n\
         deadline for a request head; 408 after it (default 20)",
        Apply::HeaderTimeout,
    ),
    value(
        "--keepalive-timeout S\n\
         idle keep-alive time (default 30)",
        Apply::KeepaliveTimeout,
    ),
    value(
        "--send-timeout S\n\
         longest send stall before closing (default 60)",
        Apply::SendTimeout,
    ),
    value(
        "--send-buffer SIZE\n\
         SO_SNDBUF of each connection, such as 64k or 1M (default: the\n\
         kernel's autotuning, up to net.ipv4.tcp_wmem's maximum)",
        Apply::SendBuffer,
    ),
    value(
        "--shutdown-timeout S\n\
         graceful stop (SIGQUIT) grace period (default 30)",
        Apply::ShutdownTimeout,
    ),
    value(
        "--access-log PATH|-|syslog|off\n\
         access log: a file, standard output or /dev/log (default off)",
        Apply::Log(LogFlag::AccessLog),
    ),
    value(
        "--log-format FORMAT\n\
         combined, common or json (default combined)",
        Apply::Log(LogFlag::LogFormat),
    ),
    value(
        "--syslog-socket PATH\n\
         the socket of --access-log syslog (default /dev/log)",
        Apply::Log(LogFlag::SyslogSocket),
    ),
    repeated(
        "--real-ip-from CIDR\n\
         trusted proxy network; repeatable: the client is the last\n\
         X-Forwarded-For address (or the PROXY header's)",
        Apply::Log(LogFlag::RealIpFrom),
    ),
    switch(
        "--real-ip-recursive\n\
         the client is the first X-Forwarded-For address from the\n\
         right not in --real-ip-from (a chain of proxies)",
        Apply::Log(LogFlag::RealIpRecursive),
    ),
    switch(
        "--proxy-protocol\n\
         connections begin with a PROXY v1/v2 header (needs --real-ip-from)",
        Apply::Log(LogFlag::ProxyProtocol),
    ),
    value(
        "--metrics ADDR:PORT\n\
         dashboard (/), /status.json, Prometheus /metrics and /health\n\
         (GET or HEAD), served by the master",
        Apply::Metrics,
    ),
    value(
        "--precompressed LIST|off\n\
         serve F.br, F.zst, F.gz for F when accepted (default br,zstd,gzip)",
        Apply::Site(SiteFlag::Precompressed),
    ),
    repeated(
        "--header 'NAME: VALUE'\n\
         add to every 2xx, 3xx and 304 response; repeatable",
        Apply::Site(SiteFlag::Header),
    ),
    repeated(
        "--cache-control PAT=VAL\n\
         Cache-Control for paths matching PAT (* in a segment, **\n\
         across; first match wins); repeatable",
        Apply::Site(SiteFlag::CacheControl),
    ),
    repeated(
        "--error-page CODE=PATH\n\
         body of error CODE from the file PATH under ROOT; repeatable",
        Apply::Site(SiteFlag::ErrorPage),
    ),
    value(
        "--fallback PATH\n\
         answer paths that do not exist with PATH, status 200 (SPA)",
        Apply::Site(SiteFlag::Fallback),
    ),
    value(
        "--fallback-skip LIST\n\
         extensions that still get 404, such as css,js,png",
        Apply::Site(SiteFlag::FallbackSkip),
    ),
    repeated(
        "--mime EXT=TYPE\n\
         media type of .EXT (over --mime-types and the built-in\n\
         table); repeatable",
        Apply::Site(SiteFlag::Mime),
    ),
    value(
        "--mime-types FILE\n\
         media types from FILE, /etc/mime.types format (over the\n\
         built-in table; read again by HUP)",
        Apply::Site(SiteFlag::MimeTypes),
    ),
    value(
        "--compress gzip|off\n\
         gzip (default): compress text, JSON, JS, SVG, XML, wasm once\n\
         per file version when accepted and no sidecar serves it",
        Apply::Site(SiteFlag::Compress),
    ),
    value(
        "--compress-types LIST\n\
         media types compressed (type/subtype or type/*, comma-separated)",
        Apply::Site(SiteFlag::CompressTypes),
    ),
    value(
        "--compress-cache DIR\n\
         keep gzip of files over 64 KiB as DIR/<content hash>.gz (else\n\
         they go uncompressed); needs --etag content",
        Apply::Site(SiteFlag::CompressCache),
    ),
    value(
        "--etag content|mtime\n\
         content (default): ETag from a hash of the bytes, the same\n\
         everywhere; mtime: from mtime and size",
        Apply::Site(SiteFlag::Etag),
    ),
    value(
        "--dotfiles deny|allow\n\
         deny (default): paths with a segment beginning with . are\n\
         404, as missing files (/.well-known/ is served)",
        Apply::Site(SiteFlag::Dotfiles),
    ),
    repeated(
        "--cors ORIGIN|*\n\
         browsers on ORIGIN (https://app.example) may read the site:\n\
         Access-Control-Allow-Origin, preflights for GET/HEAD\n\
         answered 204; repeatable",
        Apply::Site(SiteFlag::Cors),
    ),
    value(
        "--basic-auth FILE\n\
         every request needs a user and password of the htpasswd FILE\n\
         (bcrypt or SHA-crypt hashes; reread on HUP), else 401;\n\
         the password travels in clear: serve through TLS",
        Apply::Site(SiteFlag::BasicAuth),
    ),
    value(
        "--basic-auth-realm REALM\n\
         the realm the browser shows (default steerd)",
        Apply::Site(SiteFlag::BasicAuthRealm),
    ),
    repeated(
        "--basic-auth-skip GLOB\n\
         paths served without credentials, as --cache-control\n\
         patterns (/favicon.ico); repeatable",
        Apply::Site(SiteFlag::BasicAuthSkip),
    ),
    repeated(
        "--redirect 'FROM TO [CODE]'\n\
         FROM (as --cache-control patterns; each * and ** captures,\n\
         $1..$9 in TO) gets CODE (301, 302, 303, 307, 308; default\n\
         301) to TO, a path or http(s):// URL, query kept unless TO\n\
         has one; with --rewrite one list, first match wins; repeatable",
        Apply::Site(SiteFlag::Redirect),
    ),
    repeated(
        "--rewrite 'FROM TO'\n\
         FROM is answered by the file at TO under ROOT (captures as\n\
         --redirect's); repeatable",
        Apply::Site(SiteFlag::Rewrite),
    ),
    repeated(
        "--proxy 'GLOB UPSTREAM'\n\
         forward requests whose path GLOB matches (as --redirect's\n\
         FROM, one list with it) to UPSTREAM: unix:/path/to.sock or\n\
         http://IP:PORT; repeatable",
        Apply::Site(SiteFlag::Proxy),
    ),
    value(
        "--max-body SIZE\n\
         largest request body forwarded, such as 64k, 1M or 2G\n\
         (default 1M; past it 413)",
        Apply::MaxBody,
    ),
    value(
        "--proxy-timeout S\n\
         wait for an upstream's response head; 504 after it (default 60)",
        Apply::ProxyTimeout,
    ),
    value(
        "--proxy-max-conns N\n\
         connections in flight to one upstream per worker; 503 past\n\
         it (default 256)",
        Apply::ProxyMaxConns,
    ),
    repeated(
        "--try-ext EXT\n\
         a missing PATH is answered by PATH.EXT (/about by about.html);\n\
         repeatable, tried in order",
        Apply::Site(SiteFlag::TryExt),
    ),
    switch(
        "--https-redirect\n\
         308 to https://HOST/PATH when a --real-ip-from proxy says the\n\
         request came over http (X-Forwarded-Proto, PROXY v2)",
        Apply::Site(SiteFlag::HttpsRedirect),
    ),
    repeated(
        "--allow CIDR|private|loopback\n\
         only these addresses may connect; repeatable (private: RFC 1918,\n\
         RFC 4193, link-local and loopback; a --real-ip-from proxy's\n\
         clients are held to it per request, 403)",
        Apply::Site(SiteFlag::Allow),
    ),
    repeated(
        "--deny CIDR\n\
         these addresses may not connect; repeatable",
        Apply::Site(SiteFlag::Deny),
    ),
    value(
        "--rate-limit N\n\
         requests per second per client address (IPv4, IPv6 /64), burst N;\n\
         past it 429 with Retry-After",
        Apply::Site(SiteFlag::RateLimit),
    ),
    value(
        "--max-rate SIZE\n\
         bytes per second per connection, such as 200k or 1M\n\
         (SO_MAX_PACING_RATE: the kernel paces)",
        Apply::Site(SiteFlag::MaxRate),
    ),
    switch(
        "--list-dirs\n\
         a directory without index.html gets a listing: HTML, or\n\
         JSON when Accept prefers application/json (default off: 404)",
        Apply::Site(SiteFlag::ListDirs),
    ),
    repeated(
        "--host 'NAME[,NAME...]=ROOT'\n\
         serve the names (Host, without case or port; * for names no\n\
         other host lists) from ROOT with the site settings given\n\
         outside host blocks; other names get 421; repeatable",
        Apply::Host,
    ),
    repeated(
        "--allowed-host NAME\n\
         without hosts: a request whose Host is none of these names\n\
         and no IP literal of a listener gets 421 (the DNS-rebinding\n\
         defence); repeatable",
        Apply::AllowedHost,
    ),
    value(
        "--config FILE\n\
         settings from FILE, one NAME VALUE a line (NAME: a flag's\n\
         name without --; root DIR for ROOT); flags and variables\n\
         win over it; reread by HUP",
        Apply::Config,
    ),
    value(
        "--sysfs DIR\n\
         read the kernel's files from elsewhere (for tests)",
        Apply::Sysfs,
    ),
    value("--procfs DIR", Apply::Procfs),
];

/// The width of the label column of `steerd serve --help`.
const LABEL_WIDTH: usize = 26;

/// `steerd serve --help`, rendered once from [`FLAGS`].
pub(crate) fn help() -> &'static str {
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
             comma in a value), switches 1 or 0. A flag on the command line wins over its\n\
             variable, a variable over the --config file, the file over the defaults.\n",
        );
        text
    })
}

impl<'a> Draft<'a> {
    fn new(hosts: &'a dyn Fn() -> Option<String>) -> Self {
        Draft {
            out: ServeArgs::default(),
            logging: LogFlags::default(),
            site_errors: Vec::new(),
            per_addr: None,
            hosts,
            vhosts: Vec::new(),
        }
    }
}

/// Serve tokens and where the configuration file's came from.
pub(crate) struct Tokens<'a> {
    /// The tokens: the file's first, then the environment's, then the command line.
    pub(crate) words: &'a [String],
    /// The `FILE:LINE` of each of the first `at.len()` words (the file's).
    pub(crate) at: &'a [String],
    /// The file's `root DIR`, used when no ROOT is given.
    pub(crate) root: Option<&'a str>,
}

/// Parses serve tokens, wherever they came from.
pub(crate) fn parse_tokens(
    args: &[String],
    hosts: &dyn Fn() -> Option<String>,
) -> Result<ServeArgs, ArgsError> {
    let t = Tokens {
        words: args,
        at: &[],
        root: None,
    };
    parse_sourced(&t, hosts)
}

/// [`parse_tokens`], with the rules of the file's lines named by their `FILE:LINE`.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn parse_sourced(
    t: &Tokens<'_>,
    hosts: &dyn Fn() -> Option<String>,
) -> Result<ServeArgs, ArgsError> {
    let mut d = Draft::new(hosts);
    let mut root: Option<PathBuf> = None;
    let mut seen = Seen::default();
    let mut it = t.words.iter().enumerate();
    while let Some((i, arg)) = it.next() {
        let (word, inline) = split_inline(arg);
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
                Some((_, v)) => v.as_str(),
                None => return err(format!("{word} needs a value")),
            },
        };
        d.out.site.rule_source = t.at.get(i).cloned();
        apply(&mut d, flag.apply, word, value)?;
    }
    d.out.site.rule_source = None;
    d.finish(root.or_else(|| t.root.map(PathBuf::from)))
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
        if out.site.https_redirect && out.logging.real_ip_from.is_empty() {
            return err(
                "--https-redirect needs --real-ip-from: X-Forwarded-Proto and the PROXY \
                 header are believed only from the proxies it names",
            );
        }
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
        out.hosts = self
            .vhosts
            .into_iter()
            .map(|(names, root, source)| super::hosts::HostArgs {
                names,
                root,
                site: out.site.clone(),
                source,
            })
            .collect();
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
