//! Stage 1, serve flags from the environment: `STEERD_` + the flag's name in capitals
//! with `-` as `_` (`STEERD_LISTEN=:8080`, `STEERD_ACCESS_LOG=-`), for containers and
//! units that set options without editing a command line.
//!
//! Input: the serve flag table ([`SERVE_FLAGS`]), the process's `STEERD_*` variables and
//! the command line. Output: command-line tokens (`--flag=value`) for the flags the
//! command line does not give, each with the variable it came from. A flag on the
//! command line wins over its variable, whole (a repeatable's variable is then not
//! added to it). A repeatable's values are comma-separated (`STEERD_LISTEN=:8080,:9090`);
//! `\,` is a comma inside a value (`STEERD_HEADER=Cache-Control: a\, b`). A switch
//! (`--proxy-protocol`) is on for `1`, `true`, `yes`, `on` and off for `0`, `false`,
//! `no`, `off` or empty. Variables that name no serve flag are ignored (the test
//! harness and other tools use the prefix too).

use super::{err, ArgsError};

/// How a serve flag takes its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takes {
    /// One value, once.
    Value,
    /// One value each time, any number of times.
    Repeated,
    /// No value: present or not.
    Switch,
}

/// A serve flag: its long name, its short forms, and how it takes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeFlag {
    /// `--listen`
    pub name: &'static str,
    /// `-l`, `-p`
    pub short: &'static [&'static str],
    /// How it takes its value.
    pub takes: Takes,
}

const fn flag(name: &'static str, takes: Takes) -> ServeFlag {
    ServeFlag {
        name,
        short: &[],
        takes,
    }
}

/// Every flag of `serve` (and `check`), in the order of `--help`.
pub const SERVE_FLAGS: &[ServeFlag] = &[
    ServeFlag {
        name: "--listen",
        short: &["-l", "-p"],
        takes: Takes::Repeated,
    },
    ServeFlag {
        name: "--workers",
        short: &["-w"],
        takes: Takes::Value,
    },
    flag("--cpus", Takes::Value),
    flag("--steer", Takes::Value),
    flag("--master-cpu", Takes::Value),
    flag("--user", Takes::Value),
    flag("--max-conns", Takes::Value),
    flag("--max-conns-per-addr", Takes::Value),
    flag("--header-timeout", Takes::Value),
    flag("--keepalive-timeout", Takes::Value),
    flag("--send-timeout", Takes::Value),
    flag("--send-buffer", Takes::Value),
    flag("--shutdown-timeout", Takes::Value),
    flag("--access-log", Takes::Value),
    flag("--log-format", Takes::Value),
    flag("--syslog-socket", Takes::Value),
    flag("--real-ip-from", Takes::Repeated),
    flag("--real-ip-recursive", Takes::Switch),
    flag("--proxy-protocol", Takes::Switch),
    flag("--metrics", Takes::Value),
    flag("--precompressed", Takes::Value),
    flag("--header", Takes::Repeated),
    flag("--cache-control", Takes::Repeated),
    flag("--error-page", Takes::Repeated),
    flag("--fallback", Takes::Value),
    flag("--fallback-skip", Takes::Value),
    flag("--mime", Takes::Repeated),
    flag("--mime-types", Takes::Value),
    flag("--dotfiles", Takes::Value),
    flag("--cors", Takes::Repeated),
    flag("--basic-auth", Takes::Value),
    flag("--basic-auth-realm", Takes::Value),
    flag("--basic-auth-skip", Takes::Repeated),
    flag("--list-dirs", Takes::Switch),
    flag("--sysfs", Takes::Value),
    flag("--procfs", Takes::Value),
];

impl ServeFlag {
    /// `STEERD_LISTEN` for `--listen`.
    pub fn var(&self) -> String {
        let bare = self.name.trim_start_matches('-');
        format!("STEERD_{}", bare.to_ascii_uppercase().replace('-', "_"))
    }

    /// True when `arg` is this flag, in any of its spellings (`--listen`, `-p`,
    /// `--listen=...`).
    pub fn is(&self, arg: &str) -> bool {
        let name = arg.split_once('=').map_or(arg, |(f, _)| f);
        name == self.name || self.short.contains(&name)
    }
}

/// The flag `arg` spells, if it is a serve flag.
pub fn find(arg: &str) -> Option<&'static ServeFlag> {
    SERVE_FLAGS.iter().find(|f| f.is(arg))
}

/// Where a serve flag's value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The command line.
    CommandLine,
    /// This environment variable.
    Environment(String),
}

/// One token made from a variable: `--flag=value` (or `--flag` for a switch).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvToken {
    /// The token, as on a command line.
    pub token: String,
    /// The variable it came from.
    pub var: String,
}

/// The tokens of the `STEERD_*` variables in `vars` for the flags `argv` does not give.
pub fn tokens(vars: &[(String, String)], argv: &[String]) -> Result<Vec<EnvToken>, ArgsError> {
    let mut out = Vec::new();
    for f in SERVE_FLAGS {
        let var = f.var();
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
            Takes::Switch if switch(&var, value)? => out.push(made(f.name.to_string())),
            Takes::Switch => {}
            Takes::Value => out.push(made(format!("{}={value}", f.name))),
            Takes::Repeated => {
                for v in split_commas(value) {
                    out.push(made(format!("{}={v}", f.name)));
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
        let names: Vec<String> = SERVE_FLAGS.iter().map(ServeFlag::var).collect();
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
