//! `steerd bench`'s figures through the real binary and a real browser: `bench ab
//! --report FILE.html --svg FILE.svg` of two steerd servers (`--steer hash` against
//! `--steer cpu`, 2 short rounds) and `bench load --svg FILE.svg`; headless Chromium opens
//! each file without a parse error or a script error, and its DOM holds both CDF curves,
//! the percentile marks, the per-round series, the ratio band and the verdict lines.

use crate::support;

use std::path::Path;
use std::process::Command;
use support::chromium::{chromium, file_url, load, tags_with};
use support::free_port;
use support::server::{binary, TempDir};

/// Runs `steerd ARGS`; its stdout, after checking it succeeded.
fn steerd(args: &[String]) -> String {
    let out = Command::new(binary())
        .args(args)
        .output()
        .expect("run steerd");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// The DOM Chromium made of `path`, checked for parse and script errors.
fn dom_of(path: &Path) -> String {
    let page = load(&file_url(path), (960, 900), 1_000, None);
    assert!(
        !page.dom.contains("<parsererror"),
        "{} does not parse:\n{}",
        path.display(),
        page.dom
    );
    assert!(
        page.script_errors().is_empty(),
        "{:?}",
        page.script_errors()
    );
    page.dom
}

fn has_all(dom: &str, wants: &[&str]) {
    for want in wants {
        assert!(dom.contains(want), "missing {want:?}");
    }
}

#[test]
fn ab_report_and_figure_open_in_a_browser_with_curves_and_labels() {
    if chromium("ab_report_and_figure_open_in_a_browser_with_curves_and_labels").is_none() {
        return;
    }
    let dir = TempDir::new("figures");
    std::fs::write(dir.path().join("index.html"), b"hello\n").unwrap();
    let (report, svg) = (dir.path().join("ab.html"), dir.path().join("ab.svg"));
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let server = |steer: &str| {
        let root = dir.path().display().to_string();
        [
            binary(),
            "serve",
            &root,
            "--listen",
            &listen,
            "--steer",
            steer,
        ]
        .map(String::from)
    };
    let mut args: Vec<String> = [
        "bench", "ab", "--rounds", "2", "--warmup", "200ms", "-d", "500ms",
    ]
    .map(String::from)
    .to_vec();
    args.extend(["-c", "2", "--close", "--report"].map(String::from));
    args.push(report.display().to_string());
    args.push("--svg".into());
    args.push(svg.display().to_string());
    args.push(format!("http://{listen}/index.html"));
    args.push("--".into());
    args.extend(server("hash"));
    args.push("--".into());
    args.extend(server("cpu"));
    let text = steerd(&args);
    let figure = dom_of(&svg);
    has_all(
        &figure,
        &[
            "class=\"cdf a\"",
            "class=\"cdf b\"",
            "class=\"rounds a\"",
            "class=\"rounds b\"",
            "class=\"ratio b\"",
            ">p50</text>",
            ">p99</text>",
            ">p99.9</text>",
            "latency (log scale)",
            "requests/s per round",
            "B/A of requests/s per round",
            "--steer hash</text>",
            "--steer cpu</text>",
        ],
    );
    // Two rounds give a ratio interval, drawn as the band; each curve has 105 points.
    assert_eq!(tags_with(&figure, "class=\"band\"").len(), 1);
    for curve in tags_with(&figure, "class=\"cdf ") {
        assert_eq!(curve.matches(',').count(), 105, "{curve}");
    }
    // The verdict lines of req/s are the ones the text output printed.
    let requests = text.split("== requests/s").nth(1).expect("req/s summary");
    let verdict: Vec<&str> = requests
        .lines()
        .skip(4)
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(
        verdict.len() >= 3,
        "t test, ratio and permutation lines: {verdict:?}"
    );
    for line in verdict {
        let escaped = line
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        assert!(
            figure.contains(&format!(">{escaped}</text>")),
            "verdict line {line:?}"
        );
    }
    let html = dom_of(&report);
    assert!(
        html.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""),
        "figure inline"
    );
    has_all(
        &html,
        &[
            "class=\"cdf a\"",
            "class=\"cdf b\"",
            "round 2 B:",
            "== p99 latency (us)",
        ],
    );
}

#[test]
fn load_figure_opens_in_a_browser_with_one_curve() {
    if chromium("load_figure_opens_in_a_browser_with_one_curve").is_none() {
        return;
    }
    let server = support::server::Server::start(&[]);
    let dir = TempDir::new("load-figure");
    let svg = dir.path().join("load.svg");
    let url = format!("http://{}/index.html", server.addr);
    let args = [
        "bench", "load", &url, "-d", "300ms", "-c", "2", "-t", "1", "--svg",
    ];
    let mut args: Vec<String> = args.map(String::from).to_vec();
    args.push(svg.display().to_string());
    steerd(&args);
    let figure = dom_of(&svg);
    has_all(
        &figure,
        &[
            "class=\"cdf a\"",
            ">p99.9</text>",
            "steerd bench load: http://",
        ],
    );
    assert!(!figure.contains("class=\"cdf b\""));
}

#[test]
fn an_unwritable_figure_path_fails_before_the_load() {
    let out = Command::new(binary())
        .args([
            "bench",
            "load",
            "http://127.0.0.1:9/",
            "-d",
            "30s",
            "--svg",
            "/nonexistent/dir/x.svg",
        ])
        .output()
        .expect("run steerd");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/dir/x.svg: "), "{err}");
}
