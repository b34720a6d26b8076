//! The load a run sends: the typed `bench load` options of `args::bench` with the URL's
//! host resolved ([`LoadSpec`]), and the request bytes it sends.
//!
//! Input: a [`LoadArgs`] from stage 1. Output: a [`LoadSpec`] that [`super::load::run`]
//! uses without re-checking. The only I/O is the name lookup of a host that is not an IP
//! literal. Only `http://` is supported.

use crate::args::bench::{LoadArgs, Url};
use crate::args::ArgsError;
use core::fmt;
use std::net::{SocketAddr, ToSocketAddrs};

/// Where requests go: the address to connect to, and what goes in the request line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Resolved address.
    pub(crate) addr: SocketAddr,
    /// `Host` header value (host, and port when it is not 80).
    pub(crate) host: String,
    /// Request target, starting with `/`.
    pub(crate) path: String,
}

/// A target that cannot be reached: the URL is refused, or its host has no address.
#[derive(Debug)]
pub enum TargetError {
    /// Not `http://HOST[:PORT][/PATH]` (stage 1's refusal).
    Url(ArgsError),
    /// The name lookup of the host failed.
    Resolve {
        /// The URL as given.
        url: String,
        /// Its `HOST[:PORT]`.
        authority: String,
        /// Why.
        error: std::io::Error,
    },
    /// The host resolved to no address.
    NoAddress {
        /// The URL as given.
        url: String,
        /// Its `HOST[:PORT]`.
        authority: String,
    },
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetError::Url(e) => f.write_str(&e.message),
            TargetError::Resolve {
                url,
                authority,
                error,
            } => write!(f, "URL {url:?}: cannot resolve {authority:?}: {error}"),
            TargetError::NoAddress { url, authority } => {
                write!(f, "URL {url:?}: {authority:?} has no address")
            }
        }
    }
}

impl Target {
    /// Parses `http://HOST[:PORT][/PATH]` and resolves HOST.
    pub fn parse(url: &str) -> Result<Target, TargetError> {
        Target::resolve(&Url::parse(url).map_err(TargetError::Url)?)
    }

    /// Resolves a checked URL's host (port 80 when it names none).
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn resolve(url: &Url) -> Result<Target, TargetError> {
        let authority = &url.authority;
        let with_port = if authority.ends_with(']') || !authority.contains(':') {
            format!("{authority}:80")
        } else {
            authority.clone()
        };
        let addr = with_port
            .to_socket_addrs()
            .map_err(|error| TargetError::Resolve {
                url: url.text.clone(),
                authority: authority.clone(),
                error,
            })?
            .next()
            .ok_or_else(|| TargetError::NoAddress {
                url: url.text.clone(),
                authority: authority.clone(),
            })?;
        Ok(Target {
            addr,
            host: authority.clone(),
            path: url.path.clone(),
        })
    }
}

/// Everything one load run needs: the load options with a resolved target.
pub type LoadSpec = LoadArgs<Target>;

/// The load options of stage 1 with their URL resolved.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn resolve(load: LoadArgs) -> Result<LoadSpec, TargetError> {
    let target = Target::resolve(&load.target)?;
    Ok(load.with_target(target))
}

impl LoadArgs<Target> {
    /// The bytes of one request (every request of a run is the same).
    pub(crate) fn request(&self) -> Vec<u8> {
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
    pub(crate) fn conns_of(&self, t: u32) -> u32 {
        self.conns / self.threads + u32::from(t < self.conns % self.threads)
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
    fn request_bytes() {
        let mut spec = LoadSpec::new(Target::parse("http://127.0.0.1:9/f").unwrap());
        spec.headers.push("X-A: 1".into());
        spec.close = true;
        let req = String::from_utf8(spec.request()).unwrap();
        assert_eq!(
            req,
            "GET /f HTTP/1.1\r\nHost: 127.0.0.1:9\r\nX-A: 1\r\nConnection: close\r\n\r\n"
        );
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
