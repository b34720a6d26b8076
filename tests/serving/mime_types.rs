//! Media types through the real binary: the built-in table (held against nginx's own
//! `/etc/nginx/mime.types`), `--mime-types FILE` over it (Debian's `/etc/mime.types`
//! among them) and `--mime` over both, a bad file refused by `check` and `serve` with its
//! line, and a reload that reads the file again (and keeps the running workers when it
//! is bad).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use support::client::get;
use support::server::{binary, run_to_exit, wait_for_new_pid, Server, TempDir};

/// Where Debian's `nginx-common` installs nginx's list (`.ci/run` installs it).
const NGINX_TYPES: &str = "/etc/nginx/mime.types";

/// Where nginx's type for an extension deliberately differs from steerd's built-in one
/// (`src/site/mime/table.rs` says why), besides the charset every `text/*` type carries.
const DIFFERENT: [(&str, &str); 3] = [
    ("js", "text/javascript; charset=utf-8"),
    ("xml", "application/xml"),
    ("bmp", "image/bmp"),
];

/// (extension, type) of every line of nginx's `types { TYPE EXT ...; }` block.
fn nginx_types(text: &str) -> Vec<(String, String)> {
    let body = text.split_once('{').map_or("", |(_, b)| b);
    let body = body.rsplit_once('}').map_or(body, |(b, _)| b);
    let mut out = Vec::new();
    for entry in body.split(';') {
        let mut words = entry.split_whitespace();
        let Some(media_type) = words.next() else {
            continue;
        };
        out.extend(words.map(|e| (e.to_string(), media_type.to_string())));
    }
    out
}

#[test]
fn the_built_in_table_agrees_with_nginx() {
    let Ok(text) = std::fs::read_to_string(NGINX_TYPES) else {
        return support::skip::skip_or_fail(
            "the_built_in_table_agrees_with_nginx",
            &format!("{NGINX_TYPES} is missing (Debian package nginx-common)"),
        );
    };
    let types = nginx_types(&text);
    assert!(
        types.len() > 100,
        "{NGINX_TYPES}: {} extensions",
        types.len()
    );
    for (ext, theirs) in &types {
        let ours = steerd::site::mime::for_path(format!("/f.{ext}").as_bytes());
        let ours = String::from_utf8_lossy(ours);
        let want = match DIFFERENT.iter().find(|(e, _)| e == ext) {
            Some((_, differs)) => differs.to_string(),
            None if theirs.starts_with("text/") => format!("{theirs}; charset=utf-8"),
            None => theirs.clone(),
        };
        assert_eq!(ours, want, ".{ext}: nginx says {theirs}");
    }
}

/// Debian's `/etc/mime.types` (package `media-types`), the format's reference, loads
/// whole: its compound extensions (`cwl.json`) are accepted, and what it says is served.
#[test]
fn debians_mime_types_file_loads() {
    let path = "/etc/mime.types";
    if !Path::new(path).exists() {
        return support::skip::skip_or_fail(
            "debians_mime_types_file_loads",
            &format!("{path} is missing (Debian package media-types)"),
        );
    }
    let root = site("mime-debian");
    let srv = Server::start_in(root.path(), &["--workers", "1", "--mime-types", path], &[]);
    assert_eq!(content_type(&srv, "/subs.vtt"), "text/vtt; charset=utf-8");
    assert_eq!(content_type(&srv, "/x.unknown"), "application/octet-stream");
}

/// A site with a file of each extension the tests ask for, and the server on it.
fn site(name: &str) -> TempDir {
    let dir = TempDir::new(name);
    for f in [
        "subs.vtt",
        "clip.ts",
        "page.md",
        "data.toml",
        "app.js",
        "x.unknown",
    ] {
        std::fs::write(dir.path().join(f), b"content\n").unwrap();
    }
    dir
}

fn content_type(srv: &Server, path: &str) -> String {
    let r = get(srv.addr, path, "");
    assert_eq!(r.status, 200, "{path}");
    r.header("content-type").unwrap_or("").to_string()
}

