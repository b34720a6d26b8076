//! Content codings: which representation of a file to send, from the request's
//! `Accept-Encoding` and the pre-compressed sidecars that exist.
//!
//! Stage: between the parser (which hands each `Accept-Encoding` line to
//! [`AcceptEncoding::add`]) and the responder (which asks [`AcceptEncoding::choose`] once
//! it knows the file's usable sidecars). Input: raw field values, the `--precompressed`
//! order and the set of usable sidecars. Output: a [`Choice`]. It does not look at files
//! and does not allocate; lines are walked, never collected.
//!
//! Rules (RFC 9110 §12.5.3, §8.4.1), as steerd applies them:
//!
//! - codings compare case-insensitively; `x-gzip` is `gzip` (§8.4.1.3); a coding that is
//!   mentioned twice keeps its first weight; unknown codings are ignored;
//! - an element is `coding [ OWS ";" OWS "q=" qvalue ]` (`q`/`Q`); anything else in it (a
//!   malformed qvalue, another parameter, spaces around `=`) makes the element count as
//!   absent;
//! - `q=0` forbids; a coding not mentioned takes the weight of `*`, and is not acceptable
//!   when `*` is absent too;
//! - identity takes its own weight, else that of `*`; mentioned by neither it is
//!   acceptable but preferred last (a client that lists `gzip;q=0.5` alone gets gzip);
//! - among the acceptable codings whose sidecar is usable, the highest weight wins; ties
//!   go to the `--precompressed` order, and identity loses every tie;
//! - no `Accept-Encoding` field at all: identity. An empty one: identity (no coding is
//!   wanted, §12.5.3);
//! - identity refused (`identity;q=0`, or `*;q=0` without an identity element) and no
//!   acceptable sidecar: [`Choice::NotAcceptable`] (406).
//!
//! Multiple field lines combine as one list (RFC 9110 §5.3): call `add` once per line.

use super::fields::list_elements;
use super::tables::TOKEN;

/// A content coding steerd serves from a pre-compressed sidecar file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    /// Brotli (RFC 7932), sidecar `F.br`.
    Br,
    /// Zstandard (RFC 8878), sidecar `F.zst`.
    Zstd,
    /// Gzip (RFC 1952), sidecar `F.gz`.
    Gzip,
}

impl Coding {
    /// Every coding, in the default `--precompressed` order.
    pub const ALL: [Coding; 3] = [Coding::Br, Coding::Zstd, Coding::Gzip];

    /// The token sent in `Content-Encoding` (and spelled in `--precompressed`).
    pub(crate) const fn token(self) -> &'static str {
        match self {
            Coding::Br => "br",
            Coding::Zstd => "zstd",
            Coding::Gzip => "gzip",
        }
    }

    /// The file name suffix of the sidecar.
    pub(crate) const fn suffix(self) -> &'static str {
        match self {
            Coding::Br => ".br",
            Coding::Zstd => ".zst",
            Coding::Gzip => ".gz",
        }
    }

    const fn index(self) -> usize {
        self as usize
    }

    /// The coding a request token names (case-insensitive; `x-gzip` is gzip).
    fn named(token: &[u8]) -> Option<Coding> {
        Coding::ALL
            .into_iter()
            .find(|c| token.eq_ignore_ascii_case(c.token().as_bytes()))
            .or_else(|| {
                token
                    .eq_ignore_ascii_case(b"x-gzip")
                    .then_some(Coding::Gzip)
            })
    }
}

/// A set of codings (the usable sidecars of one file).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodingSet(u8);

impl CodingSet {
    /// No coding.
    pub const EMPTY: CodingSet = CodingSet(0);

    /// This set with `c` added.
    pub const fn with(self, c: Coding) -> CodingSet {
        CodingSet(self.0 | 1 << c.index())
    }

    /// Whether `c` is in the set.
    pub const fn contains(self, c: Coding) -> bool {
        self.0 & 1 << c.index() != 0
    }

