//! Conditional GET/HEAD (RFC 9110 §13): If-Match and If-Unmodified-Since to 412,
//! If-None-Match and If-Modified-Since to 304.
//!
//! Input: the raw field values the parser extracted and the file's validators. Output:
//! whether the answer is 412 Precondition Failed, or 304 Not Modified. No allocation,
//! no I/O.
//!
//! Order (§13.2.2): If-Match, else If-Unmodified-Since (412 when false); then
//! If-None-Match, else If-Modified-Since (304 when false); the caller asks in that order.
//! - If-Match (§13.1.1) uses the strong comparison (a `W/` tag never matches) and `*`
//!   matches any existing file;
//! - If-Unmodified-Since (§13.1.4) is ignored when If-Match is present or the date is
//!   invalid; it fails when the file was modified after the date (mtime > date);
//! - If-None-Match (§13.1.2) uses the weak comparison (`W/` ignored on both sides) and `*`
//!   matches any existing file; when present If-Modified-Since is ignored;
//! - If-Modified-Since (§13.1.3): an invalid date is ignored; a file not modified since
//!   the given date (mtime <= date) is not modified.
//!
//! A representation may have no ETag yet (a large file's content hash is being
//! computed): then only `*` matches a list. One may have no modification date (an mtime a
//! build tool normalized, `site::validators`): then both date fields are ignored, as
//! §13.1.3 and §13.1.4 say for a resource without one.

use crate::http::date::parse_http_date;

fn opaque(tag: &[u8]) -> &[u8] {
    tag.strip_prefix(b"W/").unwrap_or(tag)
}

/// Whether an If-None-Match list matches `etag` by weak comparison (`None`: only `*`).
pub fn none_match_hits(raw: &[u8], etag: Option<&[u8]>) -> bool {
    let ours = etag.map(opaque);
    raw.split(|&b| b == b',')
        .map(|t| t.trim_ascii())
        .any(|t| t == b"*" || Some(opaque(t)) == ours)
}

/// Whether an If-Match list matches `etag` (ours is strong) by strong comparison.
fn match_hits(raw: &[u8], etag: Option<&[u8]>) -> bool {
    raw.split(|&b| b == b',')
        .map(|t| t.trim_ascii())
        .any(|t| t == b"*" || Some(t) == etag)
}

/// True when a GET or HEAD must be answered 412 Precondition Failed. `mtime`: `None`
/// when the date is unknown.
pub fn precondition_fails(
    if_match: Option<&[u8]>,
    if_unmodified_since: Option<&[u8]>,
    etag: Option<&[u8]>,
    mtime: Option<i64>,
) -> bool {
    if let Some(im) = if_match {
        return !match_hits(im, etag);
    }
    match (
        if_unmodified_since.and_then(|v| parse_http_date(v.trim_ascii())),
        mtime,
    ) {
        (Some(since), Some(mtime)) => mtime > since,
        _ => false,
    }
}

/// True when a GET or HEAD should be answered 304. `mtime`: `None` when the date is
/// unknown.
pub fn not_modified(
    if_none_match: Option<&[u8]>,
    if_modified_since: Option<&[u8]>,
    etag: Option<&[u8]>,
    mtime: Option<i64>,
) -> bool {
    if let Some(inm) = if_none_match {
        return none_match_hits(inm, etag);
    }
    match (
        if_modified_since.and_then(|v| parse_http_date(v.trim_ascii())),
        mtime,
    ) {
        (Some(since), Some(mtime)) => mtime <= since,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TAG: Option<&[u8]> = Some(b"\"5f-264\"");
    const LM_SECS: i64 = 784_111_777;
    const LM: Option<i64> = Some(LM_SECS);
    const LM_TEXT: &[u8] = b"Sun, 06 Nov 1994 08:49:37 GMT";

    #[test]
    fn if_none_match() {
        assert!(not_modified(Some(b"\"5f-264\""), None, TAG, LM));
        assert!(not_modified(Some(b"W/\"5f-264\""), None, TAG, LM));
        assert!(not_modified(Some(b"\"x\", \"5f-264\""), None, TAG, LM));
        assert!(not_modified(Some(b"*"), None, TAG, LM));
        assert!(!not_modified(Some(b"\"x\""), None, TAG, LM));
        assert!(!not_modified(Some(b""), None, TAG, LM));
    }

    #[test]
    fn if_modified_since() {
        assert!(not_modified(None, Some(LM_TEXT), TAG, LM));
        assert!(not_modified(None, Some(LM_TEXT), TAG, Some(LM_SECS - 5)));
        assert!(!not_modified(None, Some(LM_TEXT), TAG, Some(LM_SECS + 1)));
        assert!(!not_modified(None, Some(b"yesterday"), TAG, LM));
    }

    #[test]
    fn if_match() {
        assert!(!precondition_fails(Some(b"\"5f-264\""), None, TAG, LM));
        assert!(!precondition_fails(
            Some(b"\"x\" , \"5f-264\""),
            None,
            TAG,
            LM
        ));
        assert!(!precondition_fails(Some(b"*"), None, TAG, LM));
        assert!(precondition_fails(Some(b"W/\"5f-264\""), None, TAG, LM));
        assert!(precondition_fails(Some(b"\"x\""), None, TAG, LM));
        assert!(precondition_fails(Some(b""), None, TAG, LM));
    }

    #[test]
    fn if_unmodified_since() {
        assert!(!precondition_fails(None, Some(LM_TEXT), TAG, LM));
        assert!(!precondition_fails(
            None,
            Some(LM_TEXT),
            TAG,
            Some(LM_SECS - 5)
        ));
        assert!(precondition_fails(
            None,
            Some(LM_TEXT),
            TAG,
            Some(LM_SECS + 1)
        ));
        assert!(!precondition_fails(
            None,
            Some(b"yesterday"),
            TAG,
            Some(LM_SECS + 1)
        ));
        assert!(!precondition_fails(None, None, TAG, Some(LM_SECS + 1)));
    }

    #[test]
    fn ius_is_ignored_when_if_match_is_present() {
        assert!(!precondition_fails(
            Some(b"*"),
            Some(LM_TEXT),
            TAG,
            Some(LM_SECS + 1)
        ));
    }

    #[test]
    fn unknown_dates_never_match_and_unknown_tags_only_match_a_star() {
        assert!(!not_modified(None, Some(LM_TEXT), TAG, None));
        assert!(!precondition_fails(None, Some(LM_TEXT), TAG, None));
        assert!(not_modified(Some(b"\"5f-264\""), Some(LM_TEXT), TAG, None));
        assert!(!not_modified(Some(b"\"5f-264\""), None, None, LM));
        assert!(not_modified(Some(b"*"), None, None, LM));
        assert!(precondition_fails(Some(b"\"5f-264\""), None, None, LM));
        assert!(!precondition_fails(Some(b"*"), None, None, LM));
    }

    #[test]
    fn ims_is_ignored_when_inm_is_present() {
        assert!(!not_modified(Some(b"\"x\""), Some(LM_TEXT), TAG, LM));
    }
}
