//! The `--basic-auth` file as `steerd check` reads it (the same parser `serve` and a
//! reload run): a hash whose check would cost more than the limit (bcrypt cost 7,
//! SHA-crypt 10,000 rounds) is refused with its line, its cost and the limit, one at the
//! limit is accepted; a file whose hashes have different costs is accepted with a
//! warning; a file of 74,000 users is accepted. The hashes are fixed strings:
//! nothing is hashed here (a check at a high cost is slow, under emulation very slow),
//! since `check` reads costs from the hash's text and never computes one.

use crate::support;

use std::path::PathBuf;
use std::process::Command;
use support::server::{binary, run_to_exit, TempDir};

/// A SHA-256-crypt hash at the default 5000 rounds, short (a one-character salt) so that
/// many fit the file; no password is known to give it, and nothing is hashed here.
const SHA256_HASH: &str = "$5$s$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5";

/// A root with one file and the htpasswd file `text` beside it.
struct Files {
    dir: TempDir,
}

impl Files {
    fn new(tag: &str, text: &str) -> Files {
        let dir = TempDir::new(tag);
        std::fs::create_dir_all(dir.path().join("root")).unwrap();
        std::fs::write(dir.path().join("root/index.html"), "members only\n").unwrap();
        std::fs::write(dir.path().join("htpasswd"), text).unwrap();
        Files { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `steerd check ROOT --basic-auth FILE`: the exit code and stderr.
    fn check(&self) -> (i32, String) {
        let (root, file) = (self.path("root"), self.path("htpasswd"));
        let mut cmd = Command::new(binary());
        cmd.args(["check", root.to_str().unwrap(), "--basic-auth"])
            .arg(file);
        run_to_exit(&mut cmd)
    }
}

/// 74,000 users (4.1 MB, as many as the 4 MiB the file may have holds with lines this
/// short) are read at once: the names are checked for repeats with a hash map, not each
/// against all before it (which took seconds, the master deaf to signals meanwhile on a
/// reload).
#[test]
fn a_file_of_seventy_four_thousand_users_is_accepted() {
    let text: String = (0..74_000)
        .map(|i| format!("u{i:05}:{SHA256_HASH}\n"))
        .collect();
    assert!(text.len() < 4 << 20, "{} bytes", text.len());
    let files = Files::new("auth-many", &text);
    let (code, err) = files.check();
    assert_eq!(code, 0, "{err}");
}

/// `user:HASH` for a bcrypt hash at `cost` and a SHA-crypt one (`$5$`, `$6$`) at
/// `rounds`: valid in form, of no known password.
fn bcrypt(user: &str, cost: u32) -> String {
    format!("{user}:$2y${cost:02}$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW")
}

fn sha_crypt(user: &str, variant: u8, rounds: u32) -> String {
    let digest = "a".repeat(if variant == 5 { 43 } else { 86 });
    format!("{user}:${variant}$rounds={rounds}$salt${digest}")
}

/// bcrypt cost 14 and SHA-crypt at 1,000,000 rounds were accepted: a check took about a
/// second of the worker's only thread. Now anything above bcrypt cost 7 or 10,000
/// rounds is refused by `check` (the parser `serve` and each reload run too), with the
/// line, the cost and the limit.
#[test]
fn a_hash_too_costly_to_check_is_refused_with_its_line_cost_and_limit() {
    let first = sha_crypt("ann", 5, 5000);
    for (line, want) in [
        (
            bcrypt("carol", 14),
            ":2: user \"carol\": bcrypt cost 14 is above the limit, bcrypt cost 7",
        ),
        (
            bcrypt("carol", 8),
            ":2: user \"carol\": bcrypt cost 8 is above the limit, bcrypt cost 7",
        ),
        (
            sha_crypt("carol", 6, 1_000_000),
            ":2: user \"carol\": SHA-512-crypt rounds=1000000 is above the limit, \
             SHA-512-crypt rounds=10000",
        ),
        (
            sha_crypt("carol", 5, 10_001),
            ":2: user \"carol\": SHA-256-crypt rounds=10001 is above the limit, \
             SHA-256-crypt rounds=10000",
        ),
    ] {
        let files = Files::new("auth-costly", &format!("{first}\n{line}\n"));
        let (code, err) = files.check();
        assert_ne!(code, 0, "{line}: {err}");
        let file = files.path("htpasswd");
        let want = format!("--basic-auth {}{want}", file.display());
        assert!(err.contains(&want), "{line}: {err}");
    }
    let at_the_limit = [
        bcrypt("a", 7),
        bcrypt("b", 4),
        sha_crypt("c", 5, 10_000),
        sha_crypt("d", 6, 10_000),
        sha_crypt("e", 6, 1000),
    ];
    let files = Files::new("auth-limit", &(at_the_limit.join("\n") + "\n"));
    let (code, err) = files.check();
    assert_eq!(code, 0, "{err}");
}

/// Hashes of different costs let the time of a check group names by cost (an unknown
/// name is checked at its decoy's): `check` accepts the file and says so, naming each
/// cost and how many users have it; a file of one cost gets no such line.
#[test]
fn a_file_mixing_hash_costs_is_accepted_with_a_warning() {
    let mixed = [
        bcrypt("a", 5),
        bcrypt("b", 5),
        bcrypt("c", 7),
        sha_crypt("d", 6, 5000),
    ];
    let files = Files::new("auth-mixed", &(mixed.join("\n") + "\n"));
    let (code, err) = files.check();
    assert_eq!(code, 0, "{err}");
    let file = files.path("htpasswd");
    let want = format!(
        "steerd: warning: site: --basic-auth {}: the hashes have different costs \
         (bcrypt cost 5: 2 users, bcrypt cost 7: 1 user, SHA-512-crypt rounds=5000: 1 user)",
        file.display()
    );
    assert!(err.contains(&want), "{err}");
    let same = [bcrypt("a", 5), bcrypt("b", 5)];
    let files = Files::new("auth-same", &(same.join("\n") + "\n"));
    let (code, err) = files.check();
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("different costs"), "{err}");
}
