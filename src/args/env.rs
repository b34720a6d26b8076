//! Stage 1, serve flags from the environment: `STEERD_` + the flag's name in capitals
//! with `-` as `_` (`STEERD_LISTEN=:8080`, `STEERD_ACCESS_LOG=-`), for containers and
//! units that set options without editing a command line.
//!
//! Input: the serve flag table (`args::serve::FLAGS`), the process's `STEERD_*` variables and
//! the command line. Output: command-line tokens (`--flag=value`) for the flags the
//! command line does not give, each with the variable it came from. A flag on the
//! command line wins over its variable, whole (a repeatable's variable is then not
//! added to it). A repeatable's values are comma-separated (`STEERD_LISTEN=:8080,:9090`);
//! `\,` is a comma inside a value (`STEERD_CACHE_CONTROL=*.css=public\, max-age=60`). A switch
//! (`--proxy-protocol`) is on for `1`, `true`, `yes`, `on` and off for `0`, `false`,
//! `no`, `off` or empty. Variables that name no serve flag are ignored (the test
//! harness and other tools use the prefix too).

use super::flag::{Flag, Takes};
use super::serve::FLAGS;
use super::{err, ArgsError};

/// `STEERD_LISTEN` for `--listen`.
pub(crate) fn var<A>(flag: &Flag<A>) -> String {
    let bare = flag.name().trim_start_matches('-');
    format!("STEERD_{}", bare.to_ascii_uppercase().replace('-', "_"))
}

/// Where a serve flag's value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The command line.
    CommandLine,
    /// This environment variable.
    Environment(String),
    /// This line of the configuration file (`FILE:LINE`).
    File(String),
}

/// One token made from a variable: `--flag=value` (or `--flag` for a switch).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EnvToken {
    /// The token, as on a command line.
    pub(crate) token: String,
    /// The variable it came from.
    pub(crate) var: String,
}

/// The tokens of the `STEERD_*` variables in `vars` for the flags `argv` does not give.
pub(crate) fn tokens(
    vars: &[(String, String)],
    argv: &[String],
) -> Result<Vec<EnvToken>, ArgsError> {
    let mut out = Vec::new();
    for f in FLAGS {
        let var = var(f);
        let Some((_, value)) = vars.iter().find(|(k, _)| *k == var) else {
            continue;
        };
        if argv.iter().any(|a| f.is(a)) {
            continue;
        }
        let made = |token: String| EnvToken {
            token,
            var: var.clone(),
        };
        match f.takes {
            Takes::Switch if switch(&var, value)? => out.push(made(f.name().to_string())),
            Takes::Switch => {}
            Takes::Value => out.push(made(format!("{}={value}", f.name()))),
            Takes::Repeated => {
                for v in split_commas(value) {
                    out.push(made(format!("{}={v}", f.name())));
                }
            }
        }
    }
    Ok(out)
}

/// A switch's value: on or off.
fn switch(var: &str, value: &str) -> Result<bool, ArgsError> {
    match value.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "" | "0" | "false" | "no" | "off" => Ok(false),
        _ => err(format!(
            "{var}={value:?}: expected 1 or 0 (true/false, yes/no, on/off)"
        )),
    }
}

/// `a,b\,c` to `a` and `b,c`; empty items are dropped (`a,,b`, a trailing comma).
fn split_commas(value: &str) -> Vec<String> {
    let mut items = vec![String::new()];
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&',') => {
                chars.next();
                items.last_mut().expect("one item").push(',');
            }
            ',' => items.push(String::new()),
            c => items.last_mut().expect("one item").push(c),
        }
    }
    items.retain(|s| !s.is_empty());
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    fn made(pairs: &[(&str, &str)], line: &str) -> Vec<String> {
        let t = tokens(&vars(pairs), &argv(line)).unwrap();
        t.into_iter().map(|t| t.token).collect()
    }

    #[test]
    fn names_follow_the_flags() {
        let names: Vec<String> = FLAGS.iter().map(var).collect();
        for want in [
            "STEERD_LISTEN",
            "STEERD_MAX_CONNS_PER_ADDR",
            "STEERD_ACCESS_LOG",
        ] {
            assert!(names.iter().any(|n| n == want), "{want}");
        }
    }

    #[test]
    fn variables_become_tokens_and_the_command_line_wins() {
        let env = [
            ("STEERD_LISTEN", ":8080,127.0.0.1:9"),
            ("STEERD_WORKERS", "2"),
            ("STEERD_HEADER", r"Cache-Control: a\, b,X-A: 1"),
            ("STEERD_PROXY_PROTOCOL", "yes"),
            ("STEERD_VM", "0"),
        ];
        assert_eq!(
            made(&env, ""),
            [
                "--listen=:8080",
                "--listen=127.0.0.1:9",
                "--workers=2",
                "--proxy-protocol",
                "--header=Cache-Control: a, b",
                "--header=X-A: 1",
            ]
        );
        assert_eq!(
            made(&env, "-p 1 -w 3 --header=X --proxy-protocol"),
            Vec::<String>::new(),
            "every spelling on the command line wins"
        );
        assert_eq!(
            made(&[("STEERD_PROXY_PROTOCOL", "off")], ""),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_bad_switch_names_its_variable() {
        let e = tokens(&vars(&[("STEERD_PROXY_PROTOCOL", "maybe")]), &[]).unwrap_err();
        assert!(
            e.message.starts_with("STEERD_PROXY_PROTOCOL=\"maybe\""),
            "{e}"
        );
    }

    #[test]
    fn commas_split_and_escape() {
        assert_eq!(split_commas(r"a,b\,c,,d,"), ["a", "b,c", "d"]);
        assert_eq!(split_commas(r"a\b"), [r"a\b"]);
        assert_eq!(split_commas(""), Vec::<String>::new());
    }
}
