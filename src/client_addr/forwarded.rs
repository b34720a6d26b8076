//! The client named by `X-Forwarded-For`: its last address, or with
//! `--real-ip-recursive` the first address from the right that is not a trusted proxy.
//!
//! Input: the request's field lines and how far to believe them ([`Walk`]). Output: the
//! client's address, or `None` (no such field, or its last element is not an address:
//! then the caller keeps the peer's address). Nothing allocates.
//!
//! Each proxy appends the address it received the connection from, so, read from the
//! right, the list is a chain of hops, each written by the proxy to its right. Only the
//! last element was written by the peer (the caller calls this only for a trusted peer);
//! earlier ones are whatever the hop before it sent. [`Walk::LastHop`] believes the last
//! element alone. [`Walk::PastTrusted`] (nginx's `real_ip_recursive on`, whose directive
//! doc says: "the original client address that matches one of the trusted addresses is
//! replaced by the last non-trusted address sent in the request header field",
//! <https://nginx.org/en/docs/http/ngx_http_realip_module.html#real_ip_recursive>)
//! walks left while the address in hand is a trusted proxy, which vouches for the one
//! to its left. Where nginx's code decides what its doc leaves open
//! (`ngx_http_get_forwarded_addr_internal`, src/http/ngx_http_core_module.c), steerd
//! does the same:
//!
//! - every address trusted: the leftmost is the client (the walk ran out);
//! - an element that is not an address stops the walk: the client is the last address
//!   read, the one to its right (the garbage was written by a proxy's client, and the
//!   proxy that vouched for it is the best that is known).
//!
//! Several field lines form one comma-separated list in order (RFC 9110 §5.3); empty
//! elements and optional whitespace around them are ignored (§5.6.1), so an empty field
//! line is skipped too (nginx ends its walk there). An element may be `a.b.c.d`, an IPv6
//! address, `[v6]`, or either form with a `:port` (some proxies add the port, and
//! nginx's `ngx_parse_addr_port` accepts the same four forms); anything else (`unknown`,
//! an obfuscated identifier, two addresses separated by a space) is not an address.

use crate::config::Cidr;
use crate::http::Header;
use core::net::{IpAddr, SocketAddr};

const NAME: &[u8] = b"x-forwarded-for";

/// How far `X-Forwarded-For` is believed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Walk<'a> {
    /// Its last address only: the word of the trusted peer itself.
    #[default]
    LastHop,
    /// From the right, past every address in these networks (`--real-ip-recursive`).
    PastTrusted(&'a [Cidr]),
}

/// The client the `X-Forwarded-For` lines among `fields` name, read as `walk` says.
pub(crate) fn forwarded_for(fields: &[Header<'_>], walk: Walk<'_>) -> Option<IpAddr> {
    let mut elements = fields
        .iter()
        .rev()
        .filter(|h| h.name.eq_ignore_ascii_case(NAME))
        .flat_map(|h| h.value.rsplit(|&b| b == b','))
        .map(|e| e.trim_ascii())
        .filter(|e| !e.is_empty());
    let mut client = address(elements.next()?)?;
    if let Walk::PastTrusted(trusted) = walk {
        while Cidr::any_contains(trusted, client) {
            // The list ran out (all trusted) or its next element is not an address.
            let Some(left) = elements.next().and_then(address) else {
                break;
            };
            client = left;
        }
    }
    Some(client)
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
mod tests;
