//! Conditional GET/HEAD (RFC 9110 §13): If-None-Match and If-Modified-Since to 304.
//!
//! Input: the raw field values the parser extracted and the file's validators. Output:
//! whether the answer is 304 Not Modified. No allocation, no I/O.
//!
//! Rules (§13.1.2, §13.1.3, §13.2.2): If-None-Match uses the weak comparison (`W/` ignored
//! on both sides) and `*` matches any existing file; when If-None-Match is present
//! If-Modified-Since is ignored; an invalid date is ignored; a file not modified since the
//! given date (mtime <= date) is not modified. If-Match and If-Unmodified-Since are not
//! evaluated: they are meaningful for state-changing methods, which a static server refuses.

use crate::http::date::parse_http_date;

fn opaque(tag: &[u8]) -> &[u8] {
    tag.strip_prefix(b"W/").unwrap_or(tag)
}

/// Whether an If-None-Match list matches `etag` by weak comparison.
pub fn none_match_hits(raw: &[u8], etag: &[u8]) -> bool {
    let ours = opaque(etag);
    raw.split(|&b| b == b',')
        .map(|t| t.trim_ascii())
        .any(|t| t == b"*" || opaque(t) == ours)
}

/// True when a GET or HEAD should be answered 304.
pub fn not_modified(
    if_none_match: Option<&[u8]>,
    if_modified_since: Option<&[u8]>,
    etag: &[u8],
    mtime: i64,
) -> bool {
    if let Some(inm) = if_none_match {
        return none_match_hits(inm, etag);
    }
    match if_modified_since.and_then(|v| parse_http_date(v.trim_ascii())) {
        Some(since) => mtime <= since,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TAG: &[u8] = b"\"5f-264\"";
    const LM: i64 = 784_111_777;
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
        assert!(not_modified(None, Some(LM_TEXT), TAG, LM - 5));
        assert!(!not_modified(None, Some(LM_TEXT), TAG, LM + 1));
        assert!(!not_modified(None, Some(b"yesterday"), TAG, LM));
    }

    #[test]
    fn ims_is_ignored_when_inm_is_present() {
        assert!(!not_modified(Some(b"\"x\""), Some(LM_TEXT), TAG, LM));
    }
}
