//! Load options as typed and validated: `steerd bench load`'s flags (also accepted by
//! `steerd bench ab`) to a [`LoadSpec`], and the request bytes it sends.
//!
//! Input: arguments after `load`. Output: a [`LoadSpec`] that [`super::load::run`] uses
//! without re-checking. The URL's host is resolved here (the only I/O: a name lookup
//! for a host that is not an IP literal). Only `http://` is supported.

use crate::cpuset::{CpuId, CpuSet};
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

/// Where requests go: the address to connect to, and what goes in the request line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Resolved address.
    pub addr: SocketAddr,
    /// `Host` header value (host, and port when it is not 80).
    pub host: String,
    /// Request target, starting with `/`.
    pub path: String,
}

impl Target {
    /// Parses `http://HOST[:PORT][/PATH]` and resolves HOST.
    pub fn parse(url: &str) -> Result<Target, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("URL {url:?}: only http://HOST[:PORT]/PATH is supported"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty() {
            return Err(format!("URL {url:?}: no host"));
        }
        let with_port = if authority.ends_with(']') || !authority.contains(':') {
            format!("{authority}:80")
        } else {
            authority.to_string()
        };
        let addr = with_port
            .to_socket_addrs()
            .map_err(|e| format!("URL {url:?}: cannot resolve {authority:?}: {e}"))?
            .next()
            .ok_or_else(|| format!("URL {url:?}: {authority:?} has no address"))?;
        Ok(Target {
            addr,
            host: authority.to_string(),
            path: path.to_string(),
        })
    }
}

/// Everything one load run needs.
#[derive(Clone, Debug)]
pub struct LoadSpec {
    /// Where to send requests.
    pub target: Target,
    /// Connections open at once, over all threads.
    pub conns: u32,
    /// Threads, each with its own epoll loop.
    pub threads: u32,
    /// How long to send requests.
    pub duration: Duration,
    /// A new connection for every request (`Connection: close`).
    pub close: bool,
    /// CPU for each thread (thread `i` on `pin[i % len]`); empty means unpinned.
    pub pin: Vec<CpuId>,
    /// Extra header lines, as given (`Name: value`).
    pub headers: Vec<String>,
    /// Open loop: requests per second over all threads; `None` is closed loop.
    pub rate: Option<f64>,
    /// Print JSON instead of text.
    pub json: bool,
}

impl LoadSpec {
    /// A closed-loop keep-alive spec with wrk's defaults: 10 connections, 2 threads, 10 s.
    pub fn new(target: Target) -> LoadSpec {
        LoadSpec {
            target,
            conns: 10,
            threads: 2,
            duration: Duration::from_secs(10),
            close: false,
            pin: Vec::new(),
            headers: Vec::new(),
            rate: None,
            json: false,
        }
    }

    /// The bytes of one request (every request of a run is the same).
    pub fn request(&self) -> Vec<u8> {
        let mut r = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\n",
            self.target.path, self.target.host
        );
        for h in &self.headers {
            r.push_str(h);
            r.push_str("\r\n");
        }
        if self.close {
            r.push_str("Connection: close\r\n");
        }
        r.push_str("\r\n");
        r.into_bytes()
    }

    /// Connections thread `t` opens: an even share, the first threads taking the rest.
    pub fn conns_of(&self, t: u32) -> u32 {
        self.conns / self.threads + u32::from(t < self.conns % self.threads)
    }
}

/// Load flags, in the order `--help` lists them.
pub const LOAD_FLAGS: &str = "\
    -c CONNS          connections open at once, over all threads (default 10)
    -t THREADS        threads, one epoll loop each (default 2, or one per --pin CPU)
    -d DURATION       how long to load, such as 3, 2.5s, 500ms, 1m (default 10s)
    --close           a new connection for every request (Connection: close)
    --pin CPUS        pin thread i to the i-th CPU of the list (such as 0,1 or 0-3)
    -H 'Name: value'  an extra request header (repeatable)
    --rate R          open loop: R requests/s over all threads, latency measured from
                      each request's intended send time (no coordinated omission)
    --json            print JSON instead of text
";

/// True for the load flags that take a value.
pub fn takes_value(flag: &str) -> bool {
    matches!(flag, "-c" | "-t" | "-d" | "-H" | "--pin" | "--rate")
}

