//! Start-up that fails fast: what a worker needs (the root, the pages and the access log,
//! also as the `--user` the workers run as, the `--user` itself) and the `--mime-types`
//! file (also as that user, as a reload reads it) is checked by the master before it
//! binds and prints `listening on`; each failure is one line and a non-zero exit with
//! nothing left running. Also: a word where ROOT is expected that is not a directory, a
//! flag given twice, and the number the open-files warning gives.

use crate::support;

use std::process::Command;
use std::time::{Duration, Instant};
use support::server::*;

/// Runs `steerd ARGS` until it exits (bounded): exit code and stderr.
fn run(args: &[&str]) -> (i32, String) {
    run_to_exit(Command::new(binary()).args(args))
}

/// The failure is one line, and nothing was bound or started before it.
fn fails_before_binding(args: &[&str], stage_and_text: &str) {
    let (code, err) = run(args);
    assert_ne!(code, 0, "{args:?}: {err}");
    assert!(!err.contains("listening on"), "{args:?} bound first: {err}");
    assert!(
        !err.contains("running on cpu"),
        "{args:?} started workers: {err}"
    );
    assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
    assert!(err.contains(stage_and_text), "{args:?}: {err}");
}

#[test]
fn a_word_that_is_not_a_directory_fails_before_binding() {
    fails_before_binding(
        &["bogus", "--listen", "127.0.0.1:0"],
        "steerd: root: bogus: No such file or directory",
    );
    let dir = TempDir::new("startup");
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    fails_before_binding(
        &[
            "serve",
            &file.display().to_string(),
            "--listen",
            "127.0.0.1:0",
        ],
        "Not a directory",
    );
}

#[test]
fn an_unknown_user_fails_before_binding() {
    let root = TempDir::new("startup");
    fails_before_binding(
        &[
            "serve",
            &root.path().display().to_string(),
            "--listen",
            "127.0.0.1:0",
            "--user",
            "no-such-user-steerd",
        ],
        "steerd: user: user \"no-such-user-steerd\" is not in /etc/passwd",
    );
}

#[test]
fn an_access_log_the_user_cannot_open_fails_before_binding() {
    let root = TempDir::new("startup");
    let logs = TempDir::new("startup-logs");
    let log = logs.path().join("access.log");
    let log = log.display().to_string();
    let root = root.path().display().to_string();
    // In a directory that does not exist: no one can open it.
    let closed = TempDir::new("startup-closed");
    let closed_log = closed.path().join("missing").join("access.log");
    fails_before_binding(
        &[
            "serve",
            &root,
            "--listen",
            "127.0.0.1:0",
            "--access-log",
            &closed_log.display().to_string(),
        ],
        "steerd: access-log: ",
    );
    if !can_become_nobody() {
        crate::support::skip::skip_or_fail(
            &format!("{} (the --user part)", crate::support::skip::this_test()),
            "needs root and a user nobody",
        );
        return;
    }
    // Writable by root only (0755, owned by root): the master could open it, the workers
    // (nobody) could not.
    fails_before_binding(
        &[
            "serve",
            &root,
            "--listen",
            "127.0.0.1:0",
            "--user",
            "nobody",
            "--access-log",
            &log,
        ],
        "cannot be opened as uid 65534: Permission denied",
    );
    assert!(
        !std::path::Path::new(&log).exists(),
        "nothing created as root"
    );
    // The same path is fine without --user.
    let server = Server::spawn(Command::new(binary()).args([
        "serve",
        &root,
        "--listen",
        "127.0.0.1:0",
        "--access-log",
        &log,
        "--workers",
        "1",
    ]));
    drop(server);
}