    /// Whether the set is empty.
    pub(crate) const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// `--precompressed LIST`: the codings looked for, in the order that breaks ties.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Precompressed {
    order: [Coding; 3],
    len: u8,
}

impl Default for Precompressed {
    /// `br,zstd,gzip`.
    fn default() -> Self {
        Precompressed {
            order: Coding::ALL,
            len: 3,
        }
    }
}

impl Precompressed {
    /// `off`: no sidecar is ever looked for.
    pub(crate) const OFF: Precompressed = Precompressed {
        order: Coding::ALL,
        len: 0,
    };

    /// Parses `off` or a comma-separated list of `br`, `zstd`, `gzip`, each at most once.
    pub fn parse(text: &str) -> Result<Precompressed, &'static str> {
        if text == "off" {
            return Ok(Precompressed::OFF);
        }
        let mut list = Precompressed::OFF;
        for name in text.split(',') {
            let c = Coding::ALL
                .into_iter()
                .find(|c| c.token() == name)
                .ok_or("expected off or a list of br, zstd, gzip")?;
            if list.iter().any(|seen| seen == c) {
                return Err("a coding is listed twice");
            }
            list.order[usize::from(list.len)] = c;
            list.len += 1;
        }
        Ok(list)
    }

    /// This order with gzip last when it is not listed (the order of a file that may be
    /// sent compressed by the server as well as from its sidecars).
    pub(crate) fn with_gzip(mut self) -> Precompressed {
        if !self.iter().any(|c| c == Coding::Gzip) {
            self.order[usize::from(self.len)] = Coding::Gzip;
            self.len += 1;
        }
        self
    }

    /// The codings in order.
    pub fn iter(&self) -> impl Iterator<Item = Coding> + '_ {
        self.order[..usize::from(self.len)].iter().copied()
    }

    /// Whether no coding is looked for.
    #[cfg(test)]
    pub(crate) fn is_off(&self) -> bool {
        self.len == 0
    }
}

/// The representation to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// The file itself.
    Identity,
    /// The sidecar of this coding.
    Coded(Coding),
    /// Nothing acceptable: 406.
    NotAcceptable,
}

/// Weights in thousandths (a qvalue has at most three decimals).
type Weight = u16;

const IDENTITY: usize = 3;
const ANY: usize = 4;

/// What the request's `Accept-Encoding` lines say about the codings steerd knows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AcceptEncoding {
    present: bool,
    /// Weight of br, zstd, gzip, identity and `*`, when mentioned.
    weights: [Option<Weight>; 5],
}

impl AcceptEncoding {
    /// Adds one field line.
    pub fn add(&mut self, value: &[u8]) {
        self.present = true;
        for element in list_elements(value) {
            let Some((name, weight)) = element_parts(element) else {
                continue;
            };
            let slot = match Coding::named(name) {
                Some(c) => c.index(),
                None if name.eq_ignore_ascii_case(b"identity") => IDENTITY,
                None if name == b"*" => ANY,
                None => continue,
            };
            self.weights[slot].get_or_insert(weight);
        }
    }

    /// The representation to send, given the `--precompressed` order and the file's
    /// usable sidecars.
    pub fn choose(&self, order: &Precompressed, usable: CodingSet) -> Choice {
        if !self.present {
            return Choice::Identity;
        }
        let any = self.weights[ANY];
        let mut best: Option<(Weight, Coding)> = None;
        for c in order.iter().filter(|&c| usable.contains(c)) {
            let w = self.weights[c.index()].or(any).unwrap_or(0);
            if w > 0 && best.is_none_or(|(top, _)| w > top) {
                best = Some((w, c));
            }
        }
        let identity = self.weights[IDENTITY].or(any);
        match (best, identity) {
            (Some((w, _)), Some(i)) if i > w => Choice::Identity,
            (Some((_, c)), _) => Choice::Coded(c),
            (None, Some(0)) => Choice::NotAcceptable,
            (None, _) => Choice::Identity,
        }
    }
}

