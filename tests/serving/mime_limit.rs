//! A `--mime` type too long for a response head, through the real binary: `check` exits 2
//! with one line that names `--mime` and the room there is, not `--header`.

use crate::support;

use std::process::Command;
use support::server::binary;

#[test]
fn a_mime_type_too_long_for_a_head_is_blamed_on_mime() {
    let root = support::server::TempDir::new("mime-limit");
    let long = format!("x=text/{}", "p".repeat(6000));
    let out = Command::new(binary())
        .arg("check")
        .arg(root.path())
        .args(["--mime", &long])
        .output()
        .expect("check");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--mime x=TYPE: TYPE is 6005 bytes") && err.contains("at most 5724"),
        "{err}"
    );
    assert!(err.starts_with("steerd: args: --mime"), "{err}");
}
