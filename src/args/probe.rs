//! `steerd probe URL [--timeout S]` as typed arguments (stage 1, no syscalls: the URL is
//! checked for shape here and resolved by the probe itself).

use super::flag::{lookup, rendered, usage_words, Flag, Seen, Takes};
use super::ArgsError;
use std::sync::OnceLock;
use std::time::Duration;

/// How long a probe may take when `--timeout` is not given.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// What `steerd probe` was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ProbeArgs {
    /// `http://HOST[:PORT][/PATH]`.
    pub(crate) url: String,
    /// The whole exchange's deadline: connect, send, read the status line.
    pub(crate) timeout: Duration,
}

/// How a `probe` flag is applied: the draft and the flag's value.
pub(crate) type Apply = fn(&mut Option<Duration>, &str) -> Result<(), ArgsError>;

/// Every flag of `probe`.
pub(crate) const FLAGS: &[Flag<Apply>] =
    &[Flag::new("--timeout S", Takes::Value, timeout as Apply)];

#[cfg_attr(feature = "cold-size", optimize(size))]
fn timeout(d: &mut Option<Duration>, v: &str) -> Result<(), ArgsError> {
    *d = Some(super::duration::parse(v).map_err(|e| usage(format!("--timeout {e}")))?);
    Ok(())
}

/// `steerd probe --help`, its usage line from [`FLAGS`].
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn help() -> &'static str {
    static HELP: OnceLock<String> = OnceLock::new();
    rendered(&HELP, || {
        format!(
            "USAGE: steerd probe URL{}\n\n\
             GETs URL (http://HOST[:PORT][/PATH]) and exits 0 when the answer is 2xx, else 1, with one\n\
             line. For health checks in images that hold nothing but the steerd binary, such as\n\
             `steerd probe http://127.0.0.1:9090/health`. --timeout bounds the whole exchange\n\
             (default 5s).\n",
            usage_words(FLAGS)
        )
    })
}

/// A usage error of `steerd probe` (stage `probe`, followed by the usage text).
#[cold]
#[cfg_attr(feature = "cold-size", optimize(size))]
fn usage(message: String) -> ArgsError {
    ArgsError {
        stage: "probe",
        message,
        usage: help(),
    }
}

/// Parses the arguments after `probe`; `Ok(None)` asks for the help text.
#[cfg_attr(feature = "cold-size", optimize(size))]
pub(crate) fn parse(args: &[String]) -> Result<Option<ProbeArgs>, ArgsError> {
    let mut url = None;
    let mut timeout = None;
    let mut seen = Seen::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match (arg.as_str(), lookup(FLAGS, arg)) {
            ("-h" | "--help", _) => return Ok(None),
            (_, Some(f)) => {
                let v = it
                    .next()
                    .ok_or_else(|| usage(format!("{arg} needs a value")))?;
                seen.note(f).map_err(|t| usage(t.to_string()))?;
                (f.apply)(&mut timeout, v)?;
            }
            (f, None) if f.starts_with('-') => {
                return Err(usage(format!("unknown flag {f:?}")));
            }
            (u, None) if url.is_none() => url = Some(u.to_string()),
            (u, None) => return Err(usage(format!("more than one URL ({u:?})"))),
        }
    }
    let url = url.ok_or_else(|| usage("a URL is needed".into()))?;
    if !url.starts_with("http://") {
        return Err(usage(format!(
            "URL {url:?}: only http://HOST[:PORT]/PATH is supported"
        )));
    }
    Ok(Some(ProbeArgs {
        url,
        timeout: timeout.unwrap_or(DEFAULT_TIMEOUT),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn url_and_timeout() {
        let p = parse(&argv("http://127.0.0.1:9/health --timeout 500ms"))
            .unwrap()
            .unwrap();
        assert_eq!(p.url, "http://127.0.0.1:9/health");
        assert_eq!(p.timeout, Duration::from_millis(500));
        let p = parse(&argv("http://[::1]:9/")).unwrap().unwrap();
        assert_eq!(p.timeout, DEFAULT_TIMEOUT);
        assert_eq!(parse(&argv("--help")), Ok(None));
    }

    #[test]
    fn bad_arguments_are_named() {
        for (input, needle) in [
            ("", "URL is needed"),
            ("https://x/", "only http"),
            ("http://a/ http://b/", "more than one"),
            ("http://a/ --timeout", "needs a value"),
            ("http://a/ --timeout 0", "--timeout"),
            ("http://a/ --timeout 1 --timeout 2", "twice"),
            ("http://a/ --bogus", "--bogus"),
        ] {
            let e = parse(&argv(input)).unwrap_err();
            assert!(e.message.contains(needle), "{input}: {e}");
        }
    }
}
