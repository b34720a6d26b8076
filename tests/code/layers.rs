//! The import graph of `src/` follows the pipeline that `src/lib.rs` declares.
//!
//! Input: the source files. Output: a failing test naming the offending edge. Each
//! top-level module's files are read (`src/M.rs` and everything under `src/M/`), every
//! `crate::NAME` outside a comment line is an edge to module NAME, and:
//!
//! * every edge points to a module declared above in `src/lib.rs` (so the graph has no
//!   circle and the declaration order is a valid build order);
//! * a few edges are forbidden outright (facts must not depend on policy; the runtime
//!   must not read the flags; HTTP must not know sockets, processes or the loop);
//! * inside the checked directories no two files import each other, directly or through
//!   other files of the same directory.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The `mod NAME;` lines of `src/lib.rs`, whatever their visibility (`mod`, `pub mod`,
/// `pub(crate) mod`), in order.
fn declared_modules() -> Vec<String> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("src/lib.rs");
    lib.lines()
        .filter_map(|l| {
            let words: Vec<&str> = l.trim().strip_suffix(';')?.split_whitespace().collect();
            match words[..] {
                ["mod", name] => Some(name.to_string()),
                [vis, "mod", name] if vis.starts_with("pub") => Some(name.to_string()),
                _ => None,
            }
        })
        .collect()
}

/// Every `.rs` file of `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The files of top-level module `m`.
pub(super) fn module_files(m: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let single = src().join(format!("{m}.rs"));
    if single.exists() {
        files.push(single);
    }
    rust_files(&src().join(m), &mut files);
    files
}

/// The names that follow `prefix` (`crate::` or `super::`) in `text`, comment lines
/// skipped; a group `prefix{a, b::c}` names each of its first segments.
fn edges(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut rest = line;
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().last();
            rest = &rest[at + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            match rest.strip_prefix('{') {
                Some(group) => out.extend(group_heads(group)),
                None => out.extend(ident(rest)),
            }
        }
    }
    out
}

/// The identifier at the start of `s`, if any.
fn ident(s: &str) -> Option<String> {
    let name: String = s
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The first segment of each entry of a `{...}` group (`group` starts after the brace).
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let (mut depth, mut entry_start) = (0usize, true);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => entry_start = true,
            c if entry_start && !c.is_whitespace() => {
                entry_start = false;
                heads.extend(ident(&group[i..]));
            }
            _ => {}
        }
    }
    heads
}

/// Module name to the crate modules it imports.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    declared_modules()
        .into_iter()
        .map(|m| {
            let mut deps = BTreeSet::new();
            for f in module_files(&m) {
                let text = std::fs::read_to_string(&f).expect("source file");
                deps.extend(edges(&text, "crate::"));
            }
            deps.remove(&m);
            // The unit tests' skip (`#[cfg(test)] mod test_skip`) is not in the binary.
            deps.remove("test_skip");
            (m, deps)
        })
        .collect()
}

#[test]
fn the_checker_sees_imports() {
    let g = graph();
    // Private modules count as much as public ones.
    assert!(g["conn"].contains("http"), "{:?}", g["conn"]);
    assert!(
        g.contains_key("sys") && g.contains_key("master"),
        "{:?}",
        g.keys()
    );
    assert!(g["plan"].contains("topology"), "{:?}", g["plan"]);
    assert!(g["master"].contains("worker"), "{:?}", g["master"]);
    assert!(g["cmd"].contains("args"), "{:?}", g["cmd"]);
    let found = edges(
        "use crate::a::B;\n// crate::c\nlet x = $crate::d; crate::e!()",
        "crate::",
    );
    assert_eq!(found, ["a", "e"].map(String::from).into());
    let grouped = edges("use super::{x::{Y, Z}, w, self};", "super::");
    assert_eq!(grouped, ["self", "w", "x"].map(String::from).into());
    let bench = sibling_graph("bench");
    assert!(bench["ab"].contains("procs"), "{:?}", bench["ab"]);
    assert!(bench["ab"].contains("compare"), "{:?}", bench["ab"]);
    assert!(bench["compare"].contains("emit") || bench["compare"].contains("ministat"));
}

