//! The file layer on a real directory tree: containment under the root (the kernel's
//! `openat2(RESOLVE_BENEATH)` is the oracle), index files, the trailing-slash redirect,
//! errno mapping, FIFOs, and the small-file cache's revalidation.

use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use std::path::{Path, PathBuf};
use std::time::Duration;
use steerd::files::cache::{CacheConfig, FileCache, Served};
use steerd::files::{open, Lookup, PATH_MAX};
use steerd::http::response::write_file_lines;

fn tree(name: &str) -> (PathBuf, OwnedFd) {
    let base = std::env::temp_dir().join(format!("steerd-files-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let root = base.join("root");
    std::fs::create_dir_all(root.join("dir/sub")).unwrap();
    std::fs::write(base.join("secret.txt"), "outside").unwrap();
    std::fs::write(root.join("index.html"), "<p>home</p>").unwrap();
    std::fs::write(root.join("a.txt"), "hello").unwrap();
    std::fs::write(root.join("dir/index.html"), "dir index").unwrap();
    std::fs::write(root.join("dir/sub/x.CSS"), "b{}").unwrap();
    std::os::unix::fs::symlink("../secret.txt", root.join("escape")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", root.join("abs")).unwrap();
    std::os::unix::fs::symlink("a.txt", root.join("inside")).unwrap();
    std::os::unix::fs::symlink("/proc/self/root/etc/passwd", root.join("magic")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        root.join("fifo").as_path(),
        rustix::fs::FileType::Fifo,
        Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let fd = rustix::fs::open(
        &root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap();
    (base, fd)
}

fn status(root: &OwnedFd, path: &str) -> Result<String, u16> {
    let mut scratch = [0u8; PATH_MAX + 1];
    match open(
        root.as_fd(),
        path.as_bytes(),
        &mut scratch,
        &Default::default(),
    ) {
        Lookup::File(fd, meta) => {
            let mut buf = vec![0u8; meta.size as usize];
            rustix::io::pread(&fd, &mut buf, 0).unwrap();
            Ok(String::from_utf8(buf).unwrap())
        }
        Lookup::AddSlash => Err(301),
        Lookup::Status(s) => Err(s),
    }
}

fn cleanup(base: &Path) {
    let _ = std::fs::remove_dir_all(base);
}

#[test]
fn serves_files_and_index_and_redirects_directories() {
    let (base, root) = tree("basic");
    assert_eq!(status(&root, "/a.txt"), Ok("hello".into()));
    assert_eq!(status(&root, "/"), Ok("<p>home</p>".into()));
    assert_eq!(status(&root, "/dir/"), Ok("dir index".into()));
    assert_eq!(status(&root, "/dir"), Err(301));
    assert_eq!(status(&root, "/dir/sub/"), Err(404), "no index, no listing");
    assert_eq!(status(&root, "/missing"), Err(404));
    assert_eq!(status(&root, "/a.txt/"), Err(404), "ENOTDIR");
    // Without openat2 (kernels before 5.6, user-mode QEMU) every symlink is refused.
    let inside = status(&root, "/inside");
    if steerd::files::beneath::fallback_in_use(root.as_fd()) {
        assert!(matches!(inside, Err(403 | 404)), "refused: {inside:?}");
    } else {
        assert_eq!(inside, Ok("hello".into()), "symlinks inside the root work");
    }
    cleanup(&base);
}

#[test]
fn nothing_outside_the_root_is_ever_opened() {
    let (base, root) = tree("contain");
    for p in [
        "/escape",
        "/abs",
        "/magic",
        "/../secret.txt",
        "/dir/../../secret.txt",
    ] {
        let got = status(&root, p);
        assert!(matches!(got, Err(403 | 404)), "{p}: {got:?}");
    }
    cleanup(&base);
}

#[test]
fn a_fifo_is_404_without_blocking() {
    let (base, root) = tree("fifo");
    assert_eq!(status(&root, "/fifo"), Err(404));
    cleanup(&base);
}

#[test]
fn metadata_mime_etag_and_last_modified() {
    let (base, root) = tree("meta");
    let mut scratch = [0u8; PATH_MAX + 1];
    let Lookup::File(_, m) = open(
        root.as_fd(),
        b"/dir/sub/x.CSS",
        &mut scratch,
        &Default::default(),
    ) else {
        panic!("expected a file");
    };
    assert_eq!(m.mime, b"text/css; charset=utf-8");
    assert_eq!(m.size, 3);
    // `--etag content` (the default): the tag is the file cache's to compute.
    assert!(m.etag.is_none(), "{:?}", m.etag);
    assert!(m.last_modified.unwrap().ends_with(b" GMT"));
    cleanup(&base);
}

#[test]
fn cache_serves_from_memory_and_revalidates_at_a_bounded_rate() {
    let (base, root) = tree("cache");
    let cfg = CacheConfig {
        entries: 8,
        file_max: 1024,
        revalidate: Duration::from_millis(1000),
    };
    let mut cache = FileCache::new(cfg);
    let mut scratch = [0u8; PATH_MAX + 1];
    let Served::Hit(i) = cache.lookup(root.as_fd(), b"/a.txt", 0, &mut scratch) else {
        panic!("small file must be cached");
    };
    assert_eq!(cache.body(i), b"hello");
    std::fs::write(base.join("root/a.txt"), "changed!").unwrap();
    let Served::Hit(i) = cache.lookup(root.as_fd(), b"/a.txt", 999, &mut scratch) else {
        panic!("hit");
    };
    assert_eq!(
        cache.body(i),
        b"hello",
        "within the revalidation period: stale by design"
    );
    assert_eq!(cache.stats.revalidations, 0);
    let Served::Hit(i) = cache.lookup(root.as_fd(), b"/a.txt", 1000, &mut scratch) else {
        panic!("hit");
    };
    assert_eq!(cache.body(i), b"changed!");
    assert_eq!((cache.stats.revalidations, cache.stats.loads), (1, 2));
    // The entry's rendered head lines follow the file they describe.
    let meta = *cache.meta(i).unwrap();
    let mut want = [0u8; 512];
    let n = write_file_lines(
        &mut want,
        meta.mime,
        8,
        meta.last_modified.as_ref(),
        meta.etag.as_ref().map(|t| t.as_bytes()),
    );
    // The content tag: `printf 'changed!' | sha256sum | cut -c1-32`.
    let tag = meta.etag.expect("a cached small file has its content tag");
    assert_eq!(tag.as_bytes(), b"\"9d463bde2a7e62f4cec6f00fd5e1b251\"");
    assert_eq!(cache.file_lines(i), Some(&want[..n.unwrap()]));
    let text = String::from_utf8(want[..n.unwrap()].to_vec()).unwrap();
    assert!(text.contains("\r\nContent-Length: 8\r\n"), "{text}");
    std::fs::remove_file(base.join("root/a.txt")).unwrap();
    let got = cache.lookup(root.as_fd(), b"/a.txt", 2500, &mut scratch);
    assert!(matches!(got, Served::Miss(Lookup::Status(404))), "{got:?}");
    cleanup(&base);
}

#[test]
fn cache_holds_large_files_as_descriptors_and_leaves_pinned_entries_alone() {
    let (base, root) = tree("pins");
    std::fs::write(base.join("root/big.bin"), vec![7u8; 5000]).unwrap();
    let cfg = CacheConfig {
        entries: 1,
        file_max: 1024,
        revalidate: Duration::ZERO,
    };
    let mut cache = FileCache::new(cfg);
    let mut scratch = [0u8; PATH_MAX + 1];
    // A file above file_max is held as an open descriptor, not as bytes.
    let Served::Hit(b) = cache.lookup(root.as_fd(), b"/big.bin", 0, &mut scratch) else {
        panic!("large files are cached as descriptors");
    };
    assert!(cache.file(b).is_some() && cache.body(b).is_empty());
    assert_eq!(cache.meta(b).unwrap().size, 5000);
    let Served::Hit(i) = cache.lookup(root.as_fd(), b"/a.txt", 0, &mut scratch) else {
        panic!("hit");
    };
    cache.pin(i);
    // The only entry is pinned: another small file is served uncached, a.txt's bytes stay.
    let other = cache.lookup(root.as_fd(), b"/dir/index.html", 1, &mut scratch);
    assert!(matches!(other, Served::Miss(Lookup::File(..))), "{other:?}");
    assert_eq!(cache.body(i), b"hello");
    cache.unpin(i);
    let again = cache.lookup(root.as_fd(), b"/dir/index.html", 2, &mut scratch);
    assert!(matches!(again, Served::Hit(_)));
    cleanup(&base);
}

#[test]
fn a_cached_descriptor_follows_a_replaced_file_after_revalidation() {
    let (base, root) = tree("fdcache");
    let path = base.join("root/big.bin");
    std::fs::write(&path, vec![1u8; 4000]).unwrap();
    let cfg = CacheConfig {
        entries: 4,
        file_max: 100,
        revalidate: Duration::from_millis(1000),
    };
    let mut cache = FileCache::new(cfg);
    let mut scratch = [0u8; PATH_MAX + 1];
    let first = |c: &mut FileCache, now, s: &mut [u8; PATH_MAX + 1]| -> u8 {
        let Served::Hit(i) = c.lookup(root.as_fd(), b"/big.bin", now, s) else {
            panic!("hit");
        };
        let mut b = [0u8; 1];
        rustix::io::pread(c.file(i).unwrap(), &mut b, 0).unwrap();
        b[0]
    };
    assert_eq!(first(&mut cache, 0, &mut scratch), 1);
    let tmp = base.join("root/big.tmp");
    std::fs::write(&tmp, vec![2u8; 4000]).unwrap();
    std::fs::rename(&tmp, &path).unwrap(); // atomic replace: same size, new inode
    assert_eq!(
        first(&mut cache, 500, &mut scratch),
        1,
        "stale within the period"
    );
    assert_eq!(
        first(&mut cache, 1000, &mut scratch),
        2,
        "revalidated: the new file"
    );
    cleanup(&base);
}