fn types_file(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("steerd.types");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_vtt_file_is_served_as_text_vtt() {
    let root = site("mime-vtt");
    let srv = Server::start_in(root.path(), &["--workers", "1"], &[]);
    assert_eq!(content_type(&srv, "/subs.vtt"), "text/vtt; charset=utf-8");
    assert_eq!(content_type(&srv, "/clip.ts"), "video/mp2t");
    assert_eq!(content_type(&srv, "/x.unknown"), "application/octet-stream");
}

#[test]
fn the_file_overrides_the_table_and_mime_overrides_the_file() {
    let root = site("mime-file");
    let conf = TempDir::new("mime-file-conf");
    let file = types_file(
        conf.path(),
        "# the operator's types\n\
         application/typescript  ts tsx\n\
         text/markdown           md\n\
         application/x-toml      toml\n\
         video/mp2t              ts\n",
    );
    let file = file.to_str().unwrap();
    let args = [
        "--workers",
        "1",
        "--mime-types",
        file,
        "--mime",
        "md=text/x-web",
    ];
    let srv = Server::start_in(root.path(), &args, &[]);
    // The file over the built-in table (the first line of `ts` wins)...
    assert_eq!(content_type(&srv, "/clip.ts"), "application/typescript");
    assert_eq!(content_type(&srv, "/data.toml"), "application/x-toml");
    // ...`--mime` over the file, and the table for what neither names.
    assert_eq!(content_type(&srv, "/page.md"), "text/x-web");
    assert_eq!(
        content_type(&srv, "/app.js"),
        "text/javascript; charset=utf-8"
    );
}

#[test]
fn a_bad_file_is_refused_by_check_and_serve_with_its_line() {
    let root = site("mime-bad");
    let conf = TempDir::new("mime-bad-conf");
    let bad = types_file(conf.path(), "# fine\ntext/vtt vtt\n\ntypes {\n");
    let missing = conf.path().join("missing.types");
    let cases = [
        (
            &bad,
            format!("{}:4: \"types\" is not a media type", bad.display()),
        ),
        (
            &missing,
            format!("{}: No such file or directory", missing.display()),
        ),
    ];
    for (file, want) in &cases {
        for cmd in ["check", "serve"] {
            let (code, err) = run_to_exit(
                Command::new(binary())
                    .arg(cmd)
                    .arg(root.path())
                    .args(["--listen", "127.0.0.1:0", "--workers", "1"])
                    .arg("--mime-types")
                    .arg(file),
            );
            assert_eq!(code, 1, "{cmd}: {err}");
            let line = err
                .lines()
                .find(|l| l.contains("--mime-types"))
                .unwrap_or_else(|| panic!("{cmd}: no line names --mime-types: {err}"));
            assert!(
                line.starts_with(&format!("steerd: site: --mime-types {want}")),
                "{cmd}: {line}"
            );
        }
    }
}

#[test]
fn a_reload_reads_the_file_again_and_keeps_the_workers_when_it_is_bad() {
    let root = site("mime-reload");
    let conf = TempDir::new("mime-reload-conf");
    let file = types_file(conf.path(), "text/x-first vtt\n");
    let args = [
        "--workers",
        "1",
        "--metrics",
        "127.0.0.1:0",
        "--mime-types",
        file.to_str().unwrap(),
    ];
    let srv = Server::start_in(root.path(), &args, &[]);
    srv.wait_healthy();
    let first = "text/x-first; charset=utf-8";
    assert_eq!(content_type(&srv, "/subs.vtt"), first);
    // A bad line: the reload is refused in one line naming it; the worker stays.
    let before = srv.worker_pids();
    std::fs::write(&file, "text/x-second vtt\nvideo mp4\n").unwrap();
    srv.signal(libc::SIGHUP);
    let line = srv.wait_line(|l| l.contains("reload: site: --mime-types"));
    assert_eq!(
        line,
        format!(
            "steerd: reload: site: --mime-types {}:2: \"video\" is not a media type \
             (expected TYPE EXT..., such as text/vtt vtt); keeping the running workers",
            file.display()
        )
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(srv.worker_pids(), before, "no worker was replaced");
    assert_eq!(content_type(&srv, "/subs.vtt"), first, "the old types stay");
    // Fixed: the next reload serves what the file says now.
    std::fs::write(&file, "text/x-second vtt\n").unwrap();
    srv.signal(libc::SIGHUP);
    wait_for_new_pid(&srv, 0, before[0]);
    srv.wait_healthy();
    support::server::wait_until("the new worker serves the new type", || {
        content_type(&srv, "/subs.vtt") == "text/x-second; charset=utf-8"
    });
}
