//! The command line people type, through the real binary: `--listen PORT`, `:PORT`,
//! `localhost:PORT` and `/etc/hosts` names, `-p`; an implied IPv6 address left out where
//! the loopback has no IPv6 (a container's network namespace); an address or a name's
//! only address that is not this machine's refused by `check` as `serve` fails on it;
//! serve flags from
//! `STEERD_*` variables, with the command line winning and `check --json` saying where
//! each value came from; a mistyped subcommand named instead of taken as a root; the
//! `--help` of every subcommand and the message of every refused command line, byte for
//! byte (`tests/data/cli/`).

use crate::support;

use std::net::SocketAddr;
use std::process::Command;
use support::server::*;

fn check_json(cmd: &mut Command) -> serde_json::Value {
    let out = cmd.output().expect("run steerd check");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("check --json prints JSON")
}

fn listen_of(v: &serde_json::Value) -> Vec<String> {
    let list = v["listen"].as_array().expect("listen");
    list.iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

/// `-p 0`: every interface, IPv4 and IPv6, each a group of its own that serves.
#[test]
fn a_bare_port_listens_on_every_interface_both_families() {
    let dir = TempDir::new("port-only");
    std::fs::write(dir.path().join("index.html"), "home\n").unwrap();
    let mut cmd = Command::new(binary());
    cmd.arg("serve")
        .arg(dir.path())
        .args(["-p", "0", "--workers", "1"]);
    let srv = Server::spawn(&mut cmd);
    let addrs = srv.addrs();
    assert_eq!(addrs.len(), 2, "{addrs:?}");
    assert!(
        addrs[0].ip().is_unspecified() && addrs[0].is_ipv4(),
        "{addrs:?}"
    );
    assert!(
        addrs[1].ip().is_unspecified() && addrs[1].is_ipv6(),
        "{addrs:?}"
    );
    let v4: SocketAddr = format!("127.0.0.1:{}", addrs[0].port()).parse().unwrap();
    let v6: SocketAddr = format!("[::1]:{}", addrs[1].port()).parse().unwrap();
    assert_eq!(get(v4, "/"), (200, "home\n".into()));
    assert_eq!(get(v6, "/"), (200, "home\n".into()));
}

/// `localhost:0` is both loopbacks; `:0` in `check` is what serve would bind.
#[test]
fn localhost_is_both_loopbacks() {
    let v = check_json(Command::new(binary()).args([
        "check",
        "--json",
        "--listen",
        "localhost:0",
        "-p",
        ":1",
    ]));
    assert_eq!(
        listen_of(&v),
        ["127.0.0.1:0", "[::1]:0", "0.0.0.0:1", "[::]:1"]
    );
}

/// Runs `script` (sh) in fresh network and mount namespaces, or says why it cannot.
fn in_namespaces(name: &str) -> Option<Command> {
    if !is_root() {
        support::skip::skip_or_fail(name, "needs root for unshare --net --mount");
        return None;
    }
    let probe = Command::new("unshare")
        .args(["--net", "--mount", "true"])
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        support::skip::skip_or_fail(name, "unshare --net --mount failed (util-linux)");
        return None;
    }
    let mut cmd = Command::new("unshare");
    cmd.args(["--net", "--mount", "sh", "-ec"]);
    Some(cmd)
}

/// A container whose loopback has IPv6 disabled: `localhost:PORT` serves on 127.0.0.1
/// and says, in one warning, that `::1` was left out.
#[test]
fn an_implied_ipv6_address_is_left_out_where_the_loopback_has_none() {
    let name = "an_implied_ipv6_address_is_left_out_where_the_loopback_has_none";
    let Some(mut cmd) = in_namespaces(name) else {
        return;
    };
    let dir = TempDir::new("no-v6");
    std::fs::write(dir.path().join("index.html"), "home\n").unwrap();
    let script = "ip link set lo up; \
        echo 1 > /proc/sys/net/ipv6/conf/lo/disable_ipv6; \
        exec \"$0\" serve \"$1\" --listen localhost:0 --workers 1 --metrics 127.0.0.1:0";
    cmd.arg(script).arg(binary()).arg(dir.path());
    let srv = Server::spawn(&mut cmd);
    let warning = srv
        .find_line(|l| l.contains("[::1]:0 left out"))
        .expect("one warning for ::1");
    assert!(warning.contains("EADDRNOTAVAIL"), "{warning}");
    let addrs = srv.addrs();
    assert_eq!(addrs.len(), 1, "{addrs:?}");
    assert!(addrs[0].ip().is_loopback() && addrs[0].is_ipv4());
    // The server is in its own network namespace: ask from there.
    let ask = format!(
        "exec 3<>/dev/tcp/127.0.0.1/{}; printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3; cat <&3",
        addrs[0].port()
    );
    let out = Command::new("nsenter")
        .args([
            "--net",
            &format!("--target={}", srv.pid),
            "bash",
            "-c",
            &ask,
        ])
        .output()
        .expect("nsenter");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("HTTP/1.1 200") && text.ends_with("home\n"),
        "{text}"
    );
}

