//! HTTP/1.1: request parser, byte tables, response heads.

pub mod conditional;
pub mod date;
pub mod range;
pub mod response;
