//! Raw system calls rustix lacks. The only module allowed `unsafe`.
#![allow(unsafe_code)]
