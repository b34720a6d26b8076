//! `--config FILE` (and `STEERD_CONFIG`) through the real binary: a site served from the
//! file, precedence against flags, `FILE:LINE` errors, and HUP reading the file again
//! (a changed file serves at once; a broken one is refused in one line naming
//! `FILE:LINE` while the old workers serve on; a setting that needs new listeners is
//! refused by name).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use support::client::get;
use support::server::{binary, run_steerd, wait_for_new_pid, wait_until, Server, TempDir};

/// A site and, beside it, its configuration file `site.conf` holding `lines`.
fn site_with(tag: &str, lines: &str) -> (TempDir, PathBuf) {
    let dir = TempDir::new(tag);
    dir.write_all(&[
        ("www/index.html", "home\n"),
        ("www/about.html", "about page\n"),
        ("www/app/index.html", "spa shell\n"),
    ]);
    let conf = dir.path().join("site.conf");
    std::fs::write(
        &conf,
        format!("root {}\n{lines}", dir.path().join("www").display()),
    )
    .unwrap();
    (dir, conf)
}

/// `steerd serve --config FILE --listen 127.0.0.1:0 ARGS` (no ROOT on the command line).
fn serve(conf: &Path, args: &[&str]) -> Server {
    let mut cmd = Command::new(binary());
    cmd.args(["serve", "--config"]).arg(conf);
    cmd.args(["--listen", "127.0.0.1:0"]).args(args);
    Server::spawn(&mut cmd)
}

#[test]
fn a_site_is_served_from_its_file() {
    let (_dir, conf) = site_with(
        "conf-serve",
        "# moved pages\n\
         redirect /old/** /new/$1 308\n\
         \n\
         rewrite /app/** /app/index.html\n\
         try-ext html\n\
         header X-Frame-Options: DENY\n\
         header X-Note: #not-a-comment\n\
         workers 1\n",
    );
    let srv = serve(&conf, &[]);
    let r = get(srv.addr, "/old/a?x=1", "");
    assert_eq!((r.status, r.header("location")), (308, Some("/new/a?x=1")));
    let r = get(srv.addr, "/about", "");
    assert_eq!((r.status, r.text()), (200, "about page\n".into()));
    assert_eq!(r.header("x-frame-options"), Some("DENY"));
    assert_eq!(r.header("x-note"), Some("#not-a-comment"));
    assert_eq!(get(srv.addr, "/app/x/y", "").text(), "spa shell\n");
}

#[test]
fn steerd_config_names_the_file_and_flags_win() {
    let (_dir, conf) = site_with("conf-env", "workers 1\nheader X-From: file\n");
    let mut cmd = Command::new(binary());
    cmd.env("STEERD_CONFIG", &conf);
    cmd.args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--header",
        "X-From: flag",
    ]);
    let srv = Server::spawn(&mut cmd);
    let r = get(srv.addr, "/about.html", "");
    assert_eq!(
        (r.status, r.header("x-from")),
        (200, Some("flag")),
        "{:?}",
        r.headers
    );
}

