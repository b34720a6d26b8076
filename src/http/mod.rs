//! HTTP/1.1 request heads, from received bytes to a validated [`Request`].
//!
//! Stage: between the connection state machine (`conn.rs`) and the file layer
//! (`files.rs`). Input: the bytes read so far on a connection, caller-owned header slots
//! and a caller-owned path buffer. Output: `Status::Partial`, a [`Request`] whose slices
//! point into those buffers, or a [`ParseError`] that names exactly one status code and
//! whether the connection must close.
//!
//! Layers, each in its own file:
//!
//! - [`tables`]: `const` byte classes quoting the RFC 9110/9112 grammar;
//! - [`scan`]: wide (SWAR) scanning of header values and the end-of-head finder;
//! - [`parse`]: the token-level head parser (request line, field lines), strict profile;
//! - [`fields`]: one function per semantic field (Content-Length, Transfer-Encoding,
//!   Connection, Host, Expect);
//! - [`known`]: the fields the server acts on, recognised while the head is tokenized;
//! - [`path`]: percent-decoding and dot-segment removal into a caller buffer;
//! - [`request`]: the semantic layer that assembles a [`Request`] from the tokens.
//!
//! For a relay to an upstream: [`chunked`] (the chunked coding, decoded incrementally
//! and framed), [`upstream_head`] (an upstream's response head, as strict as a request)
//! and [`hop`] (the hop-by-hop fields neither side forwards).
//!
//! Nothing here allocates, panics on client input, or reads past the slice it is given
//! (tested with a counting allocator, a fuzz target and a guard page).
//!
//! Required reading: RFC 9112 §2–§7, RFC 9110 §5, §6.2, §8.6, §9, RFC 3986 §3.3, §5.2.4,
//! and `docs/parser.md` for the strict profile and every deliberate difference from
//! httparse.

pub(crate) mod error;
pub(crate) mod fields;
pub(crate) mod known;
pub(crate) mod parse;
pub(crate) mod path;
pub(crate) mod request;
pub(crate) mod scan;
pub(crate) mod tables;

pub use error::{ErrorKind, ParseError};
pub use parse::{parse_head, Fields, Head, Header, Status, MAX_FIELDS};
pub(crate) use parse::{MAX_HEAD, MAX_TARGET};
pub use request::{parse_request, Body, Method, Request};
pub use scan::find_head_end;

pub(crate) mod accept;
pub mod chunked;
pub mod conditional;
pub mod date;
pub mod encoding;
pub mod hop;
pub mod range;
pub mod response;
pub mod upstream_head;
