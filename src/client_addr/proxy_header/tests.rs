//! Vectors for both versions, each run whole, with a request after it, and cut at every
//! byte (every prefix of a valid header is `Partial`; no prefix of anything is
//! `Complete` unless the whole is).

use super::*;

const SIG: &[u8] = b"\r\n\r\n\0\r\nQUIT\n";

/// A version 2 header: signature, version/command, family, length, block.
fn v2h(ver_cmd: u8, fam: u8, block: &[u8]) -> Vec<u8> {
    let mut h = SIG.to_vec();
    h.extend_from_slice(&[ver_cmd, fam]);
    h.extend_from_slice(&(block.len() as u16).to_be_bytes());
    h.extend_from_slice(block);
    h
}

fn tcp4_block() -> Vec<u8> {
    let mut b = vec![192, 0, 2, 7, 198, 51, 100, 1];
    b.extend_from_slice(&40000u16.to_be_bytes());
    b.extend_from_slice(&443u16.to_be_bytes());
    b
}

fn tcp6_block() -> Vec<u8> {
    let mut b = "2001:db8::7".parse::<Ipv6Addr>().unwrap().octets().to_vec();
    b.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
    b.extend_from_slice(&[0xff, 0xff, 0, 80]);
    b
}

fn tlv(kind: u8, value: &[u8]) -> Vec<u8> {
    let mut t = vec![kind];
    t.extend_from_slice(&(value.len() as u16).to_be_bytes());
    t.extend_from_slice(value);
    t
}

fn valid() -> Vec<(Vec<u8>, Option<&'static str>)> {
    let v1 = |s: &str| s.as_bytes().to_vec();
    let mut with_tlvs = tcp4_block();
    with_tlvs.extend(tlv(0x04, b"\0\0"));
    with_tlvs.extend(tlv(0xe0, b""));
    with_tlvs.extend(tlv(0x03, b"\x01\x02\x03\x04"));
    with_tlvs.extend(tlv(0x20, &[0x01, 0, 0, 0, 0]));
    vec![
        (
            v1("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n"),
            Some("192.168.0.1:56324"),
        ),
        (
            v1("PROXY TCP4 255.255.255.255 255.255.255.255 65535 65535\r\n"),
            Some("255.255.255.255:65535"),
        ),
        (v1("PROXY TCP4 0.0.0.0 10.0.0.1 0 0\r\n"), Some("0.0.0.0:0")),
        (
            v1("PROXY TCP6 2001:db8::7 2001:db8::1 1 65535\r\n"),
            Some("[2001:db8::7]:1"),
        ),
        (
            v1("PROXY TCP6 FFFF:ffff:ffff:ffff:ffff:ffff:ffff:ffff ::1 2 3\r\n"),
            Some("[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:2"),
        ),
        (v1("PROXY UNKNOWN\r\n"), None),
        (
            // The worst case of the specification: exactly 107 bytes.
            v1("PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff \
                ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n"),
            None,
        ),
        (v1("PROXY UNKNOWN anything at all, ignored\r\n"), None),
        (v2h(0x21, 0x11, &tcp4_block()), Some("192.0.2.7:40000")),
        (v2h(0x21, 0x21, &tcp6_block()), Some("[2001:db8::7]:65535")),
        (v2h(0x21, 0x11, &with_tlvs), Some("192.0.2.7:40000")),
        // LOCAL: the block is skipped whatever it holds.
        (v2h(0x20, 0x00, b""), None),
        (v2h(0x20, 0x11, &tcp4_block()), None),
        (v2h(0x20, 0x11, b"\xff\xff"), None),
        // PROXY with families not relayed: the connection's own endpoints.
        (v2h(0x21, 0x00, b"opaque"), None),
        (v2h(0x21, 0x12, &tcp4_block()), None),
        (v2h(0x21, 0x31, &[0u8; 216]), None),
        (v2h(0x21, 0x10, b"?"), None),
        (
            v2h(0x21, 0x21, &[tcp6_block(), tlv(0xf0, &[7; 300])].concat()),
            Some("[2001:db8::7]:65535"),
        ),
    ]
}

