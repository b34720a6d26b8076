//! `--etag content|mtime`, and which modification dates are unknown: what a file's
//! validators are made of.
//!
//! Input: the flag's value, and `SOURCE_DATE_EPOCH` from the server's environment
//! (reproducible-builds.org/specs/source-date-epoch). Output: a [`Validators`] the file
//! lookup reads. Nothing here reads a file: hashing is `files::content_tag`'s.
//!
//! Build tools normalize mtimes (Nix sets 1, ko and bazel 0, buildpacks 1980-01-01, a
//! pipeline with `SOURCE_DATE_EPOCH` gives every file that date), so such a date says
//! nothing about when the bytes changed: a file whose mtime is at or before
//! 1980-01-02 00:00:00 UTC, or equal to `SOURCE_DATE_EPOCH`, has an **unknown** date: no
//! `Last-Modified`, and `If-Modified-Since`, `If-Unmodified-Since` and a date in
//! `If-Range` are ignored for it (RFC 9110 §13.1.3, §13.1.4: a resource without a
//! modification date).

/// 1980-01-02 00:00:00 UTC: mtimes at or before it are a build tool's, not a change's
/// (the day after the ZIP/DOS epoch, so a time zone's shift of 1980-01-01 is included).
pub(crate) const NORMALIZED_UNTIL: i64 = 315_619_200;

/// What an ETag is made of (`--etag`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum EtagMode {
    /// A hash of the bytes (the default): the same for the same bytes everywhere.
    #[default]
    Content,
    /// mtime and size, as before: `"<mtime hex>.<nanoseconds hex>-<size hex>"`.
    Mtime,
}

/// The validator rules of a site.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Validators {
    /// `--etag`.
    pub(crate) etag: EtagMode,
    /// `SOURCE_DATE_EPOCH`, when the environment sets it.
    pub(crate) source_date_epoch: Option<i64>,
}

impl EtagMode {
    /// `content` or `mtime`.
    pub(crate) fn parse(value: &str) -> Result<EtagMode, &'static str> {
        match value {
            "content" => Ok(EtagMode::Content),
            "mtime" => Ok(EtagMode::Mtime),
            _ => Err("expected content or mtime"),
        }
    }
}

impl Validators {
    /// Whether a file modified at `mtime` (Unix seconds) has a date worth sending.
    pub(crate) fn date_known(&self, mtime: i64) -> bool {
        mtime > NORMALIZED_UNTIL && Some(mtime) != self.source_date_epoch
    }
}

/// `SOURCE_DATE_EPOCH`'s value: whole seconds since 1970 (the specification allows no
/// sign, no fraction, no space).
pub(crate) fn parse_source_date_epoch(value: &str) -> Result<i64, &'static str> {
    let digits = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
    match value.parse::<i64>() {
        Ok(n) if digits => Ok(n),
        _ => Err("expected whole seconds since 1970 (reproducible-builds.org)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalized_and_epoch_dates_are_unknown() {
        let v = Validators {
            etag: EtagMode::Content,
            source_date_epoch: Some(1_700_000_000),
        };
        for unknown in [0, 1, 315_532_800, NORMALIZED_UNTIL, 1_700_000_000, -5] {
            assert!(!v.date_known(unknown), "{unknown}");
        }
        for known in [NORMALIZED_UNTIL + 1, 1_700_000_001, 784_111_777] {
            assert!(v.date_known(known), "{known}");
        }
        assert!(Validators::default().date_known(1_700_000_000));
    }

    #[test]
    fn source_date_epoch_is_whole_seconds() {
        assert_eq!(parse_source_date_epoch("1700000000"), Ok(1_700_000_000));
        assert_eq!(parse_source_date_epoch("0"), Ok(0));
        for bad in ["", "-1", "+5", "1.5", " 1", "x", "99999999999999999999"] {
            assert!(parse_source_date_epoch(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn etag_modes() {
        assert_eq!(EtagMode::parse("content"), Ok(EtagMode::Content));
        assert_eq!(EtagMode::parse("mtime"), Ok(EtagMode::Mtime));
        assert!(EtagMode::parse("weak").is_err());
    }
}