/// Runs `script` (`$0` is steerd) in fresh namespaces with `hosts` as `/etc/hosts`; it
/// must succeed: its standard output, or `None` when namespaces cannot be made.
fn with_hosts(name: &str, hosts: &str, script: &str) -> Option<String> {
    let mut cmd = in_namespaces(name)?;
    let dir = TempDir::new("hosts");
    let file = dir.path().join("hosts");
    std::fs::write(&file, hosts).unwrap();
    let script = format!("ip link set lo up; mount --bind \"$1\" /etc/hosts; {script}");
    let out = cmd
        .arg(script)
        .arg(binary())
        .arg(&file)
        .output()
        .expect("unshare");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}{err}");
    Some(text)
}

/// A name from `/etc/hosts` (a test file bound over it in a mount namespace) is every
/// address the file gives it; a name not in the file is refused, saying there is no DNS.
#[test]
fn a_host_name_comes_from_etc_hosts_and_never_from_dns() {
    let name = "a_host_name_comes_from_etc_hosts_and_never_from_dns";
    let hosts = "127.0.0.1 localhost\n127.0.0.7 web.test web # the site\n::1 web\n";
    let script = "\"$0\" check --json --listen web:0; \
        if \"$0\" check --listen nosuch.test:80 2>&1; then exit 1; fi";
    let Some(text) = with_hosts(name, hosts, script) else {
        return;
    };
    let (json, refusal) = text.split_at(text.rfind('}').expect("JSON") + 1);
    let v: serde_json::Value = serde_json::from_str(json).expect("JSON");
    assert_eq!(listen_of(&v), ["127.0.0.7:0", "[::1]:0"]);
    assert!(
        refusal.contains("\"nosuch.test\" is not in /etc/hosts")
            && refusal.contains("no DNS query"),
        "{refusal}"
    );
}

/// Addresses `serve` cannot bind here, each with the line `check` must print for it:
/// TEST-NET-1 (RFC 5737) is no address of a test machine.
const NOT_HERE: [(&[&str], &str); 3] = [
    (
        &["--listen", "192.0.2.98:0"],
        "steerd: listen: 192.0.2.98:0: 192.0.2.98 is not an address of this machine (EADDRNOTAVAIL)",
    ),
    (
        &["--listen", "127.0.0.1:0", "--listen", "192.0.2.98:8080"],
        "steerd: listen: 192.0.2.98:8080: 192.0.2.98 is not an address of this machine",
    ),
    (
        &["--listen", "127.0.0.1:0", "--metrics", "192.0.2.9:0"],
        "steerd: metrics: 192.0.2.9:0: 192.0.2.9 is not an address of this machine",
    ),
];

/// `check` refuses, one line each, the addresses `serve` fails to bind, as `serve` does.
#[test]
fn check_refuses_an_address_this_machine_does_not_have_as_serve_does() {
    let dir = TempDir::new("not-here");
    std::fs::write(dir.path().join("index.html"), "home\n").unwrap();
    for (args, line) in NOT_HERE {
        let mut cmd = Command::new(binary());
        cmd.arg("check").arg(dir.path()).args(["--workers", "1"]);
        let (code, err) = run_to_exit(cmd.args(args));
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.lines().any(|l| l.starts_with(line)), "{args:?}: {err}");
        let mut cmd = Command::new(binary());
        cmd.arg("serve").arg(dir.path()).args(["--workers", "1"]);
        let (code, err) = run_to_exit(cmd.args(args));
        assert_ne!(code, 0, "{args:?}: serve agrees: {err}");
        assert!(
            err.contains("Cannot assign requested address"),
            "{args:?}: {err}"
        );
    }
    let mut cmd = Command::new(binary());
    let (code, err) = run_to_exit(cmd.args(["check", "--listen", "127.0.0.1:0", "--workers", "1"]));
    assert_eq!(code, 0, "an address of this machine passes: {err}");
}

/// A name whose only `/etc/hosts` address is another machine's is refused by `check`, as
/// `serve` would fail on it; a name with one address here and one elsewhere passes,
/// leaving the other out with a warning.
#[test]
fn check_refuses_a_name_whose_only_address_is_elsewhere() {
    let name = "check_refuses_a_name_whose_only_address_is_elsewhere";
    let hosts = "192.0.2.98 far.test\n127.0.0.1 near.test\n192.0.2.99 near.test\n";
    let script = "if \"$0\" check --workers 1 --listen far.test:0 2>&1; then exit 1; fi; \
        \"$0\" check --workers 1 --listen near.test:0 2>&1 >/dev/null";
    let Some(text) = with_hosts(name, hosts, script) else {
        return;
    };
    assert!(
        text.contains("steerd: listen: 192.0.2.98:0: 192.0.2.98 is not an address of this machine"),
        "{text}"
    );
    assert!(text.contains("listen: 192.0.2.99:0 left out"), "{text}");
}