#[test]
fn check_names_each_value_source() {
    let (_dir, conf) = site_with("conf-json", "workers 2\nheader X-A: 1\n");
    let conf_s = conf.to_str().unwrap();
    let out = run_steerd(
        &["check", "--config", conf_s, "--workers", "1", "--json"],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let src = &v["sources"];
    assert_eq!(src["--workers"], "command line", "{src}");
    assert_eq!(src["--header"], format!("file {conf_s}:3"), "{src}");
    assert_eq!(src["--config"], "command line");
    assert_eq!(src["--max-conns"], "default");
}

#[test]
fn check_config_refuses_with_file_and_line() {
    for (lines, needle) in [
        ("workers 1\nbogus on\n", ":3: unknown setting \"bogus\""),
        (
            "workers 1\nworkers 2\n",
            ":3: a second value for workers (first at ",
        ),
        (
            "redirect /a /b 299\n",
            ":2: --redirect \"/a /b 299\": CODE \"299\"",
        ),
        (
            "rewrite /x /../etc/passwd\n",
            ":2: --rewrite \"/x /../etc/passwd\": TO leaves the root",
        ),
        ("list-dirs please\n", ":2: list-dirs is a switch"),
    ] {
        let (_dir, conf) = site_with("conf-bad", lines);
        let out = run_steerd(&["check", "--config", conf.to_str().unwrap()], b"");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{lines:?}: {err}");
        let want = format!("steerd: args: {}{needle}", conf.display());
        assert!(err.starts_with(&want), "{lines:?}: {err}");
    }
    let out = run_steerd(&["check", "--config", "/nonexistent/site.conf"], b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/nonexistent/site.conf: No such file"),
        "{err}"
    );
}

#[test]
fn hup_serves_the_changed_file_and_keeps_serving_through_a_broken_one() {
    let (_dir, conf) = site_with("conf-hup", "workers 1\nredirect /old /about.html\n");
    let srv = serve(&conf, &["--metrics", "127.0.0.1:0"]);
    srv.wait_healthy();
    let at = |p: &str| get(srv.addr, p, "").header("location").map(str::to_string);
    assert_eq!(at("/old").as_deref(), Some("/about.html"));
    // A changed file: the next generation serves it.
    let root = conf.parent().unwrap().join("www");
    let text = format!(
        "root {}\nworkers 1\nredirect /old /new.html 302\n",
        root.display()
    );
    std::fs::write(&conf, text).unwrap();
    let before = srv.worker_pids();
    srv.signal(libc::SIGHUP);
    wait_for_new_pid(&srv, 0, before[0]);
    wait_until("the new rule answers", || {
        at("/old").as_deref() == Some("/new.html")
    });
    // A broken file: one line naming FILE:LINE; the workers serve on with the old rules.
    let serving = srv.worker_pids();
    let broken = format!("root {}\nworkers 1\nredirect /old\n", root.display());
    std::fs::write(&conf, broken).unwrap();
    srv.signal(libc::SIGHUP);
    let line = srv.wait_line(|l| l.contains("reload: ") && l.contains("keeping the running"));
    let want = format!(
        "{}:3: --redirect \"/old\": expected FROM TO [CODE]",
        conf.display()
    );
    assert!(line.contains(&want), "{line}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(srv.worker_pids(), serving, "no worker was replaced");
    assert_eq!(
        at("/old").as_deref(),
        Some("/new.html"),
        "the old site serves on"
    );
    // A setting only new listeners could apply is refused by name.
    std::fs::write(&conf, format!("root {}\nworkers 2\n", root.display())).unwrap();
    srv.signal(libc::SIGHUP);
    let line = srv.wait_line(|l| l.contains("reload: workers changed"));
    assert!(line.ends_with("keeping the running workers"), "{line}");
    assert_eq!(srv.worker_pids(), serving);
}

/// A file whose rules show every warning `check` gives about rules.
const WARNED: &str = "header X-Frame-Options: DENY\n\
                      cache-control **/*.html=no-cache\n\
                      redirect /old/** /new/$1\n\
                      redirect /a /b 302\n\
                      redirect /b /a 302\n\
                      rewrite /app/** /app/index.html\n\
                      redirect /app/x /never\n\
                      try-ext html\n";

#[test]
fn check_warns_of_shadowed_rules_loops_and_files() {
    let (dir, conf) = site_with("conf-warn", WARNED);
    dir.write_all(&[("www/old/page.html", "old\n")]);
    let c = conf.display();
    let out = run_steerd(&["check", "--config", conf.to_str().unwrap()], b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    for line in [
        format!("steerd: warning: rules: {c}:8 (/app/x) never matches: {c}:7 (/app/**) answers every path it would"),
        format!(
            "steerd: warning: rules: {c}:5 (/a) is in a redirect loop: {c}:5 (/a) -> {c}:6 (/b) -> {c}:5 (/a)"
        ),
        format!("steerd: warning: rules: {c}:4 (/old/**) shadows the file /old/page.html (and 0 more): the rule answers instead"),
    ] {
        assert!(err.lines().any(|l| l == line), "{line}\nin\n{err}");
    }
    assert!(
        !err.contains("shadows the file /app/index.html"),
        "a rewrite to itself: {err}"
    );
}

#[test]
fn check_explains_what_answers_a_path() {
    let (_dir, conf) = site_with("conf-explain", WARNED);
    let c = conf.display();
    let explain = |path: &str| {
        let out = run_steerd(
            &[
                "check",
                "--config",
                conf.to_str().unwrap(),
                "--explain",
                path,
            ],
            b"",
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(
        explain("/old/x.html?q=1"),
        format!(
            "path: /old/x.html\nrule: {c}:4 (redirect /old/**)\n\
             answer: 301, Location: /new/x.html?q=1\nheader: X-Frame-Options: DENY\n"
        )
    );
    assert_eq!(
        explain("/app/settings"),
        format!(
            "path: /app/settings\nrule: {c}:7 (rewrite /app/** to /app/index.html)\n\
             file: /app/index.html (text/html; charset=utf-8, 10 bytes)\nanswer: 200\n\
             header: X-Frame-Options: DENY\ncache-control: Cache-Control: no-cache\n"
        )
    );
    assert!(explain("/about").contains("rule: none\ntry-ext: /about.html\nfile: /about.html"));
    assert_eq!(
        explain("/nothing"),
        "path: /nothing\nrule: none\nanswer: 404\n"
    );
    let flag = run_steerd(
        &["check", "--redirect", "/x /y 307", "--explain", "/x"],
        b"",
    );
    let text = String::from_utf8_lossy(&flag.stdout);
    assert!(
        text.contains("rule: --redirect /x /y 307 (redirect /x)\nanswer: 307, Location: /y\n"),
        "{text}"
    );
}

/// The example file of docs/serving.md ("A typical site") is one `check` accepts, with
/// its root and log moved to a test directory.
#[test]
fn the_documented_example_file_passes_check() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/serving.md"))
            .unwrap();
    let start = doc
        .find("# /etc/steerd/site.conf\n")
        .expect("the example in docs/serving.md");
    let text = &doc[start..start + doc[start..].find("```").unwrap()];
    let dir = TempDir::new("conf-doc");
    dir.write_all(&[
        ("www/404.html", "gone\n"),
        ("www/app/index.html", "shell\n"),
    ]);
    let (www, log) = (dir.path().join("www"), dir.path().join("access.log"));
    let text = text
        .replace("/srv/www", www.to_str().unwrap())
        .replace("/var/log/steerd/access.log", log.to_str().unwrap())
        .replace("127.0.0.1:8080", "127.0.0.1:0");
    let conf = dir.path().join("site.conf");
    std::fs::write(&conf, &text).unwrap();
    let out = run_steerd(&["check", "--config", conf.to_str().unwrap()], b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}\n{err}");
    let explain = run_steerd(
        &[
            "check",
            "--config",
            conf.to_str().unwrap(),
            "--explain",
            "/blog/2019/hello.html",
        ],
        b"",
    );
    let said = String::from_utf8_lossy(&explain.stdout);
    assert!(
        said.contains(
            "site.conf:12 (redirect /blog/*/*.html)\nanswer: 301, Location: /posts/hello\n"
        ),
        "{said}"
    );
}
