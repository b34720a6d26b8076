//! The real client address, for connections that arrive through a proxy.
//!
//! Stage: the worker's loop, between accepting a connection and logging its requests.
//! Input: the first bytes of a connection from a trusted proxy (`--proxy-protocol`) and
//! the `X-Forwarded-For` field lines of its requests (which peers are trusted is
//! `config::Cidr`'s business).
//! Output: the address the log and the metrics name as the client. Nothing here reads a
//! socket, allocates or panics; the loop decides what to do with a refused header.
//!
//! - [`proxy_header`]: PROXY protocol v1 and v2 headers, parsed incrementally;
//! - [`forwarded`]: the client `X-Forwarded-For` names (its last address, or walked
//!   from the right past the trusted proxies).

pub mod forwarded;
pub mod proxy_header;

pub use forwarded::{forwarded_for, Walk};
pub use proxy_header::{parse_proxy_header, ProxyError, ProxyHeader};
