//! PROXY protocol headers, version 1 (one line of text) and version 2 (binary), as
//! haproxy's published specification "The PROXY protocol, Versions 1 & 2" defines them
//! (`doc/proxy-protocol.txt` in the haproxy sources; the facts used here are summarised
//! in `docs/serving.md`).
//!
//! Input: the bytes received so far at the start of a connection. Output:
//! `Status::Partial` (every byte so far can still begin a valid header),
//! `Status::Complete(ProxyHeader)` (its length and the source address it carries, if one
//! is to be used), or the [`ProxyError`] that closes the connection. The parser is
//! stateless: call it again on the longer buffer. It never allocates, never panics and
//! never reads past the slice. It does not decide whether a peer may send a header
//! (`--real-ip-from` does) nor read the socket.
//!
//! Version 1: `PROXY` SP (`TCP4` | `TCP6` | `UNKNOWN`) SP src SP dst SP sport SP dport
//! CRLF, at most 107 bytes with the CRLF. Exactly one space between fields; IPv4 as four
//! decimal numbers without leading zeros; ports `0..=65535` without leading zeros; a
//! single CR or LF does not end the line. After `UNKNOWN` the rest of the line is
//! ignored and the connection's own endpoints are used. The line is US-ASCII text: any
//! byte outside `0x20..=0x7e` before the CRLF refuses it (this is also what lets a
//! prefix be refused early, before its CRLF arrives).
//!
//! Version 2: the 12-byte signature `\r\n\r\n\0\r\nQUIT\n`, then version (high nibble,
//! must be 2) and command (low nibble: 0 LOCAL, 1 PROXY, anything else refused), then
//! family (0 UNSPEC, 1 INET, 2 INET6, 3 UNIX) and transport (0 UNSPEC, 1 STREAM,
//! 2 DGRAM), anything else refused, then the big-endian length of the rest. LOCAL (a
//! health check by the proxy itself) skips the whole block and keeps the connection's own
//! endpoints. PROXY over TCP (0x11, 0x21) gives the source address; the other valid
//! combinations (UNSPEC, UDP, UNIX) fall back to the connection's own endpoints, as the
//! specification allows. An address block shorter than its family needs is refused.
//! When the family and transport are both given, the TLVs after the addresses are walked
//! for framing (each must end within the header) and skipped, whatever their type (a
//! receiver that does not verify CRC32C may ignore it), noting only whether
//! `PP2_TYPE_SSL` says the client came over TLS (for `--https-redirect`); with UNSPEC the block's layout is
//! unknown and it is skipped unread. A header longer than [`V2_MAX`] bytes is refused as
//! soon as its length is known.

use crate::http::Status;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Longest version 1 header, CRLF included (the specification's worst case).
pub const V1_MAX: usize = 107;
/// Longest version 2 header accepted (16 fixed bytes, addresses and TLVs). The
/// specification keeps headers below one minimum MSS (536 bytes) in practice; this leaves
/// room for TLVs such as a TLS client certificate's common name.
pub const V2_MAX: usize = 2048;

const V1_MAGIC: &[u8; 6] = b"PROXY ";
const V2_SIGNATURE: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";
const V2_FIXED: usize = 16;

/// A complete, valid header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProxyHeader {
    /// Bytes the header takes at the start of the stream (the request follows them).
    pub len: usize,
    /// The original client's address and port; `None`: use the connection's own
    /// endpoints (LOCAL, `UNKNOWN`, and the families this server does not relay).
    pub(crate) source: Option<SocketAddr>,
    /// Whether the client reached the proxy over TLS, when the header says: a version 2
    /// PROXY header whose TLVs were read says so by its `PP2_TYPE_SSL` TLV (0x20) with
    /// the `PP2_CLIENT_SSL` bit (0x01); `None` for version 1, LOCAL and UNSPEC.
    pub(crate) tls: Option<bool>,
}

/// Why a connection's first bytes are not a valid PROXY header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyError {
    /// The stream begins with neither signature.
    Missing,
    /// A version 1 line that does not match the grammar.
    V1Syntax,
    /// No CRLF within the first 107 bytes of a version 1 line.
    V1TooLong,
    /// A version 2 header with an unknown version, command, family or transport.
    V2Unknown,
    /// A version 2 address block shorter than its family needs.
    V2ShortAddress,
    /// A version 2 TLV that runs past the end of the header.
    V2Tlv,
    /// A version 2 header longer than [`V2_MAX`].
    V2TooLong,
}

