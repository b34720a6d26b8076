//! The documentation's example command lines, run through `steerd check`: a documented
//! example that steerd refuses fails this test.
//!
//! Input: `README.md` and `docs/*.md` (not `docs/history/`, which records what was). The
//! examples are taken mechanically: a line of a fenced code block (with its `\`
//! continuations) or an inline code span that is a `steerd serve` or `steerd check`
//! invocation, possibly after `STEERD_*=VALUE` assignments, and an inline span that is a
//! single `STEERD_*=VALUE` assignment. Words are split as a shell would (quotes,
//! backslashes) up to the first operator or comment (`& | ; < > #`). An example holding a
//! placeholder (`ROOT`, `NAME`, `[serve options]`, `…`, `$VAR`) is not runnable as
//! written and is left out; `tests/data/docs/examples.txt` maps the reader's paths
//! (`/srv/www`, `/etc/steerd/htpasswd`) to fixtures and names the examples that need what
//! a test machine lacks, with the reason; an example with more `--workers` than this
//! machine has CPUs (and no `--sysfs`) is not run either, with the reason. Lines after `--` in `steerd bench ab` blocks are
//! arguments of `bench`, not invocations, and are not taken.
//!
//! Each example runs as `steerd check ARGS` (a `serve` becomes `check`) in the
//! repository's root, so `./site` and `tests/data/sys/...` are the real ones, with no
//! other `STEERD_*` variable set. An assignment alone runs `steerd check --json`, which
//! must name the variable as the source of its flag.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use support::server::{binary, TempDir};

/// One example as documented: where, the assignments before it, and its arguments
/// after `serve`/`check` (`None`: an assignment alone).
#[derive(Debug, PartialEq)]
struct Example {
    place: String,
    env: Vec<(String, String)>,
    args: Option<Vec<String>>,
}

/// A shell word and whether any of it was quoted.
#[derive(Debug, Default)]
struct Word {
    text: String,
    quoted: bool,
}

/// The shell words of `s` up to the first unquoted operator or comment; `None` when a
/// quote is left open.
fn words(s: &str) -> Option<Vec<Word>> {
    let mut out = Vec::new();
    let mut cur: Option<Word> = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => out.extend(cur.take()),
            '&' | '|' | ';' | '<' | '>' => break,
            '#' if cur.is_none() => break,
            '\'' | '"' => {
                let w = cur.get_or_insert_with(Word::default);
                w.quoted = true;
                quoted(&mut chars, c, &mut w.text)?;
            }
            '\\' => cur
                .get_or_insert_with(Word::default)
                .text
                .push(chars.next()?),
            c => cur.get_or_insert_with(Word::default).text.push(c),
        }
    }
    out.extend(cur);
    Some(out)
}

/// Reads a quoted part after its opening `quote` into `text`: inside `'` every character
/// is itself; inside `"` a backslash escapes `" \ $` and a backquote. `None` when the quote
/// is left open.
fn quoted(chars: &mut std::str::Chars<'_>, quote: char, text: &mut String) -> Option<()> {
    loop {
        match chars.next()? {
            c if c == quote => return Some(()),
            '\\' if quote == '"' => {
                let n = chars.next()?;
                if !matches!(n, '"' | '\\' | '$' | '`') {
                    text.push('\\');
                }
                text.push(n);
            }
            c => text.push(c),
        }
    }
}

/// A word that stands for something the reader fills in.
fn is_placeholder(w: &Word) -> bool {
    let t = &w.text;
    let capitals = |s: &str| s.len() >= 2 && s.bytes().all(|b| b.is_ascii_uppercase() || b == b'_');
    t.contains('$')
        || t.contains('…')
        || t.contains("...")
        || (!w.quoted && ((t.starts_with('[') && !t.contains("]:")) || t.split('/').any(capitals)))
}

/// `NAME=VALUE` with a shell variable's name.
fn assignment(w: &Word) -> Option<(String, String)> {
    let (name, value) = w.text.split_once('=')?;
    let first = name.bytes().next()?;
    let is_name = (first.is_ascii_uppercase() || first == b'_')
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    is_name.then(|| (name.to_string(), value.to_string()))
}

/// The example `code` is, if it is one (`inline`: an assignment alone counts too).
fn example(place: String, code: &str, inline: bool) -> Option<Example> {
    let all = words(code)?;
    if all.iter().any(is_placeholder) {
        return None;
    }
    let env: Vec<_> = all.iter().map_while(assignment).collect();
    let rest = &all[env.len()..];
    let steerd_env = env.iter().all(|(n, _)| n.starts_with("STEERD_"));
    if rest.is_empty() {
        let alone = inline && env.len() == 1 && steerd_env;
        return alone.then_some(Example {
            place,
            env,
            args: None,
        });
    }
    let program = &rest[0].text;
    let is_steerd = program == "steerd" || program.ends_with("/steerd");
    let sub = rest.get(1).map(|w| w.text.as_str());
    if !is_steerd || !matches!(sub, Some("serve" | "check")) || !steerd_env {
        return None;
    }
    let args = rest[2..].iter().map(|w| w.text.clone()).collect();
    Some(Example {
        place,
        env,
        args: Some(args),
    })
}

