//! Hop-by-hop field names, shared by the request side and the response side of a relay.
//!
//! Input: field names and `Connection` field values. Output: whether a field may be
//! forwarded. RFC 9110 §7.6.1: a proxy removes `Connection`, every field `Connection`
//! names, and the fields that are hop-by-hop whatever it lists (`Keep-Alive`, `TE`,
//! `Trailer`, `Transfer-Encoding`, `Upgrade`; `Proxy-Connection` and every other `Proxy-*`
//! field, which only the next hop may read). The fields a `Connection` value names are
//! kept as slices of that value, at most [`MAX_CONNECTION_TOKENS`]: more is an error the
//! caller answers (400 to a client, 502 for an upstream), never a silent truncation that
//! would forward a field the sender meant to be dropped.
//!
//! Nothing here allocates or panics on any input.

use arrayvec::ArrayVec;

use super::fields::list_elements;
use super::tables::TOKEN;

/// Most distinct field names one head's `Connection` fields may name.
pub const MAX_CONNECTION_TOKENS: usize = 16;

/// The field names the `Connection` fields of one head list (comma-separated tokens,
/// OWS trimmed, empty elements skipped, each distinct name kept once).
#[derive(Clone, Debug, Default)]
pub struct ConnectionTokens<'a> {
    listed: ArrayVec<&'a [u8], MAX_CONNECTION_TOKENS>,
}

/// A head's `Connection` fields name more than [`MAX_CONNECTION_TOKENS`] fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooManyTokens;

impl<'a> ConnectionTokens<'a> {
    /// No names listed yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one `Connection` field value. An element that is not a token cannot name a
    /// field (field names are tokens, RFC 9110 §5.1) and is skipped.
    pub fn add(&mut self, value: &'a [u8]) -> Result<(), TooManyTokens> {
        for name in list_elements(value) {
            if !name.iter().all(|&b| TOKEN[b as usize]) || self.names(name) {
                continue;
            }
            self.listed.try_push(name).map_err(|_| TooManyTokens)?;
        }
        Ok(())
    }

    /// Whether a `Connection` value listed `name` (case-insensitive).
    pub fn names(&self, name: &[u8]) -> bool {
        self.listed.iter().any(|n| n.eq_ignore_ascii_case(name))
    }
}

/// The fields never forwarded, whatever `Connection` lists (RFC 9110 §7.6.1), lowercase.
const HOP_BY_HOP: [&[u8]; 6] = [
    b"connection",
    b"keep-alive",
    b"te",
    b"trailer",
    b"transfer-encoding",
    b"upgrade",
];

/// Whether the field `name` is never forwarded (case-insensitive): one of the six
/// hop-by-hop fields of RFC 9110 §7.6.1, or any `Proxy-*` field.
pub fn is_hop_by_hop(name: &[u8]) -> bool {
    let proxy = name
        .get(..6)
        .is_some_and(|p| p.eq_ignore_ascii_case(b"proxy-"));
    proxy || HOP_BY_HOP.iter().any(|h| h.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_names_in_any_case() {
        for name in [
            &b"Connection"[..],
            b"KEEP-ALIVE",
            b"te",
            b"Trailer",
            b"Transfer-Encoding",
            b"upgrade",
            b"Proxy-Connection",
            b"proxy-authorization",
            b"PROXY-x",
        ] {
            assert!(is_hop_by_hop(name), "{name:?}");
        }
        for name in [
            &b""[..],
            b"t",
            b"tes",
            b"Content-Length",
            b"Proxy",
            b"proxy_x",
            b"X-Connection",
            b"Upgrade-Insecure-Requests",
            b"Trailers",
        ] {
            assert!(!is_hop_by_hop(name), "{name:?}");
        }
    }

    #[test]
    fn connection_lists_are_split_trimmed_and_folded() {
        let mut t = ConnectionTokens::new();
        t.add(b"close, X-Secret ,,\tFoo").unwrap();
        t.add(b"x-secret").unwrap();
        t.add(b"\"quoted\", a b").unwrap();
        for listed in [&b"close"[..], b"x-secret", b"X-SECRET", b"foo"] {
            assert!(t.names(listed), "{listed:?}");
        }
        for not in [&b"Fo"[..], b"quoted", b"a b", b"", b"keep-alive"] {
            assert!(!t.names(not), "{not:?}");
        }
    }

    #[test]
    fn more_than_sixteen_distinct_names_is_an_error() {
        let many: Vec<String> = (0..MAX_CONNECTION_TOKENS)
            .map(|i| format!("x{i}"))
            .collect();
        let list = many.join(", ");
        let mut t = ConnectionTokens::new();
        assert_eq!(t.add(list.as_bytes()), Ok(()));
        assert_eq!(t.add(b"X0, x15"), Ok(()), "repeats take no slot");
        assert_eq!(t.add(b"one-more"), Err(TooManyTokens));
    }
}
