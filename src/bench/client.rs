//! The load generator's HTTP/1.1 response reader: bytes in as they arrive, "need more",
//! "complete after N bytes" or an error kind out. No allocation, no copy of the head.
//!
//! Input: response bytes, in pieces of any size (a head may be split anywhere). Output:
//! [`Feed`]: whether the response is complete and how many of the given bytes it used,
//! plus its status code and whether the server asked to close (`Connection: close`, or
//! HTTP/1.0 without keep-alive is not tracked: the generator sends HTTP/1.1).
//!
//! Framing (RFC 9112 section 6.3): `Content-Length`, or no length at all on 1xx/204/304,
//! or no length and the body runs to the end of the connection. `Transfer-Encoding`
//! (chunked) is not supported: it is reported as [`ResponseError::Framing`], since the
//! servers measured here send files with a length. It does not validate header names or
//! values beyond what framing needs: it is a meter, not a conformance checker.

/// How a response was cut short or malformed; the load report counts each kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ResponseError {
    /// The bytes are not an HTTP/1.x response head.
    Garbage,
    /// A framing the reader does not implement (Transfer-Encoding) or a bad length.
    Framing,
    /// The connection ended before the response did.
    Eof,
}

/// Result of feeding bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Feed {
    /// The response is not complete yet; all bytes were used.
    Partial,
    /// The response ended after this many of the fed bytes.
    Complete(usize),
}

/// The longest head accepted before calling it garbage.
const MAX_HEAD: u32 = 64 * 1024;

/// Header names that matter for framing, lower case.
const CONTENT_LENGTH: &[u8] = b"content-length";
const CONNECTION: &[u8] = b"connection";
const TRANSFER_ENCODING: &[u8] = b"transfer-encoding";

/// What the reader waits for next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    /// Byte `n` of the status line `HTTP/1.x NNN reason`.
    Status(u8),
    /// The rest of the status line, up to LF.
    StatusEnd,
    /// The first byte of a header line, or CR/LF ending the head.
    LineStart,
    /// The LF after the CR that ends the head.
    HeadLf,
    /// More of a header name; `matches` is a bitmask of names still possible.
    Name { len: u8, matches: u8 },
    /// A header value: which header, and how far into the token `close` we are.
    Value { header: Header, close_at: u8 },
    /// Body bytes, this many left.
    Body(u64),
    /// Body bytes until the connection ends.
    UntilEof,
    /// The response is complete.
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Header {
    ContentLength,
    Connection,
    Other,
}

/// Incremental reader for one response at a time; [`ResponseReader::reset`] between.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ResponseReader {
    wait: Wait,
    status: u16,
    head_len: u32,
    length: Option<u64>,
    close: bool,
}

impl Default for ResponseReader {
    fn default() -> Self {
        ResponseReader::new()
    }
}

impl ResponseReader {
    /// A reader waiting for the first byte of a response.
    pub(crate) const fn new() -> ResponseReader {
        ResponseReader {
            wait: Wait::Status(0),
            status: 0,
            head_len: 0,
            length: None,
            close: false,
        }
    }

    /// Forgets the last response.
    pub(crate) fn reset(&mut self) {
        *self = ResponseReader::new();
    }

    /// The status code (0 until the status line is read).
    pub(crate) fn status(&self) -> u16 {
        self.status
    }

    /// True when the server said `Connection: close` or the body runs to EOF.
    pub(crate) fn server_closes(&self) -> bool {
        self.close || self.wait == Wait::UntilEof
    }

    /// Feeds the next bytes of the connection.
    pub(crate) fn feed(&mut self, data: &[u8]) -> Result<Feed, ResponseError> {
        let mut i = 0;
        if self.wait == Wait::Status(0) {
            i = self.whole_head(data)?;
            if self.wait == Wait::Done {
                return Ok(Feed::Complete(i));
            }
        }
        while i < data.len() {
            match self.wait {
                Wait::Body(left) => {
                    let take = left.min((data.len() - i) as u64);
                    i += take as usize;
                    self.wait = if take == left {
                        Wait::Done
                    } else {
                        Wait::Body(left - take)
                    };
                }
                Wait::UntilEof => return Ok(Feed::Partial),
                Wait::Done => break,
                _ => {
                    self.head_byte(data[i])?;
                    i += 1;
                }
            }
            if self.wait == Wait::Done {
                return Ok(Feed::Complete(i));
            }
        }
        Ok(Feed::Partial)
    }