/// The root and the pages are checked as `--user` too, as a reload checks them: a page
/// or a root only root can read fails at start, not at the first request or the first
/// HUP. Readable by that user, the same options serve.
#[test]
fn a_root_or_page_the_user_cannot_read_fails_before_binding() {
    if !can_become_nobody() {
        crate::support::skip::skip_or_fail(
            &crate::support::skip::this_test(),
            "needs root and a user nobody",
        );
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let site = TempDir::new("startup-pages");
    let root = site.path().join("www");
    std::fs::create_dir(&root).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(root.join("index.html"), "home").unwrap();
    std::fs::write(root.join("404.html"), "gone").unwrap();
    std::fs::set_permissions(
        root.join("404.html"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let root_arg = root.display().to_string();
    let args = |extra: &[&'static str]| {
        let mut v = vec!["serve", "--listen", "127.0.0.1:0", "--user", "nobody"];
        v.extend_from_slice(extra);
        v
    };
    let mut page = args(&["--error-page", "404=/404.html"]);
    page.insert(1, &root_arg);
    fails_before_binding(
        &page,
        "steerd: site: --error-page /404.html: refused (permissions, or a symlink leaving ROOT) (as uid 65534)",
    );
    let mut fallback = args(&["--fallback", "/404.html"]);
    fallback.insert(1, &root_arg);
    fails_before_binding(&fallback, "steerd: site: --fallback /404.html: refused");
    // Readable by others: it serves.
    std::fs::set_permissions(
        root.join("404.html"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let server = Server::spawn(Command::new(binary()).args(&page).args(["--workers", "1"]));
    drop(server);
    // A root only root may enter.
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut plain = args(&[]);
    plain.insert(1, &root_arg);
    fails_before_binding(&plain, "(as uid 65534)");
    let (_, err) = run(&plain);
    assert!(err.starts_with("steerd: root: "), "{err}");
    assert!(err.contains("Permission denied"), "{err}");
}

/// The `--mime-types` file is read again by each reload, after the master became
/// `--user`: one only root can read fails at start, as that user, in one line.
#[test]
fn a_mime_types_file_the_user_cannot_read_fails_before_binding() {
    let name = "a_mime_types_file_the_user_cannot_read_fails_before_binding";
    if !can_become_nobody() {
        return support::skip::skip_or_fail(name, "needs root and a user nobody");
    }
    use std::os::unix::fs::PermissionsExt;
    let site = TempDir::new("startup-types");
    let dir = site.path();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let types = dir.join("steerd.types");
    std::fs::write(&types, "text/vtt vtt\n").unwrap();
    std::fs::set_permissions(&types, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (root, file) = (dir.display().to_string(), types.display().to_string());
    let args = [
        "serve",
        &root,
        "--listen",
        "127.0.0.1:0",
        "--user",
        "nobody",
        "--mime-types",
        &file,
    ];
    fails_before_binding(
        &args,
        &format!(
            "steerd: site: --mime-types {file}: Permission denied (os error 13) (as uid 65534)"
        ),
    );
    std::fs::set_permissions(&types, std::fs::Permissions::from_mode(0o644)).unwrap();
    let server = Server::spawn(Command::new(binary()).args(args).args(["--workers", "1"]));
    drop(server);
}

#[test]
fn a_flag_given_twice_is_an_error() {
    let cases: [&[&str]; 3] = [
        &[
            "serve",
            "-l",
            "127.0.0.1:0",
            "--workers",
            "1",
            "--workers",
            "2",
        ],
        &[
            "serve",
            "-l",
            "127.0.0.1:0",
            "--max-conns",
            "5",
            "--max-conns=5",
        ],
        &[
            "serve",
            "-l",
            "127.0.0.1:0",
            "--access-log",
            "off",
            "--access-log",
            "off",
        ],
    ];
    for args in cases {
        let (code, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("given twice"), "{args:?}: {err}");
    }
}

/// With the open-files limit at 256, the warning's number is what a worker then holds.
#[test]
fn the_open_files_warning_names_what_a_worker_holds() {
    let root = TempDir::new("nofile");
    std::fs::write(root.path().join("index.html"), b"x\n").unwrap();
    let script = format!(
        "ulimit -Sn 256 && ulimit -Hn 256 && exec {} serve {} --listen 127.0.0.1:0 \
         --metrics 127.0.0.1:0 --workers 1",
        binary(),
        root.path().display()
    );
    let server = Server::spawn(Command::new("sh").args(["-c", &script]));
    let warning = server.wait_line(|l| l.contains("warning: open files limited to 256"));
    let said: u64 = warning
        .split("about ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number in {warning:?}"));
    // Open more connections than that, each with one answered request, and hold them.
    let mut held = Vec::new();
    for _ in 0..said + 40 {
        let Ok(mut s) = std::net::TcpStream::connect(server.addr) else {
            break;
        };
        use std::io::Write;
        let _ = s.write_all(b"GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n");
        held.push(s);
    }
    let open_now = || family_sum(&server.metrics(), "steerd_connections_open");
    let deadline = Instant::now() + PATIENCE;
    let mut open = open_now();
    let mut last = u64::MAX;
    // Until the count stops growing (the worker has taken all it can).
    while open != last && Instant::now() < deadline {
        last = open;
        std::thread::sleep(Duration::from_millis(300));
        open = open_now();
    }
    eprintln!("the warning said about {said}; the worker holds {open}");
    assert!(said > 0, "{warning}");
    assert!(
        open.abs_diff(said) <= 8,
        "the warning said about {said} connections, the worker holds {open}"
    );
}

/// `--access-log -` with workers running as another user than the one who made the
/// stdout pipe (a container's usual case): the log is the process's own stdout, not the
/// pipe reopened by path, which its owner and mode would refuse.
#[test]
fn the_access_log_on_stdout_works_for_an_unprivileged_worker() {
    if !can_become_nobody() {
        crate::support::skip::skip_or_fail(
            &crate::support::skip::this_test(),
            "needs root and a user nobody",
        );
        return;
    }
    let dir = TempDir::new("stdout-log");
    let fifo = dir.path().join("out");
    let made = Command::new("mkfifo")
        .args(["-m", "600"])
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    std::fs::write(dir.path().join("index.html"), b"x\n").unwrap();
    // stdout: the FIFO, owned by root, mode 0600 (opened read-write, so no one waits).
    let script = format!(
        "exec {} serve {} --listen 127.0.0.1:0 --workers 1 --user nobody \
         --access-log - 1<>{}",
        binary(),
        dir.path().display(),
        fifo.display()
    );
    let server = Server::spawn(Command::new("sh").args(["-c", &script]));
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut out = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .expect("open the fifo");
    let deadline = Instant::now() + PATIENCE;
    let mut got = String::new();
    while !got.contains("GET /index.html?logged") {
        assert!(Instant::now() < deadline, "no log line on stdout: {got:?}");
        assert_eq!(get(server.addr, "/index.html?logged").0, 200);
        std::thread::sleep(Duration::from_millis(100));
        let mut buf = [0u8; 4096];
        if let Ok(n) = out.read(&mut buf) {
            got.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    }
}

/// Root whose bounding set lacks CAP_DAC_OVERRIDE (a hardened systemd unit's) starts with
/// `--user` and a log only that user may write: the workers open it as that user, so it
/// is checked as that user only. It used to be checked as root first and refused.
#[test]
fn a_log_only_the_user_may_write_is_accepted_from_root_without_dac_override() {
    use std::os::unix::fs::PermissionsExt;
    let name = "a_log_only_the_user_may_write_is_accepted_from_root_without_dac_override";
    if !can_become_nobody() {
        return support::skip::skip_or_fail(name, "needs root and a user nobody");
    }
    let setpriv = Command::new("setpriv").arg("--version").output();
    if !setpriv.is_ok_and(|o| o.status.success()) {
        return support::skip::skip_or_fail(name, "no setpriv (util-linux)");
    }
    let dir = TempDir::new("startup-dac");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir(&site).unwrap();
    std::fs::set_permissions(&site, std::fs::Permissions::from_mode(0o755)).unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let log = logs.join("access.log");
    std::fs::write(&log, b"").unwrap();
    let chowned = Command::new("chown")
        .args(["-R", "nobody", &logs.display().to_string()])
        .status()
        .unwrap();
    assert!(chowned.success());
    std::fs::set_permissions(&logs, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o600)).unwrap();
    let check = |user: &[&str]| {
        run_to_exit(
            Command::new("setpriv")
                .args(["--bounding-set", "-dac_override,-dac_read_search", "--"])
                .arg(binary())
                .args([
                    "check",
                    &site.display().to_string(),
                    "--listen",
                    "127.0.0.1:0",
                ])
                .args(["--access-log", &log.display().to_string()])
                .args(user),
        )
    };
    let (code, err) = check(&["--user", "nobody"]);
    assert_eq!(code, 0, "{err}");
    // Without --user the master's own user opens the log, and root without the
    // capability cannot: refused, so the check can fail.
    let (code, err) = check(&[]);
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("access-log: ") && err.contains("Permission denied"),
        "{err}"
    );
}
