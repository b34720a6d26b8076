//! `--cors ORIGIN` (repeatable, or `*`): cross-origin reads of the site by browsers, as
//! the Fetch standard's CORS protocol defines them (fetch.spec.whatwg.org, §3.2).
//!
//! Input: the operator's origins (stage 1), then per request the `Origin`,
//! `Access-Control-Request-Method` and `Access-Control-Request-Headers` field values.
//! Output: the header lines a response carries, borrowed from lines rendered once at
//! start (no allocation per request), and whether an `OPTIONS` is a preflight steerd
//! answers.
//!
//! - `*`: every response carries `Access-Control-Allow-Origin: *`.
//! - A list: each origin is kept in lowercase (a browser serializes scheme and host so and
//!   compares the answer byte for byte). A request whose `Origin` is listed (compared ASCII
//!   case-insensitively) gets that lowercase origin back with `Vary: Origin`; every other
//!   response carries `Vary: Origin` alone, so a shared cache never hands one origin's
//!   answer to another.
//! - A preflight (`OPTIONS` with `Origin` allowed and `Access-Control-Request-Method` of
//!   `GET` or `HEAD`) is answered 204 with the origin lines, `Access-Control-Allow-Methods:
//!   GET, HEAD`, the requested headers echoed in `Access-Control-Allow-Headers` (when they
//!   are a token list of at most [`ECHO_MAX`] bytes) and `Access-Control-Max-Age`.
//!   Anything else sent with `OPTIONS` gets 405 with `Allow`, as without `--cors`.
//!
//! Credentials (cookies) are not offered: a static site has no session to protect, and
//! `*` cannot carry them anyway.

use crate::http::response::PREFLIGHT_LINES;
use crate::http::tables::TOKEN;

/// Longest `Access-Control-Request-Headers` value echoed in a preflight's answer.
pub(crate) const ECHO_MAX: usize = 512;

const ANY: &[u8] = b"Access-Control-Allow-Origin: *\r\n";
const VARY: &[u8] = b"Vary: Origin\r\n";

/// The `--cors` rule, with its lines rendered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Cors {
    /// `*` was given.
    any: bool,
    /// Each listed origin with its lines.
    origins: Vec<Listed>,
}

/// A listed origin (lowercase) and its lines (`Access-Control-Allow-Origin`, `Vary`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Listed {
    origin: Box<[u8]>,
    lines: Box<[u8]>,
}

/// What a request's fields make of the rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CorsAnswer<'a> {
    /// Not configured: nothing to add.
    Off,
    /// Lines every response to this request carries (CRLF-terminated each).
    Lines(&'a [u8]),
    /// A preflight to answer 204: these origin lines, and the headers to echo.
    Preflight {
        /// The origin lines.
        lines: &'a [u8],
        /// `Access-Control-Request-Headers`, when it is echoed.
        headers: Option<&'a [u8]>,
    },
}

impl<'a> CorsAnswer<'a> {
    /// The origin lines every response to the request carries (none when off).
    pub(crate) fn lines(self) -> &'a [u8] {
        match self {
            CorsAnswer::Off => b"",
            CorsAnswer::Lines(lines) | CorsAnswer::Preflight { lines, .. } => lines,
        }
    }

    /// For a preflight, the `Access-Control-Request-Headers` to echo (empty: none).
    pub(crate) fn preflight(self) -> Option<&'a [u8]> {
        match self {
            CorsAnswer::Preflight { headers, .. } => Some(headers.unwrap_or(b"")),
            _ => None,
        }
    }
}