    /// The connection ended: completes a body that runs to EOF, else reports [`ResponseError::Eof`].
    pub(crate) fn eof(&mut self) -> Result<(), ResponseError> {
        match self.wait {
            Wait::UntilEof | Wait::Done => {
                self.wait = Wait::Done;
                Ok(())
            }
            _ => Err(ResponseError::Eof),
        }
    }

    /// The fast path for the usual case, a whole head in one read: line by line with
    /// `memchr`, looking into the values of the framing headers only, through the same
    /// [`ResponseReader::value_byte`] the byte-at-a-time path uses. Returns how many bytes
    /// the head took (the state is then past the head), or 0 with the state untouched
    /// when `data` holds no complete head within [`MAX_HEAD`], so the byte-at-a-time
    /// transition function (the oracle the tests compare this with) reads it instead.
    /// Why: the generator shares the CPUs with the server it measures, and a server
    /// sending a full header set paid for it in the generator's time.
    fn whole_head(&mut self, data: &[u8]) -> Result<usize, ResponseError> {
        let data = &data[..data.len().min(MAX_HEAD as usize)];
        let Some(status_end) = memchr::memchr(b'\n', data) else {
            return Ok(0);
        };
        let (status, mut at) = (status_line(&data[..status_end])?, status_end + 1);
        let start = *self;
        self.status = status;
        loop {
            let Some(len) = memchr::memchr(b'\n', &data[at..]) else {
                *self = start;
                return Ok(0);
            };
            let line = &data[at..at + len];
            at += len + 1;
            if line.is_empty() || line == b"\r" {
                self.head_len = at as u32;
                self.wait = self.body_framing()?;
                return Ok(at);
            }
            if line[0] == b'\r' {
                // A CR starts only the line that ends the head.
                return Err(ResponseError::Garbage);
            }
            self.header_line(line)?;
        }
    }

    /// One whole header line (without its LF) on the fast path.
    fn header_line(&mut self, line: &[u8]) -> Result<(), ResponseError> {
        let colon = memchr::memchr(b':', line).ok_or(ResponseError::Garbage)?;
        let name = &line[..colon];
        let header = if name.eq_ignore_ascii_case(CONTENT_LENGTH) {
            Header::ContentLength
        } else if name.eq_ignore_ascii_case(CONNECTION) {
            Header::Connection
        } else if name.eq_ignore_ascii_case(TRANSFER_ENCODING) {
            return Err(ResponseError::Framing);
        } else {
            return Ok(());
        };
        let mut wait = Wait::Value {
            header,
            close_at: 0,
        };
        for &b in &line[colon + 1..] {
            if let Wait::Value { header, close_at } = wait {
                wait = self.value_byte(header, close_at, b)?;
            }
        }
        Ok(())
    }

    /// One byte of the head: the transition function of [`Wait`].
    fn head_byte(&mut self, b: u8) -> Result<(), ResponseError> {
        self.head_len += 1;
        if self.head_len > MAX_HEAD {
            return Err(ResponseError::Garbage);
        }
        self.wait = match self.wait {
            // "HTTP/1." then a version digit, a space, three status digits.
            Wait::Status(n) if n < 7 => expect(b == b"HTTP/1."[n as usize], Wait::Status(n + 1))?,
            Wait::Status(7) => expect(b.is_ascii_digit(), Wait::Status(8))?,
            Wait::Status(8) => expect(b == b' ', Wait::Status(9))?,
            Wait::Status(n) if n < 12 => {
                self.status = self.status * 10 + u16::from(b.wrapping_sub(b'0'));
                expect(b.is_ascii_digit(), Wait::Status(n + 1))?
            }
            // Reason phrase (or nothing) up to LF.
            Wait::Status(_) | Wait::StatusEnd => {
                if b == b'\n' {
                    Wait::LineStart
                } else {
                    Wait::StatusEnd
                }
            }
            // CRLF alone ends the head; anything else starts a field name.
            Wait::LineStart => match b {
                b'\r' => Wait::HeadLf,
                b'\n' => self.body_framing()?,
                _ => name_byte(0, 0b111, b)?,
            },
            Wait::HeadLf => {
                expect(b == b'\n', Wait::LineStart).and_then(|_| self.body_framing())?
            }
            // A field name runs to ':'.
            Wait::Name { len, matches } => name_byte(len, matches, b)?,
            // A field value runs to LF; only two values matter.
            Wait::Value { header, close_at } => self.value_byte(header, close_at, b)?,
            Wait::Body(_) | Wait::UntilEof | Wait::Done => self.wait,
        };
        Ok(())
    }

