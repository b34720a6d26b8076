//! Vectors for the response head parser: status lines, fields, framing, persistence,
//! each also parsed from every prefix (incomplete, never an error).

use super::*;
use RespFraming::{Chunked, Length, UntilClose};

fn parsed(head: &[u8]) -> Result<Option<RespHead>, HeadError> {
    let whole = parse(head, false);
    if let Ok(Some(h)) = whole {
        for cut in 0..h.head_len {
            assert_eq!(
                parse(&head[..cut], false),
                Ok(None),
                "{head:?} cut at {cut}"
            );
        }
    }
    whole
}

#[test]
fn a_plain_answer() {
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    let h = parsed(head).unwrap().unwrap();
    assert_eq!(
        h,
        RespHead {
            status: 200,
            head_len: head.len() - 5,
            framing: RespFraming::Length(5),
            keep_alive: true
        }
    );
}

/// (head, answers HEAD, status, framing, keep-alive).
const GOOD: &[(&[u8], bool, u16, RespFraming, bool)] = &[
    (b"HTTP/1.1 200 OK\r\n\r\n", false, 200, UntilClose, false),
    (
        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
        false,
        200,
        Length(0),
        true,
    ),
    (
        b"HTTP/1.1 200 OK\r\nContent-Length: 007\r\n\r\n",
        false,
        200,
        Length(7),
        true,
    ),
    (
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\ncontent-length: 3\r\n\r\n",
        false,
        200,
        Length(3),
        true,
    ),
    (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        false,
        200,
        Chunked,
        true,
    ),
    (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\nConnection: close\r\n\r\n",
        false,
        200,
        Chunked,
        false,
    ),
    (
        b"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 1\r\n\r\n",
        false,
        200,
        Length(1),
        false,
    ),
    (
        b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n",
        false,
        200,
        Length(1),
        false,
    ),
    (
        b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\n",
        false,
        200,
        Length(1),
        false,
    ),
    (
        b"HTTP/1.1 204 No Content\r\n\r\n",
        false,
        204,
        RespFraming::None,
        true,
    ),
    (b"HTTP/1.1 204\r\n\r\n", false, 204, RespFraming::None, true),
    (
        b"HTTP/1.1 304 \r\nContent-Length: 99\r\n\r\n",
        false,
        304,
        RespFraming::None,
        true,
    ),
    (
        b"HTTP/1.1 100 Continue\r\n\r\n",
        false,
        100,
        RespFraming::None,
        true,
    ),
    (
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        false,
        101,
        RespFraming::None,
        true,
    ),
    (
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
        true,
        200,
        RespFraming::None,
        true,
    ),
    (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        true,
        200,
        RespFraming::None,
        true,
    ),
    (
        b"HTTP/1.1 599 Odd: reason \x80\t\r\nX:\r\nY: \xff \r\n\r\n",
        false,
        599,
        UntilClose,
        false,
    ),
    (
        b"HTTP/1.2 200 OK\r\nContent-Length: 1\r\n\r\n",
        false,
        200,
        Length(1),
        true,
    ),
];

#[test]
fn good_heads() {
    for &(head, answers_head, status, framing, keep_alive) in GOOD {
        let whole = parse(head, answers_head);
        let want = RespHead {
            status,
            head_len: head.len(),
            framing,
            keep_alive,
        };
        assert_eq!(whole, Ok(Some(want)), "{:?}", String::from_utf8_lossy(head));
        for cut in 0..head.len() {
            assert_eq!(
                parse(&head[..cut], answers_head),
                Ok(None),
                "{head:?} cut at {cut}"
            );
        }
        let mut more = head.to_vec();
        more.extend_from_slice(b"body bytes\r\n\r\n");
        assert_eq!(
            parse(&more, answers_head),
            whole,
            "{head:?} with a body after it"
        );
    }
}