/// Splits `coding [ OWS ";" OWS "q=" qvalue ]`; `None` for anything else.
fn element_parts(element: &[u8]) -> Option<(&[u8], Weight)> {
    let (name, weight) = match memchr::memchr(b';', element) {
        None => (element, 1000),
        Some(semi) => {
            let param = element[semi + 1..].trim_ascii_start();
            let value = param.strip_prefix(b"q=").or(param.strip_prefix(b"Q="))?;
            (element[..semi].trim_ascii_end(), qvalue(value)?)
        }
    };
    let token = !name.is_empty() && name.iter().all(|&b| TOKEN[usize::from(b)]);
    token.then_some((name, weight))
}

/// RFC 9110 §12.4.2: `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )`, in
/// thousandths.
fn qvalue(text: &[u8]) -> Option<Weight> {
    let (&first, rest) = text.split_first()?;
    let decimals = match rest {
        [] => &[][..],
        [b'.', d @ ..] if d.len() <= 3 && d.iter().all(u8::is_ascii_digit) => d,
        _ => return None,
    };
    let fraction = (0..3).fold(0, |n, i| {
        n * 10 + decimals.get(i).map_or(0, |&d| Weight::from(d - b'0'))
    });
    match first {
        b'0' => Some(fraction),
        b'1' if fraction == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: CodingSet = CodingSet::EMPTY
        .with(Coding::Br)
        .with(Coding::Zstd)
        .with(Coding::Gzip);
    const GZ: CodingSet = CodingSet::EMPTY.with(Coding::Gzip);

    fn choose(lines: &[&str], order: &str, usable: CodingSet) -> Choice {
        let mut a = AcceptEncoding::default();
        for l in lines {
            a.add(l.as_bytes());
        }
        a.choose(&Precompressed::parse(order).unwrap(), usable)
    }

    use Choice::{Coded, Identity, NotAcceptable};
    use Coding::{Br, Gzip, Zstd};

    #[test]
    fn qvalues() {
        for (text, want) in [
            ("0", Some(0)),
            ("0.", Some(0)),
            ("0.5", Some(500)),
            ("0.05", Some(50)),
            ("0.001", Some(1)),
            ("1", Some(1000)),
            ("1.000", Some(1000)),
            ("1.001", None),
            ("0.0001", None),
            ("2", None),
            ("-1", None),
            ("", None),
            (".5", None),
            ("0.5 ", None),
            ("0,5", None),
        ] {
            assert_eq!(qvalue(text.as_bytes()), want, "{text:?}");
        }
    }

    #[test]
    fn no_field_or_empty_field_is_identity() {
        assert_eq!(choose(&[], "br,zstd,gzip", ALL), Identity);
        assert_eq!(choose(&[""], "br,zstd,gzip", ALL), Identity);
        assert_eq!(choose(&[" , ,"], "br,zstd,gzip", ALL), Identity);
    }

    #[test]
    fn ties_go_to_the_list_order() {
        assert_eq!(choose(&["gzip, br, zstd"], "br,zstd,gzip", ALL), Coded(Br));
        assert_eq!(choose(&["gzip, br, zstd"], "gzip,br", ALL), Coded(Gzip));
        assert_eq!(choose(&["*"], "zstd,br,gzip", ALL), Coded(Zstd));
        // Identity loses ties.
        assert_eq!(choose(&["identity, gzip"], "gzip", GZ), Coded(Gzip));
    }

    #[test]
    fn highest_weight_wins() {
        let a = ["br;q=0.5, gzip;q=0.8"];
        assert_eq!(choose(&a, "br,zstd,gzip", ALL), Coded(Gzip));
        assert_eq!(choose(&["gzip;q=0.5, identity"], "gzip", GZ), Identity);
        assert_eq!(choose(&["gzip;q=0.5, *;q=1"], "gzip", GZ), Identity);
        assert_eq!(choose(&["gzip;q=0.5"], "gzip", GZ), Coded(Gzip));
        assert_eq!(choose(&["br;q=0.2, *;q=0.3"], "br,gzip", ALL), Coded(Gzip));
    }

    #[test]
    fn only_usable_sidecars_and_listed_codings_count() {
        assert_eq!(choose(&["br, gzip;q=0.1"], "br,zstd,gzip", GZ), Coded(Gzip));
        assert_eq!(choose(&["br"], "br,zstd,gzip", GZ), Identity);
        assert_eq!(choose(&["gzip"], "br,zstd", ALL), Identity);
        assert_eq!(choose(&["gzip"], "off", ALL), Identity);
    }

    #[test]
    fn forms_that_must_be_read_right() {
        let c = |a: &str| choose(&[a], "br,zstd,gzip", ALL);
        assert_eq!(c("GZIP"), Coded(Gzip));
        assert_eq!(c("x-gzip"), Coded(Gzip));
        assert_eq!(c("X-Gzip;Q=1"), Coded(Gzip));
        assert_eq!(c("gzip ; q=0.7 ,deflate"), Coded(Gzip));
        assert_eq!(c("\tbr\t;\tq=0.1"), Coded(Br));
        // q=0 forbids, whatever the form.
        assert_eq!(c("br;q=0, gzip"), Coded(Gzip));
        assert_eq!(c("br;q=0.000"), Identity);
        assert_eq!(c("*;q=0, identity"), Identity);
        // A malformed weight drops the element: then "*" decides, or nothing.
        assert_eq!(c("br;q=2"), Identity);
        assert_eq!(c("br;q= 1"), Identity);
        assert_eq!(c("br;q =1"), Identity);
        assert_eq!(c("br;q=1;x=2"), Identity);
        assert_eq!(c("br;level=1"), Identity);
        assert_eq!(c("br;"), Identity);
        assert_eq!(c("br;q=0.5x, gzip;q=0.1"), Coded(Gzip));
        assert_eq!(
            c("zstd;q=0.9, zstd;q=0"),
            Coded(Zstd),
            "first mention holds"
        );
        assert_eq!(c("x-gzip;q=0, gzip"), Identity, "x-gzip is gzip");
        assert_eq!(c("b r, g\"zip\""), Identity);
        assert_eq!(c("compress, deflate"), Identity);
        // Lines combine.
        assert_eq!(
            choose(&["br;q=0.1", "zstd;q=0.2"], "br,zstd", ALL),
            Coded(Zstd)
        );
    }

    #[test]
    fn refused_identity_without_a_sidecar_is_406() {
        let c = |a: &str, usable| choose(&[a], "br,zstd,gzip", usable);
        assert_eq!(c("identity;q=0", CodingSet::EMPTY), NotAcceptable);
        assert_eq!(c("*;q=0", CodingSet::EMPTY), NotAcceptable);
        assert_eq!(c("br, identity;q=0", GZ), NotAcceptable);
        assert_eq!(c("gzip, identity;q=0", GZ), Coded(Gzip));
        assert_eq!(c("*;q=0", GZ), NotAcceptable);
        assert_eq!(c("gzip, *;q=0", GZ), Coded(Gzip));
        assert_eq!(c("*;q=0, identity;q=0.1", CodingSet::EMPTY), Identity);
        // "0." is a valid zero; "00" is malformed, and a malformed refusal is none.
        assert_eq!(c("identity;q=0.", CodingSet::EMPTY), NotAcceptable);
        assert_eq!(c("identity;q=00", CodingSet::EMPTY), Identity);
    }

    #[test]
    fn precompressed_flag() {
        let p = Precompressed::parse("gzip,br").unwrap();
        assert_eq!(p.iter().collect::<Vec<_>>(), [Gzip, Br]);
        assert!(Precompressed::parse("off").unwrap().is_off());
        assert_eq!(
            Precompressed::default().iter().collect::<Vec<_>>(),
            [Br, Zstd, Gzip]
        );
        for bad in [
            "",
            "gzip,",
            "gzip,gzip",
            "deflate",
            "GZIP",
            "gzip, br",
            "off,gzip",
        ] {
            assert!(Precompressed::parse(bad).is_err(), "{bad:?}");
        }
    }
}