/// `STEERD_*` variables set what the command line does not; the command line wins;
/// `check --json` says where each value came from; a bad value names its variable.
#[test]
fn flags_come_from_the_environment_and_the_command_line_wins() {
    let dir = TempDir::new("env-flags");
    std::fs::write(dir.path().join("index.html"), "home\n").unwrap();
    std::fs::write(dir.path().join(".env"), "SECRET\n").unwrap();
    let v = check_json(
        Command::new(binary())
            .args(["check", "--json", "--workers", "1"])
            .arg(dir.path())
            .env("STEERD_LISTEN", "127.0.0.1:0,[::1]:0")
            .env("STEERD_WORKERS", "2")
            .env("STEERD_DOTFILES", "allow"),
    );
    assert_eq!(listen_of(&v), ["127.0.0.1:0", "[::1]:0"]);
    assert_eq!(v["workers"].as_array().unwrap().len(), 1);
    let sources = &v["sources"];
    assert_eq!(sources["--listen"], "environment STEERD_LISTEN");
    assert_eq!(sources["--workers"], "command line");
    assert_eq!(sources["--dotfiles"], "environment STEERD_DOTFILES");
    assert_eq!(sources["--max-conns"], "default");

    let mut cmd = Command::new(binary());
    cmd.arg("serve")
        .arg(dir.path())
        .env("STEERD_LISTEN", "127.0.0.1:0")
        .env("STEERD_WORKERS", "1")
        .env("STEERD_DOTFILES", "allow");
    let srv = Server::spawn(&mut cmd);
    assert_eq!(srv.addrs().len(), 1);
    assert_eq!(get(srv.addr, "/.env"), (200, "SECRET\n".into()));

    let (code, out) = run_to_exit(
        Command::new(binary())
            .args(["check", "--listen", "127.0.0.1:0"])
            .env("STEERD_SEND_TIMEOUT", "soon"),
    );
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("STEERD_SEND_TIMEOUT: --send-timeout"), "{out}");
}

/// `steerd serv DIR` names the typo; a directory called `serv` is still a ROOT.
#[test]
fn a_mistyped_subcommand_is_named_not_served() {
    let dir = TempDir::new("typo");
    let (code, out) = run_to_exit(Command::new(binary()).arg("serv").arg(dir.path()));
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("unknown subcommand \"serv\" (did you mean \"serve\"?)"),
        "{out}"
    );
    std::fs::create_dir(dir.path().join("serv")).unwrap();
    let v = check_json(Command::new(binary()).current_dir(dir.path()).args([
        "check",
        "--json",
        "--listen",
        "127.0.0.1:0",
    ]));
    assert!(v["listen"].is_array());
    let (code, out) = run_to_exit(Command::new(binary()).current_dir(dir.path()).args([
        "serv",
        "--workers",
        "many",
    ]));
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("--workers \"many\""), "taken as a ROOT: {out}");
}

/// One case of `tests/data/cli/cases.txt`: what the binary printed and its status.
fn run_case(line: &str, dir: &std::path::Path) -> String {
    let mut words: Vec<&str> = line.split('|').collect();
    let mut cmd = Command::new(binary());
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("STEERD_") {
            cmd.env_remove(k);
        }
    }
    while let Some((k, v)) = words
        .first()
        .filter(|w| w.starts_with("STEERD_"))
        .and_then(|w| w.split_once('='))
    {
        cmd.env(k, v);
        words.remove(0);
    }
    let child = cmd
        .args(&words)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run steerd");
    let pid = child.id();
    let (done, exited) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        // A case that got past its parser would serve: stop it, so the test fails.
        let waited = exited.recv_timeout(std::time::Duration::from_secs(20));
        if waited == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    });
    let out = child.wait_with_output().expect("steerd exits");
    drop(done);
    watchdog.join().expect("watchdog");
    format!(
        "=== {line}\n--- status {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `text` with the C library's own words for a failed name lookup cut off: glibc says
/// "Name or service not known" where musl says "Name does not resolve" (`gai_strerror`),
/// and the arm64 suite runs a musl build.
fn without_resolver_text(text: &str) -> String {
    const LOOKUP: &str = "failed to lookup address information:";
    text.lines()
        .map(|l| l.find(LOOKUP).map_or(l, |at| &l[..at + LOOKUP.len()]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `--help` of every subcommand and the message of every bad command line in
/// `tests/data/cli/cases.txt` stay byte for byte what `tests/data/cli/golden.txt` holds.
#[test]
fn help_and_refusals_print_the_golden_bytes() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cli");
    let cases = std::fs::read_to_string(data.join("cases.txt")).expect("cases.txt");
    let dir = TempDir::new("cli-golden");
    let got: String = cases
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| run_case(l, dir.path()))
        .collect();
    let golden = data.join("golden.txt");
    if std::env::var_os("STEERD_BLESS_CLI").is_some() {
        std::fs::write(&golden, &got).expect("write golden.txt");
        return;
    }
    let want = std::fs::read_to_string(&golden).expect("golden.txt");
    let (got, want) = (without_resolver_text(&got), without_resolver_text(&want));
    for (g, w) in got.split("=== ").zip(want.split("=== ")) {
        assert_eq!(g, w, "output differs from tests/data/cli/golden.txt");
    }
    assert_eq!(got.len(), want.len(), "one case per golden entry");
}