const BAD: &[(&[u8], HeadError)] = &[
    (b"\r\nHTTP/1.1 200 OK\r\n\r\n", HeadError::BadStatusLine),
    (b"HTTP/1.1  200 OK\r\n\r\n", HeadError::BadStatusLine),
    (b"HTTP/1.1 200\tOK\r\n\r\n", HeadError::BadStatusLine),
    (b"HTTP/1.1 2000 OK\r\n\r\n", HeadError::BadStatusLine),
    (b"HTTP/1.1 20 OK\r\n\r\n", HeadError::BadStatusLine),
    (b"HTTP/1.1 099 OK\r\n\r\n", HeadError::BadStatusLine),
    (b"HTTP/1.1 600 OK\r\n\r\n", HeadError::BadStatusLine),
    (b"HTTP/2.0 200 OK\r\n\r\n", HeadError::BadStatusLine),
    (b"http/1.1 200 OK\r\n\r\n", HeadError::BadStatusLine),
    (b"HTTP/1.x 200 OK\r\n\r\n", HeadError::BadStatusLine),
    (b"HTTP/1.1 200 OK\n\r\n", HeadError::BadStatusLine),
    (b"HTTP/1.1 200 OK\rX\n\r\n", HeadError::BadStatusLine),
    (b"HTTP/1.1 200 O\x00K\r\n\r\n", HeadError::BadStatusLine),
    (b"HTTP/1.1 200\n\r\n", HeadError::BadStatusLine),
    (b"ICY 200 OK\r\n\r\n", HeadError::BadStatusLine),
    (
        b"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n",
        HeadError::BadField,
    ),
    (b"HTTP/1.1 200 OK\r\n\tX: a\r\n\r\n", HeadError::BadField),
    (b"HTTP/1.1 200 OK\r\nX : a\r\n\r\n", HeadError::BadField),
    (b"HTTP/1.1 200 OK\r\n: a\r\n\r\n", HeadError::BadField),
    (b"HTTP/1.1 200 OK\r\nX a\r\n\r\n", HeadError::BadField),
    (
        b"HTTP/1.1 200 OK\r\nX: a\nY: b\r\n\r\n",
        HeadError::BadField,
    ),
    (
        b"HTTP/1.1 200 OK\r\nX: a\rY: b\r\n\r\n",
        HeadError::BadField,
    ),
    (b"HTTP/1.1 200 OK\r\nX: a\x00b\r\n\r\n", HeadError::BadField),
    (b"HTTP/1.1 200 OK\r\nX: a\x7f\r\n\r\n", HeadError::BadField),
    (b"HTTP/1.1 200 OK\r\n\n", HeadError::BadField),
    (b"HTTP/1.1 200 OK\r\n\rX", HeadError::BadField),
    (
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        HeadError::BadFraming,
    ),
    (
        b"HTTP/1.1 204 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n",
        HeadError::BadFraming,
    ),
    (
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        HeadError::BadFraming,
    ),
    (
        b"HTTP/1.1 200 OK\r\nContent-Length: 1, 1\r\n\r\n",
        HeadError::BadFraming,
    ),
    (
        b"HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\n",
        HeadError::BadFraming,
    ),
    (
        b"HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n",
        HeadError::BadFraming,
    ),
    (
        b"HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\n",
        HeadError::BadFraming,
    ),
    (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        HeadError::BadFraming,
    ),
    (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        HeadError::BadFraming,
    ),
    (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
        HeadError::BadFraming,
    ),
    (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: xchunked\r\n\r\n",
        HeadError::BadFraming,
    ),
    (
        b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        HeadError::BadFraming,
    ),
];

#[test]
fn bad_heads_whatever_follows() {
    for &(head, error) in BAD {
        assert_eq!(
            parse(head, false),
            Err(error),
            "{:?}",
            String::from_utf8_lossy(head)
        );
        let mut more = head.to_vec();
        more.extend_from_slice(b"HTTP/1.1 200 OK\r\n\r\n");
        assert_eq!(parse(&more, false), Err(error), "{head:?} then more");
    }
}

#[test]
fn a_head_is_bounded() {
    let mut head = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
    head.resize(MAX_RESPONSE_HEAD - 1, b'a');
    assert_eq!(parse(&head, false), Ok(None));
    head.push(b'a');
    assert_eq!(parse(&head, false), Err(HeadError::TooLarge));
    head.truncate(MAX_RESPONSE_HEAD - 4);
    head.extend_from_slice(b"\r\n\r\n");
    assert!(matches!(parse(&head, false), Ok(Some(h)) if h.head_len == MAX_RESPONSE_HEAD));
    head.truncate(MAX_RESPONSE_HEAD - 4);
    head.extend_from_slice(b"a\r\n\r\n");
    assert_eq!(parse(&head, false), Err(HeadError::TooLarge));
}

#[test]
fn connection_may_name_sixteen_fields() {
    let names: Vec<String> = (0..16).map(|i| format!("x-{i}")).collect();
    let head = format!("HTTP/1.1 200 OK\r\nConnection: {}\r\n\r\n", names.join(","));
    assert!(matches!(parse(head.as_bytes(), false), Ok(Some(_))));
    let head = format!(
        "HTTP/1.1 200 OK\r\nConnection: {}\r\nConnection: x-16\r\n\r\n",
        names.join(",")
    );
    assert_eq!(parse(head.as_bytes(), false), Err(HeadError::BadField));
}

/// The end-to-end fields of `head` as "name: value" lines.
fn forwarded(head: &[u8], keep_upgrade: bool) -> Vec<String> {
    let parsed = parse(head, false).unwrap().unwrap();
    end_to_end(head, &parsed, keep_upgrade)
        .map(|(n, v)| {
            format!(
                "{}: {}",
                String::from_utf8_lossy(n),
                String::from_utf8_lossy(v)
            )
        })
        .collect()
}

#[test]
fn end_to_end_drops_hop_by_hop_fields_and_what_connection_names() {
    let head = b"HTTP/1.1 200 Note: not a field\r\n\
        Content-Type: text/plain\r\n\
        Connection: X-Secret, keep-alive\r\n\
        Keep-Alive: timeout=5\r\n\
        x-secret: 1\r\n\
        Transfer-Encoding: chunked\r\n\
        Trailer: X-T\r\n\
        TE: trailers\r\n\
        Proxy-Authenticate: Basic\r\n\
        Upgrade: h2c\r\n\
        Set-Cookie: a=1\r\n\
        Set-Cookie: b=2\r\n\
        X-Empty:\r\n\r\n";
    assert_eq!(
        forwarded(head, false),
        [
            "Content-Type: text/plain",
            "Set-Cookie: a=1",
            "Set-Cookie: b=2",
            "X-Empty: "
        ]
    );
    let upgrade = b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\
        Upgrade: websocket\r\nSec-WebSocket-Accept: abc\r\n\r\n";
    assert_eq!(forwarded(upgrade, false), ["Sec-WebSocket-Accept: abc"]);
    assert_eq!(
        forwarded(upgrade, true),
        ["Upgrade: websocket", "Sec-WebSocket-Accept: abc"]
    );
    let sized = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nETag: \"x\"\r\n\r\nabc";
    assert_eq!(forwarded(sized, false), ["ETag: \"x\""]);
}
