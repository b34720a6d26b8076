//! `scripts/fetch/deb.sh`, `scripts/fetch/cache.sh` and `scripts/vm/fetch.sh` against the
//! stand-in mirror of `mirror.rs`, as CI runs them: a private apt for one suite, retries,
//! one line on failure, and the machine cache that is filled once and checked on use.
//!
//! Each test makes its own archive, mirror and cache under the target directory. Where
//! dpkg-deb, gpg or apt-get is missing the test says so and skips (a failure under CI).

use super::mirror::Mirror;
use crate::support;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::skip::skip_or_fail;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// An empty directory of the test's own.
fn scratch(test: &str) -> PathBuf {
    let dir = support::target_dir()
        .join("ci-fetch")
        .join(format!("{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// The test's own empty directory and its mirror, or `None` after the skip line.
fn mirror(test: &str) -> Option<(PathBuf, Mirror)> {
    let dir = scratch(test);
    match Mirror::start(&dir.join("archive")) {
        Ok(m) => Some((dir, m)),
        Err(why) => {
            skip_or_fail(test, &why);
            None
        }
    }
}

/// `bash -c SCRIPT` (or a script with its arguments) in the repository, bounded, with the
/// fetchers pointed at `mirror` and the cache at `cache`.
fn fetcher(mirror: &Mirror, cache: &Path, argv: &[&str]) -> Command {
    let mut c = Command::new("timeout");
    c.arg("300").args(argv).current_dir(repo());
    c.env("STEERD_CI_CACHE", cache)
        .env("STEERD_DEB_MIRROR", &mirror.url)
        .env("STEERD_DEB_KEYRING", mirror.key())
        .env("STEERD_FETCH_BACKOFF", "0")
        .env_remove("STEERD_VM_CACHE")
        .env_remove("APT_CONFIG");
    c
}

fn run(mut c: Command) -> Output {
    c.output().expect("start the fetcher")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The directory `scripts/vm/fetch.sh` printed.
fn entry(o: &Output) -> PathBuf {
    assert!(o.status.success(), "fetch.sh failed:\n{}", stderr(o));
    PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())
}

/// An apt configuration standing for a host whose sources list the good suite, the one
/// mid-sync and one the mirror does not have.
fn broken_host_sources(dir: &Path, mirror: &Mirror) -> PathBuf {
    let key = mirror.key();
    let list = ["bookworm", "bookworm-security", "no-such-suite"]
        .map(|s| {
            format!(
                "deb [signed-by={}] {} {s} main\n",
                key.display(),
                mirror.url
            )
        })
        .concat();
    std::fs::write(dir.join("host.list"), list).unwrap();
    let state = dir.join("host-state");
    std::fs::create_dir_all(state.join("lists/partial")).unwrap();
    std::fs::create_dir_all(dir.join("host.parts")).unwrap();
    std::fs::write(state.join("status"), "").unwrap();
    let conf = format!(
        "Dir::Etc::SourceList \"{d}/host.list\";\nDir::Etc::SourceParts \"{d}/host.parts\";\n\
         Dir::State \"{s}\";\nDir::State::Lists \"{s}/lists\";\nDir::State::status \"{s}/status\";\n\
         Dir::Cache \"{s}\";\nAPT::Sandbox::User \"root\";\nAcquire::Retries \"0\";\n",
        d = dir.display(),
        s = state.display()
    );
    let path = dir.join("host-apt.conf");
    std::fs::write(&path, conf).unwrap();
    path
}

#[test]
fn the_kernel_fetch_takes_its_suite_past_broken_ones_in_the_hosts_sources() {
    let test = "the_kernel_fetch_takes_its_suite_past_broken_ones_in_the_hosts_sources";
    let Some((dir, mirror)) = mirror(test) else {
        return;
    };
    let host = broken_host_sources(&dir, &mirror);

    // The host's own update fails on those sources: the stand-in is really broken.
    let update = Command::new("timeout")
        .args(["120", "apt-get", "-q", "update"])
        .env("APT_CONFIG", &host)
        .output()
        .expect("apt-get update");
    assert!(
        !update.status.success(),
        "apt-get update over the broken host sources passed:\n{}",
        String::from_utf8_lossy(&update.stdout)
    );

    let mut fetch = fetcher(
        &mirror,
        &dir.join("cache"),
        &["scripts/vm/fetch.sh", "x86_64"],
    );
    fetch.env("APT_CONFIG", &host);
    let got = entry(&run(fetch));
    assert_eq!(
        std::fs::metadata(got.join("kernel")).unwrap().len(),
        200_000
    );
    assert!(got.join("busybox").is_file());
    let order = std::fs::read_to_string(got.join("modules/order")).unwrap();
    assert_eq!(
        order.split_whitespace().collect::<Vec<_>>(),
        ["virtio_pci", "virtio_net"]
    );
    assert!(
        got.starts_with(dir.join("cache")),
        "{} is not in the cache",
        got.display()
    );
}

#[test]
fn a_bad_index_fails_after_three_tries_in_one_line_naming_what_where_and_why() {
    let test = "a_bad_index_fails_after_three_tries_in_one_line_naming_what_where_and_why";
    let Some((dir, mirror)) = mirror(test) else {
        return;
    };
    let state = format!("{}/apt", dir.display());
    let script = format!(
        ". scripts/fetch/deb.sh; deb_init {state} amd64 bookworm-security main && deb_update"
    );
    let out = run(fetcher(
        &mirror,
        &dir.join("cache"),
        &["bash", "-c", &script],
    ));
    let err = stderr(&out);
    assert!(
        !out.status.success(),
        "the update of a bad index passed:\n{err}"
    );
    let last = err.lines().last().unwrap_or_default();
    let want = format!(
        "fetch: the index of {} bookworm-security/main (amd64) could not be had: ",
        mirror.url
    );
    assert!(last.starts_with(&want), "last line: {last}");
    assert!(
        last.contains("File has unexpected size"),
        "the mirror's words are missing: {last}"
    );
    for t in ["try 1 of 3", "try 2 of 3"] {
        assert!(err.contains(t), "no '{t}' line:\n{err}");
    }
}

#[test]
fn a_mirror_away_for_a_moment_is_tried_again() {
    let test = "a_mirror_away_for_a_moment_is_tried_again";
    let Some((dir, mirror)) = mirror(test) else {
        return;
    };
    mirror.refuse_next(2);
    let (state, dl) = (dir.join("apt"), dir.join("dl"));
    let script = format!(
        ". scripts/fetch/deb.sh; deb_init {} amd64 bookworm main && deb_update && deb_download {} busybox-static",
        state.display(),
        dl.display()
    );
    let mut c = fetcher(&mirror, &dir.join("cache"), &["bash", "-c", &script]);
    c.env("STEERD_APT_RETRIES", "0");
    let out = run(c);
    let err = stderr(&out);
    assert!(out.status.success(), "the fetch gave up:\n{err}");
    assert!(err.contains("try 1 of 3"), "no retry was said:\n{err}");
    let debs: Vec<_> = std::fs::read_dir(&dl).unwrap().flatten().collect();
    assert_eq!(debs.len(), 1, "{debs:?}");
}

#[test]
fn a_truncated_cached_kernel_is_fetched_again_and_a_whole_one_is_not() {
    let test = "a_truncated_cached_kernel_is_fetched_again_and_a_whole_one_is_not";
    let Some((dir, mirror)) = mirror(test) else {
        return;
    };
    let cache = dir.join("cache");
    let fetch = || run(fetcher(&mirror, &cache, &["scripts/vm/fetch.sh", "x86_64"]));
    let got = entry(&fetch());
    let kernel = std::fs::read(got.join("kernel")).unwrap();

    let asked = mirror.served();
    assert_eq!(entry(&fetch()), got);
    assert_eq!(mirror.served(), asked, "a whole entry was fetched again");

    std::fs::write(got.join("kernel"), &kernel[..1000]).unwrap();
    let again = fetch();
    assert_eq!(entry(&again), got);
    assert!(
        stderr(&again).contains("fetching it again"),
        "{}",
        stderr(&again)
    );
    assert!(
        mirror.served() > asked,
        "the truncated kernel was not fetched again"
    );
    assert_eq!(std::fs::read(got.join("kernel")).unwrap(), kernel);

    // An entry whose maker died before sealing it has no MANIFEST: made again too.
    std::fs::remove_file(got.join("MANIFEST")).unwrap();
    let asked = mirror.served();
    assert_eq!(entry(&fetch()), got);
    assert!(
        mirror.served() > asked,
        "an unsealed entry was taken as whole"
    );
}
