//! The last address of `X-Forwarded-For`: the client as the nearest proxy saw it.
//!
//! Input: the request's field lines. Output: the address of the last non-empty element
//! of the combined `X-Forwarded-For` list, or `None` (no such field, or its last element
//! is not an address: then the caller keeps the peer's address). A proxy appends the
//! address it received the connection from, so only the last element was written by the
//! trusted proxy; earlier ones are whatever the client sent and are not believed.
//!
//! Several field lines form one comma-separated list in order (RFC 9110 §5.3); empty
//! elements and optional whitespace around them are ignored (§5.6.1). An element may be
//! `a.b.c.d`, an IPv6 address, `[v6]`, or either form with a `:port` (some proxies add
//! the port); anything else (`unknown`, an obfuscated identifier) is not an address.

use crate::http::Header;
use core::net::{IpAddr, SocketAddr};

const NAME: &[u8] = b"x-forwarded-for";

/// The last address of the `X-Forwarded-For` lines among `fields`.
pub fn forwarded_for(fields: &[Header<'_>]) -> Option<IpAddr> {
    let last_line = fields
        .iter()
        .rev()
        .filter(|h| h.name.eq_ignore_ascii_case(NAME))
        .find_map(|h| last_element(h.value))?;
    address(last_line)
}

/// The last non-empty element of a comma-separated list, whitespace trimmed.
fn last_element(value: &[u8]) -> Option<&[u8]> {
    value
        .rsplit(|&b| b == b',')
        .map(|e| e.trim_ascii())
        .find(|e| !e.is_empty())
}

fn address(element: &[u8]) -> Option<IpAddr> {
    let s = core::str::from_utf8(element).ok()?;
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Some(inner) = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        return inner.parse::<core::net::Ipv6Addr>().ok().map(IpAddr::V6);
    }
    s.parse::<SocketAddr>().ok().map(|a| a.ip())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h<'a>(name: &'a str, value: &'a str) -> Header<'a> {
        Header {
            name: name.as_bytes(),
            value: value.as_bytes(),
        }
    }

    fn xff(values: &[&str]) -> Option<IpAddr> {
        let mut fields = vec![h("Host", "x")];
        fields.extend(values.iter().map(|v| h("X-Forwarded-For", v)));
        fields.push(h("User-Agent", "t"));
        forwarded_for(&fields)
    }

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn the_last_hop_wins() {
        assert_eq!(xff(&["203.0.113.9"]), ip("203.0.113.9"));
        assert_eq!(xff(&["1.1.1.1, 2.2.2.2,3.3.3.3"]), ip("3.3.3.3"));
        assert_eq!(xff(&["1.1.1.1", "2.2.2.2, 4.4.4.4"]), ip("4.4.4.4"));
        assert_eq!(xff(&["1.1.1.1, 2001:db8::9"]), ip("2001:db8::9"));
    }

    #[test]
    fn whitespace_and_empty_elements() {
        assert_eq!(xff(&[" \t5.5.5.5 \t"]), ip("5.5.5.5"));
        assert_eq!(xff(&["6.6.6.6, ,"]), ip("6.6.6.6"));
        assert_eq!(xff(&["7.7.7.7", ""]), ip("7.7.7.7"));
        assert_eq!(xff(&["8.8.8.8", " , "]), ip("8.8.8.8"));
    }

    #[test]
    fn ports_and_brackets() {
        assert_eq!(xff(&["9.9.9.9:5000"]), ip("9.9.9.9"));
        assert_eq!(xff(&["[2001:db8::1]"]), ip("2001:db8::1"));
        assert_eq!(xff(&["[2001:db8::1]:443"]), ip("2001:db8::1"));
        assert_eq!(xff(&["::ffff:1.2.3.4"]), ip("::ffff:1.2.3.4"));
    }

    #[test]
    fn invalid_last_elements_give_none() {
        for v in [
            "1.1.1.1, unknown",
            "1.1.1.1, _hidden",
            "1.1.1.1, 300.1.1.1",
            "1.1.1.1, 01.2.3.4",
            "1.1.1.1, [1.2.3.4]",
            "1.1.1.1, \u{e9}",
            "1.1.1.1, 2.2.2.2 3.3.3.3",
            "",
            ",",
        ] {
            assert_eq!(xff(&[v]), None, "{v:?}");
        }
        assert_eq!(xff(&[]), None, "no field");
        assert_eq!(forwarded_for(&[h("x-forwarded-for", "\u{ff}")]), None);
    }

    #[test]
    fn name_is_case_insensitive() {
        assert_eq!(
            forwarded_for(&[h("x-FORWARDED-for", "10.0.0.1")]),
            ip("10.0.0.1")
        );
        assert_eq!(forwarded_for(&[h("X-Forwarded-Fo", "10.0.0.1")]), None);
    }
}