impl Cors {
    /// Adds one `--cors` value: `*`, or an origin `scheme://host[:port]` (RFC 6454 §6.2).
    pub(crate) fn add(&mut self, value: &str) -> Result<(), &'static str> {
        if value == "*" {
            self.any = true;
            return Ok(());
        }
        let origin = value.strip_suffix('/').unwrap_or(value);
        if !is_origin(origin) {
            return Err("expected * or an origin such as https://app.example or http://localhost:3000 (scheme and host, no path)");
        }
        // Browsers serialize an origin with scheme and host in lowercase and compare
        // `Access-Control-Allow-Origin` with it byte for byte (Fetch §3.2.5), so the
        // operator's capitals must not reach the line.
        let origin = origin.to_ascii_lowercase();
        let line = format!("Access-Control-Allow-Origin: {origin}\r\nVary: Origin\r\n");
        self.origins.push(Listed {
            origin: Box::from(origin.as_bytes()),
            lines: Box::from(line.as_bytes()),
        });
        Ok(())
    }

    /// True when `--cors` was given.
    pub(crate) fn is_on(&self) -> bool {
        self.any || !self.origins.is_empty()
    }

    /// Bytes these rules may add to a response head: the longest origin lines, and a
    /// preflight's own lines with the longest echo.
    pub(crate) fn head_bytes(&self) -> usize {
        if !self.is_on() {
            return 0;
        }
        let longest = self.origins.iter().map(|l| l.lines.len()).max();
        let origin = longest.unwrap_or(ANY.len());
        let echo = b"Access-Control-Allow-Headers: \r\n".len() + ECHO_MAX;
        origin + PREFLIGHT_LINES.len() + echo
    }

    /// The answer for a request with `method_is_options`, its `Origin` and, for a
    /// preflight, `Access-Control-Request-Method` and `-Headers`.
    pub(crate) fn answer<'a>(
        &'a self,
        method_is_options: bool,
        origin: Option<&[u8]>,
        request_method: Option<&[u8]>,
        request_headers: Option<&'a [u8]>,
    ) -> CorsAnswer<'a> {
        if !self.is_on() {
            return CorsAnswer::Off;
        }
        let lines = self.lines_for(origin);
        let allowed = origin.is_some() && (self.any || lines.len() > VARY.len());
        let preflight =
            method_is_options && allowed && matches!(request_method, Some(b"GET" | b"HEAD"));
        if !preflight {
            return CorsAnswer::Lines(lines);
        }
        CorsAnswer::Preflight {
            lines,
            headers: request_headers.filter(|h| h.len() <= ECHO_MAX && is_token_list(h)),
        }
    }

    /// The origin lines for a request with `origin`.
    fn lines_for(&self, origin: Option<&[u8]>) -> &[u8] {
        if self.any {
            return ANY;
        }
        let listed = origin.and_then(|o| {
            self.origins
                .iter()
                .find(|l| l.origin.eq_ignore_ascii_case(o))
        });
        listed.map_or(VARY, |l| &l.lines)
    }
}

/// `scheme://host[:port]`: a scheme of letters, digits, `+`, `-`, `.`; a host of
/// letters, digits, `-`, `.` (or an IPv6 literal in brackets); an optional port.
fn is_origin(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once("://") else {
        return false;
    };
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b));
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(':') && !p.contains(']') => (h, Some(p)),
        _ => (rest, None),
    };
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => {
            !host.is_empty()
                && host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        }
    };
    let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok());
    scheme_ok && host_ok && port_ok
}

