//! The real client address, for connections that arrive through a proxy.
//!
//! Stage: the worker's loop, between accepting a connection and logging its requests.
//! Input: the socket's peer address, the trusted proxies (`--real-ip-from`), the first
//! bytes of the connection (`--proxy-protocol`) and the `X-Forwarded-For` field lines.
//! Output: the address the log and the metrics name as the client. Nothing here reads a
//! socket, allocates or panics; the loop decides what to do with a refused header.
//!
//! - [`proxy_header`]: PROXY protocol v1 and v2 headers, parsed incrementally;
//! - [`cidr`]: the trusted networks, IPv4 and IPv6 (an IPv4 peer seen on a dual-stack
//!   socket as `::ffff:a.b.c.d` matches the IPv4 networks);
//! - [`forwarded`]: the last address of `X-Forwarded-For`.

pub mod cidr;
pub mod forwarded;
pub mod proxy_header;

pub use cidr::{Cidr, CidrError};
pub use forwarded::forwarded_for;
pub use proxy_header::{parse_proxy_header, ProxyError, ProxyHeader};