#[test]
fn every_import_points_to_a_module_declared_above() {
    let order = declared_modules();
    let rank = |m: &str| order.iter().position(|o| o == m);
    let mut wrong = Vec::new();
    for (m, deps) in graph() {
        for d in deps {
            match (rank(&m), rank(&d)) {
                (Some(a), Some(b)) if b < a => {}
                _ => wrong.push(format!("{m} -> {d}")),
            }
        }
    }
    assert!(wrong.is_empty(), "imports against lib.rs order: {wrong:?}");
}

#[test]
fn forbidden_edges_are_absent() {
    let forbidden: &[(&str, &[&str])] = &[
        ("sys", &["*"]),
        ("say", &["*"]),
        ("small_thread", &["*"]),
        ("cpuset", &["*"]),
        (
            "http",
            &["sys", "event", "timers", "access_log", "conn", "serve_loop"],
        ),
        ("topology", &["plan", "args"]),
        ("master", &["args"]),
        ("worker", &["args"]),
        ("serve_loop", &["args"]),
        ("conn", &["args", "serve_loop"]),
    ];
    // Plain values are made of plain values only: the configuration of the site rules,
    // the site rules of HTTP's grammar.
    let only: &[(&str, &[&str])] = &[("config", &["site"]), ("site", &["http"])];
    let g = graph();
    let mut wrong = Vec::new();
    for (m, bad) in forbidden {
        for d in &g[*m] {
            if bad.contains(&"*") || bad.contains(&d.as_str()) {
                wrong.push(format!("{m} -> {d}"));
            }
        }
    }
    for (m, allowed) in only {
        for d in &g[*m] {
            if !allowed.contains(&d.as_str()) {
                wrong.push(format!("{m} -> {d}"));
            }
        }
    }
    assert!(wrong.is_empty(), "forbidden imports: {wrong:?}");
}

/// The parts of folder module `dir` (its files `src/dir/NAME.rs` and its folders
/// `src/dir/NAME/`) and which parts each names, through `super::NAME` (in
/// `src/dir/NAME.rs`) or `crate::dir::NAME` (anywhere in the part).
fn sibling_graph(dir: &str) -> BTreeMap<String, BTreeSet<String>> {
    let base = src().join(dir);
    let mut names = BTreeSet::new();
    for e in std::fs::read_dir(&base).expect("module folder").flatten() {
        let p = e.path();
        let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        if p.is_dir() || (p.extension().is_some_and(|x| x == "rs") && stem != "mod") {
            names.insert(stem.to_string());
        }
    }
    let absolute = format!("crate::{}::", dir.replace('/', "::"));
    names
        .iter()
        .map(|name| {
            let file = base.join(format!("{name}.rs"));
            let mut deps = BTreeSet::new();
            if let Ok(text) = std::fs::read_to_string(&file) {
                deps.extend(edges(&text, "super::"));
                deps.extend(edges(&text, &absolute));
            }
            let mut inner = Vec::new();
            rust_files(&base.join(name), &mut inner);
            for f in inner {
                let text = std::fs::read_to_string(&f).expect("source file");
                deps.extend(edges(&text, &absolute));
            }
            deps.retain(|d| names.contains(d) && d != name);
            (name.clone(), deps)
        })
        .collect()
}

/// Every folder under `src/`, as a path relative to it (`bench`, `bench/ab`).
fn module_folders() -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let folders: BTreeSet<String> = files
        .iter()
        .filter_map(|f| {
            f.parent()?
                .strip_prefix(src())
                .ok()?
                .to_str()
                .map(String::from)
        })
        .filter(|d| !d.is_empty())
        .collect();
    folders.into_iter().collect()
}

/// A circle in `g`, if there is one, as the path that closes it.
fn circle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == n) {
            let mut c = path[at..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for d in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(d, g, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|n| visit(n, g, &mut Vec::new(), &mut done))
}

#[test]
fn no_two_sibling_files_import_each_other() {
    let folders = module_folders();
    for dir in ["sys", "cmd", "http", "topology", "bench", "bench/ab"] {
        assert!(folders.iter().any(|f| f == dir), "{dir} in {folders:?}");
    }
    for dir in &folders {
        let g = sibling_graph(dir);
        assert_eq!(circle(&g), None, "import circle in src/{dir}/");
    }
    let looped: BTreeMap<String, BTreeSet<String>> = [("a", "b"), ("b", "a")]
        .map(|(x, y)| (x.to_string(), [y.to_string()].into()))
        .into();
    assert!(
        circle(&looped).is_some(),
        "the circle finder finds a circle"
    );
}
