//! HTTP/1.1: request parser, byte tables, response heads.