impl ProxyError {
    /// A short description, for logs and tests.
    #[cfg(test)]
    pub(crate) fn what(self) -> &'static str {
        match self {
            ProxyError::Missing => "no PROXY header",
            ProxyError::V1Syntax => "malformed PROXY v1 line",
            ProxyError::V1TooLong => "PROXY v1 line without CRLF in 107 bytes",
            ProxyError::V2Unknown => "PROXY v2 version, command or family not valid",
            ProxyError::V2ShortAddress => "PROXY v2 address block too short",
            ProxyError::V2Tlv => "PROXY v2 TLV past the end of the header",
            ProxyError::V2TooLong => "PROXY v2 header too long",
        }
    }
}

/// Parses the PROXY header at the start of `buf` (either version).
pub fn parse_proxy_header(buf: &[u8]) -> Result<Status<ProxyHeader>, ProxyError> {
    match buf.first() {
        None => Ok(Status::Partial),
        Some(b'\r') => v2(buf),
        Some(b'P') => v1(buf),
        Some(_) => Err(ProxyError::Missing),
    }
}

/// Whether `buf` and `magic` agree on their common length.
fn prefix_matches(buf: &[u8], magic: &[u8]) -> bool {
    let n = buf.len().min(magic.len());
    buf[..n] == magic[..n]
}

fn v1(buf: &[u8]) -> Result<Status<ProxyHeader>, ProxyError> {
    if !prefix_matches(buf, V1_MAGIC) {
        return Err(ProxyError::Missing);
    }
    let window = &buf[..buf.len().min(V1_MAX)];
    let Some(lf) = memchr::memchr(b'\n', window) else {
        // Printable text so far, perhaps ending with the CR of the CRLF.
        let text = window.strip_suffix(b"\r").unwrap_or(window);
        if !text.iter().all(|b| (0x20..=0x7e).contains(b)) {
            return Err(ProxyError::V1Syntax);
        }
        if window.len() == V1_MAX {
            return Err(ProxyError::V1TooLong);
        }
        return Ok(Status::Partial);
    };
    let line = match window[..lf].strip_suffix(b"\r") {
        Some(line) if line.len() >= V1_MAGIC.len() => &line[V1_MAGIC.len()..],
        _ => return Err(ProxyError::V1Syntax),
    };
    if !line.iter().all(|b| (0x20..=0x7e).contains(b)) {
        return Err(ProxyError::V1Syntax);
    }
    let source = v1_fields(line).ok_or(ProxyError::V1Syntax)?;
    Ok(Status::Complete(ProxyHeader {
        len: lf + 1,
        source,
        tls: None,
    }))
}

/// The fields after `PROXY `: `None` if malformed, `Some(None)` for `UNKNOWN`.
fn v1_fields(line: &[u8]) -> Option<Option<SocketAddr>> {
    if line == b"UNKNOWN" || line.starts_with(b"UNKNOWN ") {
        return Some(None);
    }
    let mut fields = line.split(|&b| b == b' ');
    let family = fields.next()?;
    let (src, dst) = (fields.next()?, fields.next()?);
    let (sport, dport) = (fields.next()?, fields.next()?);
    if fields.next().is_some() {
        return None;
    }
    // The destination is checked for form only: the server knows its own address.
    let src = match family {
        b"TCP4" => v1_ipv4(dst).and(v1_ipv4(src)).map(IpAddr::V4)?,
        b"TCP6" => v1_ipv6(dst).and(v1_ipv6(src)).map(IpAddr::V6)?,
        _ => return None,
    };
    v1_port(dport)?;
    Some(Some(SocketAddr::new(src, v1_port(sport)?)))
}

/// A decimal number of at most `max` without leading zeros (a lone `0` is fine).
fn decimal(b: &[u8], max: u32) -> Option<u32> {
    if b.is_empty() || b.len() > 5 || (b[0] == b'0' && b.len() > 1) {
        return None;
    }
    let mut n = 0u32;
    for &d in b {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u32::from(d - b'0');
    }
    (n <= max).then_some(n)
}

fn v1_port(b: &[u8]) -> Option<u16> {
    decimal(b, 65_535).map(|n| n as u16)
}

/// Exactly four decimal octets `0..=255`, no leading zeros, one dot between each.
fn v1_ipv4(b: &[u8]) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut parts = b.split(|&c| c == b'.');
    for o in &mut octets {
        *o = decimal(parts.next()?, 255)? as u8;
    }
    parts.next().is_none().then_some(Ipv4Addr::from(octets))
}