    fn value_byte(&mut self, header: Header, close_at: u8, b: u8) -> Result<Wait, ResponseError> {
        if b == b'\n' {
            return Ok(Wait::LineStart);
        }
        match header {
            Header::ContentLength if b.is_ascii_digit() => {
                let digit = u64::from(b - b'0');
                let old = self.length.unwrap_or(0);
                let new = old.checked_mul(10).and_then(|v| v.checked_add(digit));
                self.length = Some(new.ok_or(ResponseError::Framing)?);
            }
            Header::ContentLength if matches!(b, b' ' | b'\t' | b'\r') => {}
            Header::ContentLength => return Err(ResponseError::Framing),
            Header::Connection => {
                let want = b"close";
                let at = if b.to_ascii_lowercase() == want[close_at as usize] {
                    close_at + 1
                } else {
                    0
                };
                if at as usize == want.len() {
                    self.close = true;
                    return Ok(Wait::Value {
                        header,
                        close_at: 0,
                    });
                }
                return Ok(Wait::Value {
                    header,
                    close_at: at,
                });
            }
            Header::Other => {}
        }
        Ok(Wait::Value { header, close_at })
    }

    /// After the head: how the body is delimited (RFC 9112 section 6.3).
    fn body_framing(&mut self) -> Result<Wait, ResponseError> {
        let bodiless = self.status < 200 || self.status == 204 || self.status == 304;
        Ok(match self.length {
            _ if bodiless => Wait::Done,
            Some(0) => Wait::Done,
            Some(n) => Wait::Body(n),
            None => Wait::UntilEof,
        })
    }
}

/// The status line without its LF, `HTTP/1.x NNN reason`, to its code, with the checks
/// of the `Wait::Status` states.
fn status_line(line: &[u8]) -> Result<u16, ResponseError> {
    let ok = line.len() >= 12
        && line.starts_with(b"HTTP/1.")
        && line[7].is_ascii_digit()
        && line[8] == b' '
        && line[9..12].iter().all(u8::is_ascii_digit);
    if !ok {
        return Err(ResponseError::Garbage);
    }
    Ok(line[9..12]
        .iter()
        .fold(0, |n, d| n * 10 + u16::from(d - b'0')))
}

fn expect(ok: bool, next: Wait) -> Result<Wait, ResponseError> {
    if ok {
        Ok(next)
    } else {
        Err(ResponseError::Garbage)
    }
}