/// Parses one load flag at `args[i]` into `spec`; returns how many arguments it used
/// (0 when `args[i]` is not a load flag).
pub fn parse_flag(args: &[String], i: usize, spec: &mut LoadSpec) -> Result<usize, String> {
    let flag = args[i].as_str();
    let val = || -> Result<&str, String> {
        args.get(i + 1)
            .map(String::as_str)
            .ok_or_else(|| format!("{flag} needs a value"))
    };
    match flag {
        "-c" => spec.conns = parse_count(flag, val()?)?,
        "-t" => spec.threads = parse_count(flag, val()?)?,
        "-d" => spec.duration = parse_duration(val()?)?,
        "-H" => spec.headers.push(parse_header(val()?)?),
        "--pin" => spec.pin = parse_pin(val()?)?,
        "--rate" => spec.rate = Some(parse_rate(val()?)?),
        "--close" => spec.close = true,
        "--json" => spec.json = true,
        _ => return Ok(0),
    }
    Ok(if takes_value(flag) { 2 } else { 1 })
}

/// Checks the combination once all flags are in: threads follow `--pin`, and every
/// thread has at least one connection.
pub fn finish(spec: &mut LoadSpec, threads_given: bool) -> Result<(), String> {
    if !spec.pin.is_empty() && !threads_given {
        spec.threads = spec.pin.len() as u32;
    }
    if spec.conns < spec.threads {
        return Err(format!(
            "-c {} is fewer than the {} threads: each thread needs a connection",
            spec.conns, spec.threads
        ));
    }
    Ok(())
}

fn parse_count(flag: &str, v: &str) -> Result<u32, String> {
    match v.parse::<u32>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ => Err(format!("{flag} {v:?}: expected a count from 1 to 1000000")),
    }
}

/// A time in the one grammar of `args::duration`.
pub fn parse_duration(v: &str) -> Result<Duration, String> {
    crate::args::duration::parse(v).map_err(|e| format!("duration {e}"))
}

fn parse_header(v: &str) -> Result<String, String> {
    let ok = v.split_once(':').is_some_and(|(name, _)| {
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic() && b != b':')
    });
    if !ok || v.contains(['\r', '\n']) {
        return Err(format!("-H {v:?}: expected 'Name: value' on one line"));
    }
    Ok(v.to_string())
}

fn parse_pin(v: &str) -> Result<Vec<CpuId>, String> {
    let set = CpuSet::parse_list(v).map_err(|e| format!("--pin {v:?}: {e}"))?;
    if set.is_empty() {
        return Err(format!("--pin {v:?}: no CPU"));
    }
    Ok(set.iter().collect())
}

fn parse_rate(v: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(r) if r > 0.0 && r <= 1e9 => Ok(r),
        _ => Err(format!(
            "--rate {v:?}: expected requests per second above 0"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = Target::parse("http://127.0.0.1:8080/a/b?c").unwrap();
        assert_eq!(t.addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(
            (t.host.as_str(), t.path.as_str()),
            ("127.0.0.1:8080", "/a/b?c")
        );
        let t = Target::parse("http://[::1]").unwrap();
        assert_eq!(
            (t.addr, t.path.as_str()),
            ("[::1]:80".parse().unwrap(), "/")
        );
        assert!(Target::parse("https://x/").is_err());
        assert!(Target::parse("http:///").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("0.3s"), Ok(Duration::from_millis(300)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("0").is_err() && parse_duration("x").is_err());
    }

    #[test]
    fn flags_and_request() {
        let args: Vec<String> = ["-c", "4", "--pin", "0,1", "-H", "X-A: 1", "--close"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut spec = LoadSpec::new(Target::parse("http://127.0.0.1:9/f").unwrap());
        let mut i = 0;
        while i < args.len() {
            i += parse_flag(&args, i, &mut spec).unwrap();
        }
        finish(&mut spec, false).unwrap();
        assert_eq!((spec.conns, spec.threads, spec.pin.len()), (4, 2, 2));
        let req = String::from_utf8(spec.request()).unwrap();
        assert_eq!(
            req,
            "GET /f HTTP/1.1\r\nHost: 127.0.0.1:9\r\nX-A: 1\r\nConnection: close\r\n\r\n"
        );
        assert!(parse_header("bad").is_err() && parse_header("A: b\r\nC: d").is_err());
        spec.conns = 1;
        assert!(finish(&mut spec, true).is_err());
    }

    #[test]
    fn connections_are_shared_out_evenly() {
        let mut spec = LoadSpec::new(Target::parse("http://127.0.0.1:9/").unwrap());
        spec.conns = 10;
        spec.threads = 3;
        let per: Vec<u32> = (0..3).map(|t| spec.conns_of(t)).collect();
        assert_eq!(per, vec![4, 3, 3]);
    }
}
