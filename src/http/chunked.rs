//! The chunked transfer coding (RFC 9112 §7.1), decoded incrementally, and its framing
//! written.
//!
//! Input: a message body's bytes in whatever pieces they arrive. Output: the body data,
//! each piece a subslice of the input ([`Dechunk::next`]), or the [`ChunkError`] of the
//! first byte that breaks the grammar. The decoder is a small `Copy` state machine: no
//! buffer, no allocation, no panic on any input, and the same answer whatever the input
//! split (the fuzz target `chunked` holds it to that).
//!
//! Grammar, strict (RFC 9112 §7.1, §7.1.1, §7.1.2):
//!
//! ```text
//! chunked-body = *chunk last-chunk trailer-section CRLF
//! chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//! chunk-size   = 1*HEXDIG
//! last-chunk   = 1*("0") [ chunk-ext ] CRLF
//! chunk-ext    = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
//! chunk-ext-val = token / quoted-string
//! ```
//!
//! - the size is hex digits only: no sign, no `0x`, no whitespace (not even the BWS the
//!   grammar allows before ";": no client needs it, and a proxy that skips it reads
//!   `5 ;` differently from one that does not); leading zeros are valid, at most
//!   [`MAX_SIZE_DIGITS`] digits; a size that overflows `u64` is [`ChunkError::SizeTooLong`];
//! - extensions are checked against the grammar and then ignored; their bytes over the
//!   whole body are bounded by [`MAX_EXTENSIONS`] (the CVE-2023-39326 class);
//! - every line ends in CRLF: a bare LF or a CR followed by anything else is
//!   [`ChunkError::BadLineEnd`] (RFC 9112 §2.2 and erratum 7633 for chunked framing);
//! - trailer fields are checked as field lines (no obs-fold, no whitespace before the
//!   colon) and dropped; the section is bounded by [`MAX_TRAILER`].
//!
//! After an error the decoder's state means nothing: the connection is closed.
//!
//! Tests: `tests/http/chunked.rs` (vectors, each split every way) and the fuzz target.

use super::tables::{FIELD_VALUE, TOKEN};

/// Most digits in one chunk-size (leading zeros included).
pub const MAX_SIZE_DIGITS: u8 = 32;
/// Most bytes of chunk extensions over one body, from each ";" to the CR of its line.
pub const MAX_EXTENSIONS: u32 = 16 * 1024;
/// Most bytes of the trailer section, its final CRLF not counted.
pub const MAX_TRAILER: u32 = 8 * 1024;

/// The last chunk with an empty trailer section.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// Why a chunked body was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkError {
    /// A chunk-size is empty or holds a byte that is neither a hex digit, ";" nor CR.
    BadSize,
    /// A chunk-size overflows `u64` or has more than [`MAX_SIZE_DIGITS`] digits.
    SizeTooLong,
    /// A chunk extension breaks the grammar, or the extensions exceed [`MAX_EXTENSIONS`].
    BadExtension,
    /// A bare LF, a CR not followed by LF, or chunk data not followed by CRLF.
    BadLineEnd,
    /// A trailer line that is not `field-name ":" field-value`.
    BadTrailer,
    /// The trailer section exceeds [`MAX_TRAILER`].
    TrailerTooLong,
}

/// What the decoder waits for next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    /// The first hex digit of a chunk-size.
    SizeStart,
    /// Another hex digit, ";" or CR.
    Size,
    /// BWS or the first byte of an extension name, after ";".
    ExtBeforeName,
    /// More of the name, BWS, "=", ";" or CR.
    ExtName,
    /// BWS, "=" or ";" after the name and some BWS.
    ExtAfterName,
    /// BWS, a token or a quote, after "=".
    ExtBeforeValue,
    /// More of a token value, BWS, ";" or CR.
    ExtToken,
    /// Inside a quoted-string.
    ExtQuoted,
    /// The byte after a backslash in a quoted-string.
    ExtEscape,
    /// ";", CR or BWS right after a value.
    ExtAfterValue,
    /// BWS or ";" after a value and some BWS.
    ExtBws,
    /// The LF ending a chunk-size line.
    SizeLf,
    /// Chunk data (`size` bytes left).
    Data,
    /// The CR after chunk data.
    DataCr,
    /// The LF after chunk data.
    DataLf,
    /// The start of a trailer line, or the CR of the final CRLF.
    TrailerStart,
    /// More of a trailer field name, or its colon.
    TrailerName,
    /// A trailer field value up to its CR.
    TrailerValue,
    /// The LF ending a trailer line.
    TrailerLf,
    /// The LF of the final CRLF.
    FinalLf,
    /// The body has ended; bytes after it belong to the next message.
    Done,
}

