//! Shared by the integration tests: one module tree, each test taking what it needs.
//!
//! - `alloc.rs`: the counting global allocator of the zero-allocation tests.
//! - `guard.rs`: a buffer that ends right before an unreadable page (parser edge tests).
//! - `responder.rs`: a `steerd bench responder` child on a free loopback port.
//!
//! Every process started here is killed by its PID when its handle drops, and every
//! wait is bounded.

#![allow(dead_code)]

pub mod alloc;
pub mod guard;
pub mod responder;
