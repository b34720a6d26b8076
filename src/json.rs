//! A tiny JSON writer for every `--json` output (`topo`, `check`, `bench load`, `bench ab`).
//!
//! Input: a [`Value`] tree built by the caller, in the order the keys should appear.
//! Output: JSON text (RFC 8259) and a final newline, in one of two layouts: pretty
//! ([`Value::to_text`]: two-space indents, arrays of scalars on one line, objects whose
//! values are all scalars on one line) or compact ([`Value::to_compact`]: one line, no
//! spaces). Key order is exactly the insertion order, so the output is stable for tests
//! that compare it. Numbers with a fraction print with a fixed count of decimals, or in
//! the shortest form that reads back the same; a number that is not finite prints as
//! `null`, since JSON has no NaN or infinity. It does not parse JSON.

use core::fmt::Write;

/// A JSON value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A number with a fraction and how many decimals to print (`None`: the shortest
    /// text that reads back as the same `f64`).
    Num(f64, Option<u8>),
    /// A string (escaped on output).
    Str(String),
    /// An array.
    Arr(Vec<Value>),
    /// An object; keys in insertion order.
    Obj(Vec<(String, Value)>),
}

impl Value {
    /// An object from `(key, value)` pairs.
    pub(crate) fn obj<const N: usize>(pairs: [(&str, Value); N]) -> Value {
        Value::obj_of(Vec::from(pairs))
    }

    /// [`Value::obj`] for any count of pairs, so only the array move is per-size code.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn obj_of(pairs: Vec<(&str, Value)>) -> Value {
        Value::Obj(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }

    /// A string value.
    pub(crate) fn str(s: impl Into<String>) -> Value {
        Value::Str(s.into())
    }

    /// An integer value, or `null` for `None`.
    pub(crate) fn opt_int<T: Into<i64>>(v: Option<T>) -> Value {
        v.map_or(Value::Null, |n| Value::Int(n.into()))
    }

    /// An unsigned integer (saturating at `i64::MAX`).
    pub(crate) fn uint(n: u64) -> Value {
        Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }

    /// A number printed with `decimals` digits after the point.
    pub(crate) fn fixed(x: f64, decimals: u8) -> Value {
        Value::Num(x, Some(decimals))
    }

    /// A number printed with `decimals` digits after the point, or `null` for `None`.
    pub(crate) fn opt_fixed(x: Option<f64>, decimals: u8) -> Value {
        x.map_or(Value::Null, |x| Value::fixed(x, decimals))
    }

    /// The pretty text, ending with a newline.
    pub(crate) fn to_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, Some(0));
        out.push('\n');
        out
    }

    /// The compact text (one line, no spaces), ending with a newline.
    pub(crate) fn to_compact(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, None);
        out.push('\n');
        out
    }

    fn is_scalar(&self) -> bool {
        !matches!(self, Value::Arr(_) | Value::Obj(_))
    }

    /// Writes the value at `depth` of the pretty layout, or compact for `None`.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn write(&self, out: &mut String, depth: Option<usize>) {
        let (sep, colon) = if depth.is_some() {
            (", ", ": ")
        } else {
            (",", ":")
        };
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(n) => {
                let _ = write!(out, "{n}");
            }
            Value::Num(x, _) if !x.is_finite() => out.push_str("null"),
            Value::Num(x, Some(d)) => {
                let _ = write!(out, "{x:.*}", usize::from(*d));
            }
            Value::Num(x, None) => {
                let _ = write!(out, "{x}");
            }
            Value::Str(s) => write_str(out, s),
            Value::Arr(items) if depth.is_none() || items.iter().all(Value::is_scalar) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(sep);
                    }
                    v.write(out, depth);
                }
                out.push(']');
            }
            Value::Obj(pairs)
                if depth.is_none()
                    || (!pairs.is_empty() && pairs.iter().all(|(_, v)| v.is_scalar())) =>
            {
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(sep);
                    }
                    write_str(out, k);
                    out.push_str(colon);
                    v.write(out, depth);
                }
                out.push('}');
            }
            Value::Arr(items) => {
                let entries = items.iter().map(|v| (None, v));
                write_block(out, depth.unwrap_or(0), '[', ']', entries);
            }
            Value::Obj(pairs) => {
                let entries = pairs.iter().map(|(k, v)| (Some(k.as_str()), v));
                write_block(out, depth.unwrap_or(0), '{', '}', entries);
            }
        }
    }
}

fn write_block<'a>(
    out: &mut String,
    depth: usize,
    open: char,
    close: char,
    entries: impl Iterator<Item = (Option<&'a str>, &'a Value)>,
) {
    out.push(open);
    let mut any = false;
    for (i, (key, v)) in entries.enumerate() {
        out.push_str(if i > 0 { ",\n" } else { "\n" });
        indent(out, depth + 1);
        if let Some(k) = key {
            write_str(out, k);
            out.push_str(": ");
        }
        v.write(out, Some(depth + 1));
        any = true;
    }
    if any {
        out.push('\n');
        indent(out, depth);
    }
    out.push(close);
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

/// A JSON string literal: `"`, `\` and control characters escaped (RFC 8259 section 7).
#[cfg_attr(feature = "cold-size", optimize(size))]
fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_nested_values_in_order() {
        let v = Value::obj([
            ("b", Value::Int(-1)),
            ("a", Value::Arr(vec![Value::Int(1), Value::Null])),
            (
                "o",
                Value::obj([("s", Value::str("q\"\\\n\u{1}")), ("n", Value::obj([]))]),
            ),
            ("e", Value::Arr(vec![])),
            (
                "l",
                Value::Arr(vec![Value::obj([("k", Value::Bool(true))])]),
            ),
        ]);
        let want = "{\n  \"b\": -1,\n  \"a\": [1, null],\n  \"o\": {\n    \"s\": \"q\\\"\\\\\\n\\u0001\",\n    \"n\": {}\n  },\n  \"e\": [],\n  \"l\": [\n    {\"k\": true}\n  ]\n}\n";
        assert_eq!(v.to_text(), want);
    }

    #[test]
    fn compact_layout_and_numbers_with_fractions() {
        let v = Value::obj([
            ("f", Value::fixed(2.0 / 3.0, 3)),
            ("g", Value::Num(250.5, None)),
            ("n", Value::opt_fixed(Some(f64::NAN), 6)),
            ("z", Value::opt_fixed(None, 6)),
            ("a", Value::Arr(vec![Value::uint(u64::MAX), Value::Int(-2)])),
            ("o", Value::obj([("s", Value::str("x\"y"))])),
        ]);
        let want = "{\"f\":0.667,\"g\":250.5,\"n\":null,\"z\":null,\"a\":[9223372036854775807,-2],\"o\":{\"s\":\"x\\\"y\"}}\n";
        assert_eq!(v.to_compact(), want);
    }
}
