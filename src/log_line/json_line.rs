//! The `json` format: one object per line, keys always in the same order, every key
//! always present (`null` when a value is unknown).
//!
//! Keys: `time` (ISO 8601, UTC), `client`, `request` (as in the common format),
//! `status`, `body_bytes`, `referer`, `user_agent`, `worker`, `cpu`, `local` (the
//! connection arrived on the worker's own CPU), `duration_us` (first byte of the request
//! to the end of its response), `cut_short` (the response ended before all of it was
//! written: the client went away, a timeout, or the file shrank under the transfer),
//! `user` (the user `--basic-auth` accepted, else `null`; last, so lines of earlier
//! versions are a prefix of the same keys); then, only when they apply, `rule` (where
//! the redirect, rewrite or proxy rule that answered was given), `host` (the name of the
//! host that answered, with `--host` or host blocks), and for a forwarded request
//! `upstream` (the `--proxy` rule's upstream) and `upstream_us` (its connect to its
//! response head, as nginx's `$upstream_header_time`; `null` when no head came).

use super::{escape, put_ip, request_text, LogClock, Record, FIELD_BUDGET};
use crate::http::response::Writer;

/// One line without its newline.
pub(super) fn write(rec: &Record<'_>, clock: &LogClock, out: &mut Writer<'_>) {
    out.put(b"{\"time\":\"");
    out.put(clock.iso());
    out.put(b"\",\"client\":");
    match rec.client {
        Some(ip) => {
            out.put(b"\"");
            put_ip(out, ip);
            out.put(b"\"");
        }
        None => {
            out.put(b"null");
        }
    }
    out.put(b",\"request\":\"");
    request_text(&rec.request, out, escape::json);
    out.put(b"\",\"status\":");
    out.num(u64::from(rec.status));
    out.put(b",\"body_bytes\":");
    out.num(rec.body_bytes);
    out.put(b",\"referer\":");
    string_or_null(rec.referer, out);
    out.put(b",\"user_agent\":");
    string_or_null(rec.user_agent, out);
    out.put(b",\"worker\":");
    out.num(u64::from(rec.worker));
    out.put(b",\"cpu\":");
    out.num(u64::from(rec.cpu));
    out.put(b",\"local\":");
    out.put(bool_text(rec.local));
    out.put(b",\"duration_us\":");
    out.num(rec.duration_us);
    out.put(b",\"cut_short\":");
    out.put(bool_text(rec.cut_short));
    out.put(b",\"user\":");
    string_or_null(rec.user, out);
    if let Some(rule) = rec.rule {
        out.put(b",\"rule\":");
        string_or_null(Some(rule), out);
    }
    if let Some(host) = rec.host {
        out.put(b",\"host\":");
        string_or_null(Some(host), out);
    }
    if let Some(upstream) = rec.upstream {
        forwarded(upstream, rec.upstream_us, out);
    }
    out.put(b"}");
}

/// The keys of a forwarded request. Out of line: a file's line does not carry them.
#[inline(never)]
fn forwarded(upstream: &[u8], us: Option<u64>, out: &mut Writer<'_>) {
    out.put(b",\"upstream\":");
    string_or_null(Some(upstream), out);
    out.put(b",\"upstream_us\":");
    match us {
        Some(us) => out.num(us),
        None => out.put(b"null"),
    };
}

fn bool_text(b: bool) -> &'static [u8] {
    if b {
        b"true"
    } else {
        b"false"
    }
}

fn string_or_null(value: Option<&[u8]>, out: &mut Writer<'_>) {
    match value {
        Some(v) => {
            out.put(b"\"");
            escape::json(v, out, FIELD_BUDGET);
            out.put(b"\"");
        }
        None => {
            out.put(b"null");
        }
    }
}
