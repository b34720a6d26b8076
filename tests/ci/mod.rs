//! What CI fetches from outside, against a stand-in mirror on loopback: the fetchers take
//! only the suite they need, retry a flaky mirror, fail in one line that names what and
//! where with the mirror's words, and the machine cache notices a damaged entry.

mod fetchers;
mod mirror;