/// One byte of a field name: narrows the candidate names, or ends the name at ':'.
fn name_byte(len: u8, matches: u8, b: u8) -> Result<Wait, ResponseError> {
    let names = [CONTENT_LENGTH, CONNECTION, TRANSFER_ENCODING];
    if b == b':' {
        let full = |k: usize| matches >> k & 1 == 1 && names[k].len() == len as usize;
        let header = if full(0) {
            Header::ContentLength
        } else if full(1) {
            Header::Connection
        } else if full(2) {
            return Err(ResponseError::Framing);
        } else {
            Header::Other
        };
        return Ok(Wait::Value {
            header,
            close_at: 0,
        });
    }
    if b == b'\n' {
        return Err(ResponseError::Garbage);
    }
    let lower = b.to_ascii_lowercase();
    let mut still = 0;
    for (k, name) in names.iter().enumerate() {
        if matches >> k & 1 == 1 && name.get(len as usize) == Some(&lower) {
            still |= 1 << k;
        }
    }
    Ok(Wait::Name {
        len: len.saturating_add(1),
        matches: still,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nServer: x\r\nContent-Length: 13\r\n\r\nHello, world!";

    fn feed_in_pieces(msg: &[u8], piece: usize) -> Result<(Feed, ResponseReader), ResponseError> {
        let mut r = ResponseReader::new();
        let mut used = 0;
        for chunk in msg.chunks(piece) {
            match r.feed(chunk)? {
                Feed::Partial => used += chunk.len(),
                Feed::Complete(n) => return Ok((Feed::Complete(used + n), r)),
            }
        }
        Ok((Feed::Partial, r))
    }

    #[test]
    fn complete_response_in_every_split() {
        for piece in 1..=OK.len() {
            let (feed, r) = feed_in_pieces(OK, piece).unwrap();
            assert_eq!(feed, Feed::Complete(OK.len()), "piece {piece}");
            assert_eq!(r.status(), 200);
            assert!(!r.server_closes());
        }
    }

    #[test]
    fn reports_where_the_response_ends() {
        let mut two = OK.to_vec();
        two.extend_from_slice(OK);
        let mut r = ResponseReader::new();
        assert_eq!(r.feed(&two), Ok(Feed::Complete(OK.len())));
    }

    #[test]
    fn connection_close_and_eof_framing() {
        let msg = b"HTTP/1.1 404 Not Found\r\nCONNECTION: Close\r\n\r\nabc";
        let (feed, mut r) = feed_in_pieces(msg, 5).unwrap();
        assert_eq!(feed, Feed::Partial);
        assert!(r.server_closes());
        assert_eq!(r.status(), 404);
        assert_eq!(r.eof(), Ok(()));
    }

    #[test]
    fn bodiless_statuses_and_zero_length() {
        let mut r = ResponseReader::new();
        assert_eq!(
            r.feed(b"HTTP/1.1 304 Not Modified\r\n\r\n"),
            Ok(Feed::Complete(29))
        );
        r.reset();
        let m = b"HTTP/1.0 200 OK\ncontent-length: 0\n\n";
        assert_eq!(r.feed(m), Ok(Feed::Complete(m.len())));
    }

    #[test]
    fn errors_by_kind() {
        let mut r = ResponseReader::new();
        assert_eq!(r.feed(b"SSH-2.0-OpenSSH\r\n"), Err(ResponseError::Garbage));
        r.reset();
        assert_eq!(r.feed(b"HTTP/1.1 2x0 OK\r\n"), Err(ResponseError::Garbage));
        r.reset();
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(r.feed(chunked), Err(ResponseError::Framing));
        r.reset();
        assert_eq!(
            r.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n"),
            Err(ResponseError::Framing)
        );
        r.reset();
        assert_eq!(
            r.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab"),
            Ok(Feed::Partial)
        );
        assert_eq!(r.eof(), Err(ResponseError::Eof));
        r.reset();
        let huge = b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n";
        assert_eq!(r.feed(huge), Err(ResponseError::Framing));
    }

    /// What a reader makes of `msg`: the feed result, status and close flag.
    fn outcome(msg: &[u8], piece: usize) -> Result<(Feed, u16, bool), ResponseError> {
        let (feed, r) = feed_in_pieces(msg, piece)?;
        Ok((feed, r.status(), r.server_closes()))
    }

    #[test]
    fn the_whole_head_path_agrees_with_the_byte_at_a_time_path() {
        let seeds: [&[u8]; 5] = [
            OK,
            b"HTTP/1.1 404 Not Found\r\nCONNECTION: Close\r\n\r\nabc",
            b"HTTP/1.0 200 OK\ncontent-length: 0\n\n",
            b"HTTP/1.1 204\r\nX: y\r\nConnection: keep-alive, close\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        ];
        // Every seed, and every seed with one byte replaced by each byte that steers
        // the parse, at every position: the fast path (whole) must match pieces of one.
        let steering = b"\r\n: 0aCcTt\x00";
        for seed in seeds {
            assert_eq!(outcome(seed, seed.len()), outcome(seed, 1), "{seed:?}");
            for at in 0..seed.len() {
                for &b in steering {
                    let mut m = seed.to_vec();
                    m[at] = b;
                    assert_eq!(outcome(&m, m.len()), outcome(&m, 1), "{m:?}");
                }
            }
        }
    }

    #[test]
    fn header_names_that_only_start_like_framing_headers_are_ignored() {
        let m = b"HTTP/1.1 200 OK\r\nContent-Lengthy: zz\r\nConnectionx: close\r\nContent-Length: 2\r\n\r\nhi";
        let mut r = ResponseReader::new();
        assert_eq!(r.feed(m), Ok(Feed::Complete(m.len())));
        assert!(!r.server_closes());
    }
}