/// Colon-separated hexadecimal groups with at most one `::` (the standard library's
/// grammar, which also reads a trailing dotted IPv4 part).
fn v1_ipv6(b: &[u8]) -> Option<Ipv6Addr> {
    core::str::from_utf8(b).ok()?.parse().ok()
}

fn v2(buf: &[u8]) -> Result<Status<ProxyHeader>, ProxyError> {
    if !prefix_matches(buf, V2_SIGNATURE) {
        return Err(ProxyError::Missing);
    }
    // Refuse an unknown version/command or family/transport as soon as its byte is here.
    if let Some(&ver_cmd) = buf.get(12) {
        if ver_cmd >> 4 != 2 || ver_cmd & 0x0f > 1 {
            return Err(ProxyError::V2Unknown);
        }
    }
    if let Some(&fam) = buf.get(13) {
        if fam >> 4 > 3 || fam & 0x0f > 2 {
            return Err(ProxyError::V2Unknown);
        }
    }
    if buf.len() < V2_FIXED {
        return Ok(Status::Partial);
    }
    let len = V2_FIXED + usize::from(u16::from_be_bytes([buf[14], buf[15]]));
    if len > V2_MAX {
        return Err(ProxyError::V2TooLong);
    }
    let proxy = buf[12] & 0x0f == 1;
    let fam = buf[13];
    // LOCAL, or an unspecified family or transport: the block is skipped unread.
    let addr_len = if proxy { v2_address_len(fam) } else { None };
    if addr_len.is_some_and(|a| len - V2_FIXED < a) {
        return Err(ProxyError::V2ShortAddress);
    }
    if buf.len() < len {
        return Ok(Status::Partial);
    }
    let block = &buf[V2_FIXED..len];
    let tls = match addr_len {
        Some(a) => Some(v2_tlvs(&block[a..])?),
        None => None,
    };
    let source = match (proxy, fam) {
        (true, 0x11) => Some(SocketAddr::new(
            IpAddr::V4(Ipv4Addr::from(take::<4>(block, 0))),
            u16::from_be_bytes(take::<2>(block, 8)),
        )),
        (true, 0x21) => Some(SocketAddr::new(
            IpAddr::V6(Ipv6Addr::from(take::<16>(block, 0))),
            u16::from_be_bytes(take::<2>(block, 32)),
        )),
        _ => None,
    };
    Ok(Status::Complete(ProxyHeader { len, source, tls }))
}

/// Address bytes of a family/transport byte (already checked valid): source and
/// destination addresses, then the two ports for INET and INET6. `None`: the family or
/// the transport is UNSPEC, so the block's layout is unknown.
fn v2_address_len(fam: u8) -> Option<usize> {
    match (fam >> 4, fam & 0x0f) {
        (_, 0) | (0, _) => None,
        (1, _) => Some(2 * 4 + 2 * 2),
        (2, _) => Some(2 * 16 + 2 * 2),
        _ => Some(2 * 108),
    }
}

/// `N` bytes of `b` from `at` (the caller checked the length; zeros otherwise).
fn take<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(src) = b.get(at..at + N) {
        out.copy_from_slice(src);
    }
    out
}

/// Walks the type-length-value vectors: each is a type byte, a big-endian length and
/// that many bytes, and the last must end exactly at the end of the header. Returns
/// whether a `PP2_TYPE_SSL` TLV says the client connected over TLS.
fn v2_tlvs(mut rest: &[u8]) -> Result<bool, ProxyError> {
    let mut tls = false;
    while !rest.is_empty() {
        if rest.len() < 3 {
            return Err(ProxyError::V2Tlv);
        }
        let end = 3 + usize::from(u16::from_be_bytes([rest[1], rest[2]]));
        let tlv = rest.get(..end).ok_or(ProxyError::V2Tlv)?;
        tls |= tlv[0] == PP2_TYPE_SSL && tlv.get(3).is_some_and(|c| c & PP2_CLIENT_SSL != 0);
        rest = &rest[end..];
    }
    Ok(tls)
}

/// The TLV of a connection the proxy received over SSL/TLS, and the bit of its first
/// byte (`client`) saying the client used it.
const PP2_TYPE_SSL: u8 = 0x20;
const PP2_CLIENT_SSL: u8 = 0x01;

#[cfg(test)]
mod tests;
