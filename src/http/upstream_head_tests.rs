//! Vectors for the response head parser: status lines, fields, framing, persistence,
//! each also parsed from every prefix (incomplete, never an error).

use super::*;

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
