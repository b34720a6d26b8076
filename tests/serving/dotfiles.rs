//! `--dotfiles deny|allow` through the real binary on loopback sockets: by default a path
//! with a segment beginning with `.` (after percent-decoding) is answered exactly as a
//! missing file, with the error-page and fallback rules of a missing file;
//! `/.well-known/` is served; `--dotfiles allow` serves everything; an error page or
//! fallback that is a dotfile is refused before anything is bound.

use crate::support;

use std::path::Path;
use support::server::*;

/// A project directory as people run `steerd serve .` in: secrets beside the site.
fn project(tag: &str) -> TempDir {
    let dir = TempDir::new(tag);
    dir.write_all(&[
        ("index.html", "home\n"),
        ("404.html", "custom not found\n"),
        ("app.html", "single page app\n"),
        (".env", "SECRET=1\n"),
        (".git/config", "[core]\n"),
        (".git/index.html", "git index\n"),
        ("sub/.htpasswd", "admin:x\n"),
        ("sub/page.html", "sub page\n"),
        (".well-known/security.txt", "Contact: mailto:a@b\n"),
        (".well-known/.private", "no\n"),
    ]);
    dir
}

fn serve(root: &Path, args: &[&str]) -> Server {
    let mut all = vec!["--workers", "1"];
    all.extend_from_slice(args);
    Server::start_in(root, &all, &[])
}

const HIDDEN: [&str; 8] = [
    "/.env",
    "/.git/config",
    "/%2egit/config",
    "/%2Eenv",
    "/sub/.htpasswd",
    "/.git",
    "/.git/",
    "/.well-known/.private",
];

#[test]
fn dotfiles_are_missing_files_by_default() {
    let dir = project("dot-deny");
    let srv = serve(dir.path(), &[]);
    let missing = get(srv.addr, "/no-such-file");
    assert_eq!(missing.0, 404);
    for path in HIDDEN {
        assert_eq!(get(srv.addr, path), missing, "{path}: as a missing file");
    }
    assert_eq!(get(srv.addr, "/sub/page.html"), (200, "sub page\n".into()));
    assert_eq!(
        get(srv.addr, "/.well-known/security.txt"),
        (200, "Contact: mailto:a@b\n".into()),
        "RFC 8615's prefix is served"
    );
    assert_eq!(get(srv.addr, "/").0, 200);
}

#[test]
fn a_dotfile_gets_the_error_page_and_fallback_of_a_missing_file() {
    let dir = project("dot-pages");
    let srv = serve(dir.path(), &["--error-page", "404=/404.html"]);
    for path in HIDDEN {
        assert_eq!(
            get(srv.addr, path),
            (404, "custom not found\n".into()),
            "{path}"
        );
    }
    drop(srv);
    let srv = serve(
        dir.path(),
        &["--fallback", "/app.html", "--fallback-skip", "css"],
    );
    assert_eq!(get(srv.addr, "/.env"), (200, "single page app\n".into()));
    assert_eq!(get(srv.addr, "/.git/config"), get(srv.addr, "/deep/link"));
    assert_eq!(
        get(srv.addr, "/.theme.css").0,
        404,
        "--fallback-skip still applies"
    );
}

#[test]
fn dotfiles_allow_serves_them() {
    let dir = project("dot-allow");
    let srv = serve(dir.path(), &["--dotfiles", "allow"]);
    assert_eq!(get(srv.addr, "/.env"), (200, "SECRET=1\n".into()));
    assert_eq!(get(srv.addr, "/%2egit/config"), (200, "[core]\n".into()));
    assert_eq!(get(srv.addr, "/sub/.htpasswd"), (200, "admin:x\n".into()));
    assert_eq!(get(srv.addr, "/.git/"), (200, "git index\n".into()));
    assert_eq!(get(srv.addr, "/.git").0, 301);
}

#[test]
fn a_dotfile_page_is_refused_before_binding() {
    let dir = project("dot-check");
    std::fs::write(dir.path().join(".404.html"), "hidden page\n").unwrap();
    let root = dir.path().to_str().unwrap();
    for (sub, flag, value) in [
        ("check", "--error-page", "404=/.404.html"),
        ("serve", "--error-page", "404=/.404.html"),
        ("check", "--fallback", "/.git/index.html"),
    ] {
        let (code, out) = run_to_exit(std::process::Command::new(binary()).args([
            sub,
            root,
            "--listen",
            "127.0.0.1:0",
            flag,
            value,
        ]));
        assert_eq!(code, 2, "{sub} {flag} {value}: {out}");
        assert!(
            out.contains("a dotfile, which --dotfiles deny (the default) never serves"),
            "{out}"
        );
    }
    let (code, out) = run_to_exit(std::process::Command::new(binary()).args([
        "check",
        root,
        "--error-page",
        "404=/.404.html",
        "--dotfiles",
        "allow",
    ]));
    assert_eq!(code, 0, "{out}");
}
