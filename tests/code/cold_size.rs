//! The request path is never compiled for size: no file of the modules a request runs
//! through carries the `cold-size` attribute (`#[cfg_attr(feature = "cold-size",
//! optimize(size))]`, docs/design.md "Cold code compiled for size, in place"), and the
//! attribute is in use where the appliance build counts on it.
//!
//! Input: the source files. Output: a failing test naming the file and line.

use super::layers::module_files;

/// The modules a request runs through, from accept to the log line.
const REQUEST_PATH: &[&str] = &[
    "http",
    "files",
    "listing",
    "client_addr",
    "auth",
    "log_line",
    "event",
    "timers",
    "access_log",
    "disk",
    "conn",
    "serve_loop",
    "deflate",
];

const MARK: &str = "feature = \"cold-size\"";

/// `(file:line, text)` of every line of module `m` that names the feature.
fn marked_lines(m: &str) -> Vec<String> {
    let mut out = Vec::new();
    for f in module_files(m) {
        let text = std::fs::read_to_string(&f).expect("a source file");
        for (i, line) in text.lines().enumerate() {
            if line.contains(MARK) {
                out.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    out
}

#[test]
fn no_request_path_module_is_compiled_for_size() {
    let marked: Vec<String> = REQUEST_PATH.iter().flat_map(|m| marked_lines(m)).collect();
    assert!(
        marked.is_empty(),
        "request path code marked cold-size:\n{}",
        marked.join("\n")
    );
}

#[test]
fn the_cold_tools_are_compiled_for_size() {
    for m in ["cmd", "bench", "args", "master"] {
        assert!(!marked_lines(m).is_empty(), "{m}: no cold-size function");
    }
}