/// The logical lines of fenced code blocks (continuations joined) with their line
/// numbers, and the prose: the text with every fenced line blanked.
fn split_fences(text: &str) -> (Vec<(usize, String)>, String) {
    let (mut code, mut prose) = (Vec::new(), String::new());
    let mut fenced = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~");
        fenced ^= fence;
        if fence || fenced {
            prose.push('\n');
        } else {
            prose.push_str(line);
            prose.push('\n');
        }
        if !fenced || fence {
            continue;
        }
        let (start, mut joined) = pending.take().unwrap_or((i + 1, String::new()));
        joined.push_str(line.trim());
        match joined.strip_suffix('\\') {
            Some(head) => pending = Some((start, head.to_string() + " ")),
            None => code.push((start, joined)),
        }
    }
    (code, prose)
}

/// The inline code spans of `prose` with their line numbers: a run of backticks to the
/// next run of the same length within the paragraph, newlines as spaces.
fn inline_spans(prose: &str) -> Vec<(usize, String)> {
    let b = prose.as_bytes();
    let run = |at: usize| b[at..].iter().take_while(|&&c| c == b'`').count();
    let mut spans = Vec::new();
    let mut i = 0;
    while let Some(open) = b[i..].iter().position(|&c| c == b'`').map(|p| p + i) {
        let n = run(open);
        let start = open + n;
        let mut j = start;
        let close = loop {
            match b.get(j) {
                None => break None,
                Some(b'\n')
                    if prose[j + 1..]
                        .trim_start_matches([' ', '\t'])
                        .starts_with('\n') =>
                {
                    break None
                }
                Some(b'`') if run(j) == n => break Some(j),
                Some(b'`') => j += run(j),
                Some(_) => j += 1,
            }
        };
        let Some(close) = close else {
            i = start;
            continue;
        };
        let line = 1 + b[..open].iter().filter(|&&c| c == b'\n').count();
        spans.push((line, prose[start..close].replace('\n', " ")));
        i = close + n;
    }
    spans
}

/// Every example of one markdown file, named `file:line`.
fn examples_in(file: &str, text: &str) -> Vec<Example> {
    let (code, prose) = split_fences(text);
    let fenced = code
        .into_iter()
        .filter_map(|(line, c)| example(format!("{file}:{line}"), &c, false));
    let inline = inline_spans(&prose)
        .into_iter()
        .filter_map(|(line, c)| example(format!("{file}:{line}"), c.trim(), true));
    fenced.chain(inline).collect()
}

/// The repository's root.
fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The documents read: `README.md` and `docs/*.md`.
fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, repo().join("README.md"));
    docs
}

/// `tests/data/docs/examples.txt`: the reader's paths as fixtures made under `base`, and
/// the words of examples not run with their reasons.
struct Table {
    paths: Vec<(String, PathBuf)>,
    skips: Vec<(String, String)>,
}

impl Table {
    fn load(base: &Path) -> Table {
        let text = std::fs::read_to_string(repo().join("tests/data/docs/examples.txt")).unwrap();
        let mut table = Table {
            paths: Vec::new(),
            skips: Vec::new(),
        };
        let lines = text
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'));
        for (i, line) in lines.enumerate() {
            let mut parts = line.splitn(3, ' ');
            let (what, word, rest) = (parts.next(), parts.next(), parts.next());
            match (what, word, rest) {
                (Some("path"), Some(word), Some(kind)) => {
                    let fixture = base.join(format!("{i}-{kind}"));
                    make_fixture(&fixture, kind);
                    table.paths.push((word.to_string(), fixture));
                }
                (Some("skip"), Some(word), Some(why)) => {
                    table.skips.push((word.to_string(), why.to_string()));
                }
                _ => panic!("examples.txt: not a line of the table: {line}"),
            }
        }
        table
    }

    /// `args` with the reader's paths replaced by their fixtures.
    fn substitute(&self, args: &[String]) -> Vec<String> {
        let fixture = |a: &String| self.paths.iter().find(|(w, _)| w == a);
        args.iter()
            .map(|a| fixture(a).map_or(a.clone(), |(_, p)| p.display().to_string()))
            .collect()
    }