/// An incremental chunked-body decoder (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dechunk {
    wait: Wait,
    /// Digits of the chunk-size read so far.
    digits: u8,
    /// Extension bytes so far (the whole body), then trailer bytes.
    framing: u32,
    /// The chunk-size being read, then the data bytes of the chunk still to come.
    size: u64,
    /// The sum of every chunk-size read so far (saturating).
    announced: u64,
}

impl Default for Dechunk {
    fn default() -> Self {
        Self::new()
    }
}

impl Dechunk {
    /// A decoder at the start of a body.
    pub const fn new() -> Dechunk {
        Dechunk {
            wait: Wait::SizeStart,
            digits: 0,
            framing: 0,
            size: 0,
            announced: 0,
        }
    }

    /// Consumes a prefix of `input`; returns how many bytes it consumed and the body data
    /// in them (a subslice of `input`, possibly empty). Call again with the rest;
    /// `consumed == 0` means more input is needed (or the body is done: [`Self::is_done`]).
    /// Trailer fields are read and dropped. Bytes after the body are never consumed.
    pub fn next<'a>(&mut self, input: &'a [u8]) -> Result<(usize, &'a [u8]), ChunkError> {
        let mut at = 0;
        while let Some(&byte) = input.get(at) {
            match self.wait {
                Wait::Data => return Ok(self.data(input, at)),
                Wait::Done => break,
                _ => self.step(byte)?,
            }
            at += 1;
        }
        Ok((at, &[]))
    }

    /// The last chunk and the trailer section have been consumed.
    pub fn is_done(&self) -> bool {
        self.wait == Wait::Done
    }

    /// The sum of the chunk-sizes read so far, the current chunk's included before its
    /// data arrives (saturating): a body limit can be enforced as soon as a size is read.
    pub fn announced(&self) -> u64 {
        self.announced
    }

    /// Takes as much of the current chunk's data as `input` holds from `at`.
    fn data<'a>(&mut self, input: &'a [u8], at: usize) -> (usize, &'a [u8]) {
        let rest = input.get(at..).unwrap_or_default();
        let n = usize::try_from(self.size).map_or(rest.len(), |s| s.min(rest.len()));
        self.size -= n as u64;
        if self.size == 0 {
            self.wait = Wait::DataCr;
        }
        (at + n, rest.get(..n).unwrap_or_default())
    }

    /// One framing byte: the transition function (each arm's rule is its `Wait` doc).
    fn step(&mut self, b: u8) -> Result<(), ChunkError> {
        use ChunkError::*;
        if self.in_extension() {
            return self.extension(b);
        }
        self.wait = match (self.wait, b) {
            (Wait::SizeStart | Wait::Size, _) if b.is_ascii_hexdigit() => self.digit(b)?,
            (Wait::SizeStart, b'\n') => return Err(BadLineEnd),
            (Wait::SizeStart, _) => return Err(BadSize),
            (Wait::Size, b';') => Wait::ExtBeforeName,
            (Wait::Size, b'\r') => Wait::SizeLf,
            (Wait::Size, b'\n') => return Err(BadLineEnd),
            (Wait::Size, _) => return Err(BadSize),
            (Wait::SizeLf, b'\n') => self.size_line_done(),
            (Wait::DataCr, b'\r') => Wait::DataLf,
            (Wait::DataLf, b'\n') => Wait::SizeStart,
            (Wait::TrailerLf, b'\n') => Wait::TrailerStart,
            (Wait::FinalLf, b'\n') => Wait::Done,
            (Wait::SizeLf | Wait::DataCr | Wait::DataLf | Wait::TrailerLf | Wait::FinalLf, _) => {
                return Err(BadLineEnd)
            }
            (Wait::TrailerStart, b'\r') => Wait::FinalLf,
            (Wait::TrailerStart | Wait::TrailerName, _) if is_tchar(b) => {
                self.trailer_byte()?;
                Wait::TrailerName
            }
            (Wait::TrailerName, b':') => {
                self.trailer_byte()?;
                Wait::TrailerValue
            }
            (Wait::TrailerValue, b'\r') => Wait::TrailerLf,
            (Wait::TrailerValue, _) if FIELD_VALUE[b as usize] => {
                self.trailer_byte()?;
                Wait::TrailerValue
            }
            (Wait::TrailerStart | Wait::TrailerName | Wait::TrailerValue, b'\n') => {
                return Err(BadLineEnd)
            }
            (Wait::TrailerStart | Wait::TrailerName | Wait::TrailerValue, _) => {
                return Err(BadTrailer)
            }
            // `next` never steps these: data is taken whole, nothing follows Done, and
            // extensions went to `extension` above.
            _ => self.wait,
        };
        Ok(())
    }

    /// One byte of a chunk-size line's extensions (RFC 9112 §7.1.1), counted against
    /// [`MAX_EXTENSIONS`].
    fn extension(&mut self, b: u8) -> Result<(), ChunkError> {
        self.framing += 1;
        if self.framing > MAX_EXTENSIONS {
            return Err(ChunkError::BadExtension);
        }
        let ws = b == b' ' || b == b'\t';
        self.wait = match self.wait {
            Wait::ExtBeforeName if ws => Wait::ExtBeforeName,
            Wait::ExtBeforeName | Wait::ExtName if is_tchar(b) => Wait::ExtName,
            Wait::ExtName if ws => Wait::ExtAfterName,
            Wait::ExtAfterName if ws => Wait::ExtAfterName,
            Wait::ExtName | Wait::ExtAfterName if b == b'=' => Wait::ExtBeforeValue,
            Wait::ExtBeforeValue if ws => Wait::ExtBeforeValue,
            Wait::ExtBeforeValue if b == b'"' => Wait::ExtQuoted,
            Wait::ExtBeforeValue | Wait::ExtToken if is_tchar(b) => Wait::ExtToken,
            Wait::ExtToken | Wait::ExtAfterValue | Wait::ExtBws if ws => Wait::ExtBws,
            Wait::ExtQuoted if b == b'"' => Wait::ExtAfterValue,
            Wait::ExtQuoted if b == b'\\' => Wait::ExtEscape,
            Wait::ExtQuoted if is_qdtext(b) => Wait::ExtQuoted,
            Wait::ExtEscape if b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80 => {
                Wait::ExtQuoted
            }
            Wait::ExtName
            | Wait::ExtAfterName
            | Wait::ExtToken
            | Wait::ExtAfterValue
            | Wait::ExtBws
                if b == b';' =>
            {
                Wait::ExtBeforeName
            }
            Wait::ExtName | Wait::ExtToken | Wait::ExtAfterValue if b == b'\r' => Wait::SizeLf,
            _ if b == b'\n' => return Err(ChunkError::BadLineEnd),
            _ => return Err(ChunkError::BadExtension),
        };
        Ok(())
    }

    /// Whether the decoder is inside a chunk-size line's extensions.
    fn in_extension(&self) -> bool {
        matches!(
            self.wait,
            Wait::ExtBeforeName
                | Wait::ExtName
                | Wait::ExtAfterName
                | Wait::ExtBeforeValue
                | Wait::ExtToken
                | Wait::ExtQuoted
                | Wait::ExtEscape
                | Wait::ExtAfterValue
                | Wait::ExtBws
        )
    }

    /// One hex digit of the chunk-size.
    fn digit(&mut self, b: u8) -> Result<Wait, ChunkError> {
        let value = match b {
            b'0'..=b'9' => b - b'0',
            _ => (b | 0x20) - b'a' + 10,
        };
        self.digits += 1;
        if self.digits > MAX_SIZE_DIGITS || self.size > u64::MAX >> 4 {
            return Err(ChunkError::SizeTooLong);
        }
        self.size = self.size << 4 | u64::from(value);
        Ok(Wait::Size)
    }

    /// The CRLF after a chunk-size line: data follows, or the trailer after the last chunk.
    fn size_line_done(&mut self) -> Wait {
        self.digits = 0;
        self.announced = self.announced.saturating_add(self.size);
        if self.size == 0 {
            self.framing = 0;
            return Wait::TrailerStart;
        }
        Wait::Data
    }

    /// Counts one byte of the trailer section against [`MAX_TRAILER`].
    fn trailer_byte(&mut self) -> Result<(), ChunkError> {
        self.framing += 1;
        if self.framing > MAX_TRAILER {
            return Err(ChunkError::TrailerTooLong);
        }
        Ok(())
    }
}

fn is_tchar(b: u8) -> bool {
    TOKEN[b as usize]
}

/// RFC 9110 §5.6.4 `qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text`.
fn is_qdtext(b: u8) -> bool {
    matches!(b, b'\t' | b' ' | 0x21 | 0x23..=0x5b | 0x5d..=0x7e | 0x80..=0xff)
}

/// Writes the chunk-size line for `len` data bytes (`{hex}\r\n`, lowercase, no leading
/// zeros) into `out`; returns its length (3 to 18).
pub fn chunk_line(len: u64, out: &mut [u8; 18]) -> usize {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = (64 - len.leading_zeros()).div_ceil(4).max(1) as usize;
    for (i, slot) in out.iter_mut().take(digits).enumerate() {
        let shift = 4 * (digits - 1 - i);
        *slot = HEX[(len >> shift) as usize & 0xf];
    }
    out[digits] = b'\r';
    out[digits + 1] = b'\n';
    digits + 2
}
