//! Where a `--proxy` rule forwards: `unix:/path/to.sock` or `http://IP:PORT`.
//!
//! Input: the UPSTREAM word of a `--proxy 'GLOB UPSTREAM'` rule. Output: a validated
//! [`Upstream`], or a refusal that says what was expected. No I/O and no name lookup:
//! an address is an IP literal (IPv6 in brackets), a socket path is absolute and fits
//! `sun_path` (unix(7): 108 bytes with its NUL). Whether anything listens there is
//! learnt per request (a refusal is answered 502).

use std::net::{IpAddr, SocketAddr};

/// Distinct upstreams `/metrics` counts apart (the first named since start, each kept by name: `config::rows`):
/// six words of each worker's counter page per upstream.
pub(crate) const UPSTREAMS_COUNTED: usize = 16;

/// The longest socket path `sun_path` holds, its terminating NUL excluded (unix(7)).
const SUN_PATH_MAX: usize = 107;

/// An upstream, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Upstream {
    /// A unix stream socket at this absolute path.
    Unix(Box<str>),
    /// A TCP listener at this address.
    Tcp(SocketAddr),
}

impl Upstream {
    /// Parses `unix:/path` or `http://IP:PORT` (a trailing `/` allowed, nothing after it).
    pub(crate) fn parse(word: &str) -> Result<Upstream, String> {
        if let Some(path) = word.strip_prefix("unix:") {
            return unix_path(path).map(|p| Upstream::Unix(p.into()));
        }
        let Some(rest) = word.strip_prefix("http://") else {
            return Err(format!(
                "UPSTREAM {word:?}: expected unix:/path/to.sock or http://IP:PORT"
            ));
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        match authority.parse::<SocketAddr>() {
            Ok(addr) if addr.port() != 0 && !unusable(addr.ip()) => Ok(Upstream::Tcp(addr)),
            Ok(_) => Err(format!(
                "UPSTREAM {word:?}: the address must be a host's, with a port from 1 to 65535"
            )),
            Err(_) => Err(format!(
                "UPSTREAM {word:?}: expected http://IP:PORT with an IP literal \
                 (http://127.0.0.1:8080, http://[::1]:8080; no names, no path)"
            )),
        }
    }
}

/// An address no connection can reach: unspecified or multicast.
fn unusable(ip: IpAddr) -> bool {
    ip.is_unspecified() || ip.is_multicast()
}

/// An absolute socket path that fits `sun_path`.
fn unix_path(path: &str) -> Result<&str, String> {
    match path {
        p if !p.starts_with('/') => Err(format!(
            "UPSTREAM unix:{p}: the socket path must be absolute (unix:/run/app.sock)"
        )),
        p if p.len() > SUN_PATH_MAX => Err(format!(
            "UPSTREAM unix:{p}: the socket path is {} bytes, at most {SUN_PATH_MAX} fit",
            p.len()
        )),
        p if p.contains('\0') || p.ends_with('/') => {
            Err(format!("UPSTREAM unix:{p:?}: not a socket path"))
        }
        p => Ok(p),
    }
}

impl core::fmt::Display for Upstream {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Upstream::Unix(path) => write!(f, "unix:{path}"),
            Upstream::Tcp(addr) => write!(f, "http://{addr}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_forms_round_trip() {
        for text in [
            "unix:/run/app.sock",
            "http://127.0.0.1:8080",
            "http://[::1]:9000",
            "http://10.1.2.3:80",
        ] {
            assert_eq!(Upstream::parse(text).unwrap().to_string(), text);
        }
        let slash = Upstream::parse("http://127.0.0.1:8080/").unwrap();
        assert_eq!(slash.to_string(), "http://127.0.0.1:8080");
    }

    #[test]
    fn refusals_say_what_was_expected() {
        for (text, needle) in [
            (
                "localhost:8080",
                "expected unix:/path/to.sock or http://IP:PORT",
            ),
            ("https://127.0.0.1:443", "expected unix:"),
            ("http://localhost:8080", "IP literal"),
            ("http://127.0.0.1", "IP literal"),
            ("http://127.0.0.1:8080/api", "no path"),
            ("http://127.0.0.1:0", "port from 1 to 65535"),
            ("http://0.0.0.0:80", "a host's"),
            ("http://[ff02::1]:80", "a host's"),
            ("unix:run/app.sock", "must be absolute"),
            ("unix:/run/", "not a socket path"),
        ] {
            let e = Upstream::parse(text).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
        let long = format!("unix:/{}", "a".repeat(107));
        assert!(Upstream::parse(&long).unwrap_err().contains("at most 107"));
    }
}