    /// Why an example with `args` is not run, if it is not: a word the table names, or
    /// more workers than this machine has CPUs (an example from a larger machine; with
    /// `--sysfs` the CPUs are the captured tree's and it runs).
    fn skip_reason(&self, args: &[String]) -> Option<String> {
        let held = |w: &str| args.iter().any(|a| a.contains(w));
        if let Some((_, why)) = self.skips.iter().find(|(w, _)| held(w)) {
            return Some(why.clone());
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let workers = args.windows(2).find(|w| w[0] == "--workers");
        let workers = workers.and_then(|w| w[1].parse::<usize>().ok())?;
        (workers > cpus && !held("--sysfs"))
            .then(|| format!("--workers {workers} needs more than this machine's {cpus} CPUs"))
    }
}

/// A fixture of `kind` at `path`.
fn make_fixture(path: &Path, kind: &str) {
    match kind {
        "dir" => std::fs::create_dir_all(path).unwrap(),
        "htpasswd" => std::fs::write(
            path,
            "bob:$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW\n",
        )
        .unwrap(),
        "mime-types" => std::fs::write(path, "text/markdown md markdown\n").unwrap(),
        _ => panic!("examples.txt: no fixture kind {kind}"),
    }
}

/// `steerd check ARGS` in the repository with `env` and no other `STEERD_*` variable:
/// its standard output, or why it failed.
fn check(args: &[String], env: &[(String, String)]) -> Result<String, String> {
    let mut cmd = Command::new(binary());
    cmd.arg("check").args(args).current_dir(repo());
    for (name, _) in std::env::vars().filter(|(n, _)| n.starts_with("STEERD_")) {
        cmd.env_remove(name);
    }
    cmd.envs(env.iter().map(|(n, v)| (n, v)));
    let out = cmd.output().expect("run steerd check");
    match out.status.success() {
        true => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        false => Err(String::from_utf8_lossy(&out.stderr).trim().to_string()),
    }
}

/// The flag a `STEERD_*` variable stands for: `STEERD_MAX_CONNS` is `--max-conns`.
fn flag_of(var: &str) -> String {
    let name = var.strip_prefix("STEERD_").unwrap_or(var);
    format!("--{}", name.to_ascii_lowercase().replace('_', "-"))
}

/// Runs an assignment alone: `check --json` must take the variable for its flag. `Ok(false)`
/// when the variable names no serve flag (a test's switch, such as `STEERD_VM`).
fn run_assignment(name: &str, value: &str) -> Result<bool, String> {
    let env = [(name.to_string(), value.to_string())];
    let json = check(&["--json".to_string()], &env)?;
    let v: serde_json::Value = serde_json::from_str(&json).map_err(|e| e.to_string())?;
    let source = &v["sources"][flag_of(name)];
    if source.is_null() {
        return Ok(false);
    }
    match source.as_str() == Some(&format!("environment {name}")) {
        true => Ok(true),
        false => Err(format!("check took {} from {source}", flag_of(name))),
    }
}

#[test]
fn examples_are_found_as_a_reader_would_run_them() {
    let doc = "Run `steerd serve ./site\n--list-dirs` or `steerd serve ROOT`; set \
               `STEERD_HEADER='X-A: b\\, c'` or `STEERD_VM=0 cargo test`.\n\n\
               ```\nsteerd check --cors \"https://a.example\" \\\n  --workers 1 & pid=$!\n\
               steerd bench ab -- steerd serve www\n\
               curl localhost:8080/\n```\n";
    let got = examples_in("t.md", doc);
    let want = [
        (
            "t.md:5",
            vec![],
            Some(vec!["--cors", "https://a.example", "--workers", "1"]),
        ),
        ("t.md:1", vec![], Some(vec!["./site", "--list-dirs"])),
        ("t.md:2", vec![("STEERD_HEADER", "X-A: b\\, c")], None),
    ];
    let want: Vec<Example> = want
        .into_iter()
        .map(|(place, env, args)| Example {
            place: place.to_string(),
            env: env
                .into_iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            args: args.map(|a| a.into_iter().map(String::from).collect()),
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn every_documented_command_line_passes_check() {
    let base = TempDir::new("doc-examples");
    let table = Table::load(base.path());
    let (mut failures, mut commands, mut assignments) = (Vec::new(), 0, 0);
    for doc in documents() {
        let file = doc.strip_prefix(repo()).unwrap().display().to_string();
        let text = std::fs::read_to_string(&doc).unwrap();
        for ex in examples_in(&file, &text) {
            let result = match &ex.args {
                Some(args) => {
                    if let Some(why) = table.skip_reason(args) {
                        eprintln!("not run: {}: {args:?}: {why}", ex.place);
                        continue;
                    }
                    commands += 1;
                    check(&table.substitute(args), &ex.env).map(|_| ())
                }
                None => {
                    let (name, value) = &ex.env[0];
                    match run_assignment(name, value) {
                        Ok(false) => continue,
                        other => other.map(|_| assignments += 1),
                    }
                }
            };
            if let Err(why) = result {
                failures.push(format!("{}: {:?} {:?}: {why}", ex.place, ex.env, ex.args));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "refused examples:\n{}",
        failures.join("\n")
    );
    assert!(
        commands > 0 && assignments > 0,
        "found {commands} command lines and {assignments} assignments: the extraction broke"
    );
    eprintln!("{commands} command lines and {assignments} assignments passed check");
}