fn invalid() -> Vec<(Vec<u8>, ProxyError)> {
    use ProxyError::*;
    let v1 = |s: &str| s.as_bytes().to_vec();
    let mut long = b"PROXY UNKNOWN ".to_vec();
    long.resize(V1_MAX, b'f');
    let mut big = SIG.to_vec();
    big.extend_from_slice(&[0x21, 0x11]);
    big.extend_from_slice(&((V2_MAX - 16 + 1) as u16).to_be_bytes());
    vec![
        (v1("GET / HTTP/1.1\r\n\r\n"), Missing),
        (v1("proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n"), Missing),
        (v1("PROXY\r\n"), Missing),
        (v1("PROXY TCP4 192.168.0.01 10.0.0.1 1 2\r\n"), V1Syntax),
        (v1("PROXY TCP4 1.2.3.4 5.6.7.8 080 2\r\n"), V1Syntax),
        (v1("PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n"), V1Syntax),
        (v1("PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n"), V1Syntax),
        (v1("PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n"), V1Syntax),
        (v1("PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n"), V1Syntax),
        (v1("PROXY TCP4 1.2.3.4.5 5.6.7.8 1 2\r\n"), V1Syntax),
        (v1("PROXY TCP4 1.2.3 5.6.7.8 1 2\r\n"), V1Syntax),
        (v1("PROXY TCP4 256.2.3.4 5.6.7.8 1 2\r\n"), V1Syntax),
        (v1("PROXY TCP4 ::1 ::1 1 2\r\n"), V1Syntax),
        (v1("PROXY TCP6 1.2.3.4 5.6.7.8 1 2\r\n"), V1Syntax),
        (v1("PROXY TCP6 2001:db8::7 5.6.7.8 1 2\r\n"), V1Syntax),
        (v1("PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n"), V1Syntax),
        (v1("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n"), V1Syntax),
        (v1("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rGET"), V1Syntax),
        (v1("PROXY TCP4 1.2.3.4\t5.6.7.8 1 2\r\n"), V1Syntax),
        (v1("PROXY UNKNOWN \x01\r\n"), V1Syntax),
        (v1("PROXY UNKNOWNX\r\n"), V1Syntax),
        (v1("PROXY \r\n"), V1Syntax),
        (long, V1TooLong),
        (b"\r\n\r\n\0\r\nQUIX\n".to_vec(), Missing),
        (v2h(0x11, 0x11, &tcp4_block()), V2Unknown),
        (v2h(0x22, 0x11, &tcp4_block()), V2Unknown),
        (v2h(0x21, 0x41, &tcp4_block()), V2Unknown),
        (v2h(0x21, 0x13, &tcp4_block()), V2Unknown),
        (v2h(0x21, 0x11, &tcp4_block()[..11]), V2ShortAddress),
        (v2h(0x21, 0x21, &tcp4_block()), V2ShortAddress),
        (v2h(0x21, 0x31, &[0u8; 215]), V2ShortAddress),
        (v2h(0x21, 0x11, &[tcp4_block(), vec![4, 0]].concat()), V2Tlv),
        (
            v2h(0x21, 0x11, &[tcp4_block(), vec![4, 0, 3, 1]].concat()),
            V2Tlv,
        ),
        (big, V2TooLong),
    ]
}

fn parse(b: &[u8]) -> Result<Status<ProxyHeader>, ProxyError> {
    parse_proxy_header(b)
}

#[test]
fn valid_headers_whole_followed_and_cut_at_every_byte() {
    for (h, want) in valid() {
        let want = want.map(|s| s.parse::<SocketAddr>().unwrap());
        let tls = match parse(&h) {
            Ok(Status::Complete(p)) => p.tls,
            _ => None,
        };
        let whole = ProxyHeader {
            len: h.len(),
            source: want,
            tls,
        };
        assert_eq!(parse(&h), Ok(Status::Complete(whole)), "{:?}", h);
        let followed = [&h[..], b"GET / HTTP/1.1\r\n\r\n"].concat();
        assert_eq!(parse(&followed), Ok(Status::Complete(whole)), "{:?}", h);
        for cut in 0..h.len() {
            assert_eq!(
                parse(&h[..cut]),
                Ok(Status::Partial),
                "{:?} cut at {cut}",
                h
            );
        }
    }
}

#[test]
fn invalid_headers_are_refused_and_never_complete() {
    for (h, want) in invalid() {
        assert_eq!(parse(&h), Err(want), "{:?}", String::from_utf8_lossy(&h));
        let followed = [&h[..], b"GET / HTTP/1.1\r\n\r\n"].concat();
        assert!(parse(&followed).is_err(), "{:?}", h);
        for cut in 0..h.len() {
            let r = parse(&h[..cut]);
            assert!(!matches!(r, Ok(Status::Complete(_))), "{:?} cut {cut}", h);
        }
    }
}

#[test]
fn garbage_is_refused_early() {
    // An HTTP request to a PROXY listener is refused at its first byte; a v1 line with a
    // control byte before its CRLF as soon as that byte arrives.
    assert_eq!(parse(b"G"), Err(ProxyError::Missing));
    assert_eq!(parse(b"PROXY TCP4 1.2\x00"), Err(ProxyError::V1Syntax));
    assert_eq!(
        parse(b"\r\n\r\n\0\r\nQUIT\n\x31"),
        Err(ProxyError::V2Unknown)
    );
    assert_eq!(
        parse(b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r"),
        Ok(Status::Partial)
    );
}

#[test]
fn errors_are_described() {
    for (_, e) in invalid() {
        assert!(!e.what().is_empty());
    }
}

/// Version 2 over TCP says whether the client came over TLS (the SSL TLV with its
/// client bit); version 1 cannot say.
#[test]
fn v2_says_whether_the_client_came_over_tls() {
    let v2 = |tlvs: &[u8]| {
        let mut h = b"\r\n\r\n\0\r\nQUIT\n\x21\x11".to_vec();
        h.extend_from_slice(&(12 + tlvs.len() as u16).to_be_bytes());
        h.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2, 0x30, 0x39, 0, 80]);
        h.extend_from_slice(tlvs);
        match parse(&h) {
            Ok(Status::Complete(p)) => p.tls,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(v2(b""), Some(false));
    assert_eq!(v2(&[0x20, 0, 5, 0x01, 0, 0, 0, 0]), Some(true));
    assert_eq!(v2(&[0x20, 0, 5, 0x00, 0, 0, 0, 0]), Some(false));
    assert_eq!(v2(&[0x04, 0, 1, 0x01]), Some(false));
    let v1 = parse(b"PROXY TCP4 10.0.0.1 10.0.0.2 1 2\r\n");
    assert!(matches!(v1, Ok(Status::Complete(p)) if p.tls.is_none()));
}
