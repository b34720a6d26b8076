//! A host block's own files, through the real binary: `basic-auth` (with its realm and
//! its skipped paths), `mime-types` and `compress-cache`, which the master reads (or, for
//! the cache directory, checks) for each host. One host's users are let in on that host
//! only, a host without `basic-auth` is open, a HUP reads a host's htpasswd file again,
//! `check` names the host of a bad file, and `--explain-host` shows a host's auth.

use super::basic_auth::{basic, patiently, ANN, BOB};
use super::hosts::{conf, explain, get_as, path_of, two_roots};
use crate::support;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use support::client::{exchange, Response};
use support::server::{binary, run_steerd, wait_for_new_pid, wait_until, Server, TempDir};

/// `GET path` on `host` with the `Authorization` line `auth` (may be empty), asked again
/// after a 429 of the hash budget.
fn ask(addr: SocketAddr, host: &str, path: &str, auth: &str) -> Response {
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n");
    patiently(&mut 0, || exchange(addr, &request))
}

/// Two roots, an htpasswd file for bob and one for ann, a media types file, and a
/// configuration where a.test has bob's file, its realm, a skipped path and its media
/// types, b.test has none of them and c.test has ann's file.
fn three_hosts(tag: &str) -> (TempDir, PathBuf) {
    let dir = two_roots(tag);
    let (bob, ann) = (format!("{BOB}\n"), format!("{ANN}\n"));
    dir.write_all(&[
        ("bob.htpasswd", bob.as_str()),
        ("ann.htpasswd", ann.as_str()),
        ("a.types", "text/x-note note\n"),
        ("a/readme.note", "a note\n"),
        ("b/readme.note", "b note\n"),
    ]);
    let file = conf(
        &dir,
        &format!(
            "workers 1\n\
             host a.test\nroot {}\nbasic-auth {}\nbasic-auth-realm Realm A\n\
             basic-auth-skip /index.html\nmime-types {}\n\
             host b.test\nroot {}\n\
             host c.test\nroot {}\nbasic-auth {}\n",
            path_of(&dir, "a"),
            path_of(&dir, "bob.htpasswd"),
            path_of(&dir, "a.types"),
            path_of(&dir, "b"),
            path_of(&dir, "b"),
            path_of(&dir, "ann.htpasswd"),
        ),
    );
    (dir, file)
}

#[test]
fn each_host_has_its_own_users_and_media_types() {
    let (dir, file) = three_hosts("host-files-auth");
    let srv = {
        let mut cmd = Command::new(binary());
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&file);
        Server::spawn(&mut cmd)
    };
    let (bob, ann) = (basic("bob", "U*U"), basic("ann", "Hello world!"));
    let a = ask(srv.addr, "a.test", "/same.txt", "");
    assert_eq!(a.status, 401);
    let challenge = a.header("www-authenticate").unwrap_or_default();
    assert!(challenge.contains("realm=\"Realm A\""), "{challenge}");
    assert_eq!(
        ask(srv.addr, "a.test", "/index.html", "").status,
        200,
        "skipped"
    );
    assert_eq!(
        ask(srv.addr, "a.test", "/same.txt", &bob).text(),
        "from a\n"
    );
    // bob's login is remembered by this worker: on c.test it must still be refused.
    assert_eq!(ask(srv.addr, "c.test", "/same.txt", &bob).status, 401);
    assert_eq!(ask(srv.addr, "a.test", "/same.txt", &ann).status, 401);
    let c = ask(srv.addr, "c.test", "/same.txt", &ann);
    assert_eq!((c.status, c.text()), (200, "from b, longer\n".into()));
    let b = get_as(srv.addr, "b.test", "/same.txt");
    assert_eq!((b.status, b.header("www-authenticate")), (200, None));
    let note = |host: &str, auth: &str| {
        let r = ask(srv.addr, host, "/readme.note", auth);
        assert_eq!(r.status, 200, "{host}");
        r.header("content-type").unwrap_or_default().to_string()
    };
    assert!(note("a.test", &bob).starts_with("text/x-note"));
    assert!(!note("b.test", "").starts_with("text/x-note"), "a's types");
    // A HUP reads c's file again: bob is one of c's users from the next generation on.
    std::fs::write(dir.path().join("ann.htpasswd"), format!("{BOB}\n")).unwrap();
    let before = srv.worker_pids();
    srv.signal(libc::SIGHUP);
    wait_for_new_pid(&srv, 0, before[0]);
    wait_until("c.test lets bob in", || {
        ask(srv.addr, "c.test", "/same.txt", &bob).status == 200
    });
    assert_eq!(ask(srv.addr, "c.test", "/same.txt", &ann).status, 401);
    assert_eq!(get_as(srv.addr, "b.test", "/same.txt").status, 200);
}

#[test]
fn check_names_the_host_of_a_bad_file_and_explains_its_auth() {
    let (dir, file) = three_hosts("host-files-check");
    let explain = |host: &str, path: &str| explain(&file, host, path);
    let a = explain("a.test", "/same.txt");
    let bob_file = path_of(&dir, "bob.htpasswd");
    assert!(a.contains(&format!("auth: {bob_file}\n")), "{a}");
    let skipped = explain("a.test", "/index.html");
    assert!(
        skipped.contains("(not for this path: basic-auth-skip)"),
        "{skipped}"
    );
    assert!(!explain("b.test", "/same.txt").contains("auth:"));
    let c = explain("c.test", "/same.txt");
    assert!(c.contains(&path_of(&dir, "ann.htpasswd")), "{c}");
    for (line, needle) in [
        (
            "basic-auth /nonexistent/htpasswd",
            "--basic-auth /nonexistent/htpasswd",
        ),
        (
            "mime-types /nonexistent/types",
            "--mime-types /nonexistent/types",
        ),
        (
            "compress-cache /nonexistent/dir",
            "--compress-cache /nonexistent/dir",
        ),
    ] {
        let bad = conf(
            &dir,
            &format!("host a.test\nroot {}\n{line}\n", path_of(&dir, "a")),
        );
        let out = run_steerd(&["check", "--config", bad.to_str().unwrap()], b"");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{line}: {err}");
        let host = format!("host a.test ({}:1): {needle}", bad.display());
        assert!(err.contains(&host), "{line}: {err}");
    }
}
