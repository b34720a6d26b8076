//! The `--basic-auth` file as `steerd check` reads it (the same parser `serve` and a
//! reload run): a file of 74,000 users is accepted.

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
