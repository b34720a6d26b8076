//! The NCSA common and combined formats, as nginx's predefined `combined` format and
//! Apache's `common`/`combined` nicknames lay them out:
//!
//! ```text
//! $remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"
//! ```
//!
//! with `-` for the user when `--basic-auth` accepted none (escaped as the other fields,
//! and a space as `\x20`, so the field ends where log tools expect) and, in combined,
//! for an absent `Referer` or `User-Agent`. Common stops after the byte count.

use super::{escape, put_ip, request_text, LogClock, Record, FIELD_BUDGET};
use crate::http::response::Writer;

/// One line without its newline.
pub(super) fn write(rec: &Record<'_>, clock: &LogClock, combined: bool, out: &mut Writer<'_>) {
    match rec.client {
        Some(ip) => put_ip(out, ip),
        None => {
            out.put(b"-");
        }
    }
    out.put(b" - ");
    match rec.user {
        Some(user) => escape::clf_bare(user, out, FIELD_BUDGET),
        None => {
            out.put(b"-");
        }
    }
    out.put(b" [");
    out.put(clock.clf());
    out.put(b"] \"");
    request_text(&rec.request, out, escape::clf);
    out.put(b"\" ");
    out.num(u64::from(rec.status));
    out.put(b" ");
    out.num(rec.body_bytes);
    if combined {
        out.put(b" \"");
        field(rec.referer, out);
        out.put(b"\" \"");
        field(rec.user_agent, out);
        out.put(b"\"");
    }
}

fn field(value: Option<&[u8]>, out: &mut Writer<'_>) {
    match value {
        Some(v) => escape::clf(v, out, FIELD_BUDGET),
        None => {
            out.put(b"-");
        }
    }
}