/// A comma-separated list of field names (tokens), spaces allowed around the commas.
fn is_token_list(v: &[u8]) -> bool {
    v.split(|&b| b == b',').all(|item| {
        let item = item.trim_ascii();
        !item.is_empty() && item.iter().all(|&b| TOKEN[usize::from(b)])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cors(values: &[&str]) -> Cors {
        let mut c = Cors::default();
        for v in values {
            c.add(v).unwrap();
        }
        c
    }

    fn text(a: CorsAnswer<'_>) -> String {
        match a {
            CorsAnswer::Off => "off".into(),
            CorsAnswer::Lines(l) => String::from_utf8_lossy(l).into(),
            CorsAnswer::Preflight { lines, headers } => format!(
                "preflight {} {:?}",
                String::from_utf8_lossy(lines),
                headers.map(|h| String::from_utf8_lossy(h).into_owned())
            ),
        }
    }

    #[test]
    fn listed_origins_get_themselves_back_and_everyone_gets_vary() {
        let c = cors(&["https://app.example", "http://localhost:3000/"]);
        let app = "Access-Control-Allow-Origin: https://app.example\r\nVary: Origin\r\n";
        assert_eq!(
            text(c.answer(false, Some(b"https://app.example"), None, None)),
            app
        );
        assert_eq!(
            text(c.answer(false, Some(b"HTTPS://APP.example"), None, None)),
            app
        );
        let capitals = cors(&["HTTPS://App.Example:8443"]);
        assert_eq!(
            text(capitals.answer(false, Some(b"https://app.example:8443"), None, None)),
            "Access-Control-Allow-Origin: https://app.example:8443\r\nVary: Origin\r\n",
            "as a browser serializes it"
        );
        assert_eq!(
            text(c.answer(false, Some(b"http://localhost:3000"), None, None)),
            "Access-Control-Allow-Origin: http://localhost:3000\r\nVary: Origin\r\n"
        );
        for other in [Some(&b"https://evil.example"[..]), Some(b"null"), None] {
            assert_eq!(text(c.answer(false, other, None, None)), "Vary: Origin\r\n");
        }
        assert_eq!(
            text(Cors::default().answer(true, Some(b"x"), None, None)),
            "off"
        );
    }

    #[test]
    fn any_origin_is_a_star() {
        let c = cors(&["*"]);
        let star = "Access-Control-Allow-Origin: *\r\n";
        assert_eq!(text(c.answer(false, None, None, None)), star);
        assert_eq!(
            text(c.answer(false, Some(b"https://a.b"), None, None)),
            star
        );
    }

    #[test]
    fn preflights_for_get_and_head_from_allowed_origins_only() {
        let c = cors(&["https://app.example"]);
        let o = Some(&b"https://app.example"[..]);
        let a = c.answer(true, o, Some(b"GET"), Some(b"x-test, content-type"));
        assert!(
            text(a).starts_with("preflight Access-Control-Allow-Origin"),
            "{a:?}"
        );
        assert!(matches!(
            a,
            CorsAnswer::Preflight {
                headers: Some(b"x-test, content-type"),
                ..
            }
        ));
        let a = c.answer(true, o, Some(b"HEAD"), Some(b"x bad"));
        assert!(matches!(a, CorsAnswer::Preflight { headers: None, .. }));
        let long = vec![b'a'; ECHO_MAX + 1];
        let a = c.answer(true, o, Some(b"GET"), Some(&long));
        assert!(matches!(a, CorsAnswer::Preflight { headers: None, .. }));
        for (origin, method) in [
            (o, Some(&b"POST"[..])),
            (o, Some(b"get")),
            (o, None),
            (Some(b"https://evil.example"), Some(b"GET")),
            (None, Some(b"GET")),
        ] {
            let a = c.answer(true, origin, method, None);
            assert!(matches!(a, CorsAnswer::Lines(_)), "{origin:?} {method:?}");
        }
        assert!(matches!(
            cors(&["*"]).answer(true, Some(b"https://x.y"), Some(b"GET"), None),
            CorsAnswer::Preflight { .. }
        ));
    }

    #[test]
    fn origins_are_checked() {
        for good in [
            "https://a.example",
            "http://localhost:8080",
            "http://[::1]:3000",
            "app+x://h",
        ] {
            assert!(Cors::default().add(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "a.example",
            "https://",
            "https://a.example/path",
            "https://a b",
            "http://h:x",
            "https://a.example\r\nX: y",
        ] {
            assert!(Cors::default().add(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn head_bytes_cover_the_longest_preflight() {
        let c = cors(&["https://a-rather-long-origin.example:8443"]);
        let longest = c.origins[0].lines.len() + PREFLIGHT_LINES.len() + 32 + ECHO_MAX;
        assert!(c.head_bytes() >= longest);
        assert_eq!(Cors::default().head_bytes(), 0);
    }
}
