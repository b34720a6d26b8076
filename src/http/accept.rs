//! `Accept` (RFC 9110 §12.5.1), for one decision only: whether a directory listing is
//! sent as JSON rather than HTML.
//!
//! Input: the raw values of every `Accept` line of a request (already checked byte by
//! byte by the parser). Output: [`prefers_json`]. No allocation; the lines are walked,
//! never collected.
//!
//! Rules: each media range's weight is its `q` parameter (default 1, three decimals,
//! RFC 9110 §12.4.2); a representation takes the weight of the most specific range that
//! matches it (`application/json` over `application/*` over `*/*`, §12.5.1); other
//! parameters are ignored. JSON is chosen only when its weight is above zero and above
//! HTML's: no `Accept`, `*/*`, or a tie gives HTML, so a browser always gets the page.
//! A value that does not parse as a media range matches nothing.

use super::fields::list_elements;

/// Weights in thousandths (`q=0.5` is 500).
type Weight = u16;

/// How specifically a range names a type: none, `*/*`, `type/*`, `type/subtype`.
type Specificity = u8;

/// Whether the `Accept` values prefer `application/json` to `text/html`.
pub(crate) fn prefers_json<'a>(values: impl Iterator<Item = &'a [u8]>) -> bool {
    let (mut json, mut html) = ((0, 0), (0, 0));
    for value in values {
        for range in list_elements(value) {
            let Some((kind, sub, q)) = media_range(range) else {
                continue;
            };
            json = better(json, specificity(kind, sub, b"application", b"json"), q);
            html = better(html, specificity(kind, sub, b"text", b"html"), q);
        }
    }
    json.1 > 0 && json.1 > html.1
}

/// The weight of the more specific match: `(specificity, weight)` so far against a new
/// range's. Among equally specific ranges the first wins.
fn better(held: (Specificity, Weight), specific: Specificity, q: Weight) -> (Specificity, Weight) {
    if specific > held.0 {
        (specific, q)
    } else {
        held
    }
}

/// How specifically `kind/sub` matches `want_kind/want_sub` (0: it does not).
fn specificity(kind: &[u8], sub: &[u8], want_kind: &[u8], want_sub: &[u8]) -> Specificity {
    match (kind, sub) {
        (b"*", b"*") => 1,
        (k, b"*") if k.eq_ignore_ascii_case(want_kind) => 2,
        (k, s) if k.eq_ignore_ascii_case(want_kind) && s.eq_ignore_ascii_case(want_sub) => 3,
        _ => 0,
    }
}

/// `type "/" subtype *( OWS ";" OWS parameter )`: the type, the subtype and the weight.
fn media_range(range: &[u8]) -> Option<(&[u8], &[u8], Weight)> {
    let mut parts = range.split(|&b| b == b';');
    let name = parts.next()?.trim_ascii();
    let slash = memchr::memchr(b'/', name)?;
    let (kind, sub) = (&name[..slash], &name[slash + 1..]);
    if kind.is_empty() || sub.is_empty() {
        return None;
    }
    let mut q = 1000;
    for param in parts {
        let param = param.trim_ascii();
        if let Some(value) = param
            .strip_prefix(b"q=")
            .or_else(|| param.strip_prefix(b"Q="))
        {
            q = qvalue(value)?;
        }
    }
    Some((kind, sub, q))
}

/// `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )` in thousandths.
fn qvalue(v: &[u8]) -> Option<Weight> {
    let (int, frac) = match memchr::memchr(b'.', v) {
        Some(dot) => (&v[..dot], &v[dot + 1..]),
        None => (v, &b""[..]),
    };
    if frac.len() > 3 || !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut thousandths: Weight = 0;
    for i in 0..3 {
        let d = frac.get(i).map_or(0, |b| Weight::from(b - b'0'));
        thousandths = thousandths * 10 + d;
    }
    match int {
        b"0" => Some(thousandths),
        b"1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(lines: &[&str]) -> bool {
        prefers_json(lines.iter().map(|l| l.as_bytes()))
    }

    #[test]
    fn json_only_when_it_outweighs_html() {
        for (lines, want) in [
            (&[][..], false),
            (&["application/json"][..], true),
            (&["APPLICATION/JSON"][..], true),
            (&["*/*"][..], false),
            (&["application/*"][..], true),
            (&["application/json, text/html"][..], false),
            (&["text/html;q=0.5, application/json;q=0.9"][..], true),
            (&["application/json;q=0"][..], false),
            (&["application/json;q=0.001"][..], true),
            (
                &["application/json; charset=utf-8; q=0.7", "*/*;q=0.6"][..],
                true,
            ),
            (&["text/html", "application/json"][..], false),
            (
                &["text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"][..],
                false,
            ),
            (&["application/json, */*;q=0.1"][..], true),
            (&["*/*;q=0.9, application/json;q=0.2"][..], false),
            (&["application/*;q=0.1, application/json;q=1"][..], true),
            (&["image/png"][..], false),
            (&["application/json;q=2"][..], false),
            (&["application/json;q=0.1234"][..], false),
            (&["application/json;q=1.000"][..], true),
            (&["application/json;q=1.5"][..], false),
            (&["json"][..], false),
            (&["/json, ;, application/"][..], false),
        ] {
            assert_eq!(json(lines), want, "{lines:?}");
        }
    }

    #[test]
    fn qvalues_in_thousandths() {
        for (text, want) in [
            ("0", Some(0)),
            ("0.", Some(0)),
            ("0.5", Some(500)),
            ("0.05", Some(50)),
            ("0.125", Some(125)),
            ("1", Some(1000)),
            ("1.0", Some(1000)),
            ("1.001", None),
            ("0.1234", None),
            ("2", None),
            ("", None),
            ("0.a", None),
            ("-0", None),
        ] {
            assert_eq!(qvalue(text.as_bytes()), want, "{text:?}");
        }
    }
}
